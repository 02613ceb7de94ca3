// DropoutResidualLayerNorm and its backward against autograd through the unfused ops
//   out = layer_norm(residual + mask * (input + bias) / (1 - p))
// with the op's own mask. CPU tests exercise the reference path; the GPU tests (skipped without a
// GPU or without the kernels) the fused kernels, in fp32 at 1e-5 and in bf16 / fp16 at 1e-2
// relative norm against an fp32 reference on the upcast inputs.
#include "padless/cuda/kernels/residual_layer_norm.h"

#include <ATen/ATen.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>
#include <torch/cuda.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "packing_test_util.h"
#include "padless/cuda/kernels/fp8_static.h"
#include "padless/cuda/kernels/kernel_support.h"

namespace padless::cuda {
namespace {

using ::testing::HasSubstr;
using testing::kPoisonBytes;
using testing::PoisonFreeMemory;
using testing::RelErr;

constexpr double kEps = 1e-5;

struct Inputs {
  at::Tensor input, bias, residual, gamma, beta;
};

// Random activations in `dtype` and parameters in `param_dtype` (gamma around 1); bias only when
// with_bias.
Inputs MakeInputs(int64_t rows, int64_t hidden, at::ScalarType dtype, at::ScalarType param_dtype,
                  bool with_bias, const c10::Device& device, uint64_t seed) {
  at::manual_seed(seed);
  const auto opts = at::TensorOptions(device);
  Inputs in;
  in.input = at::randn({rows, hidden}, opts).to(dtype);
  in.residual = at::randn({rows, hidden}, opts).to(dtype);
  if (with_bias) in.bias = (0.5 * at::randn({hidden}, opts)).to(dtype);
  in.gamma = (1.0 + 0.2 * at::randn({hidden}, opts)).to(param_dtype);
  in.beta = (0.2 * at::randn({hidden}, opts)).to(param_dtype);
  return in;
}

at::Tensor Float(const at::Tensor& t) { return t.defined() ? t.to(at::kFloat) : t; }

// The unfused forward on fp32 leaves (which may require grad), with a given keep-mask.
struct Unfused {
  at::Tensor sum, out;
};
Unfused UnfusedForward(const Inputs& in, const at::Tensor& mask, double p) {
  at::Tensor x = in.bias.defined() ? in.input + in.bias : in.input;
  if (mask.defined()) x = x * mask.to(at::kFloat) / (1.0 - p);
  Unfused u;
  u.sum = in.residual + x;
  u.out = at::layer_norm(u.sum, {u.sum.size(1)}, in.gamma, in.beta, kEps);
  return u;
}

Inputs Upcast(const Inputs& in, bool requires_grad) {
  const auto leaf = [&](const at::Tensor& t) {
    return t.defined() ? Float(t).detach().clone().requires_grad_(requires_grad) : t;
  };
  return {leaf(in.input), leaf(in.bias), leaf(in.residual), leaf(in.gamma), leaf(in.beta)};
}

// The mean and rstd of each row of `sum` (biased variance), in fp32.
std::pair<at::Tensor, at::Tensor> RowStats(const at::Tensor& sum) {
  const at::Tensor s = Float(sum);
  const at::Tensor mean = s.mean(1);
  const at::Tensor var = (s - mean.unsqueeze(1)).pow(2).mean(1);
  return {mean, (var + kEps).rsqrt()};
}

struct Tolerance {
  double values;  // sum, out, d_sum, d_input
  double stats;   // mean, rstd
  double params;  // d_gamma, d_beta, d_bias
};

// Runs the forward and backward and checks every output and gradient against autograd through the
// unfused fp32 ops on the upcast inputs, with the returned mask.
void CheckAgainstAutograd(const Inputs& in, double p, bool with_extra, const Tolerance& tol,
                          const std::string& label, bool poison) {
  const c10::Device device = in.input.device();
  if (poison) PoisonFreeMemory(device, kPoisonBytes);
  const DropoutResidualLayerNormResult r =
      DropoutResidualLayerNorm(in.input, in.bias, in.residual, in.gamma, in.beta, p, kEps);
  const int64_t rows = in.input.size(0), hidden = in.input.size(1);
  ASSERT_EQ(r.out.sizes(), in.input.sizes()) << label;
  ASSERT_EQ(r.out.scalar_type(), in.input.scalar_type()) << label;
  ASSERT_EQ(r.sum.scalar_type(), in.input.scalar_type()) << label;
  ASSERT_EQ(r.mean.sizes(), (std::vector<int64_t>{rows})) << label;
  ASSERT_EQ(r.rstd.scalar_type(), at::kFloat) << label;
  ASSERT_EQ(r.mask.defined(), p > 0.0) << label;
  if (p > 0.0) {
    ASSERT_EQ(r.mask.scalar_type(), at::kBool) << label;
  }

  const Inputs leaves = Upcast(in, /*requires_grad=*/true);
  const Unfused ref = UnfusedForward(leaves, r.mask, p);
  EXPECT_LT(RelErr(r.sum, ref.sum), tol.values) << label << " sum";
  EXPECT_LT(RelErr(r.out, ref.out), tol.values) << label << " out";
  // The statistics describe `sum` as stored (rounded to its dtype).
  const auto [mean, rstd] = RowStats(r.sum);
  EXPECT_LT(RelErr(r.mean, mean), tol.stats) << label << " mean";
  EXPECT_LT(RelErr(r.rstd, rstd), tol.stats) << label << " rstd";

  at::manual_seed(1000 + rows + hidden);
  const at::Tensor d_out =
      at::randn({rows, hidden}, at::TensorOptions(device)).to(in.input.dtype());
  const at::Tensor extra =
      with_extra ? at::randn({rows, hidden}, at::TensorOptions(device)).to(in.input.dtype())
                 : at::Tensor();
  const bool need_bias_grad = in.bias.defined();
  if (poison) PoisonFreeMemory(device, kPoisonBytes);
  const DropoutResidualLayerNormGrads g = DropoutResidualLayerNormBackward(
      d_out, extra, r.sum, r.mean, r.rstd, in.gamma, r.mask, p, need_bias_grad);
  ASSERT_EQ(g.d_sum.scalar_type(), in.input.scalar_type()) << label;
  ASSERT_EQ(g.d_input.scalar_type(), in.input.scalar_type()) << label;
  ASSERT_EQ(g.d_gamma.scalar_type(), at::kFloat) << label;
  ASSERT_EQ(g.d_beta.scalar_type(), at::kFloat) << label;
  ASSERT_EQ(g.d_bias.defined(), need_bias_grad) << label;

  // `extra` flows into `out` like d_out. The residual's gradient is d_sum.
  const at::Tensor grad = with_extra ? Float(d_out) + Float(extra) : Float(d_out);
  std::vector<at::Tensor> wrt = {leaves.input, leaves.residual, leaves.gamma, leaves.beta};
  if (need_bias_grad) wrt.push_back(leaves.bias);
  const auto ag = torch::autograd::grad({ref.out}, wrt, {grad});
  EXPECT_LT(RelErr(g.d_input, ag[0]), tol.values) << label << " d_input";
  EXPECT_LT(RelErr(g.d_sum, ag[1]), tol.values) << label << " d_sum";
  EXPECT_LT(RelErr(g.d_gamma, ag[2]), tol.params) << label << " d_gamma";
  EXPECT_LT(RelErr(g.d_beta, ag[3]), tol.params) << label << " d_beta";
  if (need_bias_grad) {
    EXPECT_LT(RelErr(g.d_bias, ag[4]), tol.params) << label << " d_bias";
  }
}

std::string Label(int64_t rows, int64_t hidden, at::ScalarType dtype, double p, bool bias,
                  bool extra) {
  return std::to_string(rows) + "x" + std::to_string(hidden) + " " + c10::toString(dtype) +
         " p=" + std::to_string(p) + (bias ? " bias" : "") + (extra ? " extra" : "");
}

// ---- CPU: the reference path. -------------------------------------------------------------------

TEST(ResidualLayerNormTest, ReferenceMatchesAutogradFp32) {
  const c10::Device cpu(c10::kCPU);
  uint64_t seed = 1;
  for (double p : {0.0, 0.3}) {
    for (bool with_bias : {true, false}) {
      for (bool with_extra : {false, true}) {
        const Inputs in = MakeInputs(13, 64, at::kFloat, at::kFloat, with_bias, cpu, seed++);
        CheckAgainstAutograd(in, p, with_extra, {1e-5, 1e-5, 1e-5},
                             Label(13, 64, at::kFloat, p, with_bias, with_extra),
                             /*poison=*/false);
      }
    }
  }
}

TEST(ResidualLayerNormTest, ReferenceMatchesAutogradBf16WithFp32Params) {
  const Inputs in =
      MakeInputs(9, 48, at::kBFloat16, at::kFloat, /*with_bias=*/true, c10::Device(c10::kCPU), 7);
  CheckAgainstAutograd(in, 0.2, /*with_extra=*/true, {1e-2, 1e-2, 1e-2}, "bf16 cpu",
                       /*poison=*/false);
}

TEST(ResidualLayerNormTest, ReferenceDropoutKeepsOneMinusPAndScales) {
  const Inputs in =
      MakeInputs(256, 512, at::kFloat, at::kFloat, /*with_bias=*/false, c10::Device(c10::kCPU), 3);
  const double p = 0.25;
  const auto r =
      DropoutResidualLayerNorm(in.input, in.bias, in.residual, in.gamma, in.beta, p, kEps);
  const double kept = r.mask.to(at::kFloat).mean().item<double>();
  EXPECT_NEAR(kept, 1.0 - p, 0.01);
  const at::Tensor expected = in.residual + in.input * r.mask.to(at::kFloat) / (1.0 - p);
  EXPECT_LT(RelErr(r.sum, expected), 1e-6);
}

TEST(ResidualLayerNormTest, ZeroProbabilityHasNoMaskAndDInputIsDSum) {
  const Inputs in =
      MakeInputs(5, 32, at::kFloat, at::kFloat, /*with_bias=*/true, c10::Device(c10::kCPU), 4);
  const auto r =
      DropoutResidualLayerNorm(in.input, in.bias, in.residual, in.gamma, in.beta, 0.0, kEps);
  EXPECT_FALSE(r.mask.defined());
  EXPECT_TRUE(at::allclose(r.sum, in.residual + in.input + in.bias));
  const auto g = DropoutResidualLayerNormBackward(at::randn({5, 32}), at::Tensor(), r.sum, r.mean,
                                                  r.rstd, in.gamma, r.mask, 0.0,
                                                  /*need_bias_grad=*/false);
  EXPECT_TRUE(at::equal(g.d_input, g.d_sum));
  EXPECT_FALSE(g.d_bias.defined());
}

TEST(ResidualLayerNormTest, ZeroRows) {
  const Inputs in =
      MakeInputs(0, 16, at::kFloat, at::kFloat, /*with_bias=*/true, c10::Device(c10::kCPU), 5);
  const auto r =
      DropoutResidualLayerNorm(in.input, in.bias, in.residual, in.gamma, in.beta, 0.1, kEps);
  EXPECT_EQ(r.out.numel(), 0);
  const auto g = DropoutResidualLayerNormBackward(at::zeros({0, 16}), at::Tensor(), r.sum, r.mean,
                                                  r.rstd, in.gamma, r.mask, 0.1, true);
  EXPECT_TRUE(at::equal(g.d_gamma, at::zeros({16})));
  EXPECT_TRUE(at::equal(g.d_bias, at::zeros({16})));
}

// Runs f and returns the message of the c10::Error it throws ("" when it does not throw).
std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  }
  return "";
}

