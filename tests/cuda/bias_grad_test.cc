// The q/k/v gradient stack with its fused bias-gradient sum (bias_grad.h).
// CPU (everywhere): the reference path equals the unfused ATen ops (cat, then a row sum), the bias
// gradient only when asked for, and broken input throws c10::Error naming the problem.
// GPU (skipped without one): the kernel against the reference on poisoned memory, bf16 and fp16,
// BERT-sized and tiny shapes (T = 0 included): stacks exact, bias gradients to fp32
// summation-order tolerance; widths the kernel does not take fall back and are still right.
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

using testing::ExpectC10Error;
using testing::PoisonFreeMemory;

TEST(BiasGradTest, ReferenceIsTheUnfusedOps) {
  at::manual_seed(1);
  const at::Tensor q = at::randn({5, 8}, at::kDouble), k = at::randn({5, 8}, at::kDouble),
                   v = at::randn({5, 8}, at::kDouble);
  const GradWithBiasGrad s = StackWithBiasGrad(q, k, v, true);
  EXPECT_FALSE(LastBiasGradRanKernel());
  EXPECT_TRUE(at::equal(s.grad, at::stack({q, k, v}, 1).view({5, 24})));
  EXPECT_TRUE(at::allclose(s.bias_grad, s.grad.sum(0), 1e-12, 1e-12));
  EXPECT_EQ(s.bias_grad.scalar_type(), at::kDouble);
  EXPECT_FALSE(StackWithBiasGrad(q, k, v, false).bias_grad.defined());
  // bf16 inputs: the bias gradient comes in fp32, summed from the rounded gradient.
  const at::Tensor qb = q.to(at::kBFloat16);
  const GradWithBiasGrad sb = StackWithBiasGrad(qb, qb, qb, true);
  EXPECT_EQ(sb.bias_grad.scalar_type(), at::kFloat);
  EXPECT_TRUE(at::allclose(sb.bias_grad, sb.grad.to(at::kFloat).sum(0), 1e-6, 1e-6));
}

TEST(BiasGradTest, BrokenInputThrowsAClearError) {
  const at::Tensor a = at::randn({4, 8});
  ExpectC10Error(
      [&] {
        StackWithBiasGrad(a, at::randn({4, 9}), a, true);
      },
      "StackWithBiasGrad: dk has shape");
  ExpectC10Error([&] { StackWithBiasGrad(at::Tensor(), a, a, true); }, "dq is undefined");
  ExpectC10Error([&] { StackWithBiasGrad(a.unsqueeze(0), a, a, true); }, "must be 2-D");
  ExpectC10Error([&] { StackWithBiasGrad(a, a, a.to(at::kDouble), true); },
                 "StackWithBiasGrad: dv is Double");
  ExpectC10Error([&] { StackWithBiasGrad(a, a.to(at::kInt), a, true); }, "floating-point");
}

// --- GPU: the kernel.

class BiasGradCudaTest : public ::testing::Test {
 public:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    if (!CudaKernelsBuilt()) GTEST_SKIP() << "built without the CUDA kernels";
  }
  at::Tensor Randn(std::vector<int64_t> shape, at::ScalarType dtype) {
    return (at::randn(shape, at::TensorOptions(gpu_)) * 2).to(dtype);
  }
  void Poison() { PoisonFreeMemory(gpu_, int64_t{256} << 20); }
  const c10::Device gpu_{c10::kCUDA, 0};
};

void ExpectBiasGrad(const at::Tensor& got, const at::Tensor& grad, const std::string& what) {
  ASSERT_TRUE(got.defined()) << what;
  ASSERT_EQ(got.scalar_type(), at::kFloat) << what;
  const at::Tensor want = grad.to(at::kDouble).sum(0);
  const double scale = grad.to(at::kDouble).abs().sum(0).max().item<double>() + 1e-30;
  EXPECT_LT((got.to(at::kDouble) - want).abs().max().item<double>() / scale, 1e-5) << what;
}

TEST_F(BiasGradCudaTest, KernelMatchesTheReference) {
  at::manual_seed(2);
  for (at::ScalarType dtype : {at::kBFloat16, at::kHalf}) {
    for (int64_t t : {0, 1, 7, 100, 16384}) {
      for (int64_t h : {768, 1024, 8, 12}) {
        const std::string name = std::string(c10::toString(dtype)) + " T=" + std::to_string(t) +
                                 " H=" + std::to_string(h);
        const at::Tensor q = Randn({t, h}, dtype), k = Randn({t, h}, dtype),
                         v = Randn({t, h}, dtype);
        Poison();
        const GradWithBiasGrad s = StackWithBiasGrad(q, k, v, true);
        EXPECT_EQ(LastBiasGradRanKernel(), h % 8 == 0) << name;
        EXPECT_TRUE(at::equal(s.grad, at::cat({q, k, v}, 1))) << name;
        ExpectBiasGrad(s.bias_grad, s.grad, name);
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST_F(BiasGradCudaTest, WithoutBiasGradAndOnViews) {
  at::manual_seed(3);
  const at::Tensor q = Randn({64, 256}, at::kBFloat16);
  const GradWithBiasGrad g = StackWithBiasGrad(q, q, q, false);
  EXPECT_TRUE(LastBiasGradRanKernel());
  EXPECT_FALSE(g.bias_grad.defined());
  EXPECT_TRUE(at::equal(g.grad, at::cat({q, q, q}, 1)));
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
