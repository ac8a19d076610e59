#include "SampleTraces.h"

#include <unistd.h>

#include <filesystem>
#include <vector>

namespace mirage::cli {
namespace {

namespace fs = std::filesystem;

// Installed beside the program, else the checkout it was built from.
std::vector<fs::path> sample_dirs() {
  std::vector<fs::path> out;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) out.push_back(exe.parent_path().parent_path() / "share" / "mirage" / "samples");
  out.push_back(fs::path(MIRAGE_SOURCE_DIR) / "traces" / "samples");
  return out;
}

}  // namespace

std::string resolve_sample_trace(const std::string& value) {
  constexpr std::string_view kPrefix = "sample:";
  if (value.rfind(kPrefix, 0) != 0) return value;
  const std::string name = value.substr(kPrefix.size());
  std::string known;
  for (const fs::path& dir : sample_dirs()) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const std::string file = e.path().filename().string();
      if (file.rfind("sample-", 0) != 0 || file.find('.') == std::string::npos) continue;
      const std::string stem = file.substr(7, file.find('.') - 7);
      if (stem == name) return e.path().string();
      if (known.find("sample:" + stem) == std::string::npos)
        known += (known.empty() ? "" : ", ") + ("sample:" + stem);
    }
    if (!known.empty()) break;
  }
  throw CLI::ValidationError(value, known.empty()
                                        ? "no shipped samples were found (looked in share/mirage/"
                                          "samples beside the program and in the source tree)"
                                        : "no such sample; the shipped ones are " + known);
}

CLI::Validator sample_trace() {
  return CLI::Validator(
      [](std::string& value) {
        value = resolve_sample_trace(value);
        return std::string();
      },
      "", "sample trace");
}

}  // namespace mirage::cli
