#include "ProgressFile.h"

#include <spdlog/spdlog.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "AtomicFile.h"
#include "Handoff.h"

namespace mirage::training {
namespace {

nlohmann::json to_json(const Progress& p) {
  return {{"state", p.state},
          {"reason", p.reason},
          {"job_id", p.job_id},
          {"model", p.model},
          {"world_size", p.world_size},
          {"step", p.step},
          {"target_steps", p.target_steps},
          {"first_step", p.first_step},
          {"loss", p.loss},
          {"lr", p.lr},
          {"tokens_per_s", p.tokens_per_s},
          {"model_tflops", p.model_tflops},
          {"tokens_seen", p.tokens_seen},
          {"elapsed_s", p.elapsed_s},
          {"last_checkpoint_step", p.last_checkpoint_step},
          {"time", unix_time_now()}};
}

}  // namespace

ProgressReporter::ProgressReporter(std::optional<std::filesystem::path> progress_file,
                                   std::optional<std::filesystem::path> metrics_file)
    : progress_file_(std::move(progress_file)), metrics_file_(std::move(metrics_file)) {}

void ProgressReporter::update(const Progress& progress) const {
  if (!progress_file_) return;
  try {
    write_file_atomically(*progress_file_, {to_json(progress).dump() + "\n"},
                          Durability::kReadersOnly);
  } catch (const std::exception& e) {
    spdlog::warn("cannot write progress file: {}", e.what());
  }
}

void ProgressReporter::append_metrics(const Progress& progress) const {
  if (!metrics_file_) return;
  nlohmann::json j = {{"step", progress.step},     {"loss", progress.loss},
                      {"lr", progress.lr},         {"tokens_per_s", progress.tokens_per_s},
                      {"job_id", progress.job_id}, {"time", unix_time_now()}};
  std::ofstream out(*metrics_file_, std::ios::app);
  out << j.dump() << '\n';
  if (!out) spdlog::warn("cannot append to metrics file {}", metrics_file_->string());
}

}  // namespace mirage::training
