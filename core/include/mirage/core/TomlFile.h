#pragma once
// Reading a TOML file a person wrote (a calibration, the hyperparameters): what cannot be read or
// parsed is an InputError naming the file and the line. Header-only, so that only the parts that
// read TOML need toml++.
#include <toml++/toml.h>

#include <fstream>
#include <sstream>
#include <string>

#include "mirage/core/Error.h"

namespace mirage {

// The line a value stands on, for messages.
inline long toml_line(const toml::node& n) {
  return static_cast<long>(n.source().begin.line);
}

// `s` as a TOML basic string, for the files mirage writes.
inline std::string toml_quoted(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// `what` names the file's kind in the message: "the calibration file".
inline toml::table read_toml_file(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  if (!in) throw InputError({path, 0, ""}, "cannot read " + what);
  std::stringstream text;
  text << in.rdbuf();
  try {
    return toml::parse(text.str(), path);
  } catch (const toml::parse_error& e) {
    throw InputError({path, static_cast<long>(e.source().begin.line), ""},
                     std::string(e.description()));
  }
}

}  // namespace mirage
