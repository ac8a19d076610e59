#pragma once
// Runs a check in a forked child, so that a crash or a hang in the code under test is a finding
// for the parent to report, not the end of the run. The child reports through tagged messages.
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace mirage::fuzz {

// How a check reports: a one-letter tag and a text (an error message, an example, ...).
using Report = std::function<void(char tag, std::string_view text)>;

struct Message {
  char tag;
  std::string text;
};

struct Outcome {
  enum class End { kExited, kSignalled, kTimedOut } end = End::kExited;
  int code = 0;  // exit status, or the signal
  std::vector<Message> messages;
  double seconds = 0;
};

// Runs `check` in a child limited to `memory_bytes` of address space (0: no limit, as
// AddressSanitizer needs); kills it after
// `timeout_ms`. Messages sent before a crash or a timeout are kept.
Outcome run_sandboxed(const std::function<void(const Report&)>& check, int timeout_ms,
                      std::size_t memory_bytes);

}  // namespace mirage::fuzz
