#include "mirage/agents/WaitModel.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numbers>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "mirage/core/DurableFile.h"
#include "mirage/core/Error.h"
#include "mirage/core/Time.h"
#include "mirage/simulator/Fidelity.h"
#include "mirage/traces/LoggedQueue.h"

namespace mirage {
namespace {

double softplus(double x) {
  return x > 20 ? x : std::log1p(std::exp(x));
}

// One dense layer on `x`, ReLU after it unless it is the last.
std::vector<double> apply(const DenseLayer& l, const std::vector<double>& x, bool relu) {
  std::vector<double> y(static_cast<std::size_t>(l.outputs));
  for (int o = 0; o < l.outputs; ++o) {
    const float* w = l.weights.data() + static_cast<std::size_t>(o) * l.inputs;
    double s = l.bias[static_cast<std::size_t>(o)];
    for (int i = 0; i < l.inputs; ++i) s += w[i] * x[static_cast<std::size_t>(i)];
    y[static_cast<std::size_t>(o)] = relu ? std::max(0.0, s) : s;
  }
  return y;
}

std::vector<double> apply_all(const std::vector<DenseLayer>& layers, std::vector<double> x) {
  for (std::size_t i = 0; i < layers.size(); ++i) x = apply(layers[i], x, i + 1 < layers.size());
  return x;
}

nlohmann::json layers_json(const std::vector<DenseLayer>& layers) {
  nlohmann::json a = nlohmann::json::array();
  for (const DenseLayer& l : layers)
    a.push_back(
        {{"inputs", l.inputs}, {"outputs", l.outputs}, {"weights", l.weights}, {"bias", l.bias}});
  return a;
}

nlohmann::json distribution_json(const WaitDistribution& d) {
  nlohmann::json bins = nlohmann::json::array();
  for (const WaitDistribution::Bin& b : d.bins)
    bins.push_back({{"planned_up_to", b.planned_up_to}, {"jobs", b.jobs}, {"waits", b.waits}});
  return {{"trace", d.trace},
          {"nodes", d.spec.nodes},
          {"gpus_per_node", d.spec.gpus_per_node},
          {"time_limit", d.spec.time_limit},
          {"min_job_limit", d.spec.min_job_limit},
          {"from", d.spec.from},
          {"to", d.spec.to},
          {"bins", bins}};
}

WaitDistribution distribution_of(const nlohmann::json& j) {
  WaitDistribution d;
  d.trace = j.at("trace").get<std::string>();
  d.spec.nodes = j.at("nodes").get<int>();
  d.spec.gpus_per_node = j.at("gpus_per_node").get<int>();
  d.spec.time_limit = j.at("time_limit").get<Seconds>();
  d.spec.min_job_limit = j.at("min_job_limit").get<Seconds>();
  d.spec.from = j.at("from").get<Seconds>();
  d.spec.to = j.at("to").get<Seconds>();
  for (const auto& b : j.at("bins"))
    d.bins.push_back({b.at("planned_up_to").get<Seconds>(), b.at("jobs").get<std::size_t>(),
                      b.at("waits").get<std::array<Seconds, WaitDistribution::kLevels>>()});
  if (d.bins.empty()) throw std::invalid_argument("a binned distribution without bins");
  return d;
}

nlohmann::json tail_json(const WaitTail& t) {
  nlohmann::json classes = nlohmann::json::array();
  for (std::size_t c = 0; c < kSizeClasses; ++c) {
    const WaitClassTail& ct = t.classes[c];
    classes.push_back({{"class", size_class(kSizeClassNodes[c])},
                       {"tail_jobs", ct.tail_jobs},
                       {"model_weight", ct.model_weight},
                       {"shifts", ct.shifts},
                       {"binned", ct.binned ? distribution_json(*ct.binned) : nlohmann::json()}});
  }
  return {{"classes", classes}};
}

WaitTail tail_of(const nlohmann::json& j) {
  WaitTail t;
  const auto& classes = j.at("classes");
  if (classes.size() != kSizeClasses)
    throw std::invalid_argument(fmt::format("expected {} size classes", kSizeClasses));
  for (std::size_t c = 0; c < kSizeClasses; ++c) {
    const auto& cj = classes[c];
    WaitClassTail& ct = t.classes[c];
    ct.tail_jobs = cj.at("tail_jobs").get<std::size_t>();
    ct.model_weight = cj.at("model_weight").get<double>();
    if (!(ct.model_weight >= 0 && ct.model_weight <= 1))
      throw std::invalid_argument("model_weight: expected a share in [0, 1]");
    ct.shifts = cj.at("shifts").get<LevelShifts>();
    // Files fitted with the removed --fall-back may mark a class `binned_only`: it gave such a
    // class no network share and no shifts, so the blend states its binned distribution alone,
    // as fitted, and the mark needs no reading.
    if (!cj.at("binned").is_null()) ct.binned = distribution_of(cj.at("binned"));
  }
  return t;
}

// A file of this version holds one network, its fields at the top.
constexpr int kSingleNetworkVersion = 2;

nlohmann::json net_json(const WaitNet& n) {
  nlohmann::json experts = nlohmann::json::array();
  for (const auto& e : n.experts) experts.push_back(layers_json(e));
  return {{"architecture", n.architecture}, {"input_mean", n.input_mean},
          {"input_scale", n.input_scale},   {"max_target", n.max_target},
          {"level_shift", n.level_shift},   {"experts", experts},
          {"gate", layers_json(n.gate)}};
}

std::vector<DenseLayer> layers_of(const nlohmann::json& a) {
  std::vector<DenseLayer> out;
  for (const auto& l : a)
    out.push_back({l.at("inputs").get<int>(), l.at("outputs").get<int>(),
                   l.at("weights").get<std::vector<float>>(),
                   l.at("bias").get<std::vector<float>>()});
  return out;
}

WaitNet net_of(const nlohmann::json& j) {
  WaitNet net;
  net.architecture = j.at("architecture").get<std::string>();
  net.input_mean = j.at("input_mean").get<std::vector<float>>();
  net.input_scale = j.at("input_scale").get<std::vector<float>>();
  net.max_target = j.at("max_target").get<float>();
  net.level_shift = j.at("level_shift").get<std::array<float, kWaitLevels.size()>>();
  for (const auto& e : j.at("experts")) net.experts.push_back(layers_of(e));
  net.gate = layers_of(j.at("gate"));
  return net;
}

nlohmann::json categories_json(const WaitCategories& c) {
  nlohmann::json table = nlohmann::json::object();
  for (const auto& [value, in] : c.table) table[value] = in;
  return {{"field", c.field}, {"mean_target", c.mean_target}, {"table", table}};
}

WaitCategories categories_of(const nlohmann::json& j) {
  WaitCategories c;
  c.field = j.at("field").get<std::string>();
  if (!c.field.empty() && c.field != "partition" && c.field != "queue")
    throw std::invalid_argument("field: expected \"partition\", \"queue\" or \"\"");
  c.mean_target = j.at("mean_target").get<float>();
  for (const auto& [value, in] : j.at("table").items())
    c.table[value] = in.get<std::array<float, 2>>();
  return c;
}

}  // namespace

const std::string& WaitCategories::of(const Job& job) const {
  static const std::string kNone;
  return field == "partition" ? job.partition : field == "queue" ? job.queue : kNone;
}

std::array<float, 2> WaitCategories::inputs(const std::string& value) const {
  if (field.empty()) return {0.f, 0.f};
  const auto it = table.find(value);
  return it != table.end() ? it->second : std::array<float, 2>{mean_target, 0.f};
}

std::optional<std::string> WaitCategories::missing_in(const Trace& trace) const {
  if (field.empty()) return std::nullopt;
  for (const Job& job : trace.jobs)
    if (!of(job).empty()) return std::nullopt;
  return fmt::format(
      "the model reads each job's {} (it was fitted on a log that gives one), and this log gives "
      "none: fit a model on this log (mirage train --agent wait-model)",
      field == "queue" ? "queue (SWF field 15)" : field);
}

WaitCategories fit_wait_categories(const Trace& trace, Seconds from, Seconds to) {
  WaitCategories c;
  for (const char* field : {"partition", "queue"}) {
    c.field = field;
    std::map<std::string, std::pair<double, std::size_t>> sums;  // value: {target sum, jobs}
    double total = 0;
    std::size_t jobs = 0;
    for (const Job& job : trace.jobs) {
      if (job.submit < from || job.submit >= to || !job.started()) continue;
      auto& s = sums[c.of(job)];
      s.first += wait_target(job.wait());
      ++s.second;
      total += wait_target(job.wait());
      ++jobs;
    }
    if (sums.size() < 2 || jobs == 0) continue;
    c.mean_target = static_cast<float>(total / static_cast<double>(jobs));
    for (const auto& [value, s] : sums)
      c.table[value] = {
          static_cast<float>((s.first + kCategoryPrior * c.mean_target) /
                             (static_cast<double>(s.second) + kCategoryPrior)),
          static_cast<float>(static_cast<double>(s.second) / static_cast<double>(jobs))};
    return c;
  }
  return WaitCategories{};
}

std::array<float, kWaitModelInputs> wait_model_inputs(const QueueSnapshot& queue,
                                                      const ForecastJob& job) {
  return wait_model_inputs(queue, job, {0.f, 0.f});
}

std::array<float, kWaitModelInputs> wait_model_inputs(const QueueSnapshot& queue,
                                                      const ForecastJob& job,
                                                      std::array<float, 2> category) {
  std::array<float, kWaitModelInputs> x{};
  const auto snapshot = FeatureEncoder::encode_snapshot(queue);
  std::copy(snapshot.begin(), snapshot.end(), x.begin());
  float* j = x.data() + FeatureEncoder::kPerSnapshot;
  const double machine = std::max(1, queue.total_nodes);
  const auto t = [](Seconds s) { return FeatureEncoder::time_feature(s); };
  const PlannedStart limits = QueueForecast::plan(queue, job);
  j[0] = static_cast<float>(job.nodes / machine);
  j[1] = static_cast<float>(std::log1p(job.nodes) / std::log1p(machine));
  j[2] = static_cast<float>(job.gpus_per_node) / 8.f;
  j[3] = t(job.time_limit);
  j[4] = t(limits.wait);
  j[5] = t(limits.wait_running);
  j[6] = t(
      QueueForecast::plan(queue, job, RuntimeGuess::share_of_limits(FeatureEncoder::kHalfRuntimes))
          .wait);
  j[7] = t(QueueForecast::plan(queue, job, RuntimeGuess::recent_ends()).wait);
  const double day = static_cast<double>(((queue.time % kDay) + kDay) % kDay) / kDay;
  j[8] = static_cast<float>(std::sin(2 * std::numbers::pi * day));
  j[9] = static_cast<float>(std::cos(2 * std::numbers::pi * day));
  const Seconds weekday = ((queue.time / kDay) + 4) % 7;  // 1970-01-01 was a Thursday (4)
  j[10] = weekday == 0 || weekday == 6 ? 1.f : 0.f;
  j[11] = category[0];
  j[12] = category[1];
  return x;
}

float wait_target(Seconds wait) {
  return static_cast<float>(
      std::log1p(static_cast<double>(std::max<Seconds>(0, wait)) / kWaitUnit));
}

Seconds wait_from_target(double target) {
  return static_cast<Seconds>(std::llround(std::expm1(std::max(0.0, target)) * kWaitUnit));
}

std::array<double, kWaitLevels.size()> WaitNet::forward(const float* x) const {
  std::vector<double> in(input_mean.size());
  for (std::size_t i = 0; i < in.size(); ++i)
    in[i] = std::clamp((x[i] - input_mean[i]) / input_scale[i], -kInputClip, kInputClip);
  std::vector<double> weights(experts.size(), 1.0);
  if (!gate.empty()) {
    weights = apply_all(gate, in);
    const double top = *std::max_element(weights.begin(), weights.end());
    double sum = 0;
    for (double& w : weights) sum += (w = std::exp(w - top));
    for (double& w : weights) w /= sum;
  }
  std::array<double, kWaitLevels.size()> q{};
  for (std::size_t e = 0; e < experts.size(); ++e) {
    const std::vector<double> o = apply_all(experts[e], in);
    double level = o[0];
    for (std::size_t k = 0; k < q.size(); ++k) {
      if (k > 0) level += softplus(o[k]);
      q[k] += weights[e] * level;
    }
  }
  for (std::size_t k = 0; k < q.size(); ++k) {
    q[k] += level_shift[k];
    if (k > 0) q[k] = std::max(q[k], q[k - 1]);
  }
  for (double& v : q) v = std::min<double>(v, max_target);
  return q;
}

void WaitNet::validate() const {
  if (architecture != "mlp" && architecture != "moe")
    throw std::invalid_argument("architecture: expected mlp or moe, got '" + architecture + "'");
  if (input_mean.size() != kWaitModelInputs || input_scale.size() != kWaitModelInputs)
    throw std::invalid_argument(
        fmt::format("input_mean, input_scale: expected {} values each", kWaitModelInputs));
  if (std::any_of(input_scale.begin(), input_scale.end(), [](float s) { return !(s > 0); }))
    throw std::invalid_argument("input_scale: expected positive values");
  if (!(max_target > 0)) throw std::invalid_argument("max_target: expected a positive value");
  if (experts.empty() || (architecture == "mlp") != (experts.size() == 1))
    throw std::invalid_argument("experts: expected one for mlp, several for moe");
  const auto check = [](const std::vector<DenseLayer>& layers, int outputs, const char* what) {
    int width = kWaitModelInputs;
    for (const DenseLayer& l : layers) {
      if (l.inputs != width || l.outputs < 1 ||
          l.weights.size() != static_cast<std::size_t>(l.inputs) * l.outputs ||
          l.bias.size() != static_cast<std::size_t>(l.outputs))
        throw std::invalid_argument(
            fmt::format("{}: a layer's sizes do not chain (expected {} inputs, weights of "
                        "outputs x inputs and a bias of outputs)",
                        what, width));
      width = l.outputs;
    }
    if (layers.empty() || width != outputs)
      throw std::invalid_argument(
          fmt::format("{}: expected layers ending in {} outputs", what, outputs));
  };
  for (const auto& e : experts) check(e, static_cast<int>(kWaitLevels.size()), "experts");
  if (architecture == "moe")
    check(gate, static_cast<int>(experts.size()), "gate");
  else if (!gate.empty())
    throw std::invalid_argument("gate: an mlp has none");
}

std::array<double, kWaitLevels.size()> ensemble_forward(const std::vector<WaitNet>& members,
                                                        const float* x) {
  std::array<double, kWaitLevels.size()> mean{};
  for (const WaitNet& n : members) {
    const auto q = n.forward(x);
    for (std::size_t k = 0; k < q.size(); ++k) mean[k] += q[k];
  }
  for (double& v : mean) v /= static_cast<double>(std::max<std::size_t>(1, members.size()));
  return mean;
}

WaitModel::WaitModel(WaitModelInfo info, WaitNet net)
    : WaitModel(std::move(info), std::move(net), WaitTail{}) {}

WaitModel::WaitModel(WaitModelInfo info, WaitNet net, WaitTail tail)
    : WaitModel(std::move(info), std::vector<WaitNet>{std::move(net)}, std::move(tail)) {}

WaitModel::WaitModel(WaitModelInfo info, std::vector<WaitNet> members, WaitTail tail)
    : info_(std::move(info)), members_(std::move(members)), tail_(std::move(tail)) {
  if (members_.empty()) throw std::invalid_argument("members: expected one network or more");
  for (std::size_t m = 0; m < members_.size(); ++m) {
    try {
      members_[m].validate();
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(members_.size() == 1
                                      ? std::string(e.what())
                                      : fmt::format("members[{}]: {}", m, e.what()));
    }
  }
}

WaitQuantiles WaitModel::predict(const QueueSnapshot& queue, const ForecastJob& job) const {
  return predict_with(queue, job, info_.categories.inputs(""));
}

WaitQuantiles WaitModel::predict_logged(const QueueSnapshot& queue, const Job& job) const {
  return predict_with(queue, ForecastJob{job.nodes, job.gpus_per_node, job.time_limit},
                      info_.categories.inputs(info_.categories.of(job)));
}

WaitQuantiles WaitModel::predict_in_partition(const QueueSnapshot& queue, const ForecastJob& job,
                                              const std::string& partition) const {
  return predict_with(
      queue, job, info_.categories.inputs(info_.categories.field == "partition" ? partition : ""));
}

WaitQuantiles WaitModel::predict_with(const QueueSnapshot& queue, const ForecastJob& job,
                                      std::array<float, 2> category) const {
  const auto x = wait_model_inputs(queue, job, category);
  const auto y = ensemble_forward(members_, x.data());
  WaitQuantiles w{};
  for (std::size_t k = 0; k < w.size(); ++k) w[k] = wait_from_target(y[k]);
  const std::size_t cls = size_class_index(job.nodes);
  const Seconds planned = tail_.blends(cls) ? QueueForecast::plan(queue, job).wait : 0;
  return tail_.apply(cls, w, planned);
}

std::string WaitModel::describe() const {
  const std::string networks =
      members_.size() == 1 ? net().architecture
                           : fmt::format("{} x {}, averaged", members_.size(), net().architecture);
  std::string text = fmt::format(
      "a wait model ({}) of {} real jobs of every size, submitted {} .. {}", networks, info_.jobs,
      format_iso_time(info_.from).substr(0, 10), format_iso_time(info_.to).substr(0, 10));
  std::size_t tail = 0;
  std::vector<std::string> shares;
  for (const WaitClassTail& c : tail_.classes) {
    tail += c.tail_jobs;
    shares.push_back(fmt::format("{:g}", c.model_weight));
  }
  if (!info_.categories.field.empty())
    text += fmt::format("; reads each job's {} ({} values)", info_.categories.field,
                        info_.categories.table.size());
  if (tail > 0 && info_.cross_fit_folds > 0)
    text += fmt::format(
        "; per size class, averaged with the binned distribution (the network's share {}) and "
        "recalibrated on all {} jobs of its window, each as predicted by the network fitted "
        "without its fold ({} time folds)",
        fmt::join(shares, " / "), tail, info_.cross_fit_folds);
  else if (tail > 0)
    text += fmt::format(
        "; per size class, averaged with the binned distribution (the network's share {}) and "
        "recalibrated on the latest {} jobs of its window{}",
        fmt::join(shares, " / "), tail,
        info_.calibrated_from > 0
            ? fmt::format(" (from {}, which the networks were not fitted on)",
                          format_iso_time(info_.calibrated_from).substr(0, 10))
            : std::string());
  return text;
}

bool WaitModel::speaks_for(const Job& job, int chain_nodes) const {
  return job.started() && size_class(job.nodes) == size_class(chain_nodes);
}

void write_wait_model(const std::string& path, const WaitModel& model) {
  const WaitModelInfo& i = model.info();
  nlohmann::json members = nlohmann::json::array();
  for (const WaitNet& n : model.members()) members.push_back(net_json(n));
  const nlohmann::json calibrated_from =
      i.calibrated_from > 0 ? nlohmann::json(format_iso_time(i.calibrated_from)) : nlohmann::json();
  const nlohmann::json j = {{"format", kWaitModelFormat},
                            {"format_version", kWaitModelFormatVersion},
                            {"encoder_version", i.encoder_version},
                            {"inputs", kWaitModelInputs},
                            {"levels", kWaitLevels},
                            {"target", "log1p(wait_s / 60)"},
                            {"trace", i.trace},
                            {"fitted_from", format_iso_time(i.from)},
                            {"fitted_to", format_iso_time(i.to)},
                            {"jobs", i.jobs},
                            {"machine_nodes", i.machine_nodes},
                            {"val_pinball_h", i.val_pinball_h},
                            {"train_seconds", i.train_seconds},
                            {"calibrated_from", calibrated_from},
                            {"cross_fit_folds", i.cross_fit_folds},
                            {"members", members},
                            {"tail", tail_json(model.tail())},
                            {"categories", categories_json(i.categories)}};
  write_file_durably(path, j.dump() + "\n");
}

WaitModel read_wait_model(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError({path, 0, ""}, "cannot read the wait model");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    throw InputError({path, 0, ""}, std::string("not a wait model (JSON): ") + e.what());
  }
  const auto bad = [&](const std::string& field, const std::string& what) {
    return InputError({path, 0, field}, what);
  };
  if (!j.is_object() || j.value("format", std::string()) != kWaitModelFormat)
    throw bad("format", fmt::format("expected \"{}\" (mirage train --agent wait-model writes it)",
                                    kWaitModelFormat));
  const auto integer = [&](const char* field) {
    if (!j.contains(field) || !j[field].is_number_integer())
      throw bad(field, "expected an integer");
    return j[field].get<std::int64_t>();
  };
  const auto version = integer("format_version");
  if (version != kWaitModelFormatVersion && version != kSingleNetworkVersion)
    throw bad("format_version",
              fmt::format("expected {} or {}, got {}: train it again (mirage train --agent "
                          "wait-model)",
                          kSingleNetworkVersion, kWaitModelFormatVersion, version));
  if (integer("encoder_version") != FeatureEncoder::kVersion)
    throw bad("encoder_version",
              fmt::format("the model reads the queue through encoder version {}, this build's is "
                          "{}: train it again (mirage train --agent wait-model)",
                          integer("encoder_version"), FeatureEncoder::kVersion));
  if (integer("inputs") != kWaitModelInputs)
    throw bad("inputs", fmt::format("expected {} inputs, got {}: train it again", kWaitModelInputs,
                                    integer("inputs")));
  WaitModelInfo info;
  std::vector<WaitNet> members;
  const auto time = [&](const char* field) {
    const auto t = j.contains(field) && j[field].is_string()
                       ? parse_iso_time(j[field].get<std::string>())
                       : std::nullopt;
    if (!t) throw bad(field, "expected a date (YYYY-MM-DDTHH:MM:SSZ)");
    return *t;
  };
  try {
    info.trace = j.value("trace", std::string());
    info.from = time("fitted_from");
    info.to = time("fitted_to");
    info.jobs = static_cast<std::size_t>(integer("jobs"));
    info.machine_nodes = static_cast<int>(integer("machine_nodes"));
    info.val_pinball_h = j.value("val_pinball_h", 0.0);
    info.train_seconds = j.value("train_seconds", 0.0);
    if (j.contains("calibrated_from") && !j["calibrated_from"].is_null())
      info.calibrated_from = time("calibrated_from");
    if (j.contains("cross_fit_folds"))  // absent in a file fitted before cross-fitting
      info.cross_fit_folds = static_cast<int>(integer("cross_fit_folds"));
  } catch (const nlohmann::json::exception& e) {
    throw bad("jobs", std::string("expected what the model was fitted on: ") + e.what());
  }
  if (version == kSingleNetworkVersion) {  // the network's fields at the top
    try {
      members.push_back(net_of(j));
    } catch (const nlohmann::json::exception& e) {
      throw bad("net", std::string("expected the network's weights: ") + e.what());
    }
  } else {
    if (!j.contains("members") || !j["members"].is_array() || j["members"].empty())
      throw bad("members", "expected an array of one network or more");
    for (std::size_t m = 0; m < j["members"].size(); ++m) {
      try {
        members.push_back(net_of(j["members"][m]));
        members.back().validate();
      } catch (const std::exception& e) {
        throw bad(fmt::format("members[{}]", m),
                  std::string("expected a network's weights: ") + e.what());
      }
    }
  }
  WaitTail tail;
  try {
    if (!j.contains("tail")) throw std::invalid_argument("missing");
    tail = tail_of(j["tail"]);
  } catch (const std::exception& e) {
    throw bad("tail",
              std::string("expected each size class's blend and recalibration: ") + e.what());
  }
  try {
    if (!j.contains("categories")) throw std::invalid_argument("missing");
    info.categories = categories_of(j["categories"]);
  } catch (const std::exception& e) {
    throw bad("categories",
              std::string("expected the partition or queue the model reads: ") + e.what());
  }
  if (info.to <= info.from) throw bad("fitted_to", "must be after fitted_from");
  try {
    return WaitModel(std::move(info), std::move(members), std::move(tail));
  } catch (const std::invalid_argument& e) {
    throw bad("net", e.what());
  }
}

