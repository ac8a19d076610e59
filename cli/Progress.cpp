#include "Progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

namespace mirage::cli {

Progress::Progress(std::string label)
    : label_(std::move(label)),
      tty_(isatty(STDERR_FILENO) != 0),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

void Progress::update(std::size_t done, std::size_t total, const std::string& extra) {
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double frac = total ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
  const double eta = frac > 0 ? elapsed * (1 - frac) / frac : 0;
  const std::string line = fmt::format("{} {}/{} ({:.0f}%) {:.0f}s elapsed, ~{:.0f}s left {}",
                                       label_, done, total, 100 * frac, elapsed, eta, extra);
  if (tty_) {
    if (now - last_draw_ < std::chrono::milliseconds(100) && done != total) return;
    last_draw_ = now;
    fmt::print(stderr, "\r{:<100}", line);
  } else {
    const int decile = static_cast<int>(frac * 10);
    if (decile == last_decile_) return;
    last_decile_ = decile;
    fmt::print(stderr, "{}\n", line);
  }
  std::fflush(stderr);
}

void Progress::finish() {
  if (tty_) fmt::print(stderr, "\n");
}

}  // namespace mirage::cli
