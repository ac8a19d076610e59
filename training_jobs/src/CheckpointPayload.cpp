#include "CheckpointPayload.h"

#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <cstring>
#include <optional>

namespace mirage::training {
namespace {

torch::Tensor scalar(std::int64_t v) {
  return torch::tensor(v, torch::kLong);
}
torch::Tensor scalar(double v) {
  return torch::tensor(v, torch::kDouble);
}

torch::Tensor bytes_tensor(const std::string& bytes) {
  auto t = torch::empty({static_cast<std::int64_t>(bytes.size())}, torch::kUInt8);
  std::memcpy(t.data_ptr<std::uint8_t>(), bytes.data(), bytes.size());
  return t;
}

std::int64_t read_int(torch::serialize::InputArchive& archive, const std::string& key) {
  torch::Tensor t;
  archive.read(key, t);
  return t.item<std::int64_t>();
}

// A key that checkpoints of an older trainer lack.
std::optional<std::int64_t> try_read_int(torch::serialize::InputArchive& archive,
                                         const std::string& key) {
  torch::Tensor t;
  if (!archive.try_read(key, t)) return std::nullopt;
  return t.item<std::int64_t>();
}

std::optional<std::string> try_read_string(torch::serialize::InputArchive& archive,
                                           const std::string& key) {
  c10::IValue v;
  if (!archive.try_read(key, v)) return std::nullopt;
  return v.toStringRef();
}

void load_archive(torch::serialize::InputArchive& archive, const PayloadReader& payload) {
  archive.load_from(payload.read, [size = payload.size] { return static_cast<std::size_t>(size); });
}

}  // namespace

void encode_payload(GptModel& model, const AdamW& optimizer, const TrainState& state,
                    const PayloadSink& sink) {
  torch::serialize::OutputArchive root, config, st, model_archive, optim, rng;
  const GptConfig& c = model->config;
  config.write("name", c10::IValue(c.name));
  config.write("n_layer", scalar(std::int64_t{c.n_layer}));
  config.write("n_head", scalar(std::int64_t{c.n_head}));
  config.write("n_embd", scalar(std::int64_t{c.n_embd}));
  config.write("block_size", scalar(std::int64_t{c.block_size}));
  config.write("vocab_size", scalar(std::int64_t{c.vocab_size}));
  config.write("dropout", scalar(c.dropout));
  root.write("config", config);

  st.write("step", scalar(state.step));
  st.write("data_position", scalar(state.data_position));
  st.write("tokens_seen", scalar(state.tokens_seen));
  st.write("loss", scalar(state.loss));
  st.write("world_size", scalar(std::int64_t{state.world_size}));
  // The seed travels as its bit pattern: archives hold signed integers.
  st.write("data_seed", scalar(static_cast<std::int64_t>(state.data_seed)));
  for (std::size_t r = 0; r < state.rng_states.size(); ++r) {
    rng.write(std::to_string(r), bytes_tensor(state.rng_states[r]));
  }
  st.write("rng_count", scalar(static_cast<std::int64_t>(state.rng_states.size())));
  st.write("rng", rng);
  // Written only where known, as a checkpoint of an older trainer has none.
  if (state.seq_len > 0) st.write("seq_len", scalar(std::int64_t{state.seq_len}));
  if (state.corpus_size >= 0) {
    st.write("corpus_name", c10::IValue(state.corpus_name));
    st.write("corpus_size", scalar(state.corpus_size));
    st.write("corpus_crc", scalar(std::int64_t{state.corpus_crc}));
  }
  if (!state.campaign_id.empty()) st.write("campaign_id", c10::IValue(state.campaign_id));
  root.write("state", st);

  // CPU copies, so a checkpoint written on a GPU loads anywhere.
  for (const auto& item : model->named_parameters()) {
    model_archive.write(item.key(), item.value().detach().cpu());
  }
  root.write("model", model_archive);
  optimizer.save(optim);
  root.write("optim", optim);

  root.save_to([&](const void* data, std::size_t n) {
    sink(std::string_view(static_cast<const char*>(data), n));
    return n;
  });
}

GptConfig payload_config(const PayloadReader& payload) {
  torch::serialize::InputArchive root, config;
  load_archive(root, payload);
  root.read("config", config);
  GptConfig c;
  c10::IValue name;
  config.read("name", name);
  c.name = name.toStringRef();
  c.n_layer = static_cast<int>(read_int(config, "n_layer"));
  c.n_head = static_cast<int>(read_int(config, "n_head"));
  c.n_embd = static_cast<int>(read_int(config, "n_embd"));
  c.block_size = static_cast<int>(read_int(config, "block_size"));
  c.vocab_size = static_cast<int>(read_int(config, "vocab_size"));
  torch::Tensor dropout;
  config.read("dropout", dropout);
  c.dropout = dropout.item<double>();
  return c;
}

void decode_payload(const PayloadReader& payload, GptModel& model, AdamW& optimizer,
                    TrainState& state) {
  torch::serialize::InputArchive root, st, model_archive, optim, rng;
  load_archive(root, payload);
  root.read("state", st);
  state.step = read_int(st, "step");
  state.data_position = read_int(st, "data_position");
  state.tokens_seen = read_int(st, "tokens_seen");
  torch::Tensor loss;
  st.read("loss", loss);
  state.loss = loss.item<double>();
  state.world_size = static_cast<int>(read_int(st, "world_size"));
  state.data_seed = static_cast<std::uint64_t>(read_int(st, "data_seed"));
  st.read("rng", rng);
  state.rng_states.clear();
  for (std::int64_t r = 0, n = read_int(st, "rng_count"); r < n; ++r) {
    torch::Tensor t;
    rng.read(std::to_string(r), t);
    t = t.contiguous();
    state.rng_states.emplace_back(reinterpret_cast<const char*>(t.data_ptr<std::uint8_t>()),
                                  static_cast<std::size_t>(t.numel()));
  }
  state.seq_len = static_cast<int>(try_read_int(st, "seq_len").value_or(0));
  state.corpus_size = try_read_int(st, "corpus_size").value_or(-1);
  state.corpus_name = try_read_string(st, "corpus_name").value_or("");
  state.corpus_crc = static_cast<std::uint32_t>(try_read_int(st, "corpus_crc").value_or(0));
  state.campaign_id = try_read_string(st, "campaign_id").value_or("");
  root.read("model", model_archive);
  {
    // Copied into the existing parameters, which keeps their device and the optimizer's
    // references to them.
    torch::NoGradGuard no_grad;
    for (auto& item : model->named_parameters()) {
      torch::Tensor t;
      model_archive.read(item.key(), t);
      TORCH_CHECK(t.sizes() == item.value().sizes(), "parameter ", item.key(), " has shape ",
                  t.sizes(), " in the checkpoint, ", item.value().sizes(), " in the model");
      item.value().copy_(t);
    }
  }
  root.read("optim", optim);
  optimizer.load(optim);
}

CheckpointSummary inspect_checkpoint(const std::filesystem::path& file) {
  PayloadReader payload = CheckpointDir::open_payload(file);
  CheckpointSummary summary;
  summary.config = payload_config(payload);
  GptModel model(summary.config);
  std::vector<torch::Tensor> params = model->parameters();
  AdamW optimizer(params, AdamWOptions{});
  decode_payload(payload, model, optimizer, summary.state);
  for (const auto& p : params) {
    auto flat = p.detach().to(torch::kCPU, torch::kFloat).contiguous().reshape({-1});
    summary.parameters.insert(summary.parameters.end(), flat.data_ptr<float>(),
                              flat.data_ptr<float>() + flat.numel());
  }
  summary.parameter_count = static_cast<std::int64_t>(summary.parameters.size());
  return summary;
}

}  // namespace mirage::training