WaitSplit split_for_calibration(const WaitTrainingSet& data, Seconds from, Seconds to,
                                Seconds span) {
  WaitSplit split;
  split.calibration_from = to - std::min(span, (to - from) / 4);
  split.calibration_first = static_cast<std::size_t>(
      std::lower_bound(data.submits.begin(), data.submits.end(), split.calibration_from) -
      data.submits.begin());
  const std::size_t calibrate = data.rows - split.calibration_first;
  if (split.calibration_first < kMinTailJobs || calibrate < kMinTailJobs)
    throw InputError(
        {"", 0, "--calibration-days"},
        fmt::format("the window's last {} (from {}) hold {} of its {} fitted jobs: at least {} "
                    "are needed on each side of the split",
                    format_short_duration(to - split.calibration_from),
                    format_iso_time(split.calibration_from).substr(0, 10), calibrate, data.rows,
                    kMinTailJobs));
  return split;
}

WaitTrainingSet first_rows(const WaitTrainingSet& data, std::size_t n) {
  n = std::min(n, data.rows);
  WaitTrainingSet head;
  head.rows = n;
  head.inputs.assign(data.inputs.begin(),
                     data.inputs.begin() + static_cast<std::ptrdiff_t>(n * kWaitModelInputs));
  const auto take = [n](const auto& v) {
    return std::decay_t<decltype(v)>(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n));
  };
  head.targets = take(data.targets);
  head.submits = take(data.submits);
  head.nodes = take(data.nodes);
  head.planned = take(data.planned);
  head.waits = take(data.waits);
  head.categories = data.categories;
  head.window_jobs = data.window_jobs;
  return head;
}

