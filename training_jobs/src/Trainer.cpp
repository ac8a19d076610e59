#include "Trainer.h"

#include <ATen/autocast_mode.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <torch/cuda.h>
#include <torch/types.h>
#include <torch/utils.h>
#include <torch/version.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "AdamW.h"
#include "AtomicFile.h"
#include "Bf16Replica.h"
#include "ByteCorpus.h"
#include "CheckpointFile.h"
#include "CheckpointPayload.h"
#include "DataParallel.h"
#include "GptModel.h"
#include "GradientClip.h"
#include "Handoff.h"
#include "ProgressFile.h"
#include "Rendezvous.h"
#include "SignalStop.h"
#include "StepProfiler.h"

namespace mirage::training {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::chrono::milliseconds millis(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000.0));
}

// A failure that ends the run with a given exit status; the message names what went wrong.
struct RunFailure : std::runtime_error {
  RunFailure(int code, const std::string& what) : std::runtime_error(what), exit_code(code) {}
  int exit_code;
};

std::string host_name() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

void configure_logging(const DistributedEnv& env) {
  // stderr: stdout stays free for machine-readable output.
  spdlog::set_default_logger(spdlog::stderr_color_mt("mirage-train-gpt"));
  spdlog::set_pattern(
      fmt::format("[%Y-%m-%d %H:%M:%S.%e] [mirage-train-gpt job {} rank {}/{}] "
                  "[%l] %v",
                  env.job_id, env.rank, env.world_size));
  // The other ranks repeat rank 0's story; they speak up only for trouble.
  if (env.rank != 0) spdlog::set_level(spdlog::level::warn);
}

torch::Device pick_device(const std::string& wanted, int local_rank) {
  if (wanted == "cpu") return torch::kCPU;
  const bool cuda = torch::cuda::is_available();
  if (wanted == "cuda" && !cuda) {
    throw RunFailure(kExitError,
                     "--device cuda, but this LibTorch (" TORCH_VERSION ") sees no CUDA device");
  }
  if (cuda) {
    return torch::Device(torch::kCUDA,
                         static_cast<c10::DeviceIndex>(local_rank % torch::cuda::device_count()));
  }
  return torch::kCPU;
}

// Restricts scaled-dot-product attention to one kernel family (on GPUs; the CPU has one).
void set_attention_kernel(const std::string& wanted, torch::Device device) {
  if (wanted == "auto" || !device.is_cuda()) return;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  auto& context = at::globalContext();
  context.setSDPUseFlash(wanted == "flash");
  context.setSDPUseCuDNN(wanted == "cudnn");
  context.setSDPUseMemEfficient(wanted == "efficient");
  context.setSDPUseMath(false);
#else
  throw RunFailure(kExitError, "--attention " + wanted + " needs LibTorch 2.4 or later, this is " +
                                   TORCH_VERSION);
#endif
}

void set_threads(int requested) {
  int threads = requested;
  if (threads <= 0) {
    if (const char* cpus = std::getenv("SLURM_CPUS_PER_TASK")) threads = std::atoi(cpus);
  }
  if (threads > 0) torch::set_num_threads(threads);
}

// bf16 autocast for the forward pass on a GPU, with the API of whichever LibTorch this is.
class Bf16Autocast {
 public:
  explicit Bf16Autocast(bool enabled) : enabled_(enabled) {
    if (!enabled_) return;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
    at::autocast::set_autocast_enabled(at::kCUDA, true);
#else
    at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
    at::autocast::set_enabled(true);
#endif
  }
  ~Bf16Autocast() {
    if (!enabled_) return;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_enabled(at::kCUDA, false);
#else
    at::autocast::set_enabled(false);
#endif
    at::autocast::clear_cache();
  }
  Bf16Autocast(const Bf16Autocast&) = delete;
  Bf16Autocast& operator=(const Bf16Autocast&) = delete;

 private:
  bool enabled_;
};

// The random generators' state as one blob: [length, bytes] for the CPU generator, then for the
// CUDA generator of `device` when it is a GPU.
std::string rng_state(torch::Device device) {
  std::string blob;
  auto append = [&](at::Generator gen) {
    std::lock_guard<std::mutex> lock(gen.mutex());
    auto state = gen.get_state().contiguous();
    std::uint64_t n = static_cast<std::uint64_t>(state.numel());
    blob.append(reinterpret_cast<const char*>(&n), sizeof n);
    blob.append(reinterpret_cast<const char*>(state.data_ptr<std::uint8_t>()), n);
  };
  append(at::globalContext().defaultGenerator(c10::Device(c10::kCPU)));
  if (device.is_cuda()) append(at::globalContext().defaultGenerator(device));
  return blob;
}

