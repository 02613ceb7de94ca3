// Per-row FP8 (fp8_rowwise.h): the inference recipe's quantization and product.
// CPU (everywhere): the reference against hand-computed values (one scale per row mapping the
// row's amax to 448, zero and infinite rows at scale 1, NaN ignored by amax and kept, the padded
// rows), the activation applied before quantizing, the product equal to the dequantized operands'
// and close to the unquantized one, and broken arguments throwing c10::Error naming the problem.
// GPU (skipped without one): the kernel against the reference on poisoned memory, byte for byte
// without an activation (every input dtype, R = 0 to 4096, C = 8 to 8192, saturating values and
// NaNs) and within one E4M3 step with one; the FP8 tensor-core product against the reference.
#include "padless/cuda/kernels/fp8_rowwise.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "packing_test_util.h"
#include "padless/cuda/kernels/kernel_support.h"

namespace padless::cuda {
namespace {

using testing::Bytes;
using testing::Bytes;
using testing::ExpectC10Error;
using testing::kInf;
using testing::kNaN;
using testing::kInf;
using testing::kNaN;
using testing::PoisonFreeMemory;
using testing::RelErr;

at::Tensor Rows(const std::vector<float>& values, int64_t cols) {
  return at::tensor(values, at::kFloat).view({-1, cols});
}

at::Tensor Dequantized(const Fp8Rows& q) {
  return (q.values.to(at::kFloat) * q.scale_inv).narrow(0, 0, q.rows);
}

TEST(Fp8RowwiseTest, EachRowsAmaxMapsTo448) {
  // Row 0: amax 4, scale 112: 112, -224, 56, 448, all exact in E4M3. Row 1: amax 0.5, scale 896.
  const at::Tensor x = Rows({1.f, -2.f, 0.5f, 4.f, 0.5f, 0.25f, -0.125f, 0.f}, 4);
  const Fp8Rows q = Fp8QuantizeRows(x, RowActivation::kNone, /*pad_rows_to=*/1);
  EXPECT_FALSE(LastFp8QuantizeRowsRanKernel());
  EXPECT_EQ(q.rows, 2);
  EXPECT_EQ(q.values.scalar_type(), at::kFloat8_e4m3fn);
  EXPECT_TRUE(at::equal(q.values.to(at::kFloat),
                        Rows({112.f, -224.f, 56.f, 448.f, 448.f, 224.f, -112.f, 0.f}, 4)));
  EXPECT_FLOAT_EQ(q.scale_inv[0][0].item<float>(), 4.f / 448.f);
  EXPECT_FLOAT_EQ(q.scale_inv[1][0].item<float>(), 0.5f / 448.f);
  EXPECT_TRUE(at::allclose(Dequantized(q), x, 1e-6, 0));
  // 16-bit inputs holding the same values quantize the same.
  for (at::ScalarType t : {at::kBFloat16, at::kHalf}) {
    EXPECT_EQ(Bytes(Fp8QuantizeRows(x.to(t), RowActivation::kNone, 1).values), Bytes(q.values));
  }
}

TEST(Fp8RowwiseTest, ZeroInfiniteAndNanRows) {
  const at::Tensor x = Rows({0.f, 0.f, 0.f, 0.f,            // zero: scale 1
                             kInf, 1.f, -kInf, 0.f,         // amax inf: scale 1, +-inf saturate
                             kNaN, 2.f, -1.f, 0.5f},        // NaN ignored by amax, kept
                            4);
  const Fp8Rows q = Fp8QuantizeRows(x, RowActivation::kNone, 1);
  EXPECT_EQ(q.scale_inv[0][0].item<float>(), 1.f);
  EXPECT_EQ(q.scale_inv[1][0].item<float>(), 1.f);
  EXPECT_FLOAT_EQ(q.scale_inv[2][0].item<float>(), 2.f / 448.f);
  const at::Tensor v = q.values.to(at::kFloat);
  EXPECT_TRUE(at::equal(v[0], at::zeros({4})));
  EXPECT_TRUE(at::equal(v[1], at::tensor({448.f, 1.f, -448.f, 0.f})));
  EXPECT_TRUE(std::isnan(v[2][0].item<float>()));
  EXPECT_TRUE(at::equal(v[2].narrow(0, 1, 3), at::tensor({448.f, -224.f, 112.f})));
}

TEST(Fp8RowwiseTest, PadsRowsWithZerosAtScaleOne) {
  const at::Tensor x = at::randn({3, 16});
  const Fp8Rows q = Fp8QuantizeRows(x, RowActivation::kNone, /*pad_rows_to=*/16);
  EXPECT_EQ(q.rows, 3);
  EXPECT_EQ(q.values.sizes(), (at::IntArrayRef{16, 16}));
  EXPECT_EQ(q.scale_inv.sizes(), (at::IntArrayRef{16, 1}));
  EXPECT_TRUE(at::equal(q.values.narrow(0, 3, 13).to(at::kFloat), at::zeros({13, 16})));
  EXPECT_TRUE(at::equal(q.scale_inv.narrow(0, 3, 13), at::ones({13, 1})));
  EXPECT_EQ(Dequantized(q).size(0), 3);
  const Fp8Rows empty = Fp8QuantizeRows(at::zeros({0, 16}), RowActivation::kNone, 16);
  EXPECT_EQ(empty.rows, 0);
  EXPECT_EQ(empty.values.size(0), 0);
}

TEST(Fp8RowwiseTest, AppliesTheActivationBeforeQuantizing) {
  at::manual_seed(3);
  const at::Tensor x = at::randn({5, 64}) * 3;
  const struct {
    RowActivation activation;
    at::Tensor want;
  } cases[] = {{RowActivation::kGelu, at::gelu(x)},
               {RowActivation::kGeluTanh, at::gelu(x, "tanh")},
               {RowActivation::kRelu, at::relu(x)},
               {RowActivation::kNone, x}};
  for (const auto& c : cases) {
    const Fp8Rows q = Fp8QuantizeRows(x, c.activation, 1);
    // E4M3 keeps 3 mantissa bits: each value within half a step (1/16 relative) of its target,
    // or, below the normal range, half the subnormal step (2^-10 of 448 in scaled units); a row's
    // amax lands exactly on 448.
    const at::Tensor err = (Dequantized(q) - c.want).abs();
    const at::Tensor amax = std::get<0>(c.want.abs().max(1, true));
    EXPECT_TRUE((err <= c.want.abs() / 16 + amax / 448 / 1024 * 1.001).all().item<bool>())
        << static_cast<int>(c.activation);
    EXPECT_TRUE(at::allclose(std::get<0>(q.values.to(at::kFloat).abs().max(1, true)),
                             at::full({5, 1}, 448.f)));
  }
}

TEST(Fp8RowwiseTest, ProductIsTheDequantizedOperandsProduct) {
  at::manual_seed(4);
  const at::Tensor x = at::randn({7, 48});
  const at::Tensor w = at::randn({32, 48}) * 0.05;
  const at::Tensor bias = at::randn({32});
  const Fp8Rows qx = Fp8QuantizeRows(x, RowActivation::kNone, 16);
  const Fp8Rows qw = Fp8QuantizeRows(w, RowActivation::kNone, 1);
  const at::Tensor y = Fp8RowwiseLinear(qx, qw, bias, at::kFloat);
  EXPECT_FALSE(LastFp8RowwiseLinearWasFast());
  EXPECT_EQ(y.sizes(), (at::IntArrayRef{7, 32}));
  EXPECT_TRUE(at::allclose(y, at::addmm(bias, Dequantized(qx), Dequantized(qw).t()), 1e-5, 1e-5));
  // ... and close to the unquantized product: two E4M3 roundings, a few percent at most.
  EXPECT_LT(RelErr(y - bias, at::mm(x, w.t())), 0.05);
  const at::Tensor half = Fp8RowwiseLinear(qx, qw, at::Tensor(), at::kBFloat16);
  EXPECT_EQ(half.scalar_type(), at::kBFloat16);
  EXPECT_LT(RelErr(half, y - bias), 1e-2);
}

TEST(Fp8RowwiseTest, BrokenArgumentsThrow) {
  ExpectC10Error([] { Fp8QuantizeRows(at::Tensor()); }, "Fp8QuantizeRows: x is undefined");
  ExpectC10Error([] { Fp8QuantizeRows(at::zeros({4})); }, "must be 2-D");
  ExpectC10Error([] { Fp8QuantizeRows(at::zeros({2, 4}, at::kInt)); }, "floating-point");
  ExpectC10Error([] { Fp8QuantizeRows(at::zeros({2, 4}), RowActivation::kNone, 0); },
                 "pad_rows_to must be >= 1");
  const Fp8Rows x = Fp8QuantizeRows(at::randn({4, 16}));
  const Fp8Rows w = Fp8QuantizeRows(at::randn({8, 32}), RowActivation::kNone, 1);
  ExpectC10Error([&] { Fp8RowwiseLinear(x, w, {}, at::kFloat); },
                 "x has 16 columns but the weight 32");
  const Fp8Rows w16 = Fp8QuantizeRows(at::randn({8, 16}), RowActivation::kNone, 1);
  ExpectC10Error([&] { Fp8RowwiseLinear(x, w16, at::zeros({5}), at::kFloat); }, "bias must be [N]");
  ExpectC10Error([&] { Fp8RowwiseLinear(x, w16, {}, at::kInt); }, "out_dtype");
  Fp8Rows raw = x;
  raw.values = at::zeros({16, 16});
  ExpectC10Error([&] { Fp8RowwiseLinear(raw, w16, {}, at::kFloat); }, "float8_e4m3fn");
}

// --- GPU: the kernel and the tensor-core product.

class Fp8RowwiseCudaTest : public ::testing::Test {
 public:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    if (!CudaKernelsBuilt()) GTEST_SKIP() << "built without the CUDA kernels";
  }
  // randn * 3 with outliers (x 1000) and about 1 in 500 elements NaN.
  at::Tensor Data(int64_t r, int64_t c, at::ScalarType dtype) {
    const at::TensorOptions opts(gpu_);
    at::Tensor x = at::randn({r, c}, opts) * 3;
    const at::Tensor u = at::rand({r, c}, opts);
    x = at::where(u < 0.002, x * 1000, x);
    x.masked_fill_(u > 0.998, kNaN);
    return x.to(dtype);
  }
  const c10::Device gpu_{c10::kCUDA, 0};
};

TEST_F(Fp8RowwiseCudaTest, KernelMatchesReferenceByteForByte) {
  at::manual_seed(11);
  for (at::ScalarType t : {at::kBFloat16, at::kHalf, at::kFloat}) {
    for (int64_t r : {0, 1, 17, 4096}) {
      for (int64_t c : {8, 24, 768, 3072, 8192}) {
        const at::Tensor x = Data(r, c, t);
        PoisonFreeMemory(gpu_, testing::kPoisonBytes);
        const Fp8Rows got = Fp8QuantizeRows(x, RowActivation::kNone, 16);
        ASSERT_TRUE(LastFp8QuantizeRowsRanKernel()) << t << " " << r << "x" << c;
        const Fp8Rows want = reference::Fp8QuantizeRows(x, RowActivation::kNone, 16);
        EXPECT_EQ(Bytes(got.values), Bytes(want.values)) << t << " " << r << "x" << c;
        EXPECT_TRUE(at::equal(got.scale_inv, want.scale_inv)) << t << " " << r << "x" << c;
      }
    }
  }
}

TEST_F(Fp8RowwiseCudaTest, KernelActivationsWithinOneStep) {
  at::manual_seed(12);
  for (RowActivation a : {RowActivation::kGelu, RowActivation::kGeluTanh, RowActivation::kRelu}) {
    const at::Tensor x = at::randn({1000, 3072}, at::TensorOptions(gpu_)).to(at::kBFloat16) * 4;
    PoisonFreeMemory(gpu_, testing::kPoisonBytes);
    const Fp8Rows got = Fp8QuantizeRows(x, a, 16);
    ASSERT_TRUE(LastFp8QuantizeRowsRanKernel());
    const Fp8Rows want = reference::Fp8QuantizeRows(x, a, 16);
    // The kernel's erff may differ from ATen's in the last fp32 bit, and its tanh GELU uses the
    // hardware tanh (relative error below 2^-10.9, which also moves the row's scale): either can
    // move a value across an E4M3 rounding boundary, one step at most: 1/8 relative in the normal
    // range, one subnormal step (2^-9 of 448 in scaled units) below it.
    const bool approx = a == RowActivation::kGeluTanh;
    EXPECT_TRUE(at::allclose(got.scale_inv, want.scale_inv, approx ? 1e-3 : 1e-5, 0))
        << static_cast<int>(a);
    const at::Tensor g = Dequantized(got), w = Dequantized(want);
    const at::Tensor subnormal_step = want.scale_inv.narrow(0, 0, want.rows) / 512;
    EXPECT_TRUE(((g - w).abs() <= w.abs() / 8 + subnormal_step * 1.001).all().item<bool>())
        << static_cast<int>(a);
    EXPECT_LT((g != w).to(at::kFloat).mean().item<double>(), approx ? 2e-2 : 1e-3)
        << static_cast<int>(a);
  }
}

TEST_F(Fp8RowwiseCudaTest, TensorCoreProductMatchesReference) {
  at::manual_seed(13);
  const at::TensorOptions opts(gpu_);
  for (int64_t t : {1, 37, 4096}) {
    const at::Tensor x = at::randn({t, 768}, opts).to(at::kBFloat16);
    const at::Tensor w = at::randn({3072, 768}, opts) * 0.03;
    const at::Tensor bias = at::randn({3072}, opts).to(at::kBFloat16);
    const Fp8Rows qx = Fp8QuantizeRows(x);
    const Fp8Rows qw = Fp8QuantizeRows(w, RowActivation::kNone, 1);
    PoisonFreeMemory(gpu_, testing::kPoisonBytes);
    const at::Tensor got = Fp8RowwiseLinear(qx, qw, bias, at::kBFloat16);
    ASSERT_TRUE(LastFp8RowwiseLinearWasFast()) << t;
    EXPECT_EQ(got.sizes(), (at::IntArrayRef{t, 3072}));
    const at::Tensor want = reference::Fp8RowwiseLinear(qx, qw, bias, at::kFloat);
    // bf16 output rounding (2^-9) and fast accumulation.
    EXPECT_LT(RelErr(got, want), 5e-3) << t;
    EXPECT_FALSE(at::isnan(got).any().item<bool>()) << t;
  }
}

}  // namespace
}  // namespace padless::cuda