void calibrate_levels(WaitNet& net, const WaitTrainingSet& data, std::size_t first) {
  net.level_shift = {};
  if (first >= data.rows) return;
  std::array<std::vector<double>, kWaitLevels.size()> residuals;
  for (std::size_t r = first; r < data.rows; ++r) {
    const auto q = net.forward(data.inputs.data() + r * kWaitModelInputs);
    for (std::size_t k = 0; k < q.size(); ++k) residuals[k].push_back(data.targets[r] - q[k]);
  }
  for (std::size_t k = 0; k < residuals.size(); ++k) {
    std::vector<double>& v = residuals[k];
    const auto at = v.begin() + static_cast<std::ptrdiff_t>(std::min(
                                    v.size() - 1,
                                    static_cast<std::size_t>(std::ceil(kWaitLevels[k] * v.size())) -
                                        (kWaitLevels[k] > 0 ? 1 : 0)));
    std::nth_element(v.begin(), at, v.end());
    net.level_shift[k] = static_cast<float>(*at);
  }
}

WaitTail fit_model_tail(const Trace& trace, const ClusterSpec& cluster, Seconds from,
                        std::vector<WaitNet>& members, const WaitTrainingSet& data,
                        std::size_t first, const TailSettings& settings, std::string* notes) {
  if (first >= data.rows) return {};
  for (WaitNet& n : members) calibrate_levels(n, data, first);
  const Seconds tail_from = data.submits[first];
  const ClassDistributions before_tail = fit_class_distributions(trace, cluster, from, tail_from);
  if (notes) *notes = before_tail.notes;
  return fit_wait_tail(tail_rows(members, data, first), before_tail.classes, settings.blend);
}

