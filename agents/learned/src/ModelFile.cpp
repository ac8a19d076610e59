// The model file read for deciding: metadata (agent, hyperparameters, pooling, the decision rule
// chosen on validation), older versions included, and the network's weights.
#include "ModelFile.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>
#include <utility>

#include "TorchArchive.h"
#include "mirage/agents/learned/LearnedModel.h"
#include "mirage/core/Error.h"

namespace mirage::learned {
namespace {

// Files made before the guard existed decide without it; before there were two guards, `true`
// meant the forecast from time limits.
ForecastGuard read_guard(const nlohmann::json& meta, const std::string& path) {
  const auto it = meta.find("forecast_guard");
  if (it == meta.end()) return ForecastGuard::kOff;
  if (it->is_boolean()) return it->get<bool>() ? ForecastGuard::kLimits : ForecastGuard::kOff;
  if (it->is_string())
    if (const auto g = parse_forecast_guard(it->get<std::string>())) return *g;
  throw InputError({path, 0, "policy"},
                   fmt::format("the model file's forecast_guard is {}; expected off, limits or "
                               "halved (retrain it with `mirage train`)",
                               it->dump()));
}

// The learning options removed because they lost (issue 58: experiments that lost are deleted,
// not kept behind flags), as a model file's hyperparameters name them: a model trained with one
// is refused rather than served as one this mirage makes.
std::optional<std::string> removed_option(const nlohmann::json& hp) {
  for (const char* key : {"calibrate", "follow_average", "window_clause"})
    if (const auto it = hp.find(key); it != hp.end() && *it == false)
      return fmt::format("{} = false", key);
  for (const auto& [key, value] :
       {std::pair{"wait_target", "bootstrap"}, std::pair{"forecast_guard", "recent"},
        std::pair{"pg_estimator", "exact"}, std::pair{"objective", "match-average"}})
    if (const auto it = hp.find(key); it != hp.end() && *it == value)
      return fmt::format("{} = \"{}\"", key, value);
  return std::nullopt;
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
  w.plan = parse_forecast_plan(it->value("plan", ""));
  if (!w.plan) throw bad();
  const auto within = it->find("within_s"), wait = it->find("wait_s");
  if (within == it->end() || wait == it->end() || !within->is_number_integer() ||
      !wait->is_number_integer())
    throw bad();
  w.within = within->get<Seconds>();
  w.wait = wait->get<Seconds>();
  return w;
}

// The predictor a model was trained with, from the path its file records, refused in one line
// when it is gone or its bytes changed (its answers would be another model's inputs).
std::shared_ptr<const WaitPredictor> read_model_predictor(const nlohmann::json& meta,
                                                          const std::string& path) {
  if (!reads_wait_predictor(meta)) return nullptr;
  const auto it = meta.find("wait_predictor");
  const std::string stem = std::filesystem::path(path).stem().string();
  if (!it->is_object() || !it->contains("path") || !it->contains("digest") ||
      !(*it)["path"].is_string() || !(*it)["digest"].is_string())
    throw InputError({path, 0, "policy"},
                     fmt::format("the model file's wait_predictor is {}; expected null or "
                                 "{{\"path\": file, \"digest\": hex}}",
                                 it->dump()));
  const std::string file = (*it)["path"], digest = (*it)["digest"];
  if (!std::filesystem::is_regular_file(file))
    throw InputError({path, 0, "policy"},
                     fmt::format("model {} reads the wait predictor {}, which is not there; put "
                                 "it back or retrain the model",
                                 stem, file));
  WaitPredictorRef ref;
  auto predictor = read_recorded_predictor(file, &ref);
  if (ref.digest != digest)
    throw InputError({path, 0, "policy"},
                     fmt::format("model {} was trained with the wait predictor {} of digest {}; "
                                 "the file there now has digest {}: retrain the model",
                                 stem, file, digest, ref.digest));
  return predictor;
}

}  // namespace

nlohmann::json risk_input_json(const RiskInputs& inputs, const std::vector<RiskPoint>& points) {
  nlohmann::json levels = nlohmann::json::array();
  for (const RiskPoint& p : points)
    levels.push_back({{"risk", p.risk},
                      {"threshold", std::isinf(p.threshold) ? nlohmann::json(nullptr)
                                                            : nlohmann::json(p.threshold)},
                      {"mean_interruption_h", p.val.mean_interruption_h},
                      {"mean_overlap_h", p.val.mean_overlap_h},
                      {"mean_cost_h", p.val.mean_cost_h},
                      {"episodes", p.val.episodes}});
  return {{"residual", inputs.residual}, {"levels", levels}};
}

std::optional<RiskModel> read_risk_model(const nlohmann::json& meta, const std::string& path) {
  const auto it = meta.find("risk_input");
  if (it == meta.end() || it->is_null()) return std::nullopt;
  const auto bad = [&] {
    return InputError({path, 0, "policy"},
                      fmt::format("the model file's risk_input is {}; expected {{\"residual\": "
                                  "bool, \"levels\": [{{\"risk\": number, \"threshold\": "
                                  "number or null, ...}}, ...]}} (retrain it with `mirage train`)",
                                  it->dump()));
  };
  RiskModel m;
  try {
    m.inputs.residual = it->at("residual").get<bool>();
    for (const auto& level : it->at("levels")) {
      RiskPoint p;
      p.risk = level.at("risk").get<double>();
      const auto& t = level.at("threshold");
      p.threshold = t.is_null() ? std::numeric_limits<double>::infinity() : t.get<double>();
      p.val.mean_interruption_h = level.value("mean_interruption_h", 0.0);
      p.val.mean_overlap_h = level.value("mean_overlap_h", 0.0);
      p.val.mean_cost_h = level.value("mean_cost_h", 0.0);
      p.val.episodes = level.value("episodes", std::size_t{0});
      if (risk_problem(p.risk)) throw bad();
      m.points.push_back(p);
    }
  } catch (const nlohmann::json::exception&) {
    throw bad();
  }
  if (m.points.empty()) throw bad();
  return m;
}

bool reads_wait_predictor(const nlohmann::json& meta) {
  const auto it = meta.find("wait_predictor");
  return it != meta.end() && !it->is_null();
}

ModelMeta check_model_meta(const std::string* text, const std::string& path) {
  if (!text) throw InputError({path, 0, "policy"}, "not a mirage model file (no metadata)");
  ModelMeta out;
  out.json = nlohmann::json::parse(*text, nullptr, false);
  const nlohmann::json& meta = out.json;
  if (meta.is_discarded() || !meta.is_object() || meta.value("format", "") != kModelFormat)
    throw InputError({path, 0, "policy"}, "not a mirage model file (bad metadata)");
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
  require("format_version", kModelFormatVersion, "has file format", "reads");
  require("encoder_version", FeatureEncoder::kVersion, "was made by feature encoder", "has");
  require("pooling_version", kPoolingVersion, "was made with feature pooling", "has");
  const auto kind = parse_agent_kind(meta.value("agent", ""));
  if (!kind) throw InputError({path, 0, "policy"}, "unknown agent kind in the model file");
  out.kind = *kind;
  try {
    const auto& hp = meta.at("hyperparameters");
    // History blocks were an input tried and removed; a model that reads them cannot be served.
    if (const int blocks = hp.value("history_blocks", 0); blocks != 0)
      throw InputError({path, 0, "policy"},
                       fmt::format("model {} reads history blocks (history_blocks = {}), an input "
                                   "this mirage no longer has; retrain it with `mirage train`",
                                   stem, blocks));
    if (const auto option = removed_option(hp))
      throw InputError({path, 0, "policy"},
                       fmt::format("model {} was trained with {}, an experiment that lost and "
                                   "that this mirage no longer has; retrain it with `mirage train`",
                                   stem, *option));
    // null: never submit early (JSON has no infinity).
    const auto& t = meta.at("decision_threshold");
    out.rule.threshold = t.is_null() ? std::numeric_limits<double>::infinity() : t.get<double>();
  } catch (const nlohmann::json::exception&) {
    throw InputError({path, 0, "policy"}, "the model file's metadata is incomplete");
  }
  out.rule.guard = read_guard(meta, path);
  out.rule.after_average = read_after_average(meta, path);
  out.rule.window = read_window_clause(meta, path);
  return out;
}

std::shared_ptr<const LoadedModel> load_model(const std::string& path) {
  if (!std::filesystem::is_regular_file(path))
    throw InputError({path, 0, "policy"}, "no such model file");
  const ArchiveModule archive = read_torch_archive(path);
  const ModelMeta meta = check_model_meta(archive.string(kModelMetaKey), path);
  auto model = std::make_shared<LoadedModel>();
  model->kind = meta.kind;
  model->rule = meta.rule;
  model->waits = read_model_predictor(meta.json, path);
  model->risk = read_risk_model(meta.json, path);
  model->history = meta.json.at("hyperparameters").value("history", 0);
  if (model->history < 0 || model->history > kMaxHistory)
    throw InputError({path, 0, "policy"},
                     fmt::format("the model file's history is {}; expected 0 to {} snapshots "
                                 "(retrain it with `mirage train`)",
                                 model->history, kMaxHistory));
  if (model->risk && model->risk->inputs.residual && !model->waits)
    throw InputError({path, 0, "policy"},
                     "the model file's risk_input has a residual on quantile@risk but no "
                     "wait_predictor to read the quantiles from (retrain it with `mirage train`)");
  const ArchiveModule* net = archive.child(kModelNetKey);
  try {
    if (!net) throw std::invalid_argument("no network");
    model->row = RowNet::from(*net);
    const auto width = static_cast<std::size_t>(pooled_width(model->waits != nullptr) +
                                                (model->risk ? model->risk->inputs.width() : 0) +
                                                history_width(model->history));
    if (model->row->inputs() != width)
      throw std::invalid_argument(
          fmt::format("it reads {} features; expected {}", model->row->inputs(), width));
    // One row of zeros through it: a network whose layers do not chain is refused here.
    const std::vector<float> zeros(width, 0.f);
    model->row->margin(zeros.data());
  } catch (const std::invalid_argument& e) {
    throw InputError({path, 0, "policy"},
                     fmt::format("the model file's weights do not match its metadata (damaged "
                                 "file?): {}",
                                 e.what()));
  }
  return model;
}

ModelInfo read_model_info(const std::string& path) {
  if (!std::filesystem::is_regular_file(path))
    throw InputError({path, 0, "policy"}, "no such model file");
  const ArchiveModule archive = read_torch_archive(path);
  const std::string* text = archive.string(kModelMetaKey);
  auto meta = text ? nlohmann::json::parse(*text, nullptr, false) : nlohmann::json();
  if (!text) throw InputError({path, 0, "policy"}, "not a mirage model file (no metadata)");
  if (meta.is_discarded() || !meta.is_object() || meta.value("format", "") != kModelFormat)
    throw InputError({path, 0, "policy"}, "not a mirage model file (bad metadata)");
  ModelInfo info;
  info.agent = meta.value("agent", "");
  info.format_version = meta.value("format_version", 0);
  info.encoder_version = meta.value("encoder_version", 0);
  info.pooling_version = meta.value("pooling_version", 0);
  info.metadata_json = meta.dump(2);
  return info;
}

}  // namespace mirage::learned
