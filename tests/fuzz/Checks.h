#pragma once
// What fuzz_inputs checks: the reads done on a mutant (in the sandboxed child) and the judgement
// of their outcome (in the parent).
#include <string>
#include <vector>

#include "Sandbox.h"

namespace mirage::fuzz {

// Reads a trace strictly and leniently through read_trace, computes its statistics as
// `mirage trace info` does, and reports errors, examples and broken invariants.
void check_trace(const std::string& path, const Report& report);
// Loads a daemon config through load_daemon_config and reports its error, if any.
void check_config(const std::string& path, const Report& report);

struct Finding {
  std::string category;  // "crash", "hang", "nameless message", ...
  std::string detail;    // printable (escaped)
};

// The defects in an outcome. Every message must name `path` and carry no control byte; a read
// of a mutant that must fail (`must_fail`, e.g. a cut-off gzip copy) must not succeed.
std::vector<Finding> judge(const Outcome& outcome, const std::string& path, bool must_fail);

// Which reads were errors: the strict read (or the config load) and the lenient read.
struct Rejections {
  bool strict = false;
  bool lenient = false;
};
Rejections rejections(const Outcome& outcome);

// Message tags.
constexpr char kMode = 'M';          // the read that follows: "strict", "lenient" or "config"
constexpr char kInputError = 'E';    // InputError::what()
constexpr char kOtherError = 'O';    // another exception: type and what()
constexpr char kExample = 'X';       // a lenient read's example message
constexpr char kBroken = 'B';        // a broken invariant of a successful read
constexpr char kReadStrict = 'S';    // the strict read succeeded
constexpr char kReadLenient = 'L';   // the lenient read succeeded
constexpr char kConfigLoaded = 'C';  // the config loaded

}  // namespace mirage::fuzz