TEST(ResidualLayerNormTest, BrokenForwardArgumentsThrowClearly) {
  const Inputs in =
      MakeInputs(4, 16, at::kFloat, at::kFloat, /*with_bias=*/true, c10::Device(c10::kCPU), 6);
  const auto call = [&](const at::Tensor& input, const at::Tensor& bias, const at::Tensor& residual,
                        const at::Tensor& gamma, double p) {
    return ErrorOf(
        [&] { DropoutResidualLayerNorm(input, bias, residual, gamma, in.beta, p, kEps); });
  };
  EXPECT_THAT(call(in.input.flatten(), in.bias, in.residual, in.gamma, 0.1),
              HasSubstr("input must be 2-D [T, H]"));
  EXPECT_THAT(call(in.input, in.bias, in.residual.narrow(0, 0, 3), in.gamma, 0.1),
              HasSubstr("residual has shape"));
  EXPECT_THAT(call(in.input, in.bias, in.residual.to(at::kBFloat16), in.gamma, 0.1),
              HasSubstr("residual is BFloat16 but expected Float"));
  EXPECT_THAT(call(in.input, in.bias, in.residual, at::ones({15}), 0.1),
              HasSubstr("gamma must be [H] with H = 16"));
  EXPECT_THAT(call(in.input, at::ones({16}, at::kDouble), in.residual, in.gamma, 0.1),
              HasSubstr("bias is Double but must be Float"));
  EXPECT_THAT(call(in.input.to(at::kLong), at::Tensor(), in.residual.to(at::kLong), in.gamma, 0.1),
              HasSubstr("input must be float64, float32, bfloat16 or float16"));
  EXPECT_THAT(call(in.input.t(), in.bias, in.residual.t(), at::ones({4}), 0.1),
              HasSubstr("must be contiguous"));
  EXPECT_THAT(call(in.input, in.bias, in.residual, in.gamma, 1.0),
              HasSubstr("dropout probability must be in [0, 1)"));
  EXPECT_THAT(call(in.input, in.bias, at::Tensor(), in.gamma, 0.1),
              HasSubstr("residual is undefined"));
}

