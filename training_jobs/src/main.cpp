// mirage-train-gpt: the checkpointed GPT-2-style trainer that mirage campaigns chain.
// One invocation is one segment: resume, train until a budget or a signal, checkpoint, exit 0.
// See training_jobs/README.md for the checkpoint format and the hand-off protocol.
#include <CLI/CLI.hpp>
#include <cctype>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "CheckpointFile.h"
#include "GptConfig.h"
#include "SignalStop.h"
#include "TrainOptions.h"
#include "TrainState.h"
#include "Trainer.h"

namespace {

using mirage::training::TrainOptions;

// "3600", "90s", "45m", "2h", "1h30m" -> seconds.
double parse_duration(const std::string& text) {
  if (text.empty()) throw CLI::ValidationError("duration", "empty");
  double total = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t used = 0;
    double value = std::stod(text.substr(i), &used);
    i += used;
    double unit = 1;
    if (i < text.size()) {
      switch (text[i]) {
        case 's': unit = 1; break;
        case 'm': unit = 60; break;
        case 'h': unit = 3600; break;
        default: throw CLI::ValidationError("duration", "bad unit in '" + text + "' (s, m, h)");
      }
      ++i;
    }
    total += value * unit;
  }
  return total;
}

nlohmann::json summary_json(const std::filesystem::path& file) {
  auto s = mirage::training::inspect_checkpoint(file);
  return {
      {"file", file.string()},
      {"valid", true},
      {"model", s.config.name},
      {"parameters", s.parameter_count},
      {"step", s.state.step},
      {"data_position", s.state.data_position},
      {"tokens_seen", s.state.tokens_seen},
      {"loss", s.state.loss},
      {"world_size", s.state.world_size},
      {"rng_states", s.state.rng_states.size()},
      // null: not recorded (a checkpoint of an older trainer, a run outside a campaign)
      {"seq_len", s.state.seq_len > 0 ? nlohmann::json(s.state.seq_len) : nullptr},
      {"corpus", s.state.corpus_size >= 0 ? nlohmann::json(s.state.corpus_name) : nullptr},
      {"corpus_bytes", s.state.corpus_size >= 0 ? nlohmann::json(s.state.corpus_size) : nullptr},
      {"campaign_id", s.state.campaign_id.empty() ? nullptr : nlohmann::json(s.state.campaign_id)}};
}

