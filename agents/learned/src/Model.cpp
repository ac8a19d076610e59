// Networks, model files, checkpoints and the LearnedPolicy that serves a model file.
#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "Nets.h"
#include "RowNet.h"
#include "mirage/agents/learned/ModelPolicyHook.h"
#include "mirage/core/DurableFile.h"
#include "mirage/core/Error.h"
#include "mirage/core/Fnv.h"
#include "mirage/learned/LearnedModel.h"

namespace mirage::learned {
namespace {

constexpr char kFormat[] = "mirage-model";
constexpr int kFormatVersion = 1;
constexpr char kMetaKey[] = "mirage_meta";
constexpr char kNetKey[] = "net";
constexpr double kMinStddev = 0.05;  // features that barely moved in training stay tame
constexpr std::int64_t kChunk = 16384;

}  // namespace

// ---- networks ------------------------------------------------------------------------------

MlpNet::MlpNet(int inputs, int hidden, int layers, int outputs) {
  mean = register_buffer("mean", torch::zeros({inputs}));
  inv_std = register_buffer("inv_std", torch::ones({inputs}));
  torch::nn::Sequential seq;
  int width = inputs;
  for (int l = 0; l < layers; ++l) {
    seq->push_back(torch::nn::Linear(width, hidden));
    seq->push_back(torch::nn::ReLU());
    width = hidden;
  }
  body = register_module("body", seq);
  head = register_module("head", torch::nn::Linear(width, outputs));
}

torch::Tensor MlpNet::forward(const torch::Tensor& x) {
  auto z = ((x - mean) * inv_std).clamp(-kInputClamp, kInputClamp);
  return head(body->forward(z));
}

void MlpNet::set_standardisation(const torch::Tensor& m, const torch::Tensor& s) {
  torch::NoGradGuard no_grad;
  mean.copy_(m);
  inv_std.copy_(1.0 / s.clamp_min(kMinStddev));
}

MixtureNet::MixtureNet(int n, int inputs, int hidden, int layers, int gate_hidden) {
  for (int k = 0; k < n; ++k) {
    expert_nets.push_back(std::make_shared<MlpNet>(inputs, hidden, layers, 2));
    experts->push_back(expert_nets.back());
  }
  register_module("experts", experts);
  gate = register_module("gate", std::make_shared<MlpNet>(inputs, gate_hidden, 1, n));
}

torch::Tensor MixtureNet::gate_weights(const torch::Tensor& x) {
  return torch::softmax(gate->forward(x), 1);
}

torch::Tensor MixtureNet::forward(const torch::Tensor& x) {
  std::vector<torch::Tensor> qs;
  for (const auto& e : expert_nets) qs.push_back(e->forward(x));
  const auto q = torch::stack(qs, 1);           // [N, K, 2]
  const auto w = gate_weights(x).unsqueeze(2);  // [N, K, 1]
  return (q * w).sum(1);                        // [N, 2]
}

EnsembleNet::EnsembleNet(const std::vector<std::shared_ptr<ScoreNet>>& nets) : members(nets) {
  for (std::size_t k = 0; k < members.size(); ++k)
    register_module("member" + std::to_string(k), members[k]);
}

torch::Tensor EnsembleNet::forward(const torch::Tensor& x) {
  std::vector<torch::Tensor> outs;
  for (const auto& m : members) outs.push_back(m->forward(x));
  return torch::stack(outs, 0).mean(0);
}

torch::Tensor submit_margin(ScoreNet& net, const torch::Tensor& x) {
  const auto out = net.forward(x);
  if (out.size(1) == 2) return out.select(1, 1) - out.select(1, 0);
  return out.select(1, 0);
}

// ---- data ----------------------------------------------------------------------------------

torch::Tensor features_tensor(const ProbeSet& data) {
  return torch::from_blob(const_cast<float*>(data.x.data()),
                          {static_cast<std::int64_t>(data.decisions()), data.width},
                          torch::kFloat32);
}

std::vector<std::int64_t> decision_indices(const ProbeSet& data,
                                           const std::vector<std::size_t>& episodes) {
  std::vector<std::int64_t> idx;
  for (std::size_t e : episodes) {
    const auto& ep = data.episodes[e];
    for (std::size_t k = 0; k < ep.count; ++k)
      idx.push_back(static_cast<std::int64_t>(ep.first + k));
  }
  return idx;
}

std::pair<torch::Tensor, torch::Tensor> feature_moments(const ProbeSet& data,
                                                        const std::vector<std::size_t>& episodes) {
  // In double, in one pass over the rows: deterministic whatever the thread count.
  const int width = data.width;
  std::vector<double> sum(static_cast<std::size_t>(width), 0.0), sq(sum);
  std::size_t n = 0;
  for (std::size_t e : episodes) {
    const auto& ep = data.episodes[e];
    for (std::size_t k = 0; k < ep.count; ++k, ++n) {
      const float* row = data.x.data() + (ep.first + k) * static_cast<std::size_t>(width);
      for (int f = 0; f < width; ++f) {
        sum[f] += row[f];
        sq[f] += static_cast<double>(row[f]) * row[f];
      }
    }
  }
  auto mean = torch::zeros({width});
  auto stddev = torch::ones({width});
  if (n > 0)
    for (int f = 0; f < width; ++f) {
      const double m = sum[f] / static_cast<double>(n);
      mean[f] = m;
      stddev[f] = std::sqrt(std::max(0.0, sq[f] / static_cast<double>(n) - m * m));
    }
  return {mean, stddev};
}

std::vector<float> margins(ScoreNet& net, const torch::Tensor& x, const ProbeSet& data,
                           const std::vector<std::size_t>& episodes) {
  torch::NoGradGuard no_grad;
  const auto idx = decision_indices(data, episodes);
  std::vector<float> out;
  out.reserve(idx.size());
  for (std::size_t at = 0; at < idx.size(); at += kChunk) {
    const std::size_t n = std::min<std::size_t>(kChunk, idx.size() - at);
    const auto rows = torch::from_blob(const_cast<std::int64_t*>(idx.data() + at),
                                       {static_cast<std::int64_t>(n)}, torch::kInt64);
    const auto m = submit_margin(net, x.index_select(0, rows)).contiguous();
    out.insert(out.end(), m.data_ptr<float>(), m.data_ptr<float>() + n);
  }
  return out;
}

std::vector<double> decision_thresholds(AgentKind kind, bool calibrate) {
  constexpr double kNever = std::numeric_limits<double>::infinity();
  if (kind == AgentKind::kPg) {
    // Submission probabilities, as logits.
    std::vector<double> t;
    for (const double p : {0.5, 0.3, 0.2, 0.1, 0.05, 0.02, 0.01, 0.005, 0.002})
      t.push_back(std::log(p / (1 - p)));
    if (!calibrate)
      t.resize(1);
    else
      t.push_back(kNever);
    return t;
  }
  // Hours: submit only when submitting is better by this much (or worse by no more than -this),
  // or never; 0 is plain greedy. Queue waits range from minutes to days, so the grid does too.
  if (!calibrate) return {0.0};
  return {0.0,  -4.0, -2.0, -1.0, -0.5, -0.25, -0.1, -0.05, -0.02,
          0.02, 0.05, 0.1,  0.25, 0.5,  1.0,   2.0,  4.0,   kNever};
}

std::vector<DecisionRule> candidate_rules(AgentKind kind, const Hyperparameters& hp,
                                          const std::string& forecast_guard, bool window) {
  const std::vector<double> thresholds = decision_thresholds(kind, hp.calibrate);
  const bool follow_average = hp.calibrate && hp.follow_average;
  std::vector<DecisionRule> rules;
  // "on" is what the single guard of model files before `halved` was called.
  const auto chosen = parse_forecast_guard(forecast_guard == "on" ? "limits" : forecast_guard);
  std::vector<double> after{std::numeric_limits<double>::infinity()};
  if (follow_average) {
    after.push_back(DecisionRule::kAlways);
    for (const double t : thresholds)
      if (!std::isinf(t)) after.push_back(t);
  }
  // Rules that never follow `average` first: on equal scores the simpler rule is kept. `auto`
  // leaves the recent-runtime guard out: among its candidates it moved the members' epochs
  // without being chosen (LS6 8-node dqn: 0.50 h of overlap in February against 0.41 h), so
  // it is tried where named; the window clause tries its plan either way.
  std::vector<ForecastGuard> guards{ForecastGuard::kOff};
  guards.insert(guards.end(), kForecastPlans.begin(), kForecastPlans.end());
  for (const double a : after)
    for (const ForecastGuard guard : guards) {
      if (forecast_guard == "auto" ? guard == ForecastGuard::kRecent : chosen != guard) continue;
      for (const double t : thresholds) rules.push_back({t, guard, a, {}});
    }
  if (window && hp.calibrate && hp.window_clause) {
    // Without the clause first, as above.
    const std::size_t plain = rules.size();
    for (const WindowClause& w : window_clauses())
      for (std::size_t i = 0; i < plain; ++i) {
        DecisionRule r = rules[i];
        r.window = w;
        rules.push_back(r);
      }
  }
  return rules;
}

namespace {

// Where each episode of `episodes` first has a margin above `threshold` at a decision that
// `allowed(decision)` admits (-1: none), given their margins back to back.
template <typename Allowed>
std::vector<int> first_above(const std::vector<float>& margins, const ProbeSet& data,
                             const std::vector<std::size_t>& episodes, double threshold,
                             Allowed allowed) {
  std::vector<int> stops(episodes.size(), -1);
  if (std::isinf(threshold) && threshold > 0) return stops;
  std::size_t at = 0;
  for (std::size_t i = 0; i < episodes.size(); ++i) {
    const ProbeSet::Episode& e = data.episodes[episodes[i]];
    for (std::size_t k = 0; k < e.count; ++k)
      if (static_cast<double>(margins.at(at + k)) > threshold && allowed(e.first + k)) {
        stops[i] = static_cast<int>(k);
        break;
      }
    at += e.count;
  }
  return stops;
}

// The earlier of two stops (-1: none).
int earlier(int a, int b) {
  return a < 0 ? b : b < 0 ? a : std::min(a, b);
}

}  // namespace

Calibration calibrate(const std::vector<float>& margins, const ProbeSet& data,
                      const std::vector<std::size_t>& episodes, const CostModel& cost,
                      const std::vector<DecisionRule>& rules, const OverlapCaps& caps) {
  constexpr double kOverCap = 1e6;  // past the cap: worse than anything within it
  // A rule's stops are the earliest of its clauses' (DecisionRule::submits and the window
  // clause); each clause's stops are computed once, however many rules share it.
  std::map<std::pair<double, ForecastGuard>, std::vector<int>> early;
  std::map<double, std::vector<int>> late;
  std::map<WindowClause, std::vector<int>> closing;
  Calibration best;
  bool first = true;
  std::vector<int> stops(episodes.size());
  for (const DecisionRule& rule : rules) {
    auto e = early.find({rule.threshold, rule.guard});
    if (e == early.end())
      e = early
              .emplace(std::pair{rule.threshold, rule.guard},
                       first_above(margins, data, episodes, rule.threshold,
                                   [&](std::size_t d) { return data.guard_allows(d, rule.guard); }))
              .first;
    auto l = late.find(rule.after_average);
    if (l == late.end())
      l = late.emplace(rule.after_average,
                       first_above(margins, data, episodes, rule.after_average,
                                   [&](std::size_t d) { return data.average_submits(d); }))
              .first;
    auto w = closing.find(rule.window);
    if (w == closing.end())
      w = closing
              .emplace(rule.window, first_above(margins, data, episodes,
                                                -std::numeric_limits<double>::infinity(),
                                                [&](std::size_t d) {
                                                  return rule.window.fires(data.window_features[d]);
                                                }))
              .first;
    for (std::size_t i = 0; i < stops.size(); ++i)
      stops[i] = earlier(earlier(e->second[i], l->second[i]), w->second[i]);
    const StopMetrics m = evaluate_stops(data, episodes, stops, cost);
    const double score = !caps.active() ? m.mean_cost_h
                         : caps.hold(data, episodes, stops, cost)
                             ? mean_interruption_cost_h(m, cost)
                             : kOverCap + m.mean_overlap_h;
    if (first || score < best.score - 1e-12) {
      best = {rule, m, score};
      first = false;
    }
  }
  return best;
}

void copy_state(torch::nn::Module& from, torch::nn::Module& to) {
  torch::NoGradGuard no_grad;
  auto dst = to.named_parameters(true);
  for (const auto& p : from.named_parameters(true)) dst[p.key()].copy_(p.value());
  auto dst_b = to.named_buffers(true);
  for (const auto& b : from.named_buffers(true)) dst_b[b.key()].copy_(b.value());
}

std::vector<torch::Tensor> trainable_parameters(torch::nn::Module& m) {
  std::vector<torch::Tensor> out;
  for (const auto& p : m.parameters(true))
    if (p.requires_grad()) out.push_back(p);
  return out;
}

void set_torch_threads(int threads) {
  if (threads > 0) at::set_num_threads(threads);
}

// ---- archives ------------------------------------------------------------------------------

void put_string(torch::serialize::OutputArchive& a, const std::string& key, const std::string& v) {
  a.write(key, c10::IValue(v));
}
std::string get_string(torch::serialize::InputArchive& a, const std::string& key) {
  c10::IValue v;
  a.read(key, v);
  return v.toStringRef();
}
void put_int(torch::serialize::OutputArchive& a, const std::string& key, std::int64_t v) {
  a.write(key, c10::IValue(v));
}
std::int64_t get_int(torch::serialize::InputArchive& a, const std::string& key) {
  c10::IValue v;
  a.read(key, v);
  return v.toInt();
}
void put_double(torch::serialize::OutputArchive& a, const std::string& key, double v) {
  a.write(key, c10::IValue(v));
}
double get_double(torch::serialize::InputArchive& a, const std::string& key) {
  c10::IValue v;
  a.read(key, v);
  return v.toDouble();
}
void put_metrics(torch::serialize::OutputArchive& a, const std::string& key, const StopMetrics& m) {
  put_string(a, key,
             fmt::format("{} {:.17g} {:.17g} {:.17g} {:.17g}", m.episodes, m.mean_cost_h,
                         m.mean_interruption_h, m.zero_share, m.mean_overlap_h));
}
StopMetrics get_metrics(torch::serialize::InputArchive& a, const std::string& key) {
  std::istringstream in(get_string(a, key));
  StopMetrics m;
  in >> m.episodes >> m.mean_cost_h >> m.mean_interruption_h >> m.zero_share >> m.mean_overlap_h;
  return m;
}
std::string rng_state(const std::mt19937_64& rng) {
  std::ostringstream out;
  out << rng;
  return out.str();
}
void set_rng_state(std::mt19937_64& rng, const std::string& state) {
  std::istringstream in(state);
  in >> rng;
}

void save_atomically(torch::serialize::OutputArchive& a, const std::string& path) {
  const std::filesystem::path target(path);
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path());
  std::ostringstream bytes(std::ios::binary);
  a.save_to(bytes);
  write_file_durably(path, bytes.view());
}

