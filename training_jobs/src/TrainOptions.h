#pragma once
// Every knob of one trainer run (one segment of a campaign); main.cpp maps flags onto it.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace mirage::training {

struct TrainOptions {
  std::string model = "tiny";
  std::int64_t steps = 1000;   // the campaign's total optimizer steps (LR schedule length)
  std::int64_t run_steps = 0;  // at most this many steps in this run (0: no limit)
  double time_budget_s = 0;    // stop (and checkpoint) before this much wall time (0: none)
  std::filesystem::path checkpoint_dir;
  std::int64_t checkpoint_every = 0;  // also checkpoint every N steps (0: off)
  double checkpoint_minutes = 30;     // and every M minutes of training (0: off)
  int keep_checkpoints = 3;
  int batch = 8;       // sequences per rank per micro-step
  int grad_accum = 1;  // micro-steps per optimizer step
  int seq_len = 0;     // 0: the model's context length
  double lr = 6e-4;
  double min_lr_ratio = 0.1;  // cosine decay ends at lr * ratio
  std::int64_t warmup = 0;
  double weight_decay = 0.1;
  double grad_clip = 1.0;
  double dropout = 0.0;
  std::uint64_t seed = 1337;
  int threads = 0;              // intra-op CPU threads (0: SLURM_CPUS_PER_TASK or LibTorch's)
  std::string device = "auto";  // auto, cpu, cuda
  // auto (bf16 on GPUs, fp32 on CPUs), bf16 (bf16 compute, fp32 master weights), autocast
  // (fp32 weights and residual stream, bf16 matrix products; GPUs only), fp32
  std::string precision = "auto";
  // GPU attention kernel: auto (LibTorch's pick), flash, cudnn, efficient
  std::string attention = "auto";
  std::optional<std::filesystem::path> corpus;  // default: the embedded corpus
  // Resume a checkpoint of another campaign (MIRAGE_CAMPAIGN_ID) instead of refusing it.
  bool adopt_checkpoints = false;
  bool handoff_wait = false;
  double handoff_timeout_s = 900;
  std::optional<std::filesystem::path> progress_file;
  std::optional<std::filesystem::path> metrics_file;
  // Created once the campaign's total steps are reached: a mirage campaign ends after the
  // segment that creates it (MIRAGE_DONE_FILE).
  std::optional<std::filesystem::path> done_file;
  std::optional<std::filesystem::path> rendezvous_dir;  // FileStore here; else TCPStore
  double dist_timeout_s = 600;
  int log_every = 10;
  // Profile steps [profile_after, profile_after + profile_steps) of this run into this Chrome
  // trace (rank 0 only).
  std::optional<std::filesystem::path> profile_file;
  std::int64_t profile_steps = 3;
  std::int64_t profile_after = 20;
};

}  // namespace mirage::training
