// SumLayerNorm: LayerNorm(a + b) through the fused kernels on the GPU (fp32 rows) against
// at::layer_norm of the sum through autograd, values and all four gradients, in 2-D and 3-D; and
// exactly at::layer_norm(a + b) wherever the fused path does not apply.
#include "padless/models/embedding_norm.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <vector>

#include "gpu_test_util.h"

namespace padless::models {
namespace {

struct Outputs {
  at::Tensor out, da, db, dgamma, dbeta;
};

// Forward and backward with the upstream gradient `dy`; `fused` picks SumLayerNorm or the plain
// ops.
Outputs Differentiate(const std::vector<int64_t>& shape, at::Device device, at::ScalarType dtype,
                      bool fused) {
  at::manual_seed(21);
  const int64_t hidden = shape.back();
  at::Tensor a = (at::randn(shape) * 3 + 1).to(device, dtype).set_requires_grad(true);
  at::Tensor b = at::randn(shape).to(device, dtype).set_requires_grad(true);
  at::Tensor gamma = (1 + 0.1 * at::randn({hidden})).to(device, dtype).set_requires_grad(true);
  at::Tensor beta = (0.1 * at::randn({hidden})).to(device, dtype).set_requires_grad(true);
  const at::Tensor dy = at::randn(shape).to(device, dtype);
  const double eps = 1e-12;
  const at::Tensor out = fused ? SumLayerNorm(a, b, gamma, beta, eps)
                               : at::layer_norm(a + b, {hidden}, gamma, beta, eps);
  out.backward(dy);
  return {out.detach().cpu(), a.grad().cpu(), b.grad().cpu(), gamma.grad().cpu(),
          beta.grad().cpu()};
}

void ExpectClose(const Outputs& got, const Outputs& want, double tol, bool bitwise) {
  const std::vector<std::pair<const char*, std::pair<at::Tensor, at::Tensor>>> pairs = {
      {"out", {got.out, want.out}},
      {"d_a", {got.da, want.da}},
      {"d_b", {got.db, want.db}},
      {"d_gamma", {got.dgamma, want.dgamma}},
      {"d_beta", {got.dbeta, want.dbeta}}};
  for (const auto& [name, p] : pairs) {
    ASSERT_EQ(p.first.sizes(), p.second.sizes()) << name;
    ASSERT_EQ(p.first.scalar_type(), p.second.scalar_type()) << name;
    if (bitwise) {
      EXPECT_TRUE(p.first.equal(p.second)) << name;
      continue;
    }
    const double scale = p.second.abs().max().item<double>() + 1e-30;
    const double err =
        (p.first.to(at::kDouble) - p.second.to(at::kDouble)).abs().max().item<double>();
    EXPECT_LE(err / scale, tol) << name << ": max error " << err << " of " << scale;
    EXPECT_TRUE(p.first.isfinite().all().item<bool>()) << name;
  }
}

TEST(SumLayerNormTest, ElsewhereIsExactlyLayerNormOfTheSum) {
  ExpectClose(Differentiate({37, 64}, at::kCPU, at::kFloat, true),
              Differentiate({37, 64}, at::kCPU, at::kFloat, false), 0, /*bitwise=*/true);
  ExpectClose(Differentiate({3, 5, 24}, at::kCPU, at::kDouble, true),
              Differentiate({3, 5, 24}, at::kCPU, at::kDouble, false), 0, /*bitwise=*/true);
}

TEST(SumLayerNormTest, FusedOnTheGpuMatchesAutogradOfThePlainOps) {
  if (!testing::HasCuda()) GTEST_SKIP() << "no CUDA device";
  for (const std::vector<int64_t>& shape :
       {std::vector<int64_t>{4099, 768}, {2, 333, 256}, {1, 1024}, {0, 768}}) {
    SCOPED_TRACE(at::IntArrayRef(shape));
    const Outputs fused = Differentiate(shape, at::kCUDA, at::kFloat, true);
    const Outputs plain = Differentiate(shape, at::kCUDA, at::kFloat, false);
    if (shape.front() == 0) {
      EXPECT_EQ(fused.out.numel(), 0);
      continue;
    }
    // fp32 rows; the fused kernels reduce in another order than ATen's.
    ExpectClose(fused, plain, 2e-5, /*bitwise=*/false);
  }
  // Half rows keep at::layer_norm's own path and result.
  ExpectClose(Differentiate({64, 128}, at::kCUDA, at::kBFloat16, true),
              Differentiate({64, 128}, at::kCUDA, at::kBFloat16, false), 0, /*bitwise=*/true);
}

}  // namespace
}  // namespace padless::models
