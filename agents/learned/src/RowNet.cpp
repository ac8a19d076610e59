#include "RowNet.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace mirage::learned {
namespace {

std::vector<float> to_vector(const torch::Tensor& t) {
  const auto c = t.detach().to(torch::kFloat32).contiguous();
  return {c.data_ptr<float>(), c.data_ptr<float>() + c.numel()};
}

struct Dense {
  int inputs = 0, outputs = 0;
  std::vector<float> weight;  // [outputs][inputs]
  std::vector<float> bias;
  explicit Dense(const torch::nn::LinearImpl& l)
      : inputs(static_cast<int>(l.weight.size(1))),
        outputs(static_cast<int>(l.weight.size(0))),
        weight(to_vector(l.weight)),
        bias(to_vector(l.bias)) {}
  void apply(const std::vector<float>& in, std::vector<float>& out, bool relu) const {
    out.assign(bias.begin(), bias.end());
    for (int o = 0; o < outputs; ++o) {
      const float* w = weight.data() + static_cast<std::size_t>(o) * inputs;
      float s = 0;
      for (int i = 0; i < inputs; ++i) s += w[i] * in[static_cast<std::size_t>(i)];
      out[static_cast<std::size_t>(o)] += s;
      if (relu) out[static_cast<std::size_t>(o)] = std::max(0.f, out[static_cast<std::size_t>(o)]);
    }
  }
};

class MlpRow final : public RowNet {
 public:
  explicit MlpRow(MlpNet& net)
      : mean_(to_vector(net.mean)), inv_std_(to_vector(net.inv_std)), head_(*net.head) {
    for (const auto& child : net.body->children())
      if (const auto* l = child->as<torch::nn::Linear>()) layers_.emplace_back(*l);
  }
  std::vector<float> forward(const float* x) const override {
    std::vector<float> z(mean_.size()), next;
    // As MlpNet::forward: standardise, clamp, hidden layers with ReLU, head.
    for (std::size_t f = 0; f < z.size(); ++f)
      z[f] = std::clamp((x[f] - mean_[f]) * inv_std_[f], -kInputClamp, kInputClamp);
    for (const Dense& l : layers_) {
      l.apply(z, next, true);
      z.swap(next);
    }
    head_.apply(z, next, false);
    return next;
  }

 private:
  std::vector<float> mean_, inv_std_;
  std::vector<Dense> layers_;
  Dense head_;
};

class MixtureRow final : public RowNet {
 public:
  explicit MixtureRow(MixtureNet& net) : gate_(*net.gate) {
    for (const auto& e : net.expert_nets) experts_.emplace_back(*e);
  }
  std::vector<float> forward(const float* x) const override {
    // As MixtureNet::forward: the experts' outputs weighted by the gate's softmax.
    const std::vector<float> logits = gate_.forward(x);
    const float top = *std::max_element(logits.begin(), logits.end());
    std::vector<float> w(logits.size());
    float total = 0;
    for (std::size_t k = 0; k < w.size(); ++k) total += w[k] = std::exp(logits[k] - top);
    std::vector<float> out;
    for (std::size_t k = 0; k < experts_.size(); ++k) {
      const std::vector<float> q = experts_[k].forward(x);
      out.resize(q.size(), 0.f);
      for (std::size_t a = 0; a < q.size(); ++a) out[a] += w[k] / total * q[a];
    }
    return out;
  }

 private:
  MlpRow gate_;
  std::vector<MlpRow> experts_;
};

class EnsembleRow final : public RowNet {
 public:
  explicit EnsembleRow(EnsembleNet& net) {
    for (const auto& m : net.members) members_.push_back(copy_of(*m));
  }
  std::vector<float> forward(const float* x) const override {
    std::vector<float> out;
    for (const auto& m : members_) {
      const std::vector<float> o = m->forward(x);
      out.resize(o.size(), 0.f);
      for (std::size_t a = 0; a < o.size(); ++a) out[a] += o[a];
    }
    for (float& v : out) v /= static_cast<float>(members_.size());
    return out;
  }

 private:
  std::vector<std::unique_ptr<RowNet>> members_;
};

}  // namespace

std::unique_ptr<RowNet> RowNet::copy_of(ScoreNet& net) {
  if (auto* m = dynamic_cast<MlpNet*>(&net)) return std::make_unique<MlpRow>(*m);
  if (auto* m = dynamic_cast<MixtureNet*>(&net)) return std::make_unique<MixtureRow>(*m);
  if (auto* m = dynamic_cast<EnsembleNet*>(&net)) return std::make_unique<EnsembleRow>(*m);
  throw std::invalid_argument("RowNet: a network of an unknown kind");
}

float RowNet::margin(const float* x) const {
  const std::vector<float> out = forward(x);
  return out.size() == 2 ? out[1] - out[0] : out[0];
}

}  // namespace mirage::learned