TEST(ResidualLayerNormTest, BrokenBackwardArgumentsThrowClearly) {
  const Inputs in =
      MakeInputs(4, 16, at::kFloat, at::kFloat, /*with_bias=*/true, c10::Device(c10::kCPU), 8);
  const auto r =
      DropoutResidualLayerNorm(in.input, in.bias, in.residual, in.gamma, in.beta, 0.1, kEps);
  const at::Tensor d_out = at::randn({4, 16});
  const auto call = [&](const at::Tensor& d, const at::Tensor& extra, const at::Tensor& mean,
                        const at::Tensor& gamma, const at::Tensor& mask) {
    return ErrorOf([&] {
      DropoutResidualLayerNormBackward(d, extra, r.sum, mean, r.rstd, gamma, mask, 0.1, true);
    });
  };
  EXPECT_EQ(call(d_out, at::Tensor(), r.mean, in.gamma, r.mask), "");
  EXPECT_THAT(call(d_out.narrow(1, 0, 8), at::Tensor(), r.mean, in.gamma, r.mask),
              HasSubstr("d_out has shape"));
  EXPECT_THAT(call(d_out, d_out.to(at::kHalf), r.mean, in.gamma, r.mask),
              HasSubstr("extra is Half but expected Float"));
  EXPECT_THAT(call(d_out, at::Tensor(), r.mean.unsqueeze(1), in.gamma, r.mask),
              HasSubstr("mean must be [T] with T = 4"));
  EXPECT_THAT(call(d_out, at::Tensor(), r.mean, at::ones({17}), r.mask),
              HasSubstr("gamma must be [H] with H = 16"));
  EXPECT_THAT(call(d_out, at::Tensor(), r.mean, in.gamma, at::Tensor()),
              HasSubstr("mask is undefined but p = 0.1"));
  EXPECT_THAT(call(d_out, at::Tensor(), r.mean, in.gamma, r.mask.to(at::kFloat)),
              HasSubstr("mask must be bool"));
}

