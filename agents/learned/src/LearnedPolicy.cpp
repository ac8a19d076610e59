// A model file as a Policy: loaded once per file and shared between threads, deciding one
// observation at a time through its RowNet, without LibTorch.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>

#include "ModelFile.h"
#include "mirage/agents/learned/LearnedModel.h"
#include "mirage/agents/learned/ModelPolicyHook.h"

namespace mirage::learned {

namespace {

// Evaluation asks for the same model once per episode, from several threads: load each file once
// (again if it changes) and share the read-only network.
std::shared_ptr<const LoadedModel> cached_model(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string,
                  std::pair<std::filesystem::file_time_type, std::shared_ptr<const LoadedModel>>>
      cache;
  std::error_code ec;
  const std::string key = std::filesystem::weakly_canonical(path, ec).string();
  const auto mtime = std::filesystem::last_write_time(path, ec);
  std::lock_guard lock(mutex);
  if (auto it = cache.find(key); it != cache.end() && !ec && it->second.first == mtime)
    return it->second.second;
  auto model = load_model(path);
  if (!ec) cache[key] = {mtime, model};
  return model;
}

class LearnedPolicy final : public Policy {
 public:
  LearnedPolicy(std::string name, std::shared_ptr<const LoadedModel> model,
                std::optional<double> threshold)
      : name_(std::move(name)), model_(std::move(model)), rule_(model_->rule) {
    if (threshold) rule_.threshold = *threshold;
  }

  std::string name() const override { return name_; }

  Decision decide(const Observation& obs) override {
    // Trained on decisions while the predecessor runs; before that, wait (as `average` does).
    if (!obs.campaign.predecessor_running) return Decision::wait();
    if (obs.encoder_version != FeatureEncoder::kVersion)
      throw std::invalid_argument(
          fmt::format("policy {}: observation from feature encoder v{}, model made for v{}", name_,
                      obs.encoder_version, FeatureEncoder::kVersion));
    const std::vector<float> encoded = FeatureEncoder::encode(obs);
    const DecisionRule& rule = rule_;
    const bool guard_allows = forecast_allows_submit(encoded.data(), rule.guard);
    const bool average_submits = average_would_submit(encoded.data());
    if (rule.window.fires(encoded.data())) return Decision::submit();
    // Where no margin could make a clause submit, spare the network.
    if (!rule.submits(std::numeric_limits<double>::infinity(), guard_allows, average_submits))
      return Decision::wait();
    pooled_.resize(static_cast<std::size_t>(pooled_width(model_->waits != nullptr)));
    pool_observation(obs, encoded.data(), model_->waits.get(), pooled_.data());
    // As in probes (calibrate), where margins are floats.
    const auto margin =
        static_cast<double>(static_cast<float>(model_->row->margin(pooled_.data())));
    Decision d;
    d.action =
        rule.submits(margin, guard_allows, average_submits) ? Action::kSubmitNow : Action::kWait;
    // How far the margin is from where the decision would flip: the lowest threshold of the
    // clauses that apply here (infinitely far: certain).
    double by = guard_allows ? rule.threshold : std::numeric_limits<double>::infinity();
    if (average_submits) by = std::min(by, rule.after_average);
    d.confidence = 1.0 / (1.0 + std::exp(-std::abs(margin - by)));
    return d;
  }

 private:
  std::string name_;
  std::shared_ptr<const LoadedModel> model_;
  DecisionRule rule_;  // the model's, or with the threshold given (MODEL@THRESHOLD)
  std::vector<float> pooled_;
};

}  // namespace

std::unique_ptr<Policy> load_learned_policy(const std::string& path,
                                            std::optional<double> threshold) {
  return std::make_unique<LearnedPolicy>(std::filesystem::path(path).stem().string(),
                                         cached_model(path), threshold);
}

void register_learned_policies() {
  set_model_policy_loader(&load_learned_policy);
}

}  // namespace mirage::learned
