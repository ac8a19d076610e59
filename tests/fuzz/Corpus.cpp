#include "Corpus.h"

#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "mirage/traces/Trace.h"

namespace mirage::fuzz {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> files_in(const std::vector<std::string>& paths) {
  std::vector<fs::path> out;
  for (const std::string& p : paths) {
    if (!fs::is_directory(p)) {
      if (!fs::is_regular_file(p)) throw std::runtime_error("no such seed file or folder: " + p);
      out.emplace_back(p);
      continue;
    }
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(p))
      if (entry.is_regular_file()) files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    out.insert(out.end(), files.begin(), files.end());
  }
  return out;
}

// Seeds are known-good files, so zlib's gzread is enough here.
std::string read_text(const fs::path& path) {
  gzFile gz = gzopen(path.c_str(), "rb");
  if (!gz) throw std::runtime_error("cannot open seed " + path.string());
  std::string text;
  char buf[1 << 16];
  int n;
  while ((n = gzread(gz, buf, sizeof buf)) > 0) text.append(buf, static_cast<std::size_t>(n));
  gzclose(gz);
  if (n < 0) throw std::runtime_error("cannot read seed " + path.string());
  return text;
}

// The same jobs in sacct's fixed-column layout: names, a line of dashes, space-padded columns.
std::string as_sacct_fixed(const std::string& parsable) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::size_t> widths;
  std::size_t begin = 0;
  while (begin < parsable.size()) {
    std::size_t end = parsable.find('\n', begin);
    if (end == std::string::npos) end = parsable.size();
    std::vector<std::string> fields;
    for (std::size_t b = begin;;) {
      const std::size_t bar = parsable.find('|', b);
      const std::size_t e = bar == std::string::npos || bar > end ? end : bar;
      fields.push_back(parsable.substr(b, e - b));
      if (e == end) break;
      b = e + 1;
    }
    if (widths.size() < fields.size()) widths.resize(fields.size(), 0);
    for (std::size_t i = 0; i < fields.size(); ++i)
      widths[i] = std::max(widths[i], fields[i].size());
    if (end > begin) rows.push_back(std::move(fields));
    begin = end + 1;
  }
  std::string out;
  auto line = [&](const std::vector<std::string>& fields) {
    for (std::size_t i = 0; i < fields.size(); ++i) {
      out += fields[i];
      if (i + 1 < fields.size()) out += std::string(widths[i] - fields[i].size() + 1, ' ');
    }
    out += '\n';
  };
  for (std::size_t r = 0; r < rows.size(); ++r) {
    line(rows[r]);
    if (r == 0) {
      std::vector<std::string> dashes;
      for (std::size_t w : widths) dashes.emplace_back(std::max<std::size_t>(w, 1), '-');
      line(dashes);
    }
  }
  return out;
}

}  // namespace

std::vector<Seed> load_trace_seeds(const std::vector<std::string>& paths) {
  std::vector<Seed> seeds;
  for (const fs::path& path : files_in(paths)) {
    Seed seed{path.filename().string(), read_text(path), path.extension().string()};
    TraceFormat format;
    try {
      format = read_trace_text(seed.text, seed.name, {TraceFormat::kAuto, true}).format;
    } catch (const std::exception&) {
      continue;  // not a trace
    }
    if (seed.extension == ".gz") seed.extension = path.stem().extension().string();
    seed.name += " (" + std::string(to_string(format)) + ")";
    seeds.push_back(seed);
    if (format == TraceFormat::kSacctParsable)
      seeds.push_back({path.filename().string() + " as sacct-fixed", as_sacct_fixed(seed.text),
                       seed.extension});
  }
  if (seeds.empty()) throw std::runtime_error("no trace seeds: give --corpus a folder of traces");
  return seeds;
}

std::vector<Seed> load_config_seeds(const std::vector<std::string>& paths) {
  std::vector<Seed> seeds;
  for (const fs::path& path : files_in(paths)) {
    std::ifstream in(path, std::ios::binary);
    seeds.push_back({path.filename().string(), std::string(std::istreambuf_iterator<char>(in), {}),
                     path.extension().string()});
  }
  if (seeds.empty()) throw std::runtime_error("no config seeds: give --config a TOML file");
  return seeds;
}

}  // namespace mirage::fuzz
