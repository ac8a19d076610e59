#include "RowNet.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "Internal.h"

namespace mirage::learned {
namespace {

// Names as C strings: a std::string made for the call would be a temporary the returned reference
// seems to GCC 14 to dangle from (-Wdangling-reference).
const ArchiveTensor& tensor(const ArchiveModule& m, const char* name, std::size_t dims) {
  const ArchiveTensor* t = m.tensor(name);
  if (!t || t->sizes.size() != dims)
    throw std::invalid_argument("a layer without a " + std::to_string(dims) + "-d " +
                                std::string(name));
  return *t;
}

const ArchiveModule& child(const ArchiveModule& m, const char* name) {
  const ArchiveModule* c = m.child(name);
  if (!c) throw std::invalid_argument("a network without its " + std::string(name));
  return *c;
}

struct Dense {
  int inputs = 0, outputs = 0;
  std::vector<float> weight;  // [outputs][inputs]
  std::vector<float> bias;
  explicit Dense(const ArchiveModule& linear) {
    const ArchiveTensor& w = tensor(linear, "weight", 2);
    const ArchiveTensor& b = tensor(linear, "bias", 1);
    outputs = static_cast<int>(w.sizes[0]);
    inputs = static_cast<int>(w.sizes[1]);
    if (b.sizes[0] != outputs) throw std::invalid_argument("a layer whose bias fits no weight");
    weight = w.values;
    bias = b.values;
  }
  void apply(const std::vector<float>& in, std::vector<float>& out, bool relu) const {
    if (in.size() != static_cast<std::size_t>(inputs))
      throw std::invalid_argument("layers whose widths do not chain");
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
  explicit MlpRow(const ArchiveModule& net)
      : mean_(tensor(net, "mean", 1).values),
        inv_std_(tensor(net, "inv_std", 1).values),
        head_(child(net, "head")) {
    // The body's children in order: Linear layers (with weights) between ReLUs (without).
    for (const auto& [name, layer] : child(net, "body").children)
      if (layer.tensor("weight")) layers_.emplace_back(layer);
    if (mean_.size() != inv_std_.size())
      throw std::invalid_argument("a mean and spread of two widths");
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
  std::size_t inputs() const override { return mean_.size(); }

 private:
  std::vector<float> mean_, inv_std_;
  std::vector<Dense> layers_;
  Dense head_;
};

class SeqRow final : public RowNet {
 public:
  explicit SeqRow(const ArchiveModule& net)
      : snapshot_mean_(tensor(net, "snapshot_mean", 1).values),
        snapshot_inv_std_(tensor(net, "snapshot_inv_std", 1).values),
        mlp_(child(net, "mlp")) {
    const ArchiveModule& conv = child(net, "conv");
    const ArchiveTensor& w = tensor(conv, "weight", 3);
    channels_ = static_cast<int>(w.sizes[0]);
    kernel_ = static_cast<int>(w.sizes[2]);
    weight_ = w.values;
    bias_ = tensor(conv, "bias", 1).values;
    history_ = static_cast<int>(tensor(net, "history_length", 1).values.at(0));
    if (static_cast<std::size_t>(w.sizes[1]) != snapshot_mean_.size() ||
        snapshot_mean_.size() != snapshot_inv_std_.size() ||
        bias_.size() != static_cast<std::size_t>(channels_) || history_ < kernel_ ||
        mlp_.inputs() < static_cast<std::size_t>(channels_))
      throw std::invalid_argument("a sequence network whose layers do not fit its snapshots");
  }
  std::size_t inputs() const override {
    return mlp_.inputs() - static_cast<std::size_t>(channels_) +
           static_cast<std::size_t>(history_) * snapshot_mean_.size();
  }
  std::vector<float> forward(const float* x) const override {
    // As SeqNet::forward: the snapshots standardised and clamped, the convolution over time
    // with ReLU averaged over time, beside the MLP's inputs.
    const std::size_t snap = snapshot_mean_.size();
    const std::size_t head = mlp_.inputs() - static_cast<std::size_t>(channels_);
    std::vector<float> z(static_cast<std::size_t>(history_) * snap);
    for (std::size_t t = 0; t < static_cast<std::size_t>(history_); ++t)
      for (std::size_t f = 0; f < snap; ++f)
        z[t * snap + f] =
            std::clamp((x[head + t * snap + f] - snapshot_mean_[f]) * snapshot_inv_std_[f],
                       -kInputClamp, kInputClamp);
    std::vector<float> row(x, x + head);
    const int steps = history_ - kernel_ + 1;
    for (int c = 0; c < channels_; ++c) {
      float sum = 0;
      for (int t = 0; t < steps; ++t) {
        float s = bias_[static_cast<std::size_t>(c)];
        for (std::size_t f = 0; f < snap; ++f)
          for (int k = 0; k < kernel_; ++k)
            s += weight_[(static_cast<std::size_t>(c) * snap + f) *
                             static_cast<std::size_t>(kernel_) +
                         static_cast<std::size_t>(k)] *
                 z[static_cast<std::size_t>(t + k) * snap + f];
        sum += std::max(0.f, s);
      }
      row.push_back(sum / static_cast<float>(steps));
    }
    return mlp_.forward(row.data());
  }

 private:
  std::vector<float> snapshot_mean_, snapshot_inv_std_, weight_, bias_;  // weight [c][f][k]
  int channels_ = 0, kernel_ = 0, history_ = 0;
  MlpRow mlp_;
};

class MixtureRow final : public RowNet {
 public:
  explicit MixtureRow(const ArchiveModule& net) : gate_(child(net, "gate")) {
    for (const auto& [name, expert] : child(net, "experts").children) {
      experts_.emplace_back(expert);
      if (experts_.back().inputs() != gate_.inputs())
        throw std::invalid_argument("experts that read another width than their gate");
    }
  }
  std::size_t inputs() const override { return gate_.inputs(); }
  std::vector<float> forward(const float* x) const override {
    // As MixtureNet::forward: the experts' outputs weighted by the gate's softmax.
    const std::vector<float> logits = gate_.forward(x);
    if (logits.size() != experts_.size())
      throw std::invalid_argument("a gate that weighs another number of experts");
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
  explicit EnsembleRow(const ArchiveModule& net) {
    for (const auto& [name, member] : net.children) {
      members_.push_back(from(member));
      if (members_.back()->inputs() != members_.front()->inputs())
        throw std::invalid_argument("ensemble members that read different widths");
    }
  }
  std::size_t inputs() const override { return members_.front()->inputs(); }
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

std::unique_ptr<RowNet> RowNet::from(const ArchiveModule& net) {
  // Told apart by what each registers (Networks.cpp): an MLP its standardisation buffers, a
  // mixture its gate, a sequence model its convolution, an ensemble its members member0, member1,
  // ...
  if (net.tensor("mean")) return std::make_unique<MlpRow>(net);
  if (net.child("gate")) return std::make_unique<MixtureRow>(net);
  if (net.child("conv")) return std::make_unique<SeqRow>(net);
  if (!net.children.empty() && net.children.front().first.rfind("member", 0) == 0)
    return std::make_unique<EnsembleRow>(net);
  throw std::invalid_argument("a network that is no MLP, sequence model, mixture or ensemble");
}

float RowNet::margin(const float* x) const {
  const std::vector<float> out = forward(x);
  return out.size() == 2 ? out[1] - out[0] : out[0];
}

}  // namespace mirage::learned
