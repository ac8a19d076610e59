#include "GptConfig.h"

namespace mirage::training {
namespace {

const std::vector<GptConfig>& configs() {
  // name, layers, heads, width, context (GPT-2's 1024; the tiny one is short for fast tests)
  static const std::vector<GptConfig> all = {
      {"tiny", 2, 2, 64, 128},      {"124M", 12, 12, 768, 1024},  {"350M", 24, 16, 1024, 1024},
      {"774M", 36, 20, 1280, 1024}, {"1.5B", 48, 25, 1600, 1024},
  };
  return all;
}

}  // namespace

std::int64_t GptConfig::parameter_count() const {
  const std::int64_t d = n_embd;
  const std::int64_t per_block = 2 * 2 * d            // two layer norms
                                 + d * 3 * d + 3 * d  // qkv projection
                                 + d * d + d          // attention output
                                 + d * 4 * d + 4 * d  // MLP up
                                 + 4 * d * d + d;     // MLP down
  return vocab_size * d + block_size * d + n_layer * per_block + 2 * d;
}

double GptConfig::model_flops_per_token(int seq_len) const {
  const double weights = double(parameter_count()) - double(block_size) * n_embd;
  return 6.0 * weights + 12.0 * n_layer * double(n_embd) * seq_len;
}

std::optional<GptConfig> gpt_config_by_name(const std::string& name) {
  for (const GptConfig& c : configs()) {
    if (c.name == name) return c;
  }
  return std::nullopt;
}

std::vector<std::string> gpt_config_names() {
  std::vector<std::string> names;
  for (const GptConfig& c : configs()) names.push_back(c.name);
  return names;
}

}  // namespace mirage::training
