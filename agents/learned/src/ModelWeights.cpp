// Model files on the LibTorch side: training writes them (the network with its metadata and the
// decision rule chosen on validation) and reads their weights back into networks, to combine an
// ensemble's members or rewrite the metadata. Deciding reads them without LibTorch (ModelFile.cpp).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "ModelFile.h"
#include "Nets.h"
#include "mirage/agents/learned/LearnedModel.h"
#include "mirage/core/Error.h"
#include "mirage/core/Fnv.h"

namespace mirage::learned {

void save_model(const TrainContext& ctx, ScoreNet& net, const StopMetrics& val, int epochs,
                const DecisionRule& rule) {
  auto meta = nlohmann::json::parse(ctx.metadata_json);
  meta["decision_threshold"] =
      std::isinf(rule.threshold) ? nlohmann::json(nullptr) : nlohmann::json(rule.threshold);
  meta["forecast_guard"] = to_string(rule.guard);
  meta["after_average_threshold"] = std::isinf(rule.after_average) ? nlohmann::json(nullptr)
                                    : rule.after_average == DecisionRule::kAlways
                                        ? nlohmann::json("always")
                                        : nlohmann::json(rule.after_average);
  meta["window_clause"] = !rule.window.active()
                              ? nlohmann::json(nullptr)
                              : nlohmann::json{{"plan", to_string(*rule.window.plan)},
                                               {"within_s", rule.window.within},
                                               {"wait_s", rule.window.wait}};
  meta["validation"] = {{"episodes", val.episodes},
                        {"mean_cost_h", val.mean_cost_h},
                        {"mean_interruption_h", val.mean_interruption_h},
                        {"zero_interruption_share", val.zero_share},
                        {"mean_overlap_h", val.mean_overlap_h}};
  meta["training"]["epochs"] = epochs;
  torch::serialize::OutputArchive a;
  put_string(a, kModelMetaKey, meta.dump());
  torch::serialize::OutputArchive weights;
  net.save(weights);
  a.write(kModelNetKey, weights);
  save_atomically(a, ctx.config.out);
}

AgentResult save_risk_model(const TrainContext& ctx, ScoreNet& net, const RiskInputs& inputs,
                            const std::vector<RiskPoint>& points, int epochs, int pooled_features) {
  RiskPoint mid;
  for (const RiskPoint& p : points)
    if (p.risk == kDefaultRisk) mid = p;
  TrainContext with_points = ctx;
  auto meta = nlohmann::json::parse(ctx.metadata_json);
  meta["risk_input"] = risk_input_json(inputs, points);
  meta["pooled_features"] = pooled_features;
  with_points.metadata_json = meta.dump();
  DecisionRule rule;
  rule.threshold = mid.threshold;
  save_model(with_points, net, mid.val, epochs, rule);
  return {mid.val, epochs, rule};
}

namespace {

// The metadata string, or nullptr when there is none.
std::unique_ptr<std::string> read_meta_text(torch::serialize::InputArchive& a) {
  c10::IValue v;
  if (!a.try_read(kModelMetaKey, v) || !v.isString()) return nullptr;
  return std::make_unique<std::string>(v.toStringRef());
}

void open_model(torch::serialize::InputArchive& a, const std::string& path) {
  if (!std::filesystem::is_regular_file(path))
    throw InputError({path, 0, "policy"}, "no such model file");
  try {
    a.load_from(path);
  } catch (const c10::Error&) {
    throw InputError({path, 0, "policy"}, "not a mirage model file (not a LibTorch archive)");
  }
}

// The network a model file's metadata describes, untrained.
std::shared_ptr<ScoreNet> make_one_net(AgentKind kind, const nlohmann::json& hp, int width) {
  const int hidden = hp.at("hidden"), layers = hp.at("layers");
  switch (kind) {
    case AgentKind::kDqn: return std::make_shared<MlpNet>(width, hidden, layers, 2);
    case AgentKind::kPg:
      if (const int history = hp.value("history", 0); history > 0)
        return std::make_shared<SeqNet>(width, history, hp.at("history_channels"), hidden, layers);
      return std::make_shared<MlpNet>(width, hidden, layers, 1);
    case AgentKind::kMoe:
      return std::make_shared<MixtureNet>(hp.at("experts"), width, hidden, layers,
                                          hp.at("gate_hidden"));
  }
  return nullptr;
}

std::shared_ptr<ScoreNet> make_net(AgentKind kind, const nlohmann::json& meta) {
  const nlohmann::json& hp = meta.at("hyperparameters");
  const auto risk = read_risk_model(meta, "the model file");
  const int width = pooled_width(reads_wait_predictor(meta)) + (risk ? risk->inputs.width() : 0);
  const int members = hp.value("ensemble", 1);  // files from before ensembles: one network
  if (members <= 1) return make_one_net(kind, hp, width);
  std::vector<std::shared_ptr<ScoreNet>> nets;
  for (int k = 0; k < members; ++k) nets.push_back(make_one_net(kind, hp, width));
  return std::make_shared<EnsembleNet>(nets);
}

// The network of a model file, as training made it.
std::shared_ptr<ScoreNet> load_net(const std::string& path) {
  torch::serialize::InputArchive a;
  open_model(a, path);
  const auto text = read_meta_text(a);
  const ModelMeta meta = check_model_meta(text.get(), path);
  try {
    auto net = make_net(meta.kind, meta.json);
    torch::serialize::InputArchive weights;
    a.read(kModelNetKey, weights);
    net->load(weights);
    net->eval();
    return net;
  } catch (const nlohmann::json::exception&) {
    throw InputError({path, 0, "policy"}, "the model file's metadata is incomplete");
  } catch (const c10::Error&) {
    throw InputError({path, 0, "policy"},
                     "the model file's weights do not match its metadata (damaged file?)");
  }
}

}  // namespace

AgentResult combine_ensemble(const TrainContext& ctx, const std::vector<std::string>& member_files,
                             int epochs) {
  std::vector<std::shared_ptr<ScoreNet>> nets;
  for (const std::string& f : member_files) nets.push_back(load_net(f));
  // One member is that network itself (a model of one seed).
  const std::shared_ptr<ScoreNet> net =
      nets.size() == 1 ? nets.front() : std::make_shared<EnsembleNet>(nets);
  net->eval();
  const Hyperparameters& hp = ctx.config.hp;
  // The window clauses only here: they multiply the rules tried by 33, and each epoch's score
  // is the network's (the clause does not read it).
  const Calibration cal = calibrate(
      margins(*net, features_tensor(ctx.data), ctx.data, ctx.split.val), ctx.data, ctx.split.val,
      ctx.cost, candidate_rules(ctx.config.agent, hp.forecast_guard, true));
  save_model(ctx, *net, cal.val, epochs, cal.rule);
  return {cal.val, epochs, cal.rule};
}

void write_model_info(const std::string& path, const ModelInfo& info) {
  torch::serialize::InputArchive in;
  open_model(in, path);
  auto meta = nlohmann::json::parse(info.metadata_json);
  meta["agent"] = info.agent;
  meta["format_version"] = info.format_version;
  meta["encoder_version"] = info.encoder_version;
  meta["pooling_version"] = info.pooling_version;
  torch::serialize::InputArchive weights;
  in.read(kModelNetKey, weights);
  // Re-read the weights into a network of the file's shape, then write both back.
  auto net = make_net(parse_agent_kind(info.agent).value_or(AgentKind::kDqn), meta);
  net->load(weights);
  torch::serialize::OutputArchive out;
  put_string(out, kModelMetaKey, meta.dump());
  torch::serialize::OutputArchive w;
  net->save(w);
  out.write(kModelNetKey, w);
  save_atomically(out, path);
}

std::string weights_digest(const std::string& path) {
  const auto net = load_net(path);
  Fnv1a h;
  for (const auto& p : net->named_parameters(true)) {
    const auto t = p.value().contiguous();
    h.add(t.data_ptr(), static_cast<std::size_t>(t.nbytes()));
  }
  return fmt::format("{:016x}", h.h);
}

}  // namespace mirage::learned