// ---- GPU: the fused kernels. --------------------------------------------------------------------

class ResidualLayerNormCudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    if (!CudaKernelsBuilt()) GTEST_SKIP() << "built without the CUDA kernels";
  }
  const c10::Device gpu_{c10::kCUDA, 0};
};

Tolerance ToleranceFor(at::ScalarType dtype) {
  if (dtype == at::kFloat) return {1e-5, 1e-5, 1e-5};
  return {1e-2, 1e-5, 1e-2};  // stats are fp32 of the stored sum in every dtype
}

// H = 384, 768, 1024 take the fused path for every dtype; 100 takes the reference path for
// bf16 / fp16 (not a multiple of 8) and the fused one for fp32 (a multiple of 4); 98 the reference
// path for every dtype.
TEST_F(ResidualLayerNormCudaTest, MatchesUnfusedOps) {
  uint64_t seed = 100;
  int index = 0;
  for (at::ScalarType dtype : {at::kFloat, at::kBFloat16, at::kHalf}) {
    for (int64_t rows : {1, 7, 16384}) {
      for (int64_t hidden : {384, 768, 1024, 100, 98}) {
        for (double p : {0.0, 0.1}) {
          const bool with_bias = index % 3 != 0;
          const bool with_extra = index % 2 == 0;
          // Alternate between fp32 parameters and parameters in the activations' dtype.
          const at::ScalarType param_dtype = index % 4 < 2 ? at::kFloat : dtype;
          ++index;
          const Inputs in = MakeInputs(rows, hidden, dtype, param_dtype, with_bias, gpu_, seed++);
          CheckAgainstAutograd(in, p, with_extra, ToleranceFor(dtype),
                               Label(rows, hidden, dtype, p, with_bias, with_extra),
                               /*poison=*/true);
        }
      }
    }
  }
}

