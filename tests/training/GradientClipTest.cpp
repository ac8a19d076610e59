// The trainer's gradient clipping and its FLOP count, against LibTorch's own and the formula.
#include <gtest/gtest.h>
#include <torch/types.h>

#include "GradientClip.h"

// After torch/types.h, which it needs (it names `Tensor` unqualified).
#include <torch/nn/utils/clip_grad.h>

#include "GptConfig.h"

namespace mirage::training {
namespace {

std::vector<torch::Tensor> parameters_with_gradients(double scale) {
  torch::manual_seed(7);
  std::vector<torch::Tensor> params;
  for (auto shape : {std::vector<std::int64_t>{3, 5}, {7}, {2, 2, 4}}) {
    auto p = torch::randn(shape).requires_grad_();
    p.mutable_grad() = torch::randn(shape) * scale;
    params.push_back(p);
  }
  return params;
}

std::vector<torch::Tensor> clone_gradients(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> out;
  for (const auto& p : params) out.push_back(p.grad().clone());
  return out;
}

// Same global norm, same scaling as torch::nn::utils::clip_grad_norm_, whether the gradients
// are above the limit (scaled down) or below it (left as they are).
TEST(GradientClip, MatchesLibTorchsClipGradNorm) {
  for (double scale : {10.0, 0.01}) {
    auto mine = parameters_with_gradients(scale);
    auto reference = parameters_with_gradients(scale);
    auto before = clone_gradients(mine);
    const double norm = clip_grad_norm(mine, 1.0).item<double>();
    const double reference_norm = torch::nn::utils::clip_grad_norm_(reference, 1.0);
    EXPECT_NEAR(norm, reference_norm, 1e-5 * reference_norm) << "scale " << scale;
    for (std::size_t i = 0; i < mine.size(); ++i) {
      EXPECT_TRUE(torch::allclose(mine[i].grad(), reference[i].grad(), 1e-6, 1e-7));
      if (scale < 1) {
        EXPECT_TRUE(torch::equal(mine[i].grad(), before[i]));
      }
    }
  }
}

TEST(GradientClip, ParametersWithoutGradientsAreSkipped) {
  auto params = parameters_with_gradients(10.0);
  params.push_back(torch::randn({4}).requires_grad_());  // no gradient
  EXPECT_GT(clip_grad_norm(params, 1.0).item<double>(), 1.0);
  EXPECT_FALSE(params.back().grad().defined());
}

// 6 FLOPs per weight (the position table excluded) plus 12 x layers x width x context: for 124M
// at its full context, 6 x 85,252,608 + 113,246,208.
TEST(GptConfig, ModelFlopsPerTokenFollowPalmsCount) {
  auto small = gpt_config_by_name("124M");
  ASSERT_TRUE(small);
  EXPECT_DOUBLE_EQ(small->model_flops_per_token(1024), 6.0 * 85252608 + 113246208);
  // Shorter sequences only shrink the attention term.
  EXPECT_DOUBLE_EQ(small->model_flops_per_token(1024) - small->model_flops_per_token(512),
                   12.0 * 12 * 768 * 512);
}

}  // namespace
}  // namespace mirage::training
