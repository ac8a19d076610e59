// The model file: a network with its metadata (agent, hyperparameters, pooling, the decision
// rule chosen on validation), written by training and read, older versions included, by the
// policy that serves it.
#include "ModelFile.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "mirage/core/Error.h"
#include "mirage/core/Fnv.h"
#include "mirage/learned/LearnedModel.h"

namespace mirage::learned {
namespace {

constexpr char kFormat[] = "mirage-model";
constexpr int kFormatVersion = 1;
constexpr char kMetaKey[] = "mirage_meta";
constexpr char kNetKey[] = "net";

}  // namespace

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
                              : nlohmann::json{{"plan", to_string(rule.window.plan)},
                                               {"within_s", rule.window.within},
                                               {"wait_s", rule.window.wait}};
  meta["validation"] = {{"episodes", val.episodes},
                        {"mean_cost_h", val.mean_cost_h},
                        {"mean_interruption_h", val.mean_interruption_h},
                        {"zero_interruption_share", val.zero_share},
                        {"mean_overlap_h", val.mean_overlap_h}};
  meta["training"]["epochs"] = epochs;
  torch::serialize::OutputArchive a;
  put_string(a, kMetaKey, meta.dump());
  torch::serialize::OutputArchive weights;
  net.save(weights);
  a.write(kNetKey, weights);
  save_atomically(a, ctx.config.out);
}