// Wide rows: bf16 / fp16 take the fused path up to 4096 (16 vectors per lane, 3072 leaves some
// lanes' last vectors idle); fp32 up to 2048, 4096 falls back to the reference path.
TEST_F(ResidualLayerNormCudaTest, WideRowsMatchUnfusedOps) {
  uint64_t seed = 500;
  for (at::ScalarType dtype : {at::kFloat, at::kBFloat16, at::kHalf}) {
    for (int64_t hidden : {2048, 3072, 4096}) {
      const Inputs in =
          MakeInputs(257, hidden, dtype, at::kFloat, /*with_bias=*/true, gpu_, seed++);
      CheckAgainstAutograd(in, 0.1, /*with_extra=*/true, ToleranceFor(dtype),
                           Label(257, hidden, dtype, 0.1, true, true), /*poison=*/true);
    }
  }
}

// The path taken shows in the mask: from the same generator state, the reference path
// (at::native_dropout) and the kernel draw different masks, and the public function on an
// unsupported shape reproduces the reference one exactly.
TEST_F(ResidualLayerNormCudaTest, UnsupportedShapesTakeTheReferencePath) {
  struct Shape {
    at::ScalarType dtype;
    int64_t hidden;
    bool fused;
  };
  const Shape shapes[] = {{at::kBFloat16, 768, true},   {at::kFloat, 100, true},
                          {at::kHalf, 4096, true},      {at::kBFloat16, 100, false},
                          {at::kHalf, 100, false},      {at::kFloat, 98, false},
                          {at::kBFloat16, 4104, false}, {at::kFloat, 3072, false}};
  at::Generator gen = at::globalContext().defaultGenerator(gpu_);
  uint64_t seed = 700;
  for (const Shape& s : shapes) {
    const Inputs in = MakeInputs(64, s.hidden, s.dtype, at::kFloat, true, gpu_, seed++);
    const at::Tensor state = gen.get_state();
    const auto r =
        DropoutResidualLayerNorm(in.input, in.bias, in.residual, in.gamma, in.beta, 0.5, kEps);
    gen.set_state(state);
    const auto ref = reference::DropoutResidualLayerNorm(in.input, in.bias, in.residual, in.gamma,
                                                         in.beta, 0.5, kEps);
    const std::string label = Label(64, s.hidden, s.dtype, 0.5, true, false);
    EXPECT_EQ(at::equal(r.mask, ref.mask), !s.fused) << label;
    if (!s.fused) {
      EXPECT_TRUE(at::equal(r.out, ref.out)) << label;
    }
  }
}

TEST_F(ResidualLayerNormCudaTest, ZeroRows) {
  const Inputs in = MakeInputs(0, 768, at::kBFloat16, at::kFloat, true, gpu_, 9);
  const auto r =
      DropoutResidualLayerNorm(in.input, in.bias, in.residual, in.gamma, in.beta, 0.1, kEps);
  EXPECT_EQ(r.out.numel(), 0);
  const auto g =
      DropoutResidualLayerNormBackward(at::zeros({0, 768}, in.input.options()), at::Tensor(), r.sum,
                                       r.mean, r.rstd, in.gamma, r.mask, 0.1, true);
  EXPECT_EQ(g.d_gamma.abs().sum().item<float>(), 0.f);
  EXPECT_EQ(g.d_bias.abs().sum().item<float>(), 0.f);
}

