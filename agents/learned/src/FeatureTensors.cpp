// The probes as LibTorch tensors: every decision's features, their standardisation, and the
// margins a network gives them in chunks.
#include "Nets.h"

namespace mirage::learned {
namespace {

constexpr std::int64_t kChunk = 16384;

}  // namespace

torch::Tensor features_tensor(const ProbeSet& data) {
  return torch::from_blob(const_cast<float*>(data.x.data()),
                          {static_cast<std::int64_t>(data.decisions()), data.width},
                          torch::kFloat32);
}

torch::Tensor with_log_ratio(const torch::Tensor& x, const std::vector<float>& log_ratio) {
  const auto column =
      torch::from_blob(const_cast<float*>(log_ratio.data()),
                       {static_cast<std::int64_t>(log_ratio.size()), 1}, torch::kFloat32);
  return torch::cat({x, column}, 1);  // a copy: `log_ratio` may go
}

QInputs q_inputs(const TrainContext& ctx) {
  QInputs in;
  std::tie(in.mean, in.stddev) = feature_moments(ctx.data, ctx.split.train);
  in.x = features_tensor(ctx.data);
  if (ctx.config.hp.risk_input) {
    in.mean = torch::cat({in.mean, torch::zeros({1})});
    in.stddev = torch::cat({in.stddev, torch::ones({1})});
    in.rows = [x = in.x](const std::vector<float>& log_ratio) {
      return with_log_ratio(x, log_ratio);
    };
  }
  return in;
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

}  // namespace mirage::learned
