#pragma once
// A model file read for deciding, without LibTorch (ModelFile.cpp): its metadata checked
// against this build, its decision rule, and its network as a RowNet. Training writes model
// files and reads their weights back into LibTorch networks (ModelWeights.cpp).
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "Internal.h"
#include "RowNet.h"
#include "mirage/agents/learned/RiskInput.h"

namespace mirage::learned {

inline constexpr char kModelFormat[] = "mirage-model";
inline constexpr int kModelFormatVersion = 1;
inline constexpr char kModelMetaKey[] = "mirage_meta";  // the metadata, a JSON string
inline constexpr char kModelNetKey[] = "net";           // the network's module

struct ModelMeta {
  AgentKind kind = AgentKind::kDqn;
  DecisionRule rule;
  nlohmann::json json;  // all of it
};

// The metadata of the model file `path`, as `text` (its kModelMetaKey) holds it: throws
// InputError naming the file when it is not a mirage model, or one this build cannot serve
// (another format, encoder or pooling version; an input no longer there).
ModelMeta check_model_meta(const std::string* text, const std::string& path);

// Whether the model file whose metadata is `meta` reads a wait predictor's quantiles (its
// networks then take pooled_width(true) inputs).
bool reads_wait_predictor(const nlohmann::json& meta);

// A model trained with the risk as an input (RiskInput.h): what it appends to its pooled row and
// the threshold of each validated level. In the metadata as "risk_input": {"residual": bool,
// "levels": [{"risk", "threshold" (null: never early), "mean_interruption_h",
// "mean_overlap_h", "mean_cost_h"}, ...]}.
struct RiskModel {
  RiskInputs inputs;
  std::vector<RiskPoint> points;
};
nlohmann::json risk_input_json(const RiskInputs& inputs, const std::vector<RiskPoint>& points);
// None for a model without; InputError naming the file when the entry is malformed.
std::optional<RiskModel> read_risk_model(const nlohmann::json& meta, const std::string& path);

struct LoadedModel {
  AgentKind kind = AgentKind::kDqn;
  DecisionRule rule;
  std::unique_ptr<RowNet> row;  // the network, for one decision at a time
  // The wait predictor it was trained with (its quantiles are inputs), read from the path the
  // file records; none for a model trained without one.
  std::shared_ptr<const WaitPredictor> waits;
  std::optional<RiskModel> risk;  // trained with the risk as an input: MODEL@RISK's knob
  int history = 0;                // the sequence model's snapshots (Hyperparameters::history)
};

// Throws InputError naming the file when it is not a model file this build can read.
std::shared_ptr<const LoadedModel> load_model(const std::string& path);

}  // namespace mirage::learned