namespace {

nlohmann::json read_meta(torch::serialize::InputArchive& a, const std::string& path) {
  c10::IValue v;
  if (!a.try_read(kMetaKey, v) || !v.isString())
    throw InputError({path, 0, "policy"}, "not a mirage model file (no metadata)");
  auto meta = nlohmann::json::parse(v.toStringRef(), nullptr, false);
  if (meta.is_discarded() || meta.value("format", "") != kFormat)
    throw InputError({path, 0, "policy"}, "not a mirage model file (bad metadata)");
  return meta;
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

// Files made before the guard existed decide without it; before there were two guards, `true`
// meant the forecast from time limits.
ForecastGuard read_guard(const nlohmann::json& meta, const std::string& path) {
  const auto it = meta.find("forecast_guard");
  if (it == meta.end()) return ForecastGuard::kOff;
  if (it->is_boolean()) return it->get<bool>() ? ForecastGuard::kLimits : ForecastGuard::kOff;
  if (it->is_string())
    if (const auto g = parse_forecast_guard(it->get<std::string>())) return *g;
  throw InputError({path, 0, "policy"},
                   fmt::format("the model file's forecast_guard is {}; expected off, limits, "
                               "halved or recent (retrain it with `mirage train`)",
                               it->dump()));
}

// Files made before rules could follow `average` never do.
double read_after_average(const nlohmann::json& meta, const std::string& path) {
  const auto it = meta.find("after_average_threshold");
  if (it == meta.end() || it->is_null()) return std::numeric_limits<double>::infinity();
  if (it->is_number()) return it->get<double>();
  if (*it == "always") return DecisionRule::kAlways;
  throw InputError({path, 0, "policy"},
                   fmt::format("the model file's after_average_threshold is {}; expected a "
                               "number, \"always\" or null (retrain it with `mirage train`)",
                               it->dump()));
}

// Files made before the window clause have none (null: none either).
WindowClause read_window_clause(const nlohmann::json& meta, const std::string& path) {
  const auto it = meta.find("window_clause");
  if (it == meta.end() || it->is_null()) return {};
  const auto bad = [&] {
    return InputError(
        {path, 0, "policy"},
        fmt::format("the model file's window_clause is {}; expected null or "
                    "{{\"plan\": \"limits\"|\"halved\"|\"recent\", \"within_s\": seconds, "
                    "\"wait_s\": seconds}} (retrain it with `mirage train`)",
                    it->dump()));
  };
  if (!it->is_object()) throw bad();
  WindowClause w;
  const auto plan = parse_forecast_guard(it->value("plan", ""));
  if (!plan || *plan == ForecastGuard::kOff) throw bad();
  w.plan = *plan;
  const auto within = it->find("within_s"), wait = it->find("wait_s");
  if (within == it->end() || wait == it->end() || !within->is_number_integer() ||
      !wait->is_number_integer())
    throw bad();
  w.within = within->get<Seconds>();
  w.wait = wait->get<Seconds>();
  return w;
}

// The network a model file's metadata describes, untrained.
std::shared_ptr<ScoreNet> make_one_net(AgentKind kind, const nlohmann::json& hp) {
  const int width = kPooledFeatures;
  const int hidden = hp.at("hidden"), layers = hp.at("layers");
  switch (kind) {
    case AgentKind::kDqn: return std::make_shared<MlpNet>(width, hidden, layers, 2);
    case AgentKind::kPg: return std::make_shared<MlpNet>(width, hidden, layers, 1);
    case AgentKind::kMoe:
      return std::make_shared<MixtureNet>(hp.at("experts"), width, hidden, layers,
                                          hp.at("gate_hidden"));
  }
  return nullptr;
}

std::shared_ptr<ScoreNet> make_net(AgentKind kind, const nlohmann::json& hp) {
  const int members = hp.value("ensemble", 1);  // files from before ensembles: one network
  if (members <= 1) return make_one_net(kind, hp);
  std::vector<std::shared_ptr<ScoreNet>> nets;
  for (int k = 0; k < members; ++k) nets.push_back(make_one_net(kind, hp));
  return std::make_shared<EnsembleNet>(nets);
}

}  // namespace

std::shared_ptr<const LoadedModel> load_model(const std::string& path) {
  torch::serialize::InputArchive a;
  open_model(a, path);
  const auto meta = read_meta(a, path);
  const std::string stem = std::filesystem::path(path).stem().string();
  // "model M <made> vN; this mirage <has> vK; retrain it": a version this build cannot read.
  const auto require = [&](const char* key, int expected, const char* made, const char* has) {
    const int version = meta.value(key, 0);
    if (version != expected)
      throw InputError({path, 0, "policy"},
                       fmt::format("model {} {} v{}; this mirage {} v{}; retrain it with "
                                   "`mirage train`",
                                   stem, made, version, has, expected));
  };
  require("format_version", kFormatVersion, "has file format", "reads");
  require("encoder_version", FeatureEncoder::kVersion, "was made by feature encoder", "has");
  require("pooling_version", kPoolingVersion, "was made with feature pooling", "has");
  auto model = std::make_shared<LoadedModel>();
  const auto kind = parse_agent_kind(meta.value("agent", ""));
  if (!kind) throw InputError({path, 0, "policy"}, "unknown agent kind in the model file");
  model->kind = *kind;
  torch::serialize::InputArchive weights;
  try {
    const auto& hp = meta.at("hyperparameters");
    // History blocks were an input tried and removed; a model that reads them cannot be served.
    if (const int blocks = hp.value("history_blocks", 0); blocks != 0)
      throw InputError({path, 0, "policy"},
                       fmt::format("model {} reads history blocks (history_blocks = {}), an input "
                                   "this mirage no longer has; retrain it with `mirage train`",
                                   stem, blocks));
    // null: never submit early (JSON has no infinity).
    const auto& t = meta.at("decision_threshold");
    model->rule.threshold = t.is_null() ? std::numeric_limits<double>::infinity() : t.get<double>();
    model->rule.guard = read_guard(meta, path);
    model->rule.after_average = read_after_average(meta, path);
    model->rule.window = read_window_clause(meta, path);
    model->net = make_net(*kind, hp);
    a.read(kNetKey, weights);
    model->net->load(weights);
  } catch (const nlohmann::json::exception&) {
    throw InputError({path, 0, "policy"}, "the model file's metadata is incomplete");
  } catch (const c10::Error&) {
    throw InputError({path, 0, "policy"},
                     "the model file's weights do not match its metadata (damaged file?)");
  }
  model->net->eval();
  model->row = RowNet::copy_of(*model->net);
  return model;
}

AgentResult combine_ensemble(const TrainContext& ctx, const std::vector<std::string>& member_files,
                             int epochs) {
  std::vector<std::shared_ptr<ScoreNet>> nets;
  for (const std::string& f : member_files) nets.push_back(load_model(f)->net);
  // One member is that network itself (a model of one seed).
  const std::shared_ptr<ScoreNet> net =
      nets.size() == 1 ? nets.front() : std::make_shared<EnsembleNet>(nets);
  net->eval();
  const Hyperparameters& hp = ctx.config.hp;
  // The window clauses only here: they multiply the rules tried by 33, and each epoch's score
  // is the network's (the clause does not read it).
  const Calibration cal = calibrate(
      margins(*net, features_tensor(ctx.data), ctx.data, ctx.split.val), ctx.data, ctx.split.val,
      ctx.cost, candidate_rules(ctx.config.agent, hp, hp.forecast_guard, true), ctx.overlap_cap);
  save_model(ctx, *net, cal.val, epochs, cal.rule);
  return {cal.val, epochs, cal.rule};
}

ModelInfo read_model_info(const std::string& path) {
  torch::serialize::InputArchive a;
  open_model(a, path);
  const auto meta = read_meta(a, path);
  ModelInfo info;
  info.agent = meta.value("agent", "");
  info.format_version = meta.value("format_version", 0);
  info.encoder_version = meta.value("encoder_version", 0);
  info.pooling_version = meta.value("pooling_version", 0);
  info.metadata_json = meta.dump(2);
  return info;
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
  in.read(kNetKey, weights);
  // Re-read the weights into a network of the file's shape, then write both back.
  auto net =
      make_net(parse_agent_kind(info.agent).value_or(AgentKind::kDqn), meta.at("hyperparameters"));
  net->load(weights);
  torch::serialize::OutputArchive out;
  put_string(out, kMetaKey, meta.dump());
  torch::serialize::OutputArchive w;
  net->save(w);
  out.write(kNetKey, w);
  save_atomically(out, path);
}

std::string weights_digest(const std::string& path) {
  const auto model = load_model(path);
  Fnv1a h;
  for (const auto& p : model->net->named_parameters(true)) {
    const auto t = p.value().contiguous();
    h.add(t.data_ptr(), static_cast<std::size_t>(t.nbytes()));
  }
  return fmt::format("{:016x}", h.h);
}

}  // namespace mirage::learned
