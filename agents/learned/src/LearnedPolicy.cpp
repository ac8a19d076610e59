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
#include "mirage/core/Error.h"

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
  // `knob`: MODEL@KNOB's number, the threshold; for a model trained with the risk as an input,
  // the risk (RiskInput.h), which sets the threshold of its nearest validated level.
  LearnedPolicy(std::string name, std::shared_ptr<const LoadedModel> model,
                std::optional<double> knob)
      : name_(std::move(name)), model_(std::move(model)), rule_(model_->rule) {
    if (model_->risk) {
      risk_ = knob.value_or(kDefaultRisk);
      rule_ = DecisionRule();  // the threshold alone: the other clauses are not trained
      rule_.threshold = threshold_at(model_->risk->points, risk_);
    } else if (knob) {
      rule_.threshold = *knob;
    }
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
    const auto width = static_cast<std::size_t>(pooled_width(model_->waits != nullptr));
    const auto risk_width =
        static_cast<std::size_t>(model_->risk ? model_->risk->inputs.width() : 0);
    pooled_.resize(width + risk_width + static_cast<std::size_t>(history_width(model_->history)));
    WaitQuantiles predicted{};
    pool_observation(obs, encoded.data(), model_->waits.get(), pooled_.data(), &predicted);
    if (model_->risk)
      model_->risk->inputs.append(pooled_.data(), &predicted, risk_, &pooled_[width]);
    if (model_->history > 0)
      gather_history(encoded.data() + (FeatureEncoder::kWindow - 1) * FeatureEncoder::kPerSnapshot,
                     model_->history, &pooled_[width + risk_width]);
    // As in probes (calibrate), where margins are floats.
    float network = model_->row->margin(pooled_.data());
    if (model_->risk) network += model_->risk->inputs.baseline(pooled_.data(), &predicted, risk_);
    const auto margin = static_cast<double>(network);
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
  DecisionRule rule_;           // the model's, or with the threshold given (MODEL@THRESHOLD)
  double risk_ = kDefaultRisk;  // a model trained with the risk as an input: MODEL@RISK's
  std::vector<float> pooled_;
};

}  // namespace

std::unique_ptr<Policy> load_learned_policy(const std::string& path, std::optional<double> knob) {
  auto model = cached_model(path);
  if (model->risk && knob)
    if (const auto problem = risk_problem(*knob)) throw InputError({path, 0, "policy"}, *problem);
  return std::make_unique<LearnedPolicy>(std::filesystem::path(path).stem().string(),
                                         std::move(model), knob);
}

bool model_knob_is_risk(const std::string& path) {
  return cached_model(path)->risk.has_value();
}

void register_learned_policies() {
  set_model_policy_loader(&load_learned_policy);
  set_model_risk_reader(&model_knob_is_risk);
}

}  // namespace mirage::learned