TEST_F(ResidualLayerNormCudaTest, KeepFractionIsOneMinusP) {
  const Inputs in = MakeInputs(16384, 768, at::kBFloat16, at::kFloat, true, gpu_, 10);
  const auto r =
      DropoutResidualLayerNorm(in.input, in.bias, in.residual, in.gamma, in.beta, 0.1, kEps);
  EXPECT_NEAR(r.mask.to(at::kFloat).mean().item<double>(), 0.9, 0.01);
  // Every column and every row position sees dropout (no lane or vector slot stuck).
  const at::Tensor column_keep = r.mask.to(at::kFloat).mean(0);
  EXPECT_GT(column_keep.min().item<double>(), 0.85);
  EXPECT_LT(column_keep.max().item<double>(), 0.95);
}

TEST_F(ResidualLayerNormCudaTest, SameGeneratorStateGivesSameMask) {
  const Inputs in = MakeInputs(1000, 1024, at::kBFloat16, at::kFloat, true, gpu_, 11);
  at::Generator gen = at::globalContext().defaultGenerator(gpu_);
  const at::Tensor state = gen.get_state();  // a snapshot
  const auto first =
      DropoutResidualLayerNorm(in.input, in.bias, in.residual, in.gamma, in.beta, 0.1, kEps);
  const auto second =
      DropoutResidualLayerNorm(in.input, in.bias, in.residual, in.gamma, in.beta, 0.1, kEps);
  EXPECT_FALSE(at::equal(first.mask, second.mask)) << "consecutive calls must draw new masks";
  gen.set_state(state);
  const auto replay =
      DropoutResidualLayerNorm(in.input, in.bias, in.residual, in.gamma, in.beta, 0.1, kEps);
  EXPECT_TRUE(at::equal(first.mask, replay.mask));
  EXPECT_TRUE(at::equal(first.out, replay.out));
  EXPECT_TRUE(at::equal(first.sum, replay.sum));
}

TEST_F(ResidualLayerNormCudaTest, BackwardIsDeterministic) {
  const Inputs in = MakeInputs(4096, 768, at::kBFloat16, at::kFloat, true, gpu_, 12);
  const auto r =
      DropoutResidualLayerNorm(in.input, in.bias, in.residual, in.gamma, in.beta, 0.1, kEps);
  const at::Tensor d_out = at::randn({4096, 768}, in.input.options());
  const auto a = DropoutResidualLayerNormBackward(d_out, at::Tensor(), r.sum, r.mean, r.rstd,
                                                  in.gamma, r.mask, 0.1, true);
  const auto b = DropoutResidualLayerNormBackward(d_out, at::Tensor(), r.sum, r.mean, r.rstd,
                                                  in.gamma, r.mask, 0.1, true);
  EXPECT_TRUE(at::equal(a.d_gamma, b.d_gamma));
  EXPECT_TRUE(at::equal(a.d_beta, b.d_beta));
  EXPECT_TRUE(at::equal(a.d_bias, b.d_bias));
  EXPECT_TRUE(at::equal(a.d_input, b.d_input));
}

// A view one element into its storage is not 16-byte aligned: it must take the reference path
// and still be right.
TEST_F(ResidualLayerNormCudaTest, MisalignedInputsStillMatch) {
  Inputs in = MakeInputs(33, 768, at::kBFloat16, at::kFloat, true, gpu_, 13);
  const at::Tensor storage = at::randn({33 * 768 + 1}, gpu_).to(at::kBFloat16);
  in.input = storage.narrow(0, 1, 33 * 768).view({33, 768});
  CheckAgainstAutograd(in, 0.1, /*with_extra=*/true, ToleranceFor(at::kBFloat16), "misaligned",
                       /*poison=*/true);
}