std::vector<WaitFold> time_folds(const WaitTrainingSet& data, Seconds from, Seconds to, int folds) {
  std::vector<WaitFold> out;
  for (int f = 0; f < folds; ++f) {
    WaitFold fold;
    fold.from = from + (to - from) * f / folds;
    fold.to = f + 1 == folds ? to : from + (to - from) * (f + 1) / folds;
    const auto at = [&](Seconds t) {
      return static_cast<std::size_t>(
          std::lower_bound(data.submits.begin(), data.submits.end(), t) - data.submits.begin());
    };
    fold.first = at(fold.from);
    fold.last = at(fold.to);
    if (fold.last - fold.first < kMinTailJobs ||
        data.rows - (fold.last - fold.first) < kMinTailJobs)
      throw InputError({"", 0, "--cross-fit-folds"},
                       fmt::format("fold {} of {} ({} .. {}) holds {} of the window's {} fitted "
                                   "jobs: at least {} are needed in each fold and outside it",
                                   f + 1, folds, format_iso_time(fold.from).substr(0, 10),
                                   format_iso_time(fold.to).substr(0, 10), fold.last - fold.first,
                                   data.rows, kMinTailJobs));
    out.push_back(fold);
  }
  return out;
}

WaitTrainingSet rows_outside(const WaitTrainingSet& data, const WaitFold& fold) {
  WaitTrainingSet out;
  out.categories = data.categories;
  out.window_jobs = data.window_jobs;
  for (std::size_t r = 0; r < data.rows; ++r) {
    if (r >= fold.first && r < fold.last) continue;
    const auto x = data.inputs.begin() + static_cast<std::ptrdiff_t>(r * kWaitModelInputs);
    out.inputs.insert(out.inputs.end(), x, x + kWaitModelInputs);
    out.targets.push_back(data.targets[r]);
    out.submits.push_back(data.submits[r]);
    out.nodes.push_back(data.nodes[r]);
    out.planned.push_back(data.planned[r]);
    out.waits.push_back(data.waits[r]);
    ++out.rows;
  }
  return out;
}

