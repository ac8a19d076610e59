#pragma once
// Runs one program to completion with fork/exec (no shell in between): given arguments,
// environment, working directory and standard input; its output captured; killed when it
// outlives a timeout. Safe to call from any thread of a multithreaded process.
#include <chrono>
#include <string>
#include <vector>

namespace mirage::daemon {

struct ChildProcessSpec {
  std::string program;  // a path (no $PATH search)
  std::vector<std::string> args;
  std::vector<std::string> environment;  // NAME=value: the child's whole environment
  std::string work_dir;                  // empty: ours
  std::string input;                     // its standard input
  std::chrono::milliseconds timeout{60'000};
  std::size_t max_output = 64 * 1024;  // per stream; the rest is read and dropped
};

struct ChildProcessResult {
  int start_errno = 0;  // non-zero: it never ran (exec or chdir failed with this errno)
  bool chdir_failed = false;
  bool timed_out = false;  // killed (with its process group) at the timeout
  int exit_code = -1;      // when it exited (-1 with signal 0: how it ended is unknown)
  int signal = 0;          // when a signal ended it
  std::string out, err;
};

ChildProcessResult run_child_process(const ChildProcessSpec& spec);

}  // namespace mirage::daemon
