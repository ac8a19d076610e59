#pragma once
// What the trainer reports to the mirage daemon and the user:
// - `--progress FILE`: one small JSON object, rewritten atomically, always the current state;
// - `--metrics FILE`: JSON lines appended, one per logged step (the loss curve across segments).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace mirage::training {

struct Progress {
  std::string state;   // starting, waiting, running, stopped, done, failed
  std::string reason;  // why it stopped or failed
  std::string job_id;
  std::string model;
  int world_size = 1;
  std::int64_t step = 0;
  std::int64_t target_steps = 0;
  std::int64_t first_step = 0;  // the step this run resumed from
  double loss = 0;
  double lr = 0;
  double tokens_per_s = 0;
  double model_tflops = 0;  // tokens_per_s x model FLOPs per token, in 1e12/s
  std::int64_t tokens_seen = 0;
  double elapsed_s = 0;
  std::int64_t last_checkpoint_step = -1;
};

class ProgressReporter {
 public:
  ProgressReporter(std::optional<std::filesystem::path> progress_file,
                   std::optional<std::filesystem::path> metrics_file);
  // Rewrites the progress file (a failure is logged, never fatal: reporting must not kill
  // training).
  void update(const Progress& progress) const;
  // Appends one line to the metrics file.
  void append_metrics(const Progress& progress) const;

 private:
  std::optional<std::filesystem::path> progress_file_;
  std::optional<std::filesystem::path> metrics_file_;
};

}  // namespace mirage::training