void set_rng_state(const std::string& blob, torch::Device device) {
  std::size_t at = 0;
  auto restore = [&](at::Generator gen) {
    std::uint64_t n = 0;
    TORCH_CHECK(at + sizeof n <= blob.size(), "RNG state truncated");
    std::memcpy(&n, blob.data() + at, sizeof n);
    at += sizeof n;
    TORCH_CHECK(at + n <= blob.size(), "RNG state truncated");
    auto state = torch::empty({static_cast<std::int64_t>(n)}, torch::kUInt8);
    std::memcpy(state.data_ptr<std::uint8_t>(), blob.data() + at, n);
    at += n;
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(state);
  };
  restore(at::globalContext().defaultGenerator(c10::Device(c10::kCPU)));
  if (device.is_cuda() && at < blob.size()) restore(at::globalContext().defaultGenerator(device));
}

// A micro-batch of token ids on `device`. On a GPU the copy goes through pinned memory without
// waiting: a copy from pageable memory would make the host wait for every kernel queued so far.
torch::Tensor to_device(std::vector<std::int64_t>& ids, std::int64_t batch, std::int64_t seq_len,
                        torch::Device device) {
  auto host = torch::from_blob(ids.data(), {batch, seq_len}, torch::kLong);
  if (!device.is_cuda()) return host.clone();
  return host.pin_memory().to(device, /*non_blocking=*/true);
}

// Linear warm-up, then cosine decay to lr * min_lr_ratio at the campaign's last step: a function
// of the step alone, so a resumed run follows the same schedule.
double learning_rate(const TrainOptions& o, std::int64_t step) {
  if (o.warmup > 0 && step < o.warmup) return o.lr * double(step + 1) / double(o.warmup);
  const double span = double(std::max<std::int64_t>(1, o.steps - o.warmup));
  const double progress = std::clamp(double(step - o.warmup) / span, 0.0, 1.0);
  const double min_lr = o.lr * o.min_lr_ratio;
  return min_lr + 0.5 * (1.0 + std::cos(M_PI * progress)) * (o.lr - min_lr);
}

bool same_shape(const GptConfig& a, const GptConfig& b) {
  return a.n_layer == b.n_layer && a.n_head == b.n_head && a.n_embd == b.n_embd &&
         a.block_size == b.block_size && a.vocab_size == b.vocab_size;
}

class Trainer {
 public:
  explicit Trainer(const TrainOptions& options);
  int run();

 private:
  void start_distributed();
  bool take_checkpoint_dir();  // false: stop before training (signal during the wait)
  void resume();
  void check_identity(const std::filesystem::path& file) const;
  void share_resumed_state();
  void train();
  void save_checkpoint();
  void finish();
  void report(const std::string& state, bool metrics);

  const TrainOptions& o_;
  const Clock::time_point started_ = Clock::now();
  const double started_unix_ = unix_time_now();
  DistributedEnv env_;
  bool lead_ = false;
  GptConfig config_;
  int seq_len_ = 0;
  torch::Device device_{torch::kCPU};
  ByteCorpus corpus_{"", ""};
  std::uint32_t corpus_crc_ = 0;
  std::string campaign_id_;  // MIRAGE_CAMPAIGN_ID, set by mirage for each segment
  // MIRAGE_ADOPTED_CAMPAIGN_ID: the campaign of the job `campaign add --adopt` took over, whose
  // checkpoints this campaign continues.
  std::string adopted_campaign_id_;
  ProgressReporter reporter_{std::nullopt, std::nullopt};
  Progress progress_;
  std::unique_ptr<DataParallel> dp_;
  CheckpointDir checkpoints_;
  std::optional<TrainerLock> lock_;

  GptModel model_{nullptr};  // fp32 master weights
  std::vector<torch::Tensor> params_;
  std::string precision_;               // bf16, autocast or fp32
  std::optional<Bf16Replica> replica_;  // --precision bf16: what forward and backward run on
  std::unique_ptr<AdamW> optimizer_;
  TrainState state_;
  std::int64_t first_step_ = 0;
  std::int64_t last_checkpoint_step_ = -1;
  double checkpoint_seconds_ = 1.0;  // how long one write takes (estimated, then measured)
  std::string stop_reason_;
};

