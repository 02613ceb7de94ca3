// The gradient passes with fused bias-gradient sums (bias_grad.h).
// CPU (everywhere): the reference path equals the unfused ATen ops (gelu_backward / cat, then a
// row sum), the bias gradient only when asked for, and broken input throws c10::Error naming the
// problem.
// GPU (skipped without one): the kernels on poisoned memory, bf16 and fp16, BERT-sized and tiny
// shapes (T = 0 included): GELU gradients within one rounding of the exact gradient and of
// at::gelu_backward where that one is accurate (see GeluGradError), at the extremes of the input
// too; stacks exact; bias gradients to fp32 summation-order tolerance; widths the kernels do not
// take fall back and are still right.
#include "padless/cuda/kernels/bias_grad.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <functional>
#include <string>
#include <vector>

#include "packing_test_util.h"
#include "padless/cuda/kernels/kernel_support.h"

namespace padless::cuda {
namespace {

using testing::ExpectC10Error;
using testing::kPoisonBytes;
using testing::PoisonFreeMemory;

TEST(BiasGradTest, GeluReferenceIsTheUnfusedOps) {
  at::manual_seed(1);
  const at::Tensor dy = at::randn({13, 24}, at::kDouble), pre = at::randn({13, 24}, at::kDouble);
  const GradWithBiasGrad g = GeluTanhBackwardWithBiasGrad(dy, pre, true);
  EXPECT_FALSE(LastBiasGradRanKernel());
  const at::Tensor want = at::gelu_backward(dy, pre, "tanh");
  EXPECT_TRUE(at::equal(g.grad, want));
  EXPECT_TRUE(at::allclose(g.bias_grad, want.sum(0), 1e-12, 1e-12));
  EXPECT_EQ(g.bias_grad.scalar_type(), at::kDouble);
  EXPECT_FALSE(GeluTanhBackwardWithBiasGrad(dy, pre, false).bias_grad.defined());
  EXPECT_TRUE(at::equal(reference::GeluTanhBackwardWithBiasGrad(dy, pre, false).grad, want));
  // bf16 inputs: the bias gradient comes in fp32, summed from the rounded gradient.
  const at::Tensor dyb = dy.to(at::kBFloat16), preb = pre.to(at::kBFloat16);
  const GradWithBiasGrad gb = GeluTanhBackwardWithBiasGrad(dyb, preb, true);
  EXPECT_TRUE(at::equal(gb.grad, at::gelu_backward(dyb, preb, "tanh")));
  EXPECT_EQ(gb.bias_grad.scalar_type(), at::kFloat);
  EXPECT_TRUE(at::allclose(gb.bias_grad, gb.grad.to(at::kFloat).sum(0), 1e-6, 1e-6));
}

TEST(BiasGradTest, StackReferenceIsTheUnfusedOps) {
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

// FA3 and cuDNN write dq, dk, dv as the thirds of one [T, 3H] buffer: the result is that buffer
// (no copy), with the same values and bias gradient as stacking separate tensors.
TEST(BiasGradTest, ThirdsOfOneBufferAreTheStackItself) {
  at::manual_seed(3);
  const at::Tensor buffer = at::randn({11, 3 * 8}, at::kFloat);
  const std::vector<at::Tensor> thirds = buffer.split(8, 1);
  const GradWithBiasGrad s = StackWithBiasGrad(thirds[0], thirds[1], thirds[2], true);
  EXPECT_TRUE(s.grad.is_alias_of(buffer));
  EXPECT_EQ(s.grad.data_ptr(), buffer.data_ptr());
  EXPECT_TRUE(s.grad.is_contiguous());
  const GradWithBiasGrad want = reference::StackWithBiasGrad(
      thirds[0].contiguous(), thirds[1].contiguous(), thirds[2].contiguous(), true);
  EXPECT_FALSE(want.grad.is_alias_of(buffer));
  EXPECT_TRUE(at::equal(s.grad, want.grad));
  EXPECT_TRUE(at::allclose(s.bias_grad, want.bias_grad, 1e-6, 1e-6));
  EXPECT_FALSE(StackWithBiasGrad(thirds[0], thirds[1], thirds[2], false).bias_grad.defined());
  // Thirds in another order, or of two buffers, are stacked by copying.
  const GradWithBiasGrad swapped = StackWithBiasGrad(thirds[1], thirds[0], thirds[2], true);
  EXPECT_FALSE(swapped.grad.is_alias_of(buffer));
  EXPECT_TRUE(at::equal(swapped.grad, at::cat({thirds[1], thirds[0], thirds[2]}, 1)));
  const at::Tensor other = at::randn({11, 3 * 8}, at::kFloat);
  const GradWithBiasGrad mixed =
      StackWithBiasGrad(thirds[0], other.split(8, 1)[1], thirds[2], false);
  EXPECT_TRUE(at::equal(mixed.grad, at::cat({thirds[0], other.split(8, 1)[1], thirds[2]}, 1)));
}

TEST(BiasGradTest, BrokenInputThrowsAClearError) {
  const at::Tensor a = at::randn({4, 8});
  ExpectC10Error(
      [&] {
        GeluTanhBackwardWithBiasGrad(a, at::randn({4, 9}), true);
      },
      "GeluTanhBackwardWithBiasGrad: pre has shape");
  ExpectC10Error([&] { GeluTanhBackwardWithBiasGrad(at::Tensor(), a, true); }, "dy is undefined");
  ExpectC10Error([&] { GeluTanhBackwardWithBiasGrad(a.unsqueeze(0), a, true); }, "must be 2-D");
  ExpectC10Error([&] { GeluTanhBackwardWithBiasGrad(a, a.to(at::kDouble), true); },
                 "GeluTanhBackwardWithBiasGrad: pre is Double");
  ExpectC10Error([&] { GeluTanhBackwardWithBiasGrad(a.to(at::kInt), a, true); }, "floating-point");
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

// --- GPU: the kernels.

class BiasGradCudaTest : public ::testing::Test {
 public:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    if (!CudaKernelsBuilt()) GTEST_SKIP() << "built without the CUDA kernels";
  }
  at::Tensor Randn(std::vector<int64_t> shape, at::ScalarType dtype) {
    return (at::randn(shape, at::TensorOptions(gpu_)) * 2).to(dtype);
  }
  void Poison() { PoisonFreeMemory(gpu_, kPoisonBytes); }
  const c10::Device gpu_{c10::kCUDA, 0};
};

void ExpectBiasGrad(const at::Tensor& got, const at::Tensor& grad, const std::string& what) {
  ASSERT_TRUE(got.defined()) << what;
  ASSERT_EQ(got.scalar_type(), at::kFloat) << what;
  const at::Tensor want = grad.to(at::kDouble).sum(0);
  const double scale = grad.to(at::kDouble).abs().sum(0).max().item<double>() + 1e-30;
  EXPECT_LT((got.to(at::kDouble) - want).abs().max().item<double>() / scale, 1e-5) << what;
}

// Largest elementwise difference of `got` from `want` (both of `dtype`), over the elements where
// `where` is true (all when undefined), in units of the dtype's relative rounding step of `want`,
// plus 1e-6 absolute for values near zero (the slope's zero near pre = -0.75, and the tail where
// it underflows).
double UlpError(const at::Tensor& got, const at::Tensor& want, at::ScalarType dtype,
                const at::Tensor& where = at::Tensor()) {
  const double eps = dtype == at::kBFloat16 ? 1.0 / 128 : 1.0 / 1024;
  const at::Tensor g = got.to(at::kDouble), w = want.to(at::kDouble);
  at::Tensor err = (g - w).abs() / (w.abs() * eps + 1e-6);
  if (where.defined()) err = err.masked_select(where);
  return err.numel() == 0 ? 0.0 : err.max().item<double>();
}

// The kernel's GELU gradient against
//   the exact gradient (fp64, rounded to the dtype): the kernel's fp32 slope is within a few 1e-7
//   of the exact one (relative, plus about 1e-7 absolute at the slope's zero), far below a bf16 /
//   fp16 step, so its one rounding may land on the neighbouring value and no further: <= 1.01;
//   at::gelu_backward where pre >= -3: ATen's fp32 tanh form is as accurate there (1 + tanhf(u)
//   keeps 2e-5 of itself or better), so both round the same value: <= 1.01. Below -3 that sum
//   cancels (at pre = -5.2, 1 + tanhf(u) is one or two fp32 steps of tanh near -1) and ATen's
//   result is off by up to about 4.5 of these units in an fp32 emulation of both formulas; the
//   kernel, which avoids the cancellation, is held to the exact gradient there.
void ExpectGeluGrad(const at::Tensor& got, const at::Tensor& dy, const at::Tensor& pre,
                    const std::string& what) {
  const at::ScalarType dtype = dy.scalar_type();
  ASSERT_EQ(got.sizes(), dy.sizes()) << what;
  ASSERT_EQ(got.scalar_type(), dtype) << what;
  EXPECT_TRUE(at::isfinite(got).all().item<bool>()) << what;
  const at::Tensor exact =
      at::gelu_backward(dy.to(at::kDouble), pre.to(at::kDouble), "tanh").to(dtype);
  EXPECT_LE(UlpError(got, exact, dtype), 1.01) << what << " against the exact gradient";
  EXPECT_LE(UlpError(got, at::gelu_backward(dy, pre, "tanh"), dtype, pre >= -3), 1.01)
      << what << " against at::gelu_backward";
}

TEST_F(BiasGradCudaTest, GeluKernelMatchesTheReference) {
  at::manual_seed(2);
  for (at::ScalarType dtype : {at::kBFloat16, at::kHalf}) {
    for (int64_t t : {0, 1, 7, 100, 16384}) {
      for (int64_t n : {3072, 768, 8, 12}) {
        const std::string name = std::string(c10::toString(dtype)) + " T=" + std::to_string(t) +
                                 " N=" + std::to_string(n);
        const at::Tensor dy = Randn({t, n}, dtype), pre = Randn({t, n}, dtype);
        Poison();
        const GradWithBiasGrad g = GeluTanhBackwardWithBiasGrad(dy, pre, true);
        const bool kernel = n % 8 == 0;
        EXPECT_EQ(LastBiasGradRanKernel(), kernel) << name;
        if (kernel) {
          ExpectGeluGrad(g.grad, dy, pre, name);
        } else {  // the fallback is the ATen op itself
          EXPECT_TRUE(at::equal(g.grad, at::gelu_backward(dy, pre, "tanh"))) << name;
        }
        ExpectBiasGrad(g.bias_grad, g.grad, name + " bias");
        if (HasFatalFailure()) return;
      }
    }
  }
}

// Large |pre| (exp(2u) overflows to the clamp or underflows to 0) and zeros: finite, and at
// pre = 0, +-20 exactly ATen's dy / 2, dy and 0.
TEST_F(BiasGradCudaTest, GeluKernelAtTheExtremes) {
  at::manual_seed(4);
  for (at::ScalarType dtype : {at::kBFloat16, at::kHalf}) {
    const std::string name = c10::toString(dtype);
    at::Tensor pre = at::linspace(-20, 20, 64 * 64, at::TensorOptions(gpu_)).view({64, 64});
    pre.index_put_({0}, 0.0);
    pre.index_put_({1}, -0.0);
    pre.index_put_({2}, 20.0);
    pre.index_put_({3}, -20.0);
    pre = pre.to(dtype);
    const at::Tensor dy = Randn({64, 64}, dtype);
    const GradWithBiasGrad g = GeluTanhBackwardWithBiasGrad(dy, pre, true);
    ASSERT_TRUE(LastBiasGradRanKernel()) << name;
    ExpectGeluGrad(g.grad, dy, pre, name);
    const at::Tensor rows = g.grad.slice(0, 0, 4);
    EXPECT_TRUE(at::equal(rows, at::gelu_backward(dy, pre, "tanh").slice(0, 0, 4))) << name;
    EXPECT_TRUE(at::equal(rows[0], dy[0] * 0.5)) << name;
    EXPECT_TRUE(at::equal(rows[2], dy[2])) << name;
    EXPECT_TRUE(at::equal(rows[3], at::zeros_like(dy[3]))) << name;
    ExpectBiasGrad(g.bias_grad, g.grad, name + " bias");
  }
}

TEST_F(BiasGradCudaTest, StackKernelMatchesTheReference) {
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
  const at::Tensor dy = Randn({64, 256}, at::kBFloat16), pre = Randn({64, 256}, at::kBFloat16);
  const GradWithBiasGrad d = GeluTanhBackwardWithBiasGrad(dy, pre, false);
  EXPECT_TRUE(LastBiasGradRanKernel());
  EXPECT_FALSE(d.bias_grad.defined());
  ExpectGeluGrad(d.grad, dy, pre, "gelu without bias");
  // A transposed view of pre is copied first.
  const at::Tensor pre_t = Randn({256, 64}, at::kBFloat16);
  const GradWithBiasGrad dt = GeluTanhBackwardWithBiasGrad(dy, pre_t.t(), true);
  EXPECT_TRUE(LastBiasGradRanKernel());
  ExpectGeluGrad(dt.grad, dy, pre_t.t(), "gelu on a view");
  ExpectBiasGrad(dt.bias_grad, dt.grad, "gelu on a view");

  const at::Tensor q = Randn({64, 256}, at::kBFloat16);
  const GradWithBiasGrad g = StackWithBiasGrad(q, q, q, false);
  EXPECT_TRUE(LastBiasGradRanKernel());
  EXPECT_FALSE(g.bias_grad.defined());
  EXPECT_TRUE(at::equal(g.grad, at::cat({q, q, q}, 1)));
  // Strided views that are not the thirds of one [T, 3N] buffer (here every row has a fourth
  // part) are copied first; the thirds themselves are the stack already (the CPU test
  // ThirdsOfOneBufferAreTheStackItself).
  const at::Tensor qkvx = Randn({64, 4, 128}, at::kBFloat16);
  const std::vector<at::Tensor> parts = qkvx.unbind(1);
  ASSERT_FALSE(parts[0].is_contiguous());
  const GradWithBiasGrad s = StackWithBiasGrad(parts[0], parts[1], parts[2], true);
  EXPECT_TRUE(LastBiasGradRanKernel());
  EXPECT_TRUE(at::equal(s.grad, qkvx.narrow(1, 0, 3).reshape({64, 384})));
  ExpectBiasGrad(s.bias_grad, s.grad, "views");
  const at::Tensor qkv = Randn({64, 3, 128}, at::kBFloat16);
  const std::vector<at::Tensor> thirds = qkv.unbind(1);
  const GradWithBiasGrad w = StackWithBiasGrad(thirds[0], thirds[1], thirds[2], true);
  EXPECT_FALSE(LastBiasGradRanKernel());
  EXPECT_TRUE(w.grad.is_alias_of(qkv));
  ExpectBiasGrad(w.bias_grad, qkv.view({64, 384}), "thirds of one buffer");
}

// --- The gradient written in FP8 (Fp8GradOutput): the bytes Fp8Quantize gives the gradient as
// the pass writes it without FP8 (padding rows included), the same amax, the same bias gradient.

// `run(fp8)` computes one gradient, on the kernel or the reference path as `kernel` says.
void ExpectFp8Output(const std::function<GradWithBiasGrad(const Fp8GradOutput*)>& run, bool kernel,
                     Fp8Format format, const std::string& what) {
  const GradWithBiasGrad plain = run(nullptr);
  ASSERT_EQ(LastBiasGradRanKernel(), kernel) << what;
  const at::TensorOptions f32 = plain.grad.options().dtype(at::kFloat);
  Fp8GradOutput out;
  out.scale = at::full({1}, 64.f, f32);  // E4M3 saturates beyond 7
  out.amax = at::full({1}, 0.125f, f32);
  out.format = format;
  const GradWithBiasGrad fp8 = run(&out);
  EXPECT_EQ(LastBiasGradRanKernel(), kernel) << what;
  Fp8QuantizeOptions rows_only;
  const at::Tensor amax = at::full({1}, 0.125f, f32);
  const at::Tensor want = Fp8Quantize(plain.grad, out.scale, format, rows_only, amax).rows;
  ASSERT_EQ(fp8.grad.scalar_type(), want.scalar_type()) << what;
  ASSERT_EQ(fp8.grad.sizes(), want.sizes()) << what;
  EXPECT_TRUE(at::equal(fp8.grad.view(at::kByte), want.view(at::kByte))) << what;
  EXPECT_TRUE(at::equal(out.amax, amax))
      << what << ": " << out.amax.item<float>() << " vs " << amax.item<float>();
  ASSERT_EQ(fp8.bias_grad.defined(), plain.bias_grad.defined()) << what;
  if (plain.bias_grad.defined()) EXPECT_TRUE(at::equal(fp8.bias_grad, plain.bias_grad)) << what;
}

TEST(BiasGradTest, Fp8OutputOnTheReferencePath) {
  at::manual_seed(5);
  for (at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    const at::Tensor dy = at::randn({37, 24}).to(dtype), pre = at::randn({37, 24}).to(dtype);
    for (Fp8Format format : {Fp8Format::kE4M3, Fp8Format::kE5M2}) {
      const std::string what = c10::toString(dtype);
      ExpectFp8Output(
          [&](const Fp8GradOutput* f) { return GeluTanhBackwardWithBiasGrad(dy, pre, true, f); },
          false, format, "gelu " + what);
      ExpectFp8Output(
          [&](const Fp8GradOutput* f) { return StackWithBiasGrad(dy, pre, dy, false, f); }, false,
          format, "stack " + what);
    }
  }
}

TEST(BiasGradTest, BrokenFp8OutputThrowsAClearError) {
  const at::Tensor a = at::randn({4, 8});
  Fp8GradOutput out;
  ExpectC10Error([&] { GeluTanhBackwardWithBiasGrad(a, a, true, &out); },
                 "GeluTanhBackwardWithBiasGrad: the FP8 output's scale must be one fp32 element");
  out.scale = at::ones({2});
  ExpectC10Error([&] { StackWithBiasGrad(a, a, a, true, &out); },
                 "StackWithBiasGrad: the FP8 output's scale must be one fp32 element");
  out.scale = at::ones({1});
  out.amax = at::ones({1}, at::kDouble);
  ExpectC10Error([&] { StackWithBiasGrad(a, a, a, true, &out); },
                 "the FP8 output's amax must be one fp32 element");
  out.amax = at::Tensor();
  out.pad_rows_to = 0;
  ExpectC10Error([&] { StackWithBiasGrad(a, a, a, true, &out); },
                 "pad_rows_to must be >= 1, got 0");
}

TEST_F(BiasGradCudaTest, Fp8OutputOfTheKernelsIsTheQuantizedGradient) {
  at::manual_seed(6);
  for (at::ScalarType dtype : {at::kBFloat16, at::kHalf}) {
    for (int64_t t : {0, 1, 37, 130, 16384}) {
      for (int64_t n : {3072, 768, 8, 12}) {
        for (Fp8Format format : {Fp8Format::kE5M2, Fp8Format::kE4M3}) {
          const std::string what = std::string(c10::toString(dtype)) + " T=" + std::to_string(t) +
                                   " N=" + std::to_string(n) +
                                   (format == Fp8Format::kE5M2 ? " e5m2" : " e4m3");
          const at::Tensor dy = Randn({t, n}, dtype), pre = Randn({t, n}, dtype);
          const bool kernel = n % 8 == 0;
          Poison();
          ExpectFp8Output(
              [&](const Fp8GradOutput* f) {
                return GeluTanhBackwardWithBiasGrad(dy, pre, true, f);
              },
              kernel, format, "gelu " + what);
          Poison();
          ExpectFp8Output(
              [&](const Fp8GradOutput* f) { return StackWithBiasGrad(dy, pre, dy, t % 2 == 0, f); },
              kernel, format, "stack " + what);
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

}  // namespace
}  // namespace padless::cuda
