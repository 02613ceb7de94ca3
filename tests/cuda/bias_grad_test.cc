// The gradient passes with fused bias-gradient sums (bias_grad.h).
// CPU (everywhere): the reference path equals the unfused ATen ops (gelu_backward / cat, then a
// row sum), the bias gradient only when asked for, and broken input throws c10::Error naming the
// problem.
// GPU (skipped without one): the kernels against the reference on poisoned memory, bf16 and fp16,
// BERT-sized and tiny shapes (T = 0 included): GELU gradients within one rounding of the compute
// dtype, stacks exact, bias gradients to fp32 summation-order tolerance; widths the kernels do not
// take fall back and are still right.
#include "padless/cuda/kernels/bias_grad.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <string>
#include <vector>

#include "packing_test_util.h"
#include "padless/cuda/kernels/kernel_support.h"

namespace padless::cuda {
namespace {

using testing::PoisonFreeMemory;

template <typename F>
void ExpectError(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no c10::Error; expected one mentioning '" << needle << "'";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what_without_backtrace()).find(needle), std::string::npos)
        << e.what_without_backtrace();
  }
}

TEST(BiasGradTest, ReferenceIsTheUnfusedOps) {
  at::manual_seed(1);
  const at::Tensor dy = at::randn({13, 24}, at::kDouble), pre = at::randn({13, 24}, at::kDouble);
  const GradWithBiasGrad g = GeluTanhBackwardWithBiasGrad(dy, pre, true);
  EXPECT_FALSE(LastBiasGradRanKernel());
  const at::Tensor want = at::gelu_backward(dy, pre, "tanh");
  EXPECT_TRUE(at::allclose(g.grad, want, 0, 0));
  EXPECT_TRUE(at::allclose(g.bias_grad, want.sum(0), 1e-12, 1e-12));
  EXPECT_EQ(g.bias_grad.scalar_type(), at::kDouble);
  EXPECT_FALSE(GeluTanhBackwardWithBiasGrad(dy, pre, false).bias_grad.defined());

  const at::Tensor q = at::randn({5, 8}), k = at::randn({5, 8}), v = at::randn({5, 8});
  const GradWithBiasGrad s = StackWithBiasGrad(q, k, v, true);
  EXPECT_TRUE(at::equal(s.grad, at::stack({q, k, v}, 1).view({5, 24})));
  EXPECT_TRUE(at::allclose(s.bias_grad, s.grad.sum(0), 1e-6, 1e-6));
  // bf16 inputs: the bias gradient comes in fp32, summed from the rounded gradient.
  const at::Tensor qb = q.to(at::kBFloat16);
  const GradWithBiasGrad sb = StackWithBiasGrad(qb, qb, qb, true);
  EXPECT_EQ(sb.bias_grad.scalar_type(), at::kFloat);
  EXPECT_TRUE(at::allclose(sb.bias_grad, sb.grad.to(at::kFloat).sum(0), 1e-6, 1e-6));
}

TEST(BiasGradTest, BrokenInputThrowsAClearError) {
  const at::Tensor a = at::randn({4, 8});
  ExpectError(
      [&] {
        GeluTanhBackwardWithBiasGrad(a, at::randn({4, 9}), true);
      },
      "GeluTanhBackwardWithBiasGrad: pre has shape");
  ExpectError([&] { GeluTanhBackwardWithBiasGrad(at::Tensor(), a, true); }, "dy is undefined");
  ExpectError([&] { GeluTanhBackwardWithBiasGrad(a.unsqueeze(0), a, true); }, "must be 2-D");
  ExpectError([&] { StackWithBiasGrad(a, a, a.to(at::kDouble), true); },
              "StackWithBiasGrad: dv is Double");
  ExpectError([&] { StackWithBiasGrad(a, a.to(at::kInt), a, true); }, "floating-point");
}

// --- GPU: the kernels.

class BiasGradCudaTest : public ::testing::Test {
 public:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    if (!CudaKernelsBuilt()) GTEST_SKIP() << "built without the CUDA kernels";
  }
  at::Tensor Randn(std::vector<int64_t> shape, at::ScalarType dtype, double scale = 2.0) {
    return (at::randn(shape, at::TensorOptions(gpu_)) * scale).to(dtype);
  }
  void Poison() { PoisonFreeMemory(gpu_, int64_t{256} << 20); }
  const c10::Device gpu_{c10::kCUDA, 0};
};