// --inspect: one checkpoint file, or every checkpoint of a directory, as JSON lines.
int inspect(const std::filesystem::path& target) {
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(target)) {
    for (const auto& e : mirage::training::CheckpointDir(target).list()) files.push_back(e.path);
  } else {
    files.push_back(target);
  }
  int rc = 0;
  for (const auto& f : files) {
    try {
      std::cout << summary_json(f).dump() << "\n";
    } catch (const std::exception& e) {
      std::cout
          << nlohmann::json{{"file", f.string()}, {"valid", false}, {"error", e.what()}}.dump()
          << "\n";
      rc = 2;
    }
  }
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  // First, so a signal during start-up is remembered rather than fatal.
  mirage::training::SignalStop::install();
  // A log reader that goes away must not kill a training run.
  std::signal(SIGPIPE, SIG_IGN);

  TrainOptions o;
  std::string time_budget, inspect_target;
  std::string corpus, progress, metrics, rendezvous, profile, done_file;
  CLI::App app{"mirage-train-gpt: a checkpointed GPT-2-style trainer for chained Slurm jobs"};
  // A flag given twice takes its last value, so extra flags appended by a batch script
  // (MIRAGE_TRAIN_ARGS) override the script's defaults.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--model", o.model, "model size")
      ->check(CLI::IsMember(mirage::training::gpt_config_names()))
      ->capture_default_str();
  app.add_option("--checkpoint-dir", o.checkpoint_dir,
                 "the campaign's checkpoint directory (shared by its segments)");
  app.add_option("--steps", o.steps, "total optimizer steps of the campaign (LR schedule length)")
      ->capture_default_str();
  app.add_option("--run-steps", o.run_steps, "at most this many steps in this run (0: no limit)")
      ->capture_default_str();
  app.add_option("--time-budget", time_budget,
                 "stop and checkpoint before this wall time, e.g. 3600, 55m, 1h30m (0: none)");
  app.add_option("--checkpoint-every", o.checkpoint_every, "also checkpoint every N steps (0: off)")
      ->capture_default_str();
  app.add_option("--checkpoint-minutes", o.checkpoint_minutes,
                 "also checkpoint every M minutes (0: off)")
      ->capture_default_str();
  app.add_option("--keep", o.keep_checkpoints, "checkpoints kept (newest)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--batch", o.batch, "sequences per rank per micro-step")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--grad-accum", o.grad_accum, "micro-steps per optimizer step")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--seq-len", o.seq_len, "bytes per sequence (0: the model's context)")
      ->capture_default_str();
  app.add_option("--lr", o.lr, "peak learning rate")->capture_default_str();
  app.add_option("--min-lr-ratio", o.min_lr_ratio, "final LR as a fraction of --lr (cosine)")
      ->capture_default_str();
  app.add_option("--warmup", o.warmup, "linear warm-up steps")->capture_default_str();
  app.add_option("--weight-decay", o.weight_decay, "AdamW decoupled weight decay")
      ->capture_default_str();
  app.add_option("--grad-clip", o.grad_clip, "gradient norm clip (0: off)")->capture_default_str();
  app.add_option("--dropout", o.dropout, "dropout probability")->capture_default_str();
  app.add_option("--seed", o.seed, "seed of the initial weights and the data order")
      ->capture_default_str();
  app.add_option("--threads", o.threads,
                 "CPU threads per rank (0: SLURM_CPUS_PER_TASK, else LibTorch's default)")
      ->capture_default_str();
  app.add_option("--device", o.device, "auto, cpu or cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("--precision", o.precision,
                 "auto (bf16 on GPUs, fp32 on CPUs), bf16 (bf16 compute, fp32 master weights), "
                 "autocast (bf16 autocast over fp32; GPUs only) or fp32")
      ->check(CLI::IsMember({"auto", "bf16", "autocast", "fp32"}))
      ->capture_default_str();
  app.add_option("--attention", o.attention,
                 "attention kernel on GPUs: auto (LibTorch's choice), flash, cudnn or efficient")
      ->check(CLI::IsMember({"auto", "flash", "cudnn", "efficient"}))
      ->capture_default_str();
  app.add_option("--corpus", corpus, "training text (default: the corpus built into the binary)");
  app.add_flag("--adopt-checkpoints", o.adopt_checkpoints,
               "resume checkpoints written by another campaign (another MIRAGE_CAMPAIGN_ID, e.g. "
               "a failed campaign added again to continue it), with another --seq-len or over "
               "another corpus; refused without");
  app.add_flag("--handoff-wait", o.handoff_wait,
               "wait for the trainer holding the checkpoint directory to hand off, then resume");
  // mirage sets MIRAGE_HANDOFF_WAIT for a hand-off segment: as long as its daemon may take to
  // signal and cancel the predecessor, which a script that passes no --handoff-timeout still gets.
  app.add_option("--handoff-timeout", o.handoff_timeout_s,
                 "seconds to wait for the hand-off (default: $MIRAGE_HANDOFF_WAIT, set by mirage "
                 "in hand-off mode, else 900)")
      ->envname("MIRAGE_HANDOFF_WAIT");
  app.add_option("--progress", progress, "JSON file rewritten with the current state");
  app.add_option("--metrics", metrics, "JSON-lines file appended with each logged step");
  app.add_option("--done-file", done_file,
                 "file created once --steps are reached, which ends a mirage campaign (default: "
                 "$MIRAGE_DONE_FILE, set by mirage for every segment)");
  app.add_option("--rendezvous", rendezvous,
                 "shared directory for a file-based rendezvous (default: TCP at MASTER_ADDR, "
                 "else SLURM_LAUNCH_NODE_IPADDR)");
  app.add_option("--dist-timeout", o.dist_timeout_s, "seconds a collective may take")
      ->capture_default_str();
  app.add_option("--log-every", o.log_every, "log (and append metrics) every N steps")
      ->capture_default_str();
  app.add_option("--profile", profile,
                 "record steps with LibTorch's profiler into this Chrome trace and log the device "
                 "time by kernel (rank 0)");
  app.add_option("--profile-steps", o.profile_steps, "steps recorded by --profile")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--profile-after", o.profile_after, "steps of this run before --profile records")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--inspect", inspect_target,
                 "verify and summarise a checkpoint file or directory as JSON lines, then exit");
  try {
    app.parse(argc, argv);
    if (!inspect_target.empty()) return inspect(inspect_target);
    if (o.checkpoint_dir.empty()) {
      throw CLI::RequiredError("--checkpoint-dir (or --inspect)");
    }
    if (!time_budget.empty()) o.time_budget_s = parse_duration(time_budget);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::cerr << "mirage-train-gpt: " << e.what() << "\n";
    return mirage::training::kExitError;
  }
  if (!corpus.empty()) o.corpus = corpus;
  if (!progress.empty()) o.progress_file = progress;
  if (!metrics.empty()) o.metrics_file = metrics;
  if (done_file.empty())
    if (const char* env = std::getenv("MIRAGE_DONE_FILE")) done_file = env;
  if (!done_file.empty()) o.done_file = done_file;
  if (!rendezvous.empty()) o.rendezvous_dir = rendezvous;
  if (!profile.empty()) o.profile_file = profile;
  return mirage::training::run_trainer(o);
}
