#pragma once
// A one-line progress display on stderr: redrawn in place on a terminal, printed every 10%
// otherwise (CI logs). Debian ships no C++ progress-bar library, so this stays this small.
#include <chrono>
#include <cstddef>
#include <string>

namespace mirage::cli {

class Progress {
 public:
  explicit Progress(std::string label);
  void update(std::size_t done, std::size_t total, const std::string& extra = "");
  void finish();

 private:
  std::string label_;
  bool tty_;
  int last_decile_ = -1;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace mirage::cli