Trainer::Trainer(const TrainOptions& options)
    : o_(options), checkpoints_(options.checkpoint_dir, options.keep_checkpoints) {
  env_ = distributed_env_from_process();
  lead_ = env_.rank == 0;
  configure_logging(env_);
  auto config = gpt_config_by_name(o_.model);
  if (!config) throw RunFailure(kExitError, "unknown model '" + o_.model + "'");
  config_ = *config;
  config_.dropout = o_.dropout;
  seq_len_ = o_.seq_len > 0 ? o_.seq_len : config_.block_size;
  if (seq_len_ > config_.block_size) {
    throw RunFailure(kExitError, fmt::format("--seq-len {} exceeds the {} model's context of {}",
                                             seq_len_, config_.name, config_.block_size));
  }
  if (o_.batch < 1 || o_.grad_accum < 1) {
    throw RunFailure(kExitError, "--batch and --grad-accum must be at least 1");
  }
  set_threads(o_.threads);
  device_ = pick_device(o_.device, env_.local_rank);
  set_attention_kernel(o_.attention, device_);
  // auto: bf16 compute on GPUs, measured 16-18% faster than autocast on an H100 for a matching
  // loss curve (training_jobs/README.md); fp32 on CPUs, where bf16 matrix products are slow.
  precision_ = o_.precision == "auto" ? (device_.is_cuda() ? "bf16" : "fp32") : o_.precision;
  if (precision_ == "autocast" && !device_.is_cuda()) {
    throw RunFailure(kExitError, "--precision autocast needs a GPU: use bf16 or fp32 on CPUs");
  }
  corpus_ = o_.corpus ? ByteCorpus::from_file(*o_.corpus) : ByteCorpus::embedded();
  if (corpus_.windows(seq_len_) < 1) {
    throw RunFailure(kExitError, fmt::format("corpus {} ({} bytes) is shorter than one sequence",
                                             corpus_.name(), corpus_.size()));
  }
  corpus_crc_ = corpus_.checksum();
  if (const char* id = std::getenv("MIRAGE_CAMPAIGN_ID")) campaign_id_ = id;
  if (const char* id = std::getenv("MIRAGE_ADOPTED_CAMPAIGN_ID")) adopted_campaign_id_ = id;
  if (lead_) reporter_ = ProgressReporter(o_.progress_file, o_.metrics_file);
  progress_.job_id = env_.job_id;
  progress_.model = config_.name;
  progress_.world_size = env_.world_size;
  progress_.target_steps = o_.steps;
}

void Trainer::report(const std::string& state, bool metrics) {
  if (!lead_) return;
  progress_.state = state;
  progress_.step = state_.step;
  progress_.first_step = first_step_;
  progress_.tokens_seen = state_.tokens_seen;
  progress_.elapsed_s = seconds_since(started_);
  progress_.last_checkpoint_step = last_checkpoint_step_;
  progress_.reason = stop_reason_;
  reporter_.update(progress_);
  if (metrics) reporter_.append_metrics(progress_);
}

void Trainer::start_distributed() {
  report("starting", false);
  DataParallelOptions options;
  if (o_.rendezvous_dir) options.rendezvous_dir = o_.rendezvous_dir->string();
  options.timeout = millis(o_.dist_timeout_s);
  dp_ = std::make_unique<DataParallel>(env_, options, device_);
  spdlog::info("{} rank(s), backend {}, device {}, {} CPU thread(s), LibTorch {}",
               dp_->world_size(), dp_->backend(), device_.str(), torch::get_num_threads(),
               TORCH_VERSION);
}

