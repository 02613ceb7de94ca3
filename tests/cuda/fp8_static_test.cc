// FP8 at fixed scales (fp8_static.h), the quantized FFN's recipe.
// CPU (everywhere): Fp8QuantizeAtScale against hand-computed values (saturation, padded rows, one
// scale on every row), Fp8QuantizeTensor mapping the amax to 448, Fp8StaticLinearAct within one
// E4M3 rounding of the activated product of the dequantized operands (padded rows: act(bias)),
// and broken arguments throwing c10::Error naming the problem.
// GPU (skipped without one, or without FP8 tensor cores for the GEMM): the one-GEMM path
// (ScaledMmGeluToFp8) against the reference on poisoned memory, within one E4M3 step, saturating
// where the fixed scale is too small.
#include "padless/cuda/kernels/fp8_static.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "packing_test_util.h"
#include "padless/cuda/kernels/gemm_epilogue.h"
#include "padless/cuda/kernels/kernel_support.h"

namespace padless::cuda {
namespace {

using testing::Bytes;
using testing::ExpectC10Error;
using testing::PoisonFreeMemory;

at::Tensor AllRowsDequantized(const Fp8Rows& q) { return q.values.to(at::kFloat) * q.scale_inv; }

// Whether every dequantized value of `got` is within one E4M3 rounding of `want` (fp32, the same
// shape): half a step (1/16 relative) in the normal range, half the subnormal step (2^-10 in
// scaled units) below it, both doubled when `steps` is 2.
bool WithinE4M3Rounding(const at::Tensor& got, const at::Tensor& want, float scale_inv,
                        double steps = 1.0) {
  const at::Tensor err = (got - want).abs();
  const at::Tensor allowed = (want.abs() / 16 + scale_inv / 1024.0) * steps * 1.001;
  return (err <= allowed).all().item<bool>();
}

TEST(Fp8StaticTest, QuantizeAtScaleMultipliesByTheReciprocalAndSaturates) {
  // scale_inv 1/64: 64 x each value; 1000 x 64 saturates at 448.
  const at::Tensor x = at::tensor({1.f, -2.f, 0.5f, 1000.f, -0.25f, 0.f, 3.f, -100.f}).view({2, 4});
  const Fp8Rows q = Fp8QuantizeAtScale(x, 1.f / 64.f, /*pad_rows_to=*/16);
  EXPECT_EQ(q.rows, 2);
  ASSERT_EQ(q.values.sizes(), (at::IntArrayRef{16, 4}));
  EXPECT_TRUE(
      at::equal(q.values.narrow(0, 0, 2).to(at::kFloat),
                at::tensor({64.f, -128.f, 32.f, 448.f, -16.f, 0.f, 192.f, -448.f}).view({2, 4})));
  EXPECT_TRUE(at::equal(q.values.narrow(0, 2, 14).to(at::kFloat), at::zeros({14, 4})));
  // One scale on every row, the padded ones too.
  EXPECT_TRUE(at::equal(q.scale_inv, at::full({16, 1}, 1.f / 64.f)));
  for (at::ScalarType t : {at::kBFloat16, at::kHalf}) {
    EXPECT_EQ(Bytes(Fp8QuantizeAtScale(x.to(t), 1.f / 64.f, 16).values), Bytes(q.values)) << t;
  }
  EXPECT_EQ(Fp8QuantizeAtScale(at::zeros({0, 8}), 1.f, 16).values.size(0), 0);
}

TEST(Fp8StaticTest, QuantizeTensorMapsTheAmaxTo448) {
  at::manual_seed(21);
  const at::Tensor w = at::randn({24, 40}) * 0.05;
  const Fp8Rows q = Fp8QuantizeTensor(w);
  const float amax = w.abs().max().item<float>();
  EXPECT_EQ(q.rows, 24);
  EXPECT_TRUE(at::equal(q.scale_inv, at::full({24, 1}, amax / 448.f)));
  EXPECT_EQ(q.values.to(at::kFloat).abs().max().item<float>(), 448.f);
  EXPECT_TRUE(WithinE4M3Rounding(AllRowsDequantized(q), w, amax / 448.f));
  EXPECT_TRUE(at::equal(Fp8QuantizeTensor(at::zeros({2, 8})).scale_inv, at::ones({2, 1})));
}

TEST(Fp8StaticTest, LinearActIsTheActivatedProductRoundedOnce) {
  at::manual_seed(22);
  const at::Tensor x = at::randn({7, 48}) * 2;
  const at::Tensor w = at::randn({32, 48}) * 0.1;
  const at::Tensor bias = at::randn({32});
  const Fp8Rows qx = Fp8QuantizeAtScale(x, 8.f / 448.f, 16);
  const Fp8Rows qw = Fp8QuantizeTensor(w);
  const at::Tensor pre = at::addmm(bias, AllRowsDequantized(qx), AllRowsDequantized(qw).t());
  const struct {
    RowActivation activation;
    at::Tensor want;
  } cases[] = {{RowActivation::kGelu, at::gelu(pre)},
               {RowActivation::kGeluTanh, at::gelu(pre, "tanh")},
               {RowActivation::kRelu, at::relu(pre)},
               {RowActivation::kNone, pre}};
  const float out_scale_inv = pre.abs().max().item<float>() / 448.f;
  const Fp8FixedScale out = MakeFp8FixedScale(out_scale_inv, x.device());
  for (const auto& c : cases) {
    const Fp8Rows y = Fp8StaticLinearAct(qx, qw, bias, c.activation, out);
    EXPECT_FALSE(LastFp8StaticLinearActWasFused());
    EXPECT_EQ(y.rows, 7);
    ASSERT_EQ(y.values.sizes(), (at::IntArrayRef{16, 32}));
    EXPECT_TRUE(at::equal(y.scale_inv, at::full({16, 1}, out_scale_inv)));
    // Every row, the padded ones (act(bias)) included.
    EXPECT_TRUE(WithinE4M3Rounding(AllRowsDequantized(y), c.want, out_scale_inv))
        << static_cast<int>(c.activation);
    EXPECT_TRUE(at::equal(
        y.values.to(at::kFloat),
        reference::Fp8StaticLinearAct(qx, qw, bias, c.activation, out).values.to(at::kFloat)));
  }
  // A scale too small for the product saturates at +-448 instead of overflowing to NaN.
  const Fp8Rows tight = Fp8StaticLinearAct(qx, qw, bias, RowActivation::kNone,
                                           MakeFp8FixedScale(out_scale_inv / 8, x.device()));
  const at::Tensor v = tight.values.to(at::kFloat);
  EXPECT_FALSE(at::isnan(v).any().item<bool>());
  EXPECT_EQ(v.abs().max().item<float>(), 448.f);
}

TEST(Fp8StaticTest, BrokenArgumentsThrow) {
  for (float bad : {0.f, -1.f, std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN()}) {
    ExpectC10Error(
        [&] {
          Fp8QuantizeAtScale(at::ones({2, 4}), bad);
        },
        "Fp8QuantizeAtScale: the scale must be finite and > 0");
  }
  ExpectC10Error([] { Fp8QuantizeAtScale(at::ones({4}), 1.f); }, "2-D floating-point");
  ExpectC10Error([] { Fp8QuantizeAtScale(at::ones({2, 4}, at::kInt), 1.f); }, "2-D floating");
  ExpectC10Error([] { Fp8QuantizeAtScale(at::ones({2, 4}), 1.f, 0); }, "pad_rows_to");
  ExpectC10Error([] { Fp8QuantizeTensor(at::zeros({0, 4})); }, "non-empty 2-D");
  const Fp8Rows x = Fp8QuantizeAtScale(at::randn({4, 16}), 0.01f);
  const Fp8Rows w = Fp8QuantizeTensor(at::randn({8, 16}));
  const at::Tensor bias = at::zeros({8});
  const RowActivation gelu = RowActivation::kGeluTanh;
  const Fp8FixedScale one_scale = MakeFp8FixedScale(1.f, x.values.device());
  ExpectC10Error(
      [&] {
        Fp8StaticLinearAct(x, Fp8QuantizeTensor(at::randn({8, 32})), bias, gelu, one_scale);
      },
      "x has 16 columns but the weight 32");
  ExpectC10Error([&] { Fp8StaticLinearAct(x, w, at::zeros({5}), gelu, one_scale); },
                 "bias must be [N]");
  ExpectC10Error([&] { Fp8StaticLinearAct(x, w, at::Tensor(), gelu, one_scale); },
                 "bias must be [N]");
  ExpectC10Error([&] { Fp8StaticLinearAct(x, w, at::zeros({8}, at::kInt), gelu, one_scale); },
                 "floating-point");
  ExpectC10Error([&] { MakeFp8FixedScale(0.f, x.values.device()); },
                 "MakeFp8FixedScale: the scale must be finite and > 0");
  ExpectC10Error(
      [&] {
        Fp8StaticLinearAct(x, w, bias, gelu, Fp8FixedScale{1.f, {}});
      },
      "the output scale must be one fp32 value");
  Fp8Rows raw = x;
  raw.values = at::zeros({16, 16});
  ExpectC10Error([&] { Fp8StaticLinearAct(raw, w, bias, gelu, one_scale); }, "float8_e4m3fn");
  // The GEMM's own checks run before either path.
  const at::Tensor a = x.values, b = w.values.t(), one = at::ones({1});
  ExpectC10Error([&] { ScaledMmGeluToFp8(a, b, one, one, at::Tensor(), one, true); },
                 "ScaledMmGeluToFp8: needs a bias");
  ExpectC10Error([&] { ScaledMmGeluToFp8(a, b, one, one, bias, one, true); }, "bf16 or fp16");
  ExpectC10Error(
      [&] { ScaledMmGeluToFp8(a, b, one, one, bias.to(at::kBFloat16), at::ones({2}), true); },
      "scale_out must be one fp32 value");
  ExpectC10Error(
      [&] {
        ScaledMmGeluToFp8(a.to(at::kFloat8_e5m2), b, one, one, bias.to(at::kBFloat16), one, true);
      },
      "float8_e4m3fn");
}

// --- GPU: the one-GEMM path.

class Fp8StaticCudaTest : public ::testing::Test {
 public:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    if (!CudaKernelsBuilt()) GTEST_SKIP() << "built without the CUDA kernels";
  }
  const c10::Device gpu_{c10::kCUDA, 0};
};

TEST_F(Fp8StaticCudaTest, OneGemmMatchesTheReferenceWithinOneStep) {
  at::manual_seed(23);
  const at::TensorOptions opts(gpu_);
  const at::Tensor w = at::randn({3072, 768}, opts) * 0.03;
  const at::Tensor bias = (at::randn({3072}, opts) * 0.5).to(at::kBFloat16);
  const Fp8Rows qw = Fp8QuantizeTensor(w);
  if (!Fp8RowwiseLinearFast(qw, gpu_)) GTEST_SKIP() << "no FP8 tensor cores";
  for (int64_t rows : {1, 17, 1000}) {
    const at::Tensor x = (at::randn({rows, 768}, opts) * 2).to(at::kBFloat16);
    const Fp8Rows qx = Fp8QuantizeAtScale(x, 16.f / 448.f, 16);
    // A generous scale, and one so small that the largest activations saturate.
    for (float out_scale_inv : {40.f / 448.f, 1.f / 448.f}) {
      const Fp8FixedScale out = MakeFp8FixedScale(out_scale_inv, gpu_);
      PoisonFreeMemory(gpu_, testing::kPoisonBytes);
      const Fp8Rows got = Fp8StaticLinearAct(qx, qw, bias, RowActivation::kGeluTanh, out);
      ASSERT_TRUE(LastFp8StaticLinearActWasFused()) << rows;
      const Fp8Rows want =
          reference::Fp8StaticLinearAct(qx, qw, bias, RowActivation::kGeluTanh, out);
      ASSERT_EQ(got.values.sizes(), want.values.sizes());
      EXPECT_TRUE(at::equal(got.scale_inv, want.scale_inv));
      const at::Tensor g = AllRowsDequantized(got), r = AllRowsDequantized(want);
      const std::string what =
          std::to_string(rows) + " rows, scale_inv " + std::to_string(out_scale_inv);
      EXPECT_FALSE(at::isnan(g).any().item<bool>()) << what;
      // Fast accumulation sums the products in less than fp32 (an error relative to the sum of
      // their magnitudes, not to the result), and the epilogue's GELU is not ATen's: the values
      // agree within one step of E4M3 plus 1/64 of the largest value, and as a whole within 2%.
      const at::Tensor err = (g - r).abs();
      const at::Tensor allowed = r.abs() / 8 + r.abs().max() / 64 + out_scale_inv / 512;
      EXPECT_TRUE((err <= allowed).all().item<bool>())
          << what << ": worst excess " << (err - allowed).max().item<float>() << " of largest "
          << r.abs().max().item<float>();
      EXPECT_LT(testing::RelErr(g, r), 0.02) << what;
      const double differing = (got.values.view(at::kByte) != want.values.view(at::kByte))
                                   .to(at::kFloat)
                                   .mean()
                                   .item<double>();
      EXPECT_LT(differing, 0.05) << what;
    }
  }
}

}  // namespace
}  // namespace padless::cuda
