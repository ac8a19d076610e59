#pragma once
// Model sizes: the GPT-2 benchmark table (124M .. 1.5B) and a tiny one for tests. Tokens are
// bytes (vocabulary 256), so each size has fewer parameters than its GPT-2 name (whose
// vocabulary is 50257): 124M here is about 85M parameters; the transformer body is the same.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mirage::training {

struct GptConfig {
  std::string name;
  int n_layer = 0;
  int n_head = 0;
  int n_embd = 0;
  int block_size = 0;  // longest context the position table covers
  int vocab_size = 256;
  double dropout = 0.0;

  // Parameters of the model built from this config (tied input/output embedding).
  std::int64_t parameter_count() const;
  // Model FLOPs of one training token (forward and backward) at context `seq_len`, as MFU
  // counts them (PaLM, appendix B): 6 per weight, position table excluded, plus the attention
  // scores and their use, 12 x layers x width x context. Recomputation is not counted.
  double model_flops_per_token(int seq_len) const;
};

std::optional<GptConfig> gpt_config_by_name(const std::string& name);
std::vector<std::string> gpt_config_names();

}  // namespace mirage::training