bool Trainer::take_checkpoint_dir() {
  // Rank 0 alone owns the directory; it tells the others what it decided through the store.
  std::string decision = "go";
  if (lead_) {
    std::string owner = fmt::format("pid {} host {} job {}", ::getpid(), host_name(), env_.job_id);
    if (o_.handoff_wait) {
      report("waiting", false);
      spdlog::info("hand-off mode: waiting up to {:.0f} s for the trainer holding {} to exit",
                   o_.handoff_timeout_s, o_.checkpoint_dir.string());
      switch (wait_for_predecessor(
          o_.checkpoint_dir, owner, millis(o_.handoff_timeout_s), std::chrono::milliseconds(200),
          [] { return SignalStop::requested(); }, lock_)) {
        case HandoffWait::acquired: break;
        case HandoffWait::stopped: decision = "stop"; break;
        case HandoffWait::timed_out: decision = "locked"; break;
      }
    } else {
      lock_ = TrainerLock::try_acquire(o_.checkpoint_dir, owner);
      if (!lock_) decision = "locked";
    }
    dp_->store_set("start", decision);
  } else {
    // Polled rather than a blocking get, so a long hand-off wait on rank 0 does not run into the
    // store's timeout.
    auto deadline = Clock::now() + millis(o_.handoff_timeout_s + o_.dist_timeout_s);
    while (!dp_->store_check("start")) {
      if (Clock::now() > deadline) throw RunFailure(kExitError, "rank 0 never decided to start");
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    decision = dp_->store_get("start");
  }
  if (decision == "locked") {
    std::string holder = lead_ ? TrainerLock::holder(o_.checkpoint_dir) : "";
    throw RunFailure(kExitLocked,
                     fmt::format("checkpoint directory {} is held by another trainer ({}){}",
                                 o_.checkpoint_dir.string(), holder.empty() ? "unknown" : holder,
                                 o_.handoff_wait ? ": hand-off wait timed out"
                                                 : "; start with --handoff-wait to wait for it"));
  }
  if (decision == "stop") {
    stop_reason_ = std::string(SignalStop::signal_name()) + " while waiting for the predecessor";
    return false;
  }
  if (lead_ && o_.handoff_wait) {
    auto marker = read_handoff_marker(o_.checkpoint_dir);
    if (marker && marker->time_unix >= started_unix_) {
      spdlog::info("hand-off received: job {} stopped at step {} ({}), checkpoint {}",
                   marker->job_id, marker->step, marker->reason, marker->checkpoint);
    } else {
      spdlog::info("no predecessor was running: resuming from what the directory holds");
    }
  }
  return true;
}

void Trainer::resume() {
  // The same initial weights on every rank (and rank 0's are broadcast anyway).
  torch::manual_seed(o_.seed);
  model_ = GptModel(config_);
  model_->to(device_);
  params_ = model_->parameters();
  AdamWOptions adam;
  adam.weight_decay = o_.weight_decay;
  optimizer_ = std::make_unique<AdamW>(params_, adam);
  state_.data_seed = o_.seed;

  std::string decision = "fresh";
  if (lead_) {
    // A directory that cannot be listed is not an empty one: no fresh start beside checkpoints
    // this run cannot see.
    auto listed = [&](const auto& list) {
      try {
        return list();
      } catch (const CheckpointUnreadable& e) {
        throw RunFailure(kExitError, fmt::format("{}; not starting at step 0 beside checkpoints "
                                                 "it may hold (may pass at the next attempt)",
                                                 e.what()));
      }
    };
    checkpoints_.remove_stale_temporaries();
    auto entries = listed([&] { return checkpoints_.list(); });
    for (const auto& entry : entries) {
      try {
        PayloadReader payload = CheckpointDir::open_payload(entry.path);
        GptConfig saved = payload_config(payload);
        if (!same_shape(saved, config_)) {
          throw RunFailure(kExitError,
                           fmt::format("checkpoint {} holds the {} model, this run trains {}",
                                       entry.path.string(), saved.name, config_.name));
        }
        decode_payload(payload, model_, *optimizer_, state_);
        check_identity(entry.path);
        last_checkpoint_step_ = entry.step;
        decision = "resumed";
        spdlog::info("resuming from {} (step {}, {} sequences consumed)", entry.path.string(),
                     state_.step, state_.data_position);
        break;
      } catch (const RunFailure&) {
        throw;
      } catch (const CheckpointUnreadable& e) {
        // Resuming from an older checkpoint would redo the steps since, for a read that may
        // pass at the next attempt.
        throw RunFailure(kExitError,
                         fmt::format("checkpoint {} cannot be read: {}; left in place, not "
                                     "resuming from an older one",
                                     entry.path.string(), e.what()));
      } catch (const CheckpointError& e) {
        spdlog::warn("checkpoint {} rejected: {}; moved aside as .corrupt, trying the previous one",
                     entry.path.string(), e.what());
        CheckpointDir::quarantine(entry.path);
      } catch (const std::exception& e) {
        // Its checksums hold: the bytes are as written, by a trainer whose layout this one
        // does not read.
        throw RunFailure(kExitError,
                         fmt::format("checkpoint {} verifies but does not load: {}; left in "
                                     "place (written by another build of the trainer?)",
                                     entry.path.string(), e.what()));
      }
    }
    // Checkpoints moved aside by an earlier attempt count: an empty list then is no fresh start.
    if (decision == "fresh" &&
        (!entries.empty() || !listed([&] { return checkpoints_.quarantined(); }).empty()))
      decision = "no-valid";
    if (decision == "fresh")
      spdlog::info("no checkpoint in {}: starting at step 0", o_.checkpoint_dir.string());
    dp_->store_set("resume", decision);
  } else {
    decision = dp_->store_get("resume");
  }
  if (decision == "no-valid") {
    throw RunFailure(kExitNoValidCheckpoint,
                     fmt::format("no checkpoint in {} verifies or loads (all moved aside as "
                                 ".corrupt); not starting over silently: remove them to do so",
                                 o_.checkpoint_dir.string()));
  }
  share_resumed_state();
}

// The data position counts sequences of seq_len bytes of one corpus: with another length or text
// it would name other text (some seen twice, some skipped). And a directory shared by two
// campaigns would let the second resume, and perhaps end "done" on, the first's checkpoints.
// What a checkpoint does not record (an older trainer's, a run outside a campaign) passes; so
// does a checkpoint of the campaign whose job this one adopted (`campaign add --adopt`), and,
// with --adopt-checkpoints, anything (a warm-up of the sequence length, text added to the corpus).
void Trainer::check_identity(const std::filesystem::path& file) const {
  const auto refuse_or_adopt = [&](const std::string& why) {
    if (!o_.adopt_checkpoints)
      throw RunFailure(kExitError, why + "; --adopt-checkpoints continues from it all the same");
    spdlog::warn("--adopt-checkpoints: {}; continuing from it", why);
  };
  if (state_.seq_len > 0 && state_.seq_len != seq_len_) {
    refuse_or_adopt(
        fmt::format("checkpoint {} was written with --seq-len {}, this run has "
                    "--seq-len {}: its data position counts sequences of {} bytes",
                    file.string(), state_.seq_len, seq_len_, state_.seq_len));
  }
  if (state_.corpus_size >= 0 && (state_.corpus_size != static_cast<std::int64_t>(corpus_.size()) ||
                                  state_.corpus_crc != corpus_crc_)) {
    refuse_or_adopt(fmt::format(
        "checkpoint {} was written over corpus {} ({} bytes, CRC {:08x}), this run reads {} ({} "
        "bytes, CRC {:08x}): its data position is a place in the former",
        file.string(), state_.corpus_name, state_.corpus_size, state_.corpus_crc, corpus_.name(),
        corpus_.size(), corpus_crc_));
  }
  if (!state_.campaign_id.empty() && !campaign_id_.empty() && state_.campaign_id != campaign_id_ &&
      state_.campaign_id != adopted_campaign_id_) {
    refuse_or_adopt(fmt::format("checkpoint {} belongs to campaign {}, this run is campaign {}",
                                file.string(), state_.campaign_id, campaign_id_));
  }
}

void Trainer::share_resumed_state() {
  // Weights and optimizer moments from rank 0 (whether resumed or fresh).
  std::vector<torch::Tensor> tensors = params_;
  for (auto& t : optimizer_->state_tensors()) tensors.push_back(t);
  dp_->broadcast_from_rank0(tensors);

  if (lead_) {
    nlohmann::json meta = {{"step", state_.step},
                           {"data_position", state_.data_position},
                           {"tokens_seen", state_.tokens_seen},
                           {"loss", state_.loss},
                           {"data_seed", state_.data_seed},
                           {"world_size", state_.world_size},
                           {"rng_count", state_.rng_states.size()},
                           {"last_checkpoint_step", last_checkpoint_step_}};
    dp_->store_set("meta", meta.dump());
  }
  auto meta = nlohmann::json::parse(dp_->store_get("meta"));
  state_.step = meta["step"];
  state_.data_position = meta["data_position"];
  state_.tokens_seen = meta["tokens_seen"];
  state_.loss = meta["loss"];
  state_.data_seed = meta["data_seed"];
  last_checkpoint_step_ = meta["last_checkpoint_step"];
  optimizer_->set_steps_taken(state_.step);
  first_step_ = state_.step;

  // Each rank's own dropout stream: restored exactly when the world size is unchanged, else
  // reseeded (and said so).
  const std::size_t rng_count = meta["rng_count"];
  const int saved_world = meta["world_size"];
  if (rng_count == static_cast<std::size_t>(dp_->world_size()) &&
      saved_world == dp_->world_size()) {
    if (lead_) {
      for (int r = 1; r < dp_->world_size(); ++r) {
        dp_->store_set("rng-resume/" + std::to_string(r), state_.rng_states[r]);
      }
      set_rng_state(state_.rng_states[0], device_);
    } else {
      set_rng_state(dp_->store_get("rng-resume/" + std::to_string(env_.rank)), device_);
    }
  } else {
    if (rng_count > 0) {
      spdlog::warn("checkpoint holds RNG states of {} rank(s), this run has {}: reseeding",
                   rng_count, dp_->world_size());
    }
    torch::manual_seed(o_.seed + 1 + static_cast<std::uint64_t>(env_.rank) +
                       7919 * static_cast<std::uint64_t>(state_.step));
  }
}

void Trainer::save_checkpoint() {
  // Every rank's RNG state reaches rank 0 through the store.
  const std::string mine = rng_state(device_);
  const std::string prefix = "rng-save/" + std::to_string(state_.step) + "/";
  if (!lead_) dp_->store_set(prefix + std::to_string(env_.rank), mine);
  if (lead_) {
    auto t0 = Clock::now();
    state_.world_size = dp_->world_size();
    state_.seq_len = seq_len_;
    state_.corpus_name = corpus_.name();
    state_.corpus_size = static_cast<std::int64_t>(corpus_.size());
    state_.corpus_crc = corpus_crc_;
    state_.campaign_id = campaign_id_;
    state_.rng_states.assign(static_cast<std::size_t>(dp_->world_size()), "");
    state_.rng_states[0] = mine;
    for (int r = 1; r < dp_->world_size(); ++r) {
      state_.rng_states[r] = dp_->store_get(prefix + std::to_string(r));
    }
    auto file = checkpoints_.write(state_.step, [&](const PayloadSink& sink) {
      encode_payload(model_, *optimizer_, state_, sink);
    });
    checkpoint_seconds_ = seconds_since(t0);
    spdlog::info("checkpoint {} written in {:.2f} s", file.string(), checkpoint_seconds_);
  }
  last_checkpoint_step_ = state_.step;
  // Nobody runs ahead of (or exits before) a checkpoint that is not on disk yet.
  dp_->barrier();
}

void Trainer::train() {
  const int world = dp_->world_size();
  const std::int64_t sequences_per_step = std::int64_t{world} * o_.batch * o_.grad_accum;
  const std::int64_t tokens_per_step = sequences_per_step * seq_len_;
  const auto deadline =
      o_.time_budget_s > 0 ? started_ + millis(o_.time_budget_s) : Clock::time_point::max();
  if (lead_) {
    spdlog::info(
        "model {} ({} parameters), {} steps target, batch {} x {} rank(s) x {} accum x "
        "{} bytes, corpus {} ({} bytes), AdamW {}, precision {}, device {}",
        config_.name, config_.parameter_count(), o_.steps, o_.batch, world, o_.grad_accum, seq_len_,
        corpus_.name(), corpus_.size(), optimizer_->fused() ? "fused" : "per-tensor", precision_,
        device_.str());
  }
  // Until the first write measures it: about 12 bytes per parameter (weights and two moments)
  // at a modest 100 MB/s.
  checkpoint_seconds_ = 1.0 + 12.0 * double(config_.parameter_count()) / 100e6;
  // A signal during start-up: all ranks agree to leave before the first step.
  if (dp_->sum({SignalStop::requested() ? 1.0 : 0.0})[0] > 0) {
    stop_reason_ = std::string(SignalStop::signal_name()) + " before the first step";
    return;
  }
  if (precision_ == "bf16") replica_.emplace(config_, params_, device_);
  GptModel& compute = replica_ ? replica_->model() : model_;
  const bool autocast = precision_ == "autocast";
  compute->train();
  report("running", false);
  std::vector<std::int64_t> inputs, targets;
  // A micro-batch on the device, by the index of its first sequence in the campaign's order.
  struct DeviceBatch {
    std::int64_t first = -1;
    torch::Tensor x, y;
  };
  auto load_batch = [&](std::int64_t first) {
    corpus_.fill(first, o_.batch, seq_len_, state_.data_seed, inputs, targets);
    return DeviceBatch{first, to_device(inputs, o_.batch, seq_len_, device_),
                       to_device(targets, o_.batch, seq_len_, device_)};
  };
  // Rank r's micro-batch m of the step starting at `position`: the same global sequences however
  // the batch is split.
  auto first_sequence = [&](std::int64_t position, int micro) {
    return position + (std::int64_t{env_.rank} * o_.grad_accum + micro) * o_.batch;
  };
  std::optional<DeviceBatch> prefetched;
  auto window_start = Clock::now();
  std::int64_t window_tokens = 0;
  std::int64_t window_steps = 0;
  double window_host_s = 0, window_wait_s = 0;
  auto last_checkpoint_time = Clock::now();
  double last_step_s = 0;
  StepProfiler profiler(o_.profile_file.value_or(""), o_.profile_after,
                        lead_ && o_.profile_file ? o_.profile_steps : 0, device_);

  for (;;) {
    if (state_.step >= o_.steps) {
      stop_reason_ = "done";
      return;
    }
    if (o_.run_steps > 0 && state_.step - first_step_ >= o_.run_steps) {
      stop_reason_ = "run step budget";
      return;
    }
    profiler.before_step(state_.step - first_step_);
    const auto step_start = Clock::now();
    const double lr = learning_rate(o_, state_.step);
    optimizer_->zero_grad();
    torch::Tensor loss_total;
    for (int micro = 0; micro < o_.grad_accum; ++micro) {
      const std::int64_t first = first_sequence(state_.data_position, micro);
      DeviceBatch batch =
          prefetched && prefetched->first == first ? std::move(*prefetched) : load_batch(first);
      prefetched.reset();
      torch::Tensor loss;
      {
        Bf16Autocast bf16_autocast(autocast);
        loss = compute->loss(batch.x, batch.y);
      }
      (loss / o_.grad_accum).backward();
      if (replica_) replica_->push_gradients();
      loss_total = micro == 0 ? loss.detach().to(torch::kFloat) : loss_total + loss.detach();
    }
    // Stop decisions ride in the gradient all-reduce: any rank's signal or deadline stops all
    // ranks after this same step. On a GPU the step's work is only queued at this point: this
    // step and the next (each as long as the last one) and a checkpoint must fit.
    const double step_estimate = std::max(last_step_s, seconds_since(step_start));
    const bool signalled = SignalStop::requested();
    const bool out_of_time =
        step_start + millis(2 * step_estimate + checkpoint_seconds_) >= deadline;
    const bool checkpoint_due =
        lead_ && ((o_.checkpoint_every > 0 && (state_.step + 1) % o_.checkpoint_every == 0) ||
                  (o_.checkpoint_minutes > 0 &&
                   seconds_since(last_checkpoint_time) >= o_.checkpoint_minutes * 60));
    auto step_sums = dp_->reduce_step(
        params_, loss_total / o_.grad_accum,
        {signalled ? 1.0 : 0.0, out_of_time ? 1.0 : 0.0, checkpoint_due ? 1.0 : 0.0});
    if (o_.grad_clip > 0) clip_grad_norm(params_, o_.grad_clip);
    optimizer_->step(lr);
    if (replica_) replica_->pull_weights();
    // On a GPU the next step's first micro-batch is read and queued now, while the device still
    // works: after the wait below the host only has to queue the forward pass.
    if (device_.is_cuda()) {
      prefetched = load_batch(first_sequence(state_.data_position + sequences_per_step, 0));
    }
    // The one wait for the device in a step, once all of the step's work is queued (waiting
    // before the optimizer step left the GPU idle while the host queued it); what comes before
    // it is the host's share.
    const auto queued = Clock::now();
    const auto sums_tensor = step_sums.to(torch::kCPU, torch::kDouble);
    const std::vector<double> sums(sums_tensor.data_ptr<double>(),
                                   sums_tensor.data_ptr<double>() + sums_tensor.numel());
    window_host_s += std::chrono::duration<double>(queued - step_start).count();
    window_wait_s += seconds_since(queued);

    ++state_.step;
    state_.data_position += sequences_per_step;
    state_.tokens_seen += tokens_per_step;
    state_.loss = sums[0] / world;
    last_step_s = seconds_since(step_start);
    profiler.after_step(state_.step - 1 - first_step_);
    window_tokens += tokens_per_step;
    ++window_steps;

    const bool stop = sums[1] > 0 || sums[2] > 0;
    const bool log_now = o_.log_every > 0 && (state_.step % o_.log_every == 0 ||
                                              state_.step == first_step_ + 1 || stop);
    if (log_now) {
      progress_.loss = state_.loss;
      progress_.lr = lr;
      progress_.tokens_per_s = double(window_tokens) / std::max(1e-9, seconds_since(window_start));
      progress_.model_tflops =
          progress_.tokens_per_s * config_.model_flops_per_token(seq_len_) / 1e12;
      // host: queueing a step's work; wait: then waiting for the device to finish it. A host
      // share near the whole step time means the GPU starves for work.
      spdlog::info(
          "step {} loss {:.4f} lr {:.3g} {:.0f} tokens/s {:.3g} model TFLOP/s (per step: host "
          "{:.1f} ms, wait {:.1f} ms)",
          state_.step, state_.loss, lr, progress_.tokens_per_s, progress_.model_tflops,
          1e3 * window_host_s / double(window_steps), 1e3 * window_wait_s / double(window_steps));
      window_start = Clock::now();
      window_tokens = 0;
      window_steps = 0;
      window_host_s = window_wait_s = 0;
      report("running", true);
    }
    if (stop) {
      stop_reason_ = sums[1] > 0 ? (SignalStop::requested() ? SignalStop::signal_name()
                                                            : "signal on another rank")
                                 : "time budget";
      return;
    }
    if (sums[3] > 0) {
      save_checkpoint();
      last_checkpoint_time = Clock::now();
    }
  }
}

void Trainer::finish() {
  if (state_.step > last_checkpoint_step_) save_checkpoint();
  if (lead_ && last_checkpoint_step_ >= 0) {
    HandoffMarker marker;
    marker.step = last_checkpoint_step_;
    marker.checkpoint = checkpoint_file_name(last_checkpoint_step_);
    marker.job_id = env_.job_id;
    marker.time_unix = unix_time_now();
    marker.reason = stop_reason_;
    write_handoff_marker(o_.checkpoint_dir, marker);
  }
  // The campaign is finished: its segments stop here (mirage reads the file when this one exits).
  // The step decides, not the stop's reason: a signal or the time budget on the step that reaches
  // the target ends the campaign too, or the daemon would queue a segment only to say so.
  const bool done = state_.step >= o_.steps;
  if (lead_ && done && o_.done_file) {
    write_file_atomically(*o_.done_file,
                          {"step " + std::to_string(state_.step) + ", job " + env_.job_id + "\n"});
    spdlog::info("reached {} steps: created {}", o_.steps, o_.done_file->string());
  }
  report(done ? "done" : "stopped", false);
  if (SignalStop::requested()) {
    spdlog::info("stopped at step {} ({}), {:.2f} s after {}", state_.step, stop_reason_,
                 SignalStop::seconds_since_signal(), SignalStop::signal_name());
  } else {
    spdlog::info("stopped at step {} ({})", state_.step, stop_reason_);
  }
}

int Trainer::run() {
  start_distributed();
  if (!take_checkpoint_dir()) {
    // Not 0: a segment that trained nothing because its predecessor held the directory to the
    // end must not count as a segment done.
    report("stopped", false);
    spdlog::info("stopped before training: {}", stop_reason_);
    return kExitLocked;
  }
  resume();
  train();
  finish();
  return kExitOk;
}

}  // namespace

int run_trainer(const TrainOptions& options) {
  // Progress of a run that failed before (or while) it could say so itself.
  ProgressReporter failure_reporter(options.progress_file, std::nullopt);
  auto fail = [&](int code, const std::string& what) {
    spdlog::error("{}", what);
    Progress p;
    p.state = "failed";
    p.reason = what;
    p.model = options.model;
    if (const char* job = std::getenv("SLURM_JOB_ID")) p.job_id = job;
    bool lead = true;
    try {
      lead = distributed_env_from_process().rank == 0;
    } catch (const std::exception&) {
    }
    if (lead) failure_reporter.update(p);
    return code;
  };
  try {
    Trainer trainer(options);
    return trainer.run();
  } catch (const RunFailure& e) {
    return fail(e.exit_code, e.what());
  } catch (const std::exception& e) {
    return fail(kExitError, e.what());
  }
}

}  // namespace mirage::training