// ResidualLayerNorm (inference: only `out`, no sum or statistics written) equals the training
// forward's `out` at p = 0: bit for bit, since the kernel computes the same values and only skips
// stores; on the CPU through the reference ops, on the GPU through the fused kernel and its
// reference fallback (H 98), the outputs poisoned first.
void ExpectInferenceMatchesTraining(const c10::Device& device) {
  uint64_t seed = 900;
  for (at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    for (int64_t hidden : {768, 98}) {
      const Inputs in =
          MakeInputs(300, hidden, dtype, at::kFloat, /*with_bias=*/true, device, seed++);
      const at::Tensor want =
          DropoutResidualLayerNorm(in.input, in.bias, in.residual, in.gamma, in.beta, 0.0, 1e-12)
              .out;
      if (device.is_cuda()) PoisonFreeMemory(device, kPoisonBytes);
      const at::Tensor got =
          ResidualLayerNorm(in.input, in.bias, in.residual, in.gamma, in.beta, 1e-12);
      EXPECT_TRUE(got.equal(want)) << "H " << hidden << " " << dtype;
    }
  }
}

TEST(ResidualLayerNormTest, InferenceOutputEqualsTheTrainingForwards) {
  ExpectInferenceMatchesTraining(c10::Device(c10::kCPU));
}

TEST_F(ResidualLayerNormCudaTest, InferenceOutputEqualsTheTrainingForwards) {
  ExpectInferenceMatchesTraining(gpu_);
}

// ResidualLayerNormWithFp8: `out` bit for bit the inference output, and `fp8` byte for byte
// Fp8QuantizeRows(out) (the reference quantizer, on the same device), padded rows included; on the
// GPU through the LayerNorm kernel's own FP8 pass for bf16 / fp16 (H 768, 1024; 3000 rows padded
// to 3008, and 1 row to 16), and through the two ops for fp32 and H 98.
void ExpectFp8CopyIsTheQuantizedOutput(const c10::Device& device) {
  uint64_t seed = 950;
  for (at::ScalarType dtype : {at::kBFloat16, at::kHalf, at::kFloat}) {
    for (int64_t hidden : {768, 1024, 98}) {
      for (int64_t rows : {3000, 1}) {
        const Inputs in =
            MakeInputs(rows, hidden, dtype, at::kFloat, /*with_bias=*/true, device, seed++);
        const std::string what = std::to_string(rows) + "x" + std::to_string(hidden) + " " +
                                 std::string(c10::toString(dtype));
        const at::Tensor out =
            ResidualLayerNorm(in.input, in.bias, in.residual, in.gamma, in.beta, 1e-12);
        // Per row (0), then fixed scales: one where the largest values saturate (E4M3's 448 at
        // |out| = 2) and one a thousand times coarser than the data needs.
        for (float fixed : {0.f, 2.f / 448.f, 3000.f / 448.f}) {
          if (device.is_cuda()) PoisonFreeMemory(device, kPoisonBytes);
          const ResidualLayerNormFp8Result got = ResidualLayerNormWithFp8(
              in.input, in.bias, in.residual, in.gamma, in.beta, 1e-12, 16, fixed);
          EXPECT_TRUE(got.out.equal(out)) << what;
          const Fp8Rows want = fixed > 0.f
                                   ? Fp8QuantizeAtScale(out, fixed, 16)
                                   : reference::Fp8QuantizeRows(out, RowActivation::kNone, 16);
          EXPECT_EQ(got.fp8.rows, rows) << what;
          ASSERT_EQ(got.fp8.values.sizes(), want.values.sizes()) << what;
          EXPECT_TRUE(got.fp8.values.view(at::kByte).equal(want.values.view(at::kByte)))
              << what << " fixed " << fixed;
          EXPECT_TRUE(got.fp8.scale_inv.equal(want.scale_inv)) << what << " fixed " << fixed;
        }
      }
    }
  }
}

TEST(ResidualLayerNormTest, Fp8CopyIsTheQuantizedOutput) {
  ExpectFp8CopyIsTheQuantizedOutput(c10::Device(c10::kCPU));
}

TEST_F(ResidualLayerNormCudaTest, Fp8CopyIsTheQuantizedOutput) {
  ExpectFp8CopyIsTheQuantizedOutput(gpu_);
}