std::vector<TailRow> out_of_fold_rows(const Trace& trace, const ClusterSpec& cluster, Seconds from,
                                      Seconds to, std::vector<WaitNet>& fold_nets,
                                      const WaitTrainingSet& data,
                                      const std::vector<WaitFold>& folds) {
  std::vector<TailRow> rows;
  for (std::size_t f = 0; f < folds.size(); ++f) {
    fold_nets[f].level_shift = {};  // the offsets, set on every fold's rows, recalibrate
    const ClassDistributions without =
        fit_class_distributions(trace, cluster, from, to, folds[f].from, folds[f].to);
    for (TailRow& r : tail_rows({fold_nets[f]}, data, folds[f].first, folds[f].last)) {
      if (const auto& own = without.classes[size_class_index(r.nodes)])
        r.binned = binned_levels(*own, r.planned);
      rows.push_back(r);
    }
  }
  return rows;
}

WaitTail fit_cross_fitted_tail(const Trace& trace, const ClusterSpec& cluster, Seconds from,
                               Seconds to, const std::vector<TailRow>& out_of_fold,
                               const TailSettings& settings, std::string* notes) {
  const ClassDistributions whole = fit_class_distributions(trace, cluster, from, to);
  if (notes) *notes = whole.notes;
  return fit_wait_tail(out_of_fold, whole.classes, settings.blend);
}

