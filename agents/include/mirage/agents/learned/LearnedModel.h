#pragma once
// Learned agents as Policies: one model file per agent (weights, feature-encoder version,
// training trace, window and configuration), loaded by the policy registry. Deciding and reading
// the metadata need no LibTorch (mirage_learned_data); rewriting a file and digesting its
// weights do (mirage_learned).
#include <memory>
#include <optional>
#include <string>

#include "mirage/core/Policy.h"

namespace mirage::learned {

// Makes make_policy() load model files (PolicyRegistry's hook). Call once at program start;
// idempotent.
void register_learned_policies();

// Loads a model file as a Policy named after the file's stem. Throws InputError when the file is
// missing, is not a mirage model, or was made by another feature-encoder version.
std::unique_ptr<Policy> load_learned_policy(const std::string& path,
                                            std::optional<double> threshold = std::nullopt);

// The metadata of a model file, without its weights.
struct ModelInfo {
  std::string agent;  // dqn, pg, moe
  int format_version = 0;
  int encoder_version = 0;
  int pooling_version = 0;
  std::string metadata_json;  // everything: trace, window, configuration, validation
};
ModelInfo read_model_info(const std::string& path);
// Rewrites a model file's metadata (the typed fields override the JSON's), keeping its weights.
void write_model_info(const std::string& path, const ModelInfo& info);

// A digest of the weights, to compare two trainings.
std::string weights_digest(const std::string& path);

}  // namespace mirage::learned