// The backward with d_input written in FP8 (Fp8GradOutput): the bytes Fp8Quantize gives the
// 16-bit d_input of the same call without it (padding rows zero), the same amax, everything else
// bitwise as without it; with and without dropout (p = 0: d_input would alias d_sum), E5M2 and
// E4M3 (saturating at scale 64).
void ExpectFp8GradIsTheQuantizedDInput(const c10::Device& device) {
  uint64_t seed = 970;
  for (at::ScalarType dtype : {at::kBFloat16, at::kHalf, at::kFloat}) {
    for (int64_t hidden : {768, 98}) {
      for (int64_t rows : {130, 1, 0}) {
        for (double p : {0.0, 0.1}) {
          const Inputs in = MakeInputs(rows, hidden, dtype, at::kFloat, true, device, seed++);
          const std::string what = std::to_string(rows) + "x" + std::to_string(hidden) + " " +
                                   c10::toString(dtype) + " p " + std::to_string(p);
          const auto r =
              DropoutResidualLayerNorm(in.input, in.bias, in.residual, in.gamma, in.beta, p, kEps);
          const at::Tensor d_out = at::randn({rows, hidden}, in.input.options());
          const auto plain = DropoutResidualLayerNormBackward(d_out, in.residual, r.sum, r.mean,
                                                              r.rstd, in.gamma, r.mask, p, true);
          for (Fp8Format format : {Fp8Format::kE5M2, Fp8Format::kE4M3}) {
            const at::TensorOptions f32 = in.input.options().dtype(at::kFloat);
            Fp8GradOutput out;
            out.scale = at::full({1}, 64.f, f32);
            out.amax = at::full({1}, 0.125f, f32);
            out.format = format;
            const at::Tensor want_amax = out.amax.clone();
            Fp8QuantizeOptions rows_only;
            const at::Tensor want =
                Fp8Quantize(plain.d_input, out.scale, format, rows_only, want_amax).rows;
            if (device.is_cuda()) PoisonFreeMemory(device, kPoisonBytes);
            const auto got = DropoutResidualLayerNormBackward(
                d_out, in.residual, r.sum, r.mean, r.rstd, in.gamma, r.mask, p, true, &out);
            ASSERT_EQ(got.d_input.sizes(), want.sizes()) << what;
            EXPECT_TRUE(got.d_input.view(at::kByte).equal(want.view(at::kByte))) << what;
            EXPECT_TRUE(out.amax.equal(want_amax)) << what;
            EXPECT_TRUE(got.d_sum.equal(plain.d_sum)) << what;
            EXPECT_TRUE(got.d_gamma.equal(plain.d_gamma)) << what;
            EXPECT_TRUE(got.d_beta.equal(plain.d_beta)) << what;
            EXPECT_TRUE(got.d_bias.equal(plain.d_bias)) << what;
            if (::testing::Test::HasFatalFailure()) return;
          }
        }
      }
    }
  }
}

TEST(ResidualLayerNormTest, Fp8GradIsTheQuantizedDInput) {
  ExpectFp8GradIsTheQuantizedDInput(c10::Device(c10::kCPU));
}

TEST_F(ResidualLayerNormCudaTest, Fp8GradIsTheQuantizedDInput) {
  ExpectFp8GradIsTheQuantizedDInput(gpu_);
}

TEST(ResidualLayerNormTest, BrokenFp8GradOutputThrowsClearly) {
  const Inputs in = MakeInputs(4, 8, at::kFloat, at::kFloat, true, c10::Device(c10::kCPU), 990);
  const auto r =
      DropoutResidualLayerNorm(in.input, in.bias, in.residual, in.gamma, in.beta, 0.0, kEps);
  Fp8GradOutput out;
  out.scale = at::ones({2});
  try {
    DropoutResidualLayerNormBackward(in.input, at::Tensor(), r.sum, r.mean, r.rstd, in.gamma,
                                     r.mask, 0.0, false, &out);
    FAIL() << "no error";
  } catch (const c10::Error& e) {
    EXPECT_THAT(e.what_without_backtrace(),
                HasSubstr("DropoutResidualLayerNormBackward: the FP8 output's scale must be one "
                          "fp32 element"));
  }
}

}  // namespace
}  // namespace padless::cuda