torch::serialize::OutputArchive begin_checkpoint(const TrainContext& ctx) {
  torch::serialize::OutputArchive a;
  put_string(a, "run", ctx.run_fingerprint);
  return a;
}

bool open_checkpoint(const TrainContext& ctx, torch::serialize::InputArchive& in) {
  if (!ctx.config.resume || !std::filesystem::exists(ctx.checkpoint_path)) return false;
  try {
    in.load_from(ctx.checkpoint_path);
  } catch (const c10::Error&) {
    throw InputError({ctx.checkpoint_path, 0, "--resume"}, "not a mirage training checkpoint");
  }
  if (get_string(in, "run") != ctx.run_fingerprint)
    throw InputError({ctx.checkpoint_path, 0, "--resume"},
                     "this checkpoint was made with other settings (trace, window, machine, "
                     "agent or hyperparameters); remove it or train without --resume");
  return true;
}

// ---- model files ---------------------------------------------------------------------------

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

struct LoadedModel {
  AgentKind kind = AgentKind::kDqn;
  Pooling pooling;
  DecisionRule rule;
  std::shared_ptr<ScoreNet> net;
  std::unique_ptr<RowNet> row;  // the same network, for one decision at a time
};

// The network a model file's metadata describes, untrained.
std::shared_ptr<ScoreNet> make_one_net(AgentKind kind, const nlohmann::json& hp) {
  const int width = Pooling{hp.at("history_blocks").get<int>()}.size();
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

std::shared_ptr<const LoadedModel> load_model(const std::string& path) {
  torch::serialize::InputArchive a;
  open_model(a, path);
  const auto meta = read_meta(a, path);
  const std::string stem = std::filesystem::path(path).stem().string();
  const int format = meta.value("format_version", 0);
  if (format != kFormatVersion)
    throw InputError({path, 0, "policy"},
                     fmt::format("model {} has file format v{}; this mirage reads v{}; retrain it "
                                 "with `mirage train`",
                                 stem, format, kFormatVersion));
  const int encoder = meta.value("encoder_version", 0);
  if (encoder != FeatureEncoder::kVersion)
    throw InputError({path, 0, "policy"},
                     fmt::format("model {} was made by feature encoder v{}; this mirage has v{}; "
                                 "retrain it with `mirage train`",
                                 stem, encoder, FeatureEncoder::kVersion));
  const int pooling = meta.value("pooling_version", 0);
  if (pooling != kPoolingVersion)
    throw InputError({path, 0, "policy"},
                     fmt::format("model {} was made with feature pooling v{}; this mirage has v{}; "
                                 "retrain it with `mirage train`",
                                 stem, pooling, kPoolingVersion));
  auto model = std::make_shared<LoadedModel>();
  const auto kind = parse_agent_kind(meta.value("agent", ""));
  if (!kind) throw InputError({path, 0, "policy"}, "unknown agent kind in the model file");
  model->kind = *kind;
  torch::serialize::InputArchive weights;
  try {
    const auto& hp = meta.at("hyperparameters");
    model->pooling.history_blocks = hp.at("history_blocks");
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

}  // namespace

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
      ctx.cost, candidate_rules(ctx.config.agent, hp, hp.forecast_guard, true), ctx.overlap_caps);
  save_model(ctx, *net, cal.val, epochs, cal.rule);
  return {cal.val, epochs, cal.rule};
}

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
  LearnedPolicy(std::string name, std::shared_ptr<const LoadedModel> model)
      : name_(std::move(name)), model_(std::move(model)) {}

  std::string name() const override { return name_; }

  Decision decide(const Observation& obs) override {
    // Trained on decisions while the predecessor runs; before that, wait (as `average` does).
    if (!obs.campaign.predecessor_running) return Decision::wait();
    if (obs.encoder_version != FeatureEncoder::kVersion)
      throw std::invalid_argument(
          fmt::format("policy {}: observation from feature encoder v{}, model made for v{}", name_,
                      obs.encoder_version, FeatureEncoder::kVersion));
    const std::vector<float> encoded = FeatureEncoder::encode(obs);
    const DecisionRule& rule = model_->rule;
    const bool guard_allows = forecast_allows_submit(encoded.data(), rule.guard);
    const bool average_submits = average_would_submit(encoded.data());
    if (rule.window.fires(encoded.data())) return Decision::submit();
    // Where no margin could make a clause submit, spare the network.
    if (!rule.submits(std::numeric_limits<double>::infinity(), guard_allows, average_submits))
      return Decision::wait();
    pooled_.resize(static_cast<std::size_t>(model_->pooling.size()));
    model_->pooling(encoded.data(), pooled_.data());
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
  std::vector<float> pooled_;
};

}  // namespace

std::unique_ptr<Policy> load_learned_policy(const std::string& path) {
  return std::make_unique<LearnedPolicy>(std::filesystem::path(path).stem().string(),
                                         cached_model(path));
}

void register_learned_policies() {
  set_model_policy_loader(&load_learned_policy);
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
