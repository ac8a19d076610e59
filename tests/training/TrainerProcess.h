#pragma once
// Runs mirage-train-gpt as a child process for the end-to-end tests: its own environment (no
// inherited SLURM_* or MIRAGE_* variables, plus the ones a test sets), output to a log file.
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mirage::training::test {

class TrainerProcess {
 public:
  TrainerProcess(const std::vector<std::string>& args,
                 const std::map<std::string, std::string>& env, const std::filesystem::path& log);
  ~TrainerProcess();  // kills the child if it still runs
  TrainerProcess(const TrainerProcess&) = delete;
  TrainerProcess& operator=(const TrainerProcess&) = delete;

  pid_t pid() const { return pid_; }
  void signal(int signo) const;
  // The exit status (128 + signal when killed), or nullopt if it still runs after `timeout`.
  std::optional<int> wait(std::chrono::milliseconds timeout);
  bool running();
  std::string log_text() const;

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
  std::filesystem::path log_;
};

// Runs to completion (bounded by `timeout`); returns the exit status, -1 on timeout.
int run_trainer(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                const std::filesystem::path& log,
                std::chrono::milliseconds timeout = std::chrono::seconds(120));

}  // namespace mirage::training::test