// Largest elementwise difference in units of the compute dtype's rounding of the reference.
double UlpError(const at::Tensor& got, const at::Tensor& want, at::ScalarType dtype) {
  const double eps = dtype == at::kBFloat16 ? 1.0 / 128 : 1.0 / 1024;
  const at::Tensor g = got.to(at::kFloat), w = want.to(at::kFloat);
  return ((g - w).abs() / (w.abs() * eps + 1e-6)).max().item<double>();
}

void ExpectBiasGrad(const at::Tensor& got, const at::Tensor& grad, const std::string& what) {
  ASSERT_TRUE(got.defined()) << what;
  ASSERT_EQ(got.scalar_type(), at::kFloat) << what;
  const at::Tensor want = grad.to(at::kDouble).sum(0);
  const double scale = grad.to(at::kDouble).abs().sum(0).max().item<double>() + 1e-30;
  EXPECT_LT((got.to(at::kDouble) - want).abs().max().item<double>() / scale, 1e-5) << what;
}

TEST_F(BiasGradCudaTest, KernelsMatchTheReference) {
  at::manual_seed(2);
  for (at::ScalarType dtype : {at::kBFloat16, at::kHalf}) {
    for (int64_t t : {0, 1, 7, 100, 16384}) {
      for (int64_t n : {3072, 768, 8, 12}) {
        const std::string name = std::string(c10::toString(dtype)) + " T=" + std::to_string(t) +
                                 " N=" + std::to_string(n);
        const bool kernel = n % 8 == 0;
        const at::Tensor dy = Randn({t, n}, dtype), pre = Randn({t, n}, dtype);
        Poison();
        const GradWithBiasGrad g = GeluTanhBackwardWithBiasGrad(dy, pre, true);
        EXPECT_EQ(LastBiasGradRanKernel(), kernel) << name;
        const at::Tensor want = at::gelu_backward(dy, pre, "tanh");
        ASSERT_EQ(g.grad.sizes(), want.sizes()) << name;
        if (t > 0) {
          EXPECT_LE(UlpError(g.grad, want, dtype), 1.01) << name << " gelu";
        }
        ExpectBiasGrad(g.bias_grad, g.grad, name + " gelu bias");

        const at::Tensor q = Randn({t, n}, dtype), k = Randn({t, n}, dtype),
                         v = Randn({t, n}, dtype);
        Poison();
        const GradWithBiasGrad s = StackWithBiasGrad(q, k, v, true);
        EXPECT_EQ(LastBiasGradRanKernel(), kernel) << name;
        EXPECT_TRUE(at::equal(s.grad, at::cat({q, k, v}, 1))) << name << " stack";
        ExpectBiasGrad(s.bias_grad, s.grad, name + " stack bias");
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST_F(BiasGradCudaTest, WithoutBiasGradAndOnViews) {
  at::manual_seed(3);
  const at::Tensor dy = Randn({64, 256}, at::kBFloat16), pre = Randn({64, 256}, at::kBFloat16);
  const GradWithBiasGrad g = GeluTanhBackwardWithBiasGrad(dy, pre, false);
  EXPECT_TRUE(LastBiasGradRanKernel());
  EXPECT_FALSE(g.bias_grad.defined());
  EXPECT_LE(UlpError(g.grad, at::gelu_backward(dy, pre, "tanh"), at::kBFloat16), 1.01);
  // Strided views (flash's gradients of q/k/v views) are copied first.
  const at::Tensor qkv = Randn({64, 3, 128}, at::kBFloat16);
  const std::vector<at::Tensor> parts = qkv.unbind(1);
  ASSERT_FALSE(parts[0].is_contiguous());
  const GradWithBiasGrad s = StackWithBiasGrad(parts[0], parts[1], parts[2], true);
  EXPECT_TRUE(LastBiasGradRanKernel());
  EXPECT_TRUE(at::equal(s.grad, qkv.view({64, 384})));
  ExpectBiasGrad(s.bias_grad, s.grad, "views");
}

}  // namespace
}  // namespace padless::cuda
