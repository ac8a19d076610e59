#pragma once
// The seed inputs that fuzz_inputs mutates: trace files the readers accept (plain or gzip, with a
// fixed-column copy of each sacct --parsable2 seed so that the third reader is fuzzed too) and
// daemon config files.
#include <string>
#include <vector>

namespace mirage::fuzz {

struct Seed {
  std::string name;       // for the report: the file, and what was derived from it
  std::string text;       // plain text (gzip seeds are decompressed)
  std::string extension;  // kept on the mutants' files, e.g. ".swf"
};

// Files in the given directories (or the files named), in name order; those that no reader
// accepts even leniently (a README) are left out.
std::vector<Seed> load_trace_seeds(const std::vector<std::string>& paths);
std::vector<Seed> load_config_seeds(const std::vector<std::string>& paths);

}  // namespace mirage::fuzz
