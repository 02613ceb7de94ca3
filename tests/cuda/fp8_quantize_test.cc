// The FP8 cast / cast-transpose with its amax (fp8_quantize.h).
// CPU (everywhere): the reference path against hand-computed bytes (scaling, saturation of values
// beyond the format and of +-inf, NaN, round-to-nearest-even ties, zero padding, the transpose),
// amax (NaN ignored, inf kept, folded into the old value, untouched by empty input), 0-dim views as
// scale and amax, strided x, and broken input throwing c10::Error naming the problem.
// GPU (skipped without one): the kernel against the reference byte for byte on poisoned memory,
// every input dtype and format, rows / transposed / both, tiny to T = 16384 shapes (R = 0
// included) with saturating values and NaNs, the same amax; special values; the cases the kernel
// leaves to the reference still right.
#include "padless/cuda/kernels/fp8_quantize.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "packing_test_util.h"
#include "padless/cuda/kernels/kernel_support.h"

namespace padless::cuda {
namespace {

using testing::Bytes;
using testing::ExpectC10Error;
using testing::kInf;
using testing::kNaN;
using testing::PoisonFreeMemory;

at::Tensor Row(const std::vector<float>& values) {
  return at::tensor(values, at::kFloat).view({1, -1});
}

at::Tensor Scale(float s) { return at::full({}, s, at::kFloat); }

Fp8QuantizeOptions RowsOnly(int64_t pad = 1) { return {true, false, pad}; }

TEST(Fp8QuantizeTest, FormatsAreTorchsFloat8Types) {
  EXPECT_EQ(Fp8ScalarType(Fp8Format::kE4M3), at::kFloat8_e4m3fn);
  EXPECT_EQ(Fp8ScalarType(Fp8Format::kE5M2), at::kFloat8_e5m2);
  EXPECT_EQ(Fp8Max(Fp8Format::kE4M3), 448.0);
  EXPECT_EQ(Fp8Max(Fp8Format::kE5M2), 57344.0);
}

TEST(Fp8QuantizeTest, ScalesThenRoundsToTheFormat) {
  // x * 2 = 2, -4, 1, 6, 0.75, -0.
  const at::Tensor x = Row({1.f, -2.f, 0.5f, 3.f, 0.375f, -0.f});
  const Fp8Quantized e4 = Fp8Quantize(x, Scale(2.f), Fp8Format::kE4M3, RowsOnly(), {});
  EXPECT_FALSE(LastFp8QuantizeRanKernel());
  EXPECT_EQ(e4.rows.scalar_type(), at::kFloat8_e4m3fn);
  EXPECT_FALSE(e4.transposed.defined());
  EXPECT_EQ(Bytes(e4.rows), (std::vector<uint8_t>{0x40, 0xc8, 0x38, 0x4c, 0x34, 0x80}));
  const Fp8Quantized e5 = Fp8Quantize(x, Scale(2.f), Fp8Format::kE5M2, RowsOnly(), {});
  EXPECT_EQ(e5.rows.scalar_type(), at::kFloat8_e5m2);
  EXPECT_EQ(Bytes(e5.rows), (std::vector<uint8_t>{0x40, 0xc4, 0x3c, 0x46, 0x3a, 0x80}));
  // 16-bit inputs are the same values.
  for (at::ScalarType t : {at::kBFloat16, at::kHalf}) {
    EXPECT_EQ(Bytes(Fp8Quantize(x.to(t), Scale(2.f), Fp8Format::kE4M3, RowsOnly(), {}).rows),
              Bytes(e4.rows))
        << t;
  }
}

TEST(Fp8QuantizeTest, SaturatesBeyondTheLargestFiniteValue) {
  // x * 4: 448, 500, 1e6, inf and their negatives; 57344, 61440 (E5M2's NaN-free overflow).
  const at::Tensor x = Row({112.f, 125.f, 2.5e5f, kInf, -112.f, -125.f, -2.5e5f, -kInf});
  EXPECT_EQ(Bytes(Fp8Quantize(x, Scale(4.f), Fp8Format::kE4M3, RowsOnly(), {}).rows),
            (std::vector<uint8_t>{0x7e, 0x7e, 0x7e, 0x7e, 0xfe, 0xfe, 0xfe, 0xfe}));
  const at::Tensor y = Row({14336.f, 15360.f, kInf, -15360.f, -kInf});
  EXPECT_EQ(Bytes(Fp8Quantize(y, Scale(4.f), Fp8Format::kE5M2, RowsOnly(), {}).rows),
            (std::vector<uint8_t>{0x7b, 0x7b, 0x7b, 0xfb, 0xfb}));
}

TEST(Fp8QuantizeTest, NaNStaysNaNAndLeavesAmaxAlone) {
  const at::Tensor x = Row({kNaN, 1.f, -kNaN, -3.f});
  const at::Tensor amax = at::full({1}, 0.5f);
  const std::vector<uint8_t> e4 =
      Bytes(Fp8Quantize(x, Scale(1.f), Fp8Format::kE4M3, RowsOnly(), amax).rows);
  EXPECT_EQ(e4[0] & 0x7f, 0x7f);  // E4M3's only NaN: S.1111.111
  EXPECT_EQ(e4[2] & 0x7f, 0x7f);
  EXPECT_EQ(amax.item<float>(), 3.f);
  const std::vector<uint8_t> e5 =
      Bytes(Fp8Quantize(x, Scale(1.f), Fp8Format::kE5M2, RowsOnly(), amax).rows);
  for (uint8_t b : {e5[0], e5[2]}) {  // E5M2 NaN: exponent 11111, mantissa != 0
    EXPECT_EQ(b & 0x7c, 0x7c);
    EXPECT_NE(b & 0x03, 0);
  }
  EXPECT_EQ(amax.item<float>(), 3.f);
}

TEST(Fp8QuantizeTest, RoundsTiesToEven) {
  // x * 0.5. E4M3 (3 mantissa bits): 1.0625 -> 1.0, 1.1875 -> 1.25, 2^-10 -> 0, 3 * 2^-10 -> 2^-8
  // (subnormals), 432 -> 448 (between 416 and 448).
  const at::Tensor x4 = Row({2.125f, 2.375f, 0x1p-9f, 0x3p-9f, 864.f});
  EXPECT_EQ(Bytes(Fp8Quantize(x4, Scale(0.5f), Fp8Format::kE4M3, RowsOnly(), {}).rows),
            (std::vector<uint8_t>{0x38, 0x3a, 0x00, 0x02, 0x7e}));
  // E5M2 (2 mantissa bits): 1.125 -> 1.0, 1.375 -> 1.5, 2^-17 -> 0, 3 * 2^-17 -> 2^-15, 53248 ->
  // 49152 (between 49152 and 57344).
  const at::Tensor x5 = Row({2.25f, 2.75f, 0x1p-16f, 0x3p-16f, 106496.f});
  EXPECT_EQ(Bytes(Fp8Quantize(x5, Scale(0.5f), Fp8Format::kE5M2, RowsOnly(), {}).rows),
            (std::vector<uint8_t>{0x3c, 0x3e, 0x00, 0x02, 0x7a}));
}

TEST(Fp8QuantizeTest, PadsWithZeroRowsAndTransposes) {
  at::manual_seed(1);
  const at::Tensor x = at::randn({5, 3}) * 10;
  const Fp8Quantized q = Fp8Quantize(x, Scale(1.f), Fp8Format::kE4M3, {true, true, 4}, {});
  ASSERT_EQ(q.rows.sizes(), (std::vector<int64_t>{8, 3}));
  ASSERT_EQ(q.transposed.sizes(), (std::vector<int64_t>{3, 8}));
  EXPECT_TRUE(q.transposed.is_contiguous());
  EXPECT_EQ(q.transposed.scalar_type(), at::kFloat8_e4m3fn);
  const at::Tensor rows = q.rows.view(at::kByte), t = q.transposed.view(at::kByte);
  EXPECT_TRUE(at::equal(t, rows.t()));
  EXPECT_TRUE(at::equal(rows.slice(0, 0, 5), x.to(at::kFloat8_e4m3fn).view(at::kByte)));
  EXPECT_EQ(rows.slice(0, 5).count_nonzero().item<int64_t>(), 0);
  EXPECT_EQ(t.slice(1, 5).count_nonzero().item<int64_t>(), 0);
  // Only the transpose; a multiple of the row count pads nothing.
  const Fp8Quantized only_t = Fp8Quantize(x, Scale(1.f), Fp8Format::kE4M3, {false, true, 5}, {});
  EXPECT_FALSE(only_t.rows.defined());
  EXPECT_TRUE(at::equal(only_t.transposed.view(at::kByte), rows.slice(0, 0, 5).t()));
}

TEST(Fp8QuantizeTest, AmaxIsTheUnscaledMaxFoldedIntoTheOldValue) {
  const at::Tensor amax = at::full({1}, 0.5f);
  Fp8Quantize(Row({-3.f, 2.f}), Scale(8.f), Fp8Format::kE4M3, RowsOnly(), amax);
  EXPECT_EQ(amax.item<float>(), 3.f);
  Fp8Quantize(Row({2.f, kNaN}), Scale(8.f), Fp8Format::kE4M3, RowsOnly(), amax);
  EXPECT_EQ(amax.item<float>(), 3.f);
  Fp8Quantize(Row({5.f, 1.f}).to(at::kBFloat16), Scale(8.f), Fp8Format::kE5M2, RowsOnly(), amax);
  EXPECT_EQ(amax.item<float>(), 5.f);
  // No rows: empty outputs, amax unchanged.
  const Fp8Quantized empty = Fp8Quantize(at::zeros({0, 16}), Scale(1.f), Fp8Format::kE4M3,
                                         {true, true, 16}, amax);
  EXPECT_EQ(empty.rows.sizes(), (std::vector<int64_t>{0, 16}));
  EXPECT_EQ(empty.transposed.sizes(), (std::vector<int64_t>{16, 0}));
  EXPECT_EQ(amax.item<float>(), 5.f);
  Fp8Quantize(Row({-kInf, 1.f}), Scale(1.f), Fp8Format::kE4M3, RowsOnly(), amax);
  EXPECT_EQ(amax.item<float>(), kInf);
}

TEST(Fp8QuantizeTest, ScaleAndAmaxMayBeViewsAndXStrided) {
  at::manual_seed(2);
  const at::Tensor scales = at::tensor({1.f, 16.f, 0.25f}), amaxes = at::zeros({3});
  const at::Tensor base = at::randn({6, 10}) * 4;
  const at::Tensor x = base.t().slice(0, 0, 8);  // [8, 6], strided
  ASSERT_FALSE(x.is_contiguous());
  const Fp8Quantized q = Fp8Quantize(x, scales.select(0, 1), Fp8Format::kE5M2, {true, true, 16},
                                     amaxes.select(0, 2));
  const at::Tensor want = (x.contiguous() * 16).to(at::kFloat8_e5m2).view(at::kByte);
  EXPECT_TRUE(at::equal(q.rows.view(at::kByte).slice(0, 0, 8), want));
  EXPECT_TRUE(at::equal(q.transposed.view(at::kByte).slice(1, 0, 8), want.t()));
  EXPECT_EQ(amaxes[2].item<float>(), x.abs().max().item<float>());
  EXPECT_EQ(amaxes[0].item<float>(), 0.f);
  EXPECT_EQ(amaxes[1].item<float>(), 0.f);
}

TEST(Fp8QuantizeTest, BrokenInputThrowsAClearError) {
  const at::Tensor x = at::randn({4, 16}), s = Scale(1.f), a = at::zeros({1});
  const auto call = [](const at::Tensor& in, const at::Tensor& scale, const at::Tensor& amax,
                       Fp8QuantizeOptions o = {}) {
    Fp8Quantize(in, scale, Fp8Format::kE4M3, o, amax);
  };
  ExpectC10Error([&] { call(at::Tensor(), s, a); }, "Fp8Quantize: x is undefined");
  ExpectC10Error([&] { call(x.unsqueeze(0), s, a); }, "x must be 2-D");
  ExpectC10Error([&] { call(x.to(at::kInt), s, a); }, "x must be a floating-point tensor");
  ExpectC10Error([&] { call(x, at::Tensor(), a); }, "Fp8Quantize: scale is undefined");
  ExpectC10Error([&] { call(x, s.to(at::kDouble), a); }, "scale must be fp32");
  ExpectC10Error([&] { call(x, at::ones({2}), a); }, "scale must have exactly one element");
  ExpectC10Error([&] { call(x, s, a.to(at::kHalf)); }, "amax must be fp32");
  ExpectC10Error([&] { call(x, s, at::zeros({0})); }, "amax must have exactly one element");
  ExpectC10Error([&] { call(x, s, a, {true, false, 0}); }, "pad_rows_to must be >= 1");
  ExpectC10Error([&] { call(x, s, a, {false, false, 16}); }, "neither rows nor transposed");
  if (!torch::cuda::is_available()) return;
  const at::Tensor xg = x.cuda();
  ExpectC10Error([&] { call(xg, s, a.cuda()); }, "Fp8Quantize: scale is on cpu but x is on cuda");
  ExpectC10Error([&] { call(xg, s.cuda(), a); }, "Fp8Quantize: amax is on cpu but x is on cuda");
}

// --- GPU: the kernel.

class Fp8QuantizeCudaTest : public ::testing::Test {
 public:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    if (!CudaKernelsBuilt()) GTEST_SKIP() << "built without the CUDA kernels";
  }
  // randn * 3 with about 1 in 500 elements NaN (of either sign).
  at::Tensor Data(int64_t r, int64_t c, at::ScalarType dtype) {
    const at::TensorOptions opts(gpu_);
    at::Tensor x = at::randn({r, c}, opts) * 3;
    const at::Tensor u = at::rand({r, c}, opts);
    x.masked_fill_(u < 0.001, kNaN);
    x.masked_fill_(u > 0.999, -kNaN);
    return x.to(dtype);
  }
  const c10::Device gpu_{c10::kCUDA, 0};
};

struct Mode {
  const char* name;
  Fp8QuantizeOptions options;
};
const Mode kModes[] = {{"rows", {true, false, 16}},
                       {"transposed", {false, true, 16}},
                       {"both", {true, true, 16}}};

// The kernel (on poisoned memory) and the reference give the same bytes, padding included, and
// the same amax; `want_kernel` says whether the kernel should have run.
void ExpectMatchesReference(const at::Tensor& x, const at::Tensor& scale, Fp8Format format,
                            const Fp8QuantizeOptions& options, bool want_kernel,
                            const std::string& what) {
  const at::Tensor amax = at::full({1}, 0.25f, x.options().dtype(at::kFloat));
  const at::Tensor want_amax = amax.clone();
  PoisonFreeMemory(x.device(), int64_t{512} << 20);
  const Fp8Quantized got = Fp8Quantize(x, scale, format, options, amax);
  EXPECT_EQ(LastFp8QuantizeRanKernel(), want_kernel) << what;
  const Fp8Quantized want = reference::Fp8Quantize(x, scale, format, options, want_amax);
  ASSERT_EQ(got.rows.defined(), options.rows) << what;
  ASSERT_EQ(got.transposed.defined(), options.transposed) << what;
  if (options.rows) {
    EXPECT_TRUE(at::equal(got.rows.view(at::kByte), want.rows.view(at::kByte))) << what;
  }
  if (options.transposed) {
    EXPECT_TRUE(at::equal(got.transposed.view(at::kByte), want.transposed.view(at::kByte))) << what;
  }
  EXPECT_TRUE(at::equal(amax.view(at::kInt), want_amax.view(at::kInt)))
      << what << ": " << amax.item<float>() << " vs " << want_amax.item<float>();
}

TEST_F(Fp8QuantizeCudaTest, KernelMatchesTheReference) {
  at::manual_seed(3);
  // One scale from a device-side vector (a 0-dim view): beyond +-4 (E4M3) or 2 (E5M2) sigma the
  // scaled values saturate.
  const at::Tensor scales = at::tensor({448.f / 12.f, 57344.f / 6.f}).to(gpu_);
  for (at::ScalarType dtype : {at::kBFloat16, at::kHalf, at::kFloat}) {
    for (int64_t r : {0, 1, 7, 100, 16384}) {
      for (int64_t c : {16, 768, 3072}) {
        const at::Tensor x = Data(r, c, dtype);
        for (Fp8Format f : {Fp8Format::kE4M3, Fp8Format::kE5M2}) {
          for (const Mode& m : kModes) {
            const std::string what = std::string(c10::toString(dtype)) + " R=" +
                                     std::to_string(r) + " C=" + std::to_string(c) + " " +
                                     c10::toString(Fp8ScalarType(f)) + " " + m.name;
            ExpectMatchesReference(x, scales.select(0, f == Fp8Format::kE4M3 ? 0 : 1), f,
                                   m.options, true, what);
            if (HasFatalFailure()) return;
          }
        }
      }
    }
  }
}

TEST_F(Fp8QuantizeCudaTest, SpecialValuesMatchTheReference) {
  // Ties at the formats' resolutions, subnormals, +-0, the formats' edges, +-inf, +-NaN.
  const std::vector<float> special = {
      2.125f, 2.375f, 2.25f,  2.75f,  0x1p-9f, 0x3p-9f, 0x1p-16f, 0x3p-16f, 864.f, 106496.f,
      896.f,  928.f,  -0.f,   0.f,    1e-30f,  -1e-30f, kInf,     -kInf,    kNaN,  -kNaN,
      1e30f,  -1e30f, 114688.f, 131072.f, 0.1f,    -0.3f,   7.f,      -9.f,     3.3f,  100.f,
      -500.f, 1.f};
  const at::Tensor base = at::tensor(special).view({2, 16}).repeat({3, 2}).to(gpu_);  // [6, 32]
  for (at::ScalarType dtype : {at::kFloat, at::kBFloat16, at::kHalf}) {
    for (Fp8Format f : {Fp8Format::kE4M3, Fp8Format::kE5M2}) {
      for (const Mode& m : kModes) {
        const std::string what = std::string(c10::toString(dtype)) + " " +
                                 c10::toString(Fp8ScalarType(f)) + " " + m.name;
        ExpectMatchesReference(base.to(dtype), at::full({}, 0.5f, base.options()), f, m.options,
                               true, what);
      }
    }
  }
}

TEST_F(Fp8QuantizeCudaTest, UnsupportedShapesFallBackAndStayRight) {
  at::manual_seed(4);
  const at::Tensor s = at::full({1}, 8.f, at::TensorOptions(gpu_));
  const Fp8Format f = Fp8Format::kE4M3;
  // C not a multiple of 16; R_pad not a multiple of 4 for the transpose (rows only is fine).
  ExpectMatchesReference(Data(100, 24, at::kBFloat16), s, f, {true, true, 16}, false, "C=24");
  ExpectMatchesReference(Data(7, 32, at::kBFloat16), s, f, {true, true, 1}, false, "R_pad=7 t");
  ExpectMatchesReference(Data(7, 32, at::kBFloat16), s, f, {true, false, 1}, true, "R_pad=7");
  ExpectMatchesReference(Data(7, 32, at::kDouble), s, f, {true, true, 16}, false, "fp64");
  // Misaligned (2 bytes past a boundary) and strided inputs; the strided one is copied.
  const at::Tensor flat = Data(1, 100 * 64 + 1, at::kBFloat16);
  const at::Tensor misaligned = flat.view({-1}).narrow(0, 1, 100 * 64).view({100, 64});
  ExpectMatchesReference(misaligned, s, f, {true, true, 16}, false, "misaligned");
  ExpectMatchesReference(Data(64, 100, at::kHalf).t(), s, f, {true, true, 16}, true, "strided");
}

TEST_F(Fp8QuantizeCudaTest, AmaxAccumulatesOnTheDevice) {
  const at::Tensor amax = at::zeros({1}, at::TensorOptions(gpu_)), s = at::ones({}, at::TensorOptions(gpu_));
  const at::Tensor x = at::full({64, 64}, 2.f, at::TensorOptions(gpu_)).to(at::kBFloat16);
  Fp8Quantize(x, s, Fp8Format::kE4M3, {true, true, 16}, amax);
  ASSERT_TRUE(LastFp8QuantizeRanKernel());
  Fp8Quantize(x * 0.5, s, Fp8Format::kE4M3, {true, false, 16}, amax);
  EXPECT_EQ(amax.item<float>(), 2.f);
  Fp8Quantize(x * 3, s, Fp8Format::kE5M2, {true, false, 16}, amax);
  EXPECT_EQ(amax.item<float>(), 6.f);
  Fp8Quantize(x.slice(0, 0, 0), s, Fp8Format::kE5M2, {true, true, 16}, amax);
  EXPECT_EQ(amax.item<float>(), 6.f);
}

// --- Fp8Transpose: the bytes of rows^T.

at::Tensor Fp8Data(int64_t r, int64_t c, at::ScalarType fp8, const at::TensorOptions& opts) {
  return (at::randn({r, c}, opts) * 40).to(fp8);
}

TEST(Fp8QuantizeTest, TransposeIsTheBytesOfTheTranspose) {
  at::manual_seed(8);
  for (at::ScalarType fp8 : {at::kFloat8_e4m3fn, at::kFloat8_e5m2}) {
    const at::Tensor rows = Fp8Data(12, 40, fp8, at::TensorOptions());
    const at::Tensor t = Fp8Transpose(rows);
    EXPECT_FALSE(LastFp8QuantizeRanKernel());
    EXPECT_EQ(t.scalar_type(), fp8);
    EXPECT_EQ(t.sizes(), (std::vector<int64_t>{40, 12}));
    EXPECT_TRUE(t.is_contiguous());
    EXPECT_TRUE(at::equal(t.view(at::kByte), rows.view(at::kByte).t()));
    EXPECT_TRUE(at::equal(reference::Fp8Transpose(rows).view(at::kByte), t.view(at::kByte)));
  }
}

TEST(Fp8QuantizeTest, TransposeOfBrokenInputThrowsAClearError) {
  const at::Tensor rows = at::zeros({4, 8}, at::kFloat8_e4m3fn);
  ExpectC10Error([&] { Fp8Transpose(at::Tensor()); }, "Fp8Transpose: rows is undefined");
  ExpectC10Error([&] { Fp8Transpose(rows.view({32})); }, "Fp8Transpose: rows must be 2-D");
  ExpectC10Error(
      [&] {
        Fp8Transpose(at::zeros({4, 8}, at::kBFloat16));
      },
      "Fp8Transpose: rows must be float8_e4m3fn or float8_e5m2, got BFloat16");
}

// On poisoned memory, the kernel's bytes are those of rows^T; shapes the kernel does not take
// (rows not a multiple of 4, columns not of 8, a strided view) fall back.
TEST_F(Fp8QuantizeCudaTest, TransposeKernelMatchesTheReference) {
  at::manual_seed(9);
  struct Case {
    int64_t r, c;
    bool kernel;
  };
  for (const Case& k :
       {Case{16384, 768, true}, Case{48, 3072, true}, Case{4, 8, true}, Case{100, 24, true},
        Case{0, 16, true}, Case{132, 72, true}, Case{6, 16, false}, Case{8, 12, false}}) {
    for (at::ScalarType fp8 : {at::kFloat8_e4m3fn, at::kFloat8_e5m2}) {
      const std::string what =
          std::to_string(k.r) + "x" + std::to_string(k.c) + " " + c10::toString(fp8);
      const at::Tensor rows = Fp8Data(k.r, k.c, fp8, at::TensorOptions(gpu_));
      PoisonFreeMemory(gpu_, int64_t{64} << 20);
      const at::Tensor t = Fp8Transpose(rows);
      EXPECT_EQ(LastFp8QuantizeRanKernel(), k.kernel) << what;
      ASSERT_EQ(t.sizes(), (std::vector<int64_t>{k.c, k.r})) << what;
      EXPECT_TRUE(at::equal(t.view(at::kByte), rows.view(at::kByte).t().contiguous())) << what;
    }
  }
  const at::Tensor wide = Fp8Data(16, 64, at::kFloat8_e4m3fn, at::TensorOptions(gpu_));
  const at::Tensor view = wide.narrow(1, 0, 32);
  EXPECT_TRUE(at::equal(Fp8Transpose(view).view(at::kByte), view.view(at::kByte).t().contiguous()));
  EXPECT_FALSE(LastFp8QuantizeRanKernel());
}

}  // namespace
}  // namespace padless::cuda