std::vector<TailRow> tail_rows(const WaitNet& net, const WaitTrainingSet& data, std::size_t first) {
  return tail_rows(std::vector<WaitNet>{net}, data, first);
}

std::vector<TailRow> tail_rows(const std::vector<WaitNet>& members, const WaitTrainingSet& data,
                               std::size_t first, std::size_t last) {
  std::vector<TailRow> rows;
  for (std::size_t r = first; r < std::min(last, data.rows); ++r) {
    const auto y = ensemble_forward(members, data.inputs.data() + r * kWaitModelInputs);
    TailRow row{{}, data.nodes[r], data.planned[r], data.waits[r]};
    for (std::size_t k = 0; k < y.size(); ++k) row.network[k] = wait_from_target(y[k]);
    rows.push_back(row);
  }
  return rows;
}

WaitTrainingSet wait_training_set(const Trace& trace, const ClusterSpec& cluster, Seconds from,
                                  Seconds to, std::size_t max_jobs) {
  std::vector<std::size_t> picked;
  std::size_t in_window = 0;
  for (std::size_t i = 0; i < trace.jobs.size(); ++i) {
    const Job& job = trace.jobs[i];
    if (job.submit < from || job.submit >= to) continue;
    ++in_window;
    if (job.started()) picked.push_back(i);
  }
  if (picked.empty() && in_window > 0)
    throw InputError({trace.source, 0, "start"},
                     fmt::format("the log gives no real start time for its {} jobs submitted in "
                                 "that window: a wait model is fitted on real waits",
                                 in_window));
  if (picked.size() < kMinWaitModelJobs)
    throw InputError({trace.source, 0, "--from/--to"},
                     fmt::format("only {} jobs with a real start were submitted in {} .. {} (at "
                                 "least {} are needed to fit a wait model)",
                                 picked.size(), format_iso_time(from).substr(0, 10),
                                 format_iso_time(to).substr(0, 10), kMinWaitModelJobs));
  WaitTrainingSet s;
  s.window_jobs = picked.size();
  s.categories = fit_wait_categories(trace, from, to);
  if (max_jobs > 0 && picked.size() > max_jobs) {  // evenly thinned, the order kept
    std::vector<std::size_t> thinned(max_jobs);
    for (std::size_t k = 0; k < max_jobs; ++k) thinned[k] = picked[k * picked.size() / max_jobs];
    picked = std::move(thinned);
  }
  s.rows = picked.size();
  s.inputs.resize(s.rows * kWaitModelInputs);
  s.targets.resize(s.rows);
  s.submits.resize(s.rows);
  s.nodes.resize(s.rows);
  s.planned.resize(s.rows);
  s.waits.resize(s.rows);
  std::vector<Seconds> times(s.rows);
  for (std::size_t k = 0; k < s.rows; ++k) times[k] = trace.jobs[picked[k]].submit;
  for_each_logged_queue(trace.jobs, times, cluster.nodes, cluster.gpus_per_node, cluster.priority,
                        [&](std::size_t k, const QueueSnapshot& queue) {
                          const Job& job = trace.jobs[picked[k]];
                          const ForecastJob fj{job.nodes, job.gpus_per_node, job.time_limit};
                          const auto x = wait_model_inputs(
                              queue, fj, s.categories.inputs(s.categories.of(job)));
                          std::copy(x.begin(), x.end(), s.inputs.begin() + k * kWaitModelInputs);
                          s.targets[k] = wait_target(job.wait());
                          s.submits[k] = job.submit;
                          s.nodes[k] = job.nodes;
                          s.planned[k] = QueueForecast::plan(queue, fj).wait;
                          s.waits[k] = job.wait();
                        });
  return s;
}

}  // namespace mirage
