// The encoder layer's cuBLASLt GEMMs (gemm_epilogue.h): the FFN-in GEMM with a fused bias + GELU
// epilogue, the bias-only and plain projections, and the two backward GEMMs (input gradient, in
// place or not, and the fp32 weight gradient).
// CPU (everywhere): the reference path reproduces autograd through the unfused ops (addmm + tanh
// GELU) forward, and broken input throws c10::Error naming the problem.
// GPU (skipped without one): the cuBLASLt path against the same ops in fp32 on the upcast inputs,
// relative L2 error < 1e-2 for bf16 / fp16, on BERT-sized and tiny shapes; shapes and pointers
// cuBLASLt cannot take fall back and are still right; the algorithm cache (hits within a 1024-token
// bucket, misses across) gives right results.
#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>
#include <torch/cuda.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "packing_test_util.h"
#include "padless/cuda/kernels/gemm_epilogue.h"
#include "padless/cuda/kernels/kernel_support.h"

namespace padless::cuda {
namespace {

using testing::ExpectC10Error;
using testing::kPoisonBytes;
using testing::PoisonFreeMemory;
using testing::RelErr;

void ExpectClose(const at::Tensor& got, const at::Tensor& want, const char* what) {
  ASSERT_TRUE(got.defined()) << what;
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  EXPECT_TRUE(at::allclose(got.to(at::kFloat), want.to(at::kFloat), 1e-5, 1e-5))
      << what << ": max |diff| " << (got.to(at::kFloat) - want.to(at::kFloat)).abs().max();
}

// --- CPU: the reference path against autograd.

struct FfnShape {
  int64_t tokens, hidden, ffn;
};

// act = gelu_tanh(x W^T + b) from LinearGelu against the same ops under autograd (values, and no
// autograd history on the outputs).
void CheckAgainstAutograd(const FfnShape& s, uint64_t seed) {
  at::manual_seed(seed);
  const auto leaf = [](at::Tensor t) { return t.set_requires_grad(true); };
  at::Tensor x = leaf(at::randn({s.tokens, s.hidden}));
  at::Tensor w1 = leaf(at::randn({s.ffn, s.hidden}) / 4);
  at::Tensor b1 = leaf(at::randn({s.ffn}));
  const at::Tensor pre_ref = at::addmm(b1, x, w1.t());
  const at::Tensor act_ref = at::gelu(pre_ref, "tanh");
  ASSERT_TRUE(act_ref.requires_grad());

  const LinearGeluResult fwd = LinearGelu(x, w1, b1);
  EXPECT_FALSE(LastGemmEpilogueWasFused());
  EXPECT_FALSE(fwd.act.requires_grad()) << "outputs must not carry autograd history";
  EXPECT_FALSE(fwd.pre.requires_grad()) << "outputs must not carry autograd history";
  ExpectClose(fwd.pre, pre_ref.detach(), "pre");
  ExpectClose(fwd.act, act_ref.detach(), "act");
}

TEST(GemmEpilogueTest, ReferenceMatchesAutogradThroughUnfusedOps) {
  CheckAgainstAutograd({37, 16, 64}, 1);
  CheckAgainstAutograd({1, 8, 32}, 2);
  CheckAgainstAutograd({5, 7, 13}, 3);  // sizes no fused GEMM would take
}

TEST(GemmEpilogueTest, ReferencePathGivesTheSameResults) {
  at::manual_seed(4);
  const at::Tensor x = at::randn({9, 24}), w = at::randn({40, 24}), b = at::randn({40});
  const LinearGeluResult a = LinearGelu(x, w, b), r = LinearGelu(x, w, b, GemmPath::kReference);
  EXPECT_TRUE(at::equal(a.act, r.act) && at::equal(a.pre, r.pre));
  EXPECT_TRUE(at::equal(LinearBias(x, w, b), LinearBias(x, w, b, GemmPath::kReference)));
  ExpectClose(LinearBias(x, w, b), at::addmm(b, x, w.t()), "LinearBias");
  EXPECT_TRUE(at::equal(Linear(x, w), Linear(x, w, GemmPath::kReference)));
  ExpectClose(Linear(x, w), x.mm(w.t()), "Linear");
}

// The backward GEMMs' reference path against autograd through y = x @ w^T.
TEST(GemmEpilogueTest, BackwardGemmsMatchAutograd) {
  at::manual_seed(5);
  const at::Tensor x = at::randn({9, 24}).set_requires_grad(true);
  const at::Tensor w = at::randn({40, 24}).set_requires_grad(true);
  const at::Tensor dy = at::randn({9, 40});
  const std::vector<at::Tensor> g = torch::autograd::grad({x.mm(w.t())}, {x, w}, {dy});
  ExpectClose(LinearInputGrad(dy, w.detach()), g[0], "input grad");
  ExpectClose(LinearWeightGrad(dy, x.detach()), g[1], "weight grad");
  const at::Tensor acc = at::randn({9, 24});
  const at::Tensor before = acc.clone();
  const at::Tensor out = LinearInputGrad(dy, w.detach(), acc);
  EXPECT_TRUE(out.is_same(acc)) << "accumulates in place";
  ExpectClose(acc, before + g[0], "accumulated input grad");
  EXPECT_FALSE(LastGemmEpilogueWasFused());
  EXPECT_TRUE(at::equal(LinearWeightGrad(dy, x.detach()),
                        LinearWeightGrad(dy, x.detach(), GemmPath::kReference)));
}

TEST(GemmEpilogueTest, NonContiguousAndEmptyInputs) {
  at::manual_seed(6);
  const at::Tensor x_t = at::randn({24, 9});  // x = x_t.t() is a transposed view
  const at::Tensor w = at::randn({16, 24}), b = at::randn({16});
  ExpectClose(LinearGelu(x_t.t(), w, b).pre, at::addmm(b, x_t.t().contiguous(), w.t()), "pre");
  const LinearGeluResult empty = LinearGelu(at::empty({0, 24}), w, b);
  EXPECT_EQ(empty.act.sizes(), (std::vector<int64_t>{0, 16}));
}

TEST(GemmEpilogueTest, BrokenInputThrowsAClearError) {
  const at::Tensor x = at::randn({4, 8}), w = at::randn({16, 8}), b = at::randn({16});
  ExpectC10Error([&] { LinearGelu(x, at::randn({16, 9}), b); }, "need x [T, K] and weight [N, K]");
  ExpectC10Error([&] { LinearGelu(x, w, at::randn({15})); }, "bias has 15 elements");
  ExpectC10Error([&] { LinearGelu(x, w, at::randn({16, 1})); }, "bias must be 1-D");
  ExpectC10Error([&] { LinearGelu(x.unsqueeze(0), w, b); }, "x must be 2-D");
  ExpectC10Error([&] { LinearGelu(x.to(at::kDouble), w, b); }, "must share one dtype");
  ExpectC10Error([&] { LinearGelu(x.to(at::kInt), w.to(at::kInt), b.to(at::kInt)); },
                 "floating-point");
  ExpectC10Error([&] { LinearGelu(at::Tensor(), w, b); }, "x is undefined");
  ExpectC10Error([&] { LinearBias(x, w, at::randn({15})); }, "LinearBias: bias has 15 elements");
  ExpectC10Error([&] { Linear(x, at::randn({16, 9})); }, "Linear: x is");
  ExpectC10Error([&] { Linear(at::Tensor(), w); }, "Linear: x is undefined");
  ExpectC10Error([&] { Linear(x.to(at::kDouble), w); }, "must share one dtype");
  const at::Tensor dy = at::randn({4, 16});
  ExpectC10Error(
      [&] {
        LinearInputGrad(dy, at::randn({15, 8}));
      },
      "need dy [T, N] and weight [N, K]");
  ExpectC10Error([&] { LinearInputGrad(dy, w, at::randn({4, 9})); }, "accumulate is");
  ExpectC10Error(
      [&] {
        LinearInputGrad(dy, w, at::randn({4, 8}).to(at::kDouble));
      },
      "must share one dtype");
  ExpectC10Error([&] { LinearWeightGrad(dy, at::randn({5, 8})); }, "need dy [T, N] and x [T, K]");
  ExpectC10Error([&] { LinearWeightGrad(at::Tensor(), x); }, "dy is undefined");
}

// ScaledMm's own checks run before either path (the CPU has no FP8 GEMM to fall back to).
TEST(GemmEpilogueTest, ScaledMmBrokenInputThrowsAClearError) {
  const at::Tensor a = at::randn({32, 16}).to(at::kFloat8_e4m3fn);
  const at::Tensor b = at::randn({16, 48}).to(at::kFloat8_e4m3fn);
  const at::Tensor one = at::ones({}, at::kFloat);
  ExpectC10Error([&] { ScaledMm(a.to(at::kBFloat16), b, one, one, {}, at::kBFloat16, true); },
                 "a must be float8_e4m3fn or float8_e5m2");
  ExpectC10Error([&] { ScaledMm(a, at::randn({17, 48}).to(at::kFloat8_e4m3fn), one, one, {},
                                at::kBFloat16, true); },
                 "need a [M, K] and b [K, N]");
  ExpectC10Error([&] { ScaledMm(a.unsqueeze(0), b, one, one, {}, at::kBFloat16, true); },
                 "a must be a 2-D tensor");
  ExpectC10Error([&] { ScaledMm(a, b, one.to(at::kDouble), one, {}, at::kBFloat16, true); },
                 "scale_a must be one fp32 value");
  ExpectC10Error([&] { ScaledMm(a, b, one, at::ones({2}), {}, at::kBFloat16, true); },
                 "scale_b must be one fp32 value");
  ExpectC10Error([&] { ScaledMm(a, b, one, one, {}, at::kInt, true); },
                 "the output must be fp32, bf16 or fp16");
  ExpectC10Error([&] { ScaledMm(a, b, one, one, at::randn({47}), at::kBFloat16, true); },
                 "bias must be [48]");
  ExpectC10Error([&] { ScaledMm(at::Tensor(), b, one, one, {}, at::kBFloat16, true); },
                 "a must be a 2-D tensor");
  ExpectC10Error([&] { ScaledMmGelu(a, b, one, one, {}, at::kBFloat16, true); },
                 "ScaledMmGelu: needs a bias and a bf16 or fp16 output");
  ExpectC10Error([&] { ScaledMmGelu(a, b, one, one, at::randn({48}), at::kFloat, true); },
                 "ScaledMmGelu: needs a bias and a bf16 or fp16 output");
  const at::Tensor bias = at::randn({48}).to(at::kBFloat16);
  const at::Tensor amax = at::zeros({1});
  ExpectC10Error([&] { ScaledMmGeluAuxToFp8(a, b, one, one, {}, one, amax, true); },
                 "ScaledMmGeluAuxToFp8: needs a bias");
  ExpectC10Error([&] { ScaledMmGeluAuxToFp8(a, b, one, one, bias, one, at::Tensor(), true); },
                 "ScaledMmGeluAuxToFp8: amax_out must be one fp32 value");
  ExpectC10Error([&] { ScaledMmGeluAuxToFp8(a, b, one, one, bias, one, at::zeros({2}), true); },
                 "amax_out must be one fp32 value");
  ExpectC10Error([&] { ScaledMmGeluAuxToFp8(a, b, one, one, bias, one, amax.to(at::kHalf), true); },
                 "amax_out must be one fp32 value");
  ExpectC10Error(
      [&] { ScaledMmGeluAuxToFp8(a.to(at::kFloat8_e5m2), b, one, one, bias, one, amax, true); },
      "a and b must be float8_e4m3fn");
}

TEST(GemmEpilogueTest, ScaledMmAccumulateBrokenInputAndReference) {
  at::manual_seed(9);
  const at::Tensor a = at::randn({7, 16}).to(at::kFloat8_e5m2);
  const at::Tensor b = at::randn({32, 16}).to(at::kFloat8_e4m3fn).t();
  const at::Tensor one = at::ones({}, at::kFloat);
  const at::Tensor start = at::randn({7, 32}).to(at::kBFloat16);
  const at::Tensor target = start.clone();
  const at::Tensor got = ScaledMmAccumulate(a, b, one, one, target, false);
  EXPECT_FALSE(LastGemmEpilogueWasFused());
  EXPECT_EQ(got.data_ptr(), target.data_ptr());
  EXPECT_TRUE(got.equal(start + ScaledMm(a, b, one, one, {}, at::kBFloat16, false, TokenAxis::kNone,
                                         GemmPath::kReference)));
  ExpectC10Error([&] { ScaledMmAccumulate(a, b, one, one, at::Tensor(), false); },
                 "ScaledMmAccumulate: accumulate is undefined");
  ExpectC10Error(
      [&] { ScaledMmAccumulate(a, b, one, one, at::zeros({7, 32}, at::kInt), false); },
      "ScaledMmAccumulate: the output must be fp32, bf16 or fp16, not Int");
  ExpectC10Error(
      [&] { ScaledMmAccumulate(a, b, one, one, at::zeros({8, 32}, at::kBFloat16), false); },
      "accumulate must be fp32, bf16 or fp16 [7, 32]");
  ExpectC10Error([&] { ScaledMmAccumulate(a, a, one, one, start, false); },
                 "need a [M, K] and b [K, N]");
}

// ScaledMmGeluAuxToFp8's reference on the CPU: ScaledMmGeluToFp8's bytes, its sum in the bias's
// dtype as pre, and max |gelu_tanh(pre)| overwriting amax_out.
TEST(GemmEpilogueTest, ScaledMmGeluAuxToFp8IsGeluToFp8WithItsSumAndAmax) {
  at::manual_seed(6);
  const at::Tensor a = at::randn({32, 16}).to(at::kFloat8_e4m3fn);
  const at::Tensor b = at::randn({48, 16}).to(at::kFloat8_e4m3fn).t();
  const at::Tensor sa = at::full({}, 0.5f), sb = at::full({}, 0.25f), so = at::full({}, 64.f);
  const at::Tensor bias = at::randn({48}).to(at::kBFloat16);
  const at::Tensor amax = at::full({1}, 1e30f);
  const LinearGeluResult r = ScaledMmGeluAuxToFp8(a, b, sa, sb, bias, so, amax, false);
  EXPECT_FALSE(LastGemmEpilogueWasFused());
  const at::Tensor pre =
      ScaledMm(a, b, sa, sb, bias, at::kBFloat16, false, TokenAxis::kNone, GemmPath::kReference);
  EXPECT_TRUE(r.pre.equal(pre));
  EXPECT_TRUE(r.act.view(at::kByte).equal(
      ScaledMmGeluToFp8(a, b, sa, sb, bias, so, false, GemmPath::kReference).view(at::kByte)));
  EXPECT_EQ(amax.item<float>(), at::gelu(pre.to(at::kFloat), "tanh").abs().max().item<float>());
}

// --- GPU: the cuBLASLt path.

// Public helpers: CheckCase uses them.
class GemmEpilogueCudaTest : public ::testing::Test {
 public:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    if (!CudaKernelsBuilt()) GTEST_SKIP() << "built without the CUDA kernels (no cuBLASLt path)";
  }
  at::Tensor Randn(std::vector<int64_t> shape, at::ScalarType dtype, double scale = 1.0) {
    return (at::randn(shape, at::TensorOptions(gpu_)) * scale).to(dtype);
  }
  void Poison() { PoisonFreeMemory(gpu_, kPoisonBytes); }
  const c10::Device gpu_{c10::kCUDA, 0};
};

#define EXPECT_REL_ERR(got, want, tol, what)                                                \
  do {                                                                                      \
    ASSERT_TRUE((got).defined()) << what;                                                   \
    ASSERT_EQ((got).sizes(), (want).sizes()) << what;                                       \
    const double err_ = RelErr(got, want);                                                  \
    EXPECT_TRUE(err_ < (tol)) << what << ": relative error " << err_ << " (limit " << (tol) \
                              << ")";                                                       \
  } while (0)

// addmm in fp32 on the upcast inputs: the reference pre-activation of LinearGelu and LinearBias.
at::Tensor Fp32PreActivation(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  return at::addmm(b.to(at::kFloat), x.to(at::kFloat), w.to(at::kFloat).t());
}

// LinearGelu's result against that pre-activation and its tanh GELU, at bf16/fp16 tolerance.
void ExpectMatchesFp32(const LinearGeluResult& r, const at::Tensor& pre32,
                       const std::string& what) {
  EXPECT_REL_ERR(r.pre, pre32, 1e-2, what + " pre");
  EXPECT_REL_ERR(r.act, at::gelu(pre32, "tanh"), 1e-2, what + " act");
}

// Whether a case must run the cuBLASLt path: kMay for tiny T, where cuBLASLt's heuristic may
// decline an epilogue (the fallback is then checked just the same, and the test says which ran).
enum class Fused { kMust, kMay, kNever };

struct GpuCase {
  int64_t t, k, n;
  at::ScalarType dtype;
  Fused fused;
};

std::string Name(const GpuCase& c) {
  return "T=" + std::to_string(c.t) + " K=" + std::to_string(c.k) + " N=" + std::to_string(c.n) +
         " " + c10::toString(c.dtype);
}

std::vector<GpuCase> GpuCases() {
  std::vector<GpuCase> cases;
  for (at::ScalarType dtype : {at::kBFloat16, at::kHalf}) {
    for (int64_t t : {1, 7, 16384}) {
      for (auto [k, n] : std::vector<std::pair<int64_t, int64_t>>{
               {768, 3072}, {3072, 768}, {384, 1536}, {1024, 4096}}) {
        cases.push_back({t, k, n, dtype, t >= 16 ? Fused::kMust : Fused::kMay});
      }
    }
    // Feature sizes that are not multiples of 8: the reference path.
    cases.push_back({33, 768, 100, dtype, Fused::kNever});
    cases.push_back({33, 7, 64, dtype, Fused::kNever});
  }
  return cases;
}

void ExpectPath(const GpuCase& c, const std::string& what) {
  const bool fused = LastGemmEpilogueWasFused();
  if (c.fused == Fused::kMay) {
    if (!fused) std::printf("note: %s took the reference path\n", what.c_str());
    return;
  }
  EXPECT_EQ(fused, c.fused == Fused::kMust) << what;
}

// LinearGelu on one case: x [T, K], weight [N, K], bias [N].
void CheckCase(const GpuCase& c, GemmEpilogueCudaTest& fx) {
  const double tol = 1e-2;
  const std::string name = Name(c);
  // Weights scaled by 1/sqrt(fan_in) keep every value O(1), far from fp16's range limit.
  const at::Tensor x = fx.Randn({c.t, c.k}, c.dtype);
  const at::Tensor w = fx.Randn({c.n, c.k}, c.dtype, 1.0 / std::sqrt(double(c.k)));
  const at::Tensor b = fx.Randn({c.n}, c.dtype);

  fx.Poison();
  const LinearGeluResult fwd = LinearGelu(x, w, b);
  ExpectPath(c, name + " LinearGelu");
  const at::Tensor pre32 = Fp32PreActivation(x, w, b);
  ExpectMatchesFp32(fwd, pre32, name);
  EXPECT_EQ(fwd.act.scalar_type(), c.dtype);
  EXPECT_EQ(fwd.pre.scalar_type(), c.dtype);

  fx.Poison();
  const at::Tensor y = LinearBias(x, w, b);
  ExpectPath(c, name + " LinearBias");
  EXPECT_REL_ERR(y, pre32, tol, name + " LinearBias");
  EXPECT_EQ(y.scalar_type(), c.dtype);

  fx.Poison();
  const at::Tensor z = Linear(x, w);
  ExpectPath(c, name + " Linear");
  EXPECT_REL_ERR(z, x.to(at::kFloat).mm(w.to(at::kFloat).t()), tol, name + " Linear");
  EXPECT_EQ(z.scalar_type(), c.dtype);

  // The backward GEMMs of y = x @ w^T for an upstream gradient dy [T, N].
  const at::Tensor dy = fx.Randn({c.t, c.n}, c.dtype);
  const at::Tensor dy32 = dy.to(at::kFloat);
  fx.Poison();
  const at::Tensor dx = LinearInputGrad(dy, w);
  ExpectPath(c, name + " LinearInputGrad");
  const at::Tensor dx32 = dy32.mm(w.to(at::kFloat));
  EXPECT_REL_ERR(dx, dx32, tol, name + " LinearInputGrad");
  EXPECT_EQ(dx.scalar_type(), c.dtype);
  const at::Tensor acc = fx.Randn({c.t, c.k}, c.dtype);
  const at::Tensor acc32 = acc.to(at::kFloat);
  fx.Poison();
  EXPECT_TRUE(LinearInputGrad(dy, w, acc).is_same(acc)) << name;
  ExpectPath(c, name + " LinearInputGrad accumulate");
  EXPECT_REL_ERR(acc, acc32 + dx32, tol, name + " LinearInputGrad accumulate");
  fx.Poison();
  const at::Tensor dw = LinearWeightGrad(dy, x);
  ExpectPath(c, name + " LinearWeightGrad");
  EXPECT_REL_ERR(dw, dy32.t().mm(x.to(at::kFloat)), tol, name + " LinearWeightGrad");
  EXPECT_EQ(dw.scalar_type(), at::kFloat) << name;
}

TEST_F(GemmEpilogueCudaTest, MatchesFp32UnfusedOps) {
  at::manual_seed(41);
  for (const GpuCase& c : GpuCases()) {
    CheckCase(c, *this);
    if (HasFatalFailure()) return;
  }
}

TEST_F(GemmEpilogueCudaTest, Fp32TakesTheReferencePath) {
  at::manual_seed(42);
  const at::Tensor x = Randn({16, 64}, at::kFloat), w = Randn({128, 64}, at::kFloat);
  const at::Tensor b = Randn({128}, at::kFloat);
  const LinearGeluResult r = LinearGelu(x, w, b);
  EXPECT_FALSE(LastGemmEpilogueWasFused());
  EXPECT_TRUE(at::allclose(r.pre, at::addmm(b, x, w.t()), 1e-4, 1e-4));
}

TEST_F(GemmEpilogueCudaTest, NonContiguousInputsAreCopiedAndFused) {
  at::manual_seed(43);
  const at::Tensor x = Randn({256, 100}, at::kBFloat16).t();  // [100, 256], column-major
  const at::Tensor w = Randn({512, 256}, at::kBFloat16, 1.0 / 16);
  const at::Tensor b = Randn({512}, at::kBFloat16);
  ASSERT_FALSE(x.is_contiguous());
  Poison();
  const LinearGeluResult r = LinearGelu(x, w, b);
  EXPECT_TRUE(LastGemmEpilogueWasFused());
  ExpectMatchesFp32(r, Fp32PreActivation(x, w, b), "");
}

TEST_F(GemmEpilogueCudaTest, MisalignedPointersFallBack) {
  at::manual_seed(44);
  const int64_t t = 64, k = 256, n = 512;
  // One element of offset: a 2-byte aligned but not 16-byte aligned contiguous bf16 view.
  const at::Tensor storage = Randn({t * k + 1}, at::kBFloat16);
  const at::Tensor x = storage.narrow(0, 1, t * k).view({t, k});
  const at::Tensor w = Randn({n, k}, at::kBFloat16, 1.0 / 16), b = Randn({n}, at::kBFloat16);
  Poison();
  const LinearGeluResult r = LinearGelu(x, w, b);
  EXPECT_FALSE(LastGemmEpilogueWasFused());
  ExpectMatchesFp32(r, Fp32PreActivation(x, w, b), "");
}

// The cached algorithm (src/gemm_algo_cache.cc): T = 16000 fills a 1024-token bucket's entry, 16100
// hits it (a different problem than the one the heuristic saw), 17000 is another bucket (a miss);
// then 16000 again (a hit). Each result is checked on poisoned memory.
TEST_F(GemmEpilogueCudaTest, AlgorithmCacheHitsAndMissesAreCorrect) {
  at::manual_seed(46);
  const int64_t k = 768, n = 3072;
  const at::Tensor w = Randn({n, k}, at::kBFloat16, 1.0 / std::sqrt(double(k)));
  const at::Tensor b = Randn({n}, at::kBFloat16);
  for (int64_t t : {16000, 16100, 17000, 16000}) {
    const std::string name = "T=" + std::to_string(t);
    const at::Tensor x = Randn({t, k}, at::kBFloat16);
    Poison();
    const LinearGeluResult r = LinearGelu(x, w, b);
    EXPECT_TRUE(LastGemmEpilogueWasFused()) << name;
    ExpectMatchesFp32(r, Fp32PreActivation(x, w, b), name);
  }
}

// The weight gradient's token count is its reduced dimension: a cached algorithm must still give
// the right sums for another T of its bucket, and for another bucket.
TEST_F(GemmEpilogueCudaTest, WeightGradCacheAcrossTokenCounts) {
  at::manual_seed(47);
  const int64_t k = 768, n = 3072;
  for (int64_t t : {16000, 16100, 17000, 16000}) {
    const std::string name = "T=" + std::to_string(t);
    const at::Tensor x = Randn({t, k}, at::kBFloat16), dy = Randn({t, n}, at::kBFloat16);
    Poison();
    const at::Tensor dw = LinearWeightGrad(dy, x);
    EXPECT_TRUE(LastGemmEpilogueWasFused()) << name;
    EXPECT_REL_ERR(dw, dy.to(at::kFloat).t().mm(x.to(at::kFloat)), 1e-2, name);
  }
}

// FP8 GEMMs as the fused layer runs them (forward with bias and fast accumulation, the input
// gradient E5M2 x E4M3, the fp32 weight gradient), against at::_scaled_mm on the same operands:
// both multiply the same FP8 values with fp32 accumulation, so only the summation order differs.
// A second call of each shape takes the cached algorithm. (Whatever the cached path declines,
// at::_scaled_mm declines too: dimensions not multiples of 16, column-major a, two E5M2 operands.)
TEST_F(GemmEpilogueCudaTest, ScaledMmMatchesAtenScaledMm) {
  if (at::cuda::getCurrentDeviceProperties()->major < 9) GTEST_SKIP() << "no FP8 tensor cores";
  struct Fp8Case {
    const char* name;
    int64_t m, k, n;
    at::ScalarType a_type, b_type, out;
    bool bias, fast;
  };
  const Fp8Case cases[] = {
      {"forward", 4096 + 16, 768, 2304, at::kFloat8_e4m3fn, at::kFloat8_e4m3fn, at::kBFloat16, true,
       true},
      {"input grad", 1040, 3072, 768, at::kFloat8_e5m2, at::kFloat8_e4m3fn, at::kBFloat16, false,
       false},
      {"weight grad", 768, 4096 + 32, 3072, at::kFloat8_e5m2, at::kFloat8_e4m3fn, at::kFloat, false,
       false},
      {"fp16 out", 64, 128, 256, at::kFloat8_e4m3fn, at::kFloat8_e4m3fn, at::kHalf, true, true},
  };
  for (const Fp8Case& c : cases) {
    at::manual_seed(3);
    const at::Tensor a = Randn({c.m, c.k}, at::kFloat).to(c.a_type);
    const at::Tensor b = Randn({c.n, c.k}, at::kFloat).to(c.b_type).t();  // column-major [K, N]
    const at::Tensor scale_a = at::full({}, 0.5f, at::TensorOptions(gpu_));
    const at::Tensor scale_b = at::full({}, 0.25f, at::TensorOptions(gpu_));
    const at::Tensor bias = c.bias ? Randn({c.n}, c.out) : at::Tensor();
    const at::Tensor want = ScaledMm(a, b, scale_a, scale_b, bias, c.out, c.fast, TokenAxis::kNone,
                                     GemmPath::kReference)
                                .to(at::kFloat);
    for (int call = 0; call < 2; ++call) {
      Poison();
      const at::Tensor got = ScaledMm(a, b, scale_a, scale_b, bias, c.out, c.fast);
      EXPECT_TRUE(LastGemmEpilogueWasFused()) << c.name << " call " << call;
      ASSERT_EQ(got.scalar_type(), c.out) << c.name;
      EXPECT_REL_ERR(got.to(at::kFloat), want, c.fast ? 2e-3 : 1e-5, c.name);
    }
  }
}

// ScaledMm with its token axis named: the cache buckets T (M for the forward and input gradient,
// K for the weight gradient), so one algorithm serves every T of a 1024-token bucket. Each T
// against at::_scaled_mm on poisoned memory: the first fills its bucket's entry, the second takes
// it for another problem, the third is a new bucket.
TEST_F(GemmEpilogueCudaTest, ScaledMmTokenAxisBucketsTheCache) {
  if (at::cuda::getCurrentDeviceProperties()->major < 9) GTEST_SKIP() << "no FP8 tensor cores";
  const at::Tensor scale_a = at::full({}, 0.5f, at::TensorOptions(gpu_));
  const at::Tensor scale_b = at::full({}, 0.25f, at::TensorOptions(gpu_));
  at::manual_seed(6);
  const at::Tensor w = Randn({2304, 768}, at::kFloat).to(at::kFloat8_e4m3fn);
  for (const int64_t t : {5136, 6128, 6160}) {
    const std::string what = "forward T=" + std::to_string(t);
    const at::Tensor x = Randn({t, 768}, at::kFloat).to(at::kFloat8_e4m3fn);
    const at::Tensor bias = Randn({2304}, at::kBFloat16);
    const at::Tensor want = ScaledMm(x, w.t(), scale_a, scale_b, bias, at::kBFloat16, true,
                                     TokenAxis::kNone, GemmPath::kReference)
                                .to(at::kFloat);
    Poison();
    const at::Tensor got =
        ScaledMm(x, w.t(), scale_a, scale_b, bias, at::kBFloat16, true, TokenAxis::kM);
    EXPECT_TRUE(LastGemmEpilogueWasFused()) << what;
    EXPECT_REL_ERR(got.to(at::kFloat), want, 2e-3, what);
  }
  for (const int64_t t : {5136, 6128, 6160}) {
    const std::string what = "weight grad T=" + std::to_string(t);
    const at::Tensor dy_t = Randn({768, t}, at::kFloat).to(at::kFloat8_e5m2);
    const at::Tensor x_t = Randn({2304, t}, at::kFloat).to(at::kFloat8_e4m3fn);
    const at::Tensor want = ScaledMm(dy_t, x_t.t(), scale_a, scale_b, at::Tensor(), at::kFloat,
                                     false, TokenAxis::kNone, GemmPath::kReference);
    Poison();
    const at::Tensor got =
        ScaledMm(dy_t, x_t.t(), scale_a, scale_b, at::Tensor(), at::kFloat, false, TokenAxis::kK);
    EXPECT_TRUE(LastGemmEpilogueWasFused()) << what;
    EXPECT_REL_ERR(got, want, 1e-5, what);
  }
}

// A GEMM over a training-sized batch (8192 tokens or more) runs without cuBLASLt's workspace, so
// cuBLASLt clears no tile-scheduler counter with a memset before it. Captured into a CUDA graph,
// the bf16 and FP8 forward and weight-gradient GEMMs at T = 16384 are kernels only; replayed into
// poisoned outputs, their results match the references.
TEST_F(GemmEpilogueCudaTest, TrainingSizedGemmsLaunchNoMemset) {
  if (at::cuda::getCurrentDeviceProperties()->major < 9) GTEST_SKIP() << "no FP8 tensor cores";
  at::manual_seed(48);
  const int64_t t = 16384, k = 768, n = 3072;
  const at::Tensor x = Randn({t, k}, at::kBFloat16), dy = Randn({t, n}, at::kBFloat16);
  const at::Tensor w = Randn({n, k}, at::kBFloat16, 1.0 / std::sqrt(double(k)));
  const at::Tensor b = Randn({n}, at::kBFloat16);
  const at::Tensor x8 = x.to(at::kFloat8_e4m3fn), w8 = w.to(at::kFloat8_e4m3fn);
  const at::Tensor dy8_t = dy.t().contiguous().to(at::kFloat8_e5m2);  // [N, T]
  const at::Tensor x8_t = x.t().contiguous().to(at::kFloat8_e4m3fn);  // [K, T]
  const at::Tensor scale = at::full({}, 0.5f, at::TensorOptions(gpu_));
  const auto gemms = [&] {
    return std::vector<at::Tensor>{
        LinearGelu(x, w, b).pre, LinearWeightGrad(dy, x),
        ScaledMm(x8, w8.t(), scale, scale, b, at::kBFloat16, true, TokenAxis::kM),
        ScaledMm(dy8_t, x8_t.t(), scale, scale, at::Tensor(), at::kFloat, false, TokenAxis::kK)};
  };
  const std::vector<at::Tensor> want = {
      Fp32PreActivation(x, w, b), dy.to(at::kFloat).t().mm(x.to(at::kFloat)),
      ScaledMm(x8, w8.t(), scale, scale, b, at::kBFloat16, true, TokenAxis::kNone,
               GemmPath::kReference)
          .to(at::kFloat),
      ScaledMm(dy8_t, x8_t.t(), scale, scale, at::Tensor(), at::kFloat, false, TokenAxis::kNone,
               GemmPath::kReference)};
  gemms();  // the algorithms are chosen outside the capture

  const c10::cuda::CUDAStreamGuard side(c10::cuda::getStreamFromPool());
  at::cuda::CUDAGraph graph(/*keep_graph=*/true);
  graph.capture_begin();
  const std::vector<at::Tensor> got = gemms();
  graph.capture_end();
  size_t count = 0;
  ASSERT_EQ(cudaGraphGetNodes(graph.raw_cuda_graph(), nullptr, &count), cudaSuccess);
  std::vector<cudaGraphNode_t> nodes(count);
  ASSERT_EQ(cudaGraphGetNodes(graph.raw_cuda_graph(), nodes.data(), &count), cudaSuccess);
  int kernels = 0, memsets = 0;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type;
    ASSERT_EQ(cudaGraphNodeGetType(node, &type), cudaSuccess);
    kernels += type == cudaGraphNodeTypeKernel;
    memsets += type == cudaGraphNodeTypeMemset;
  }
  EXPECT_GE(kernels, 4);
  EXPECT_EQ(memsets, 0);

  for (const at::Tensor& out : got) out.fill_(std::nan(""));
  graph.replay();
  const char* names[] = {"bf16 forward", "bf16 weight grad", "FP8 forward", "FP8 weight grad"};
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_REL_ERR(got[i].to(at::kFloat), want[i], i == 2 ? 2e-3 : (i == 3 ? 1e-5 : 1e-2),
                   names[i]);
  }
}

// The FFN-in GEMM in FP8 with bias + tanh GELU in the epilogue (its aux output `pre`), against
// at::_scaled_mm then at::gelu: pre as ScaledMm is; act from the fp32 accumulator, so against
// GELU of the reference's pre in fp32 within bf16 rounding.
TEST_F(GemmEpilogueCudaTest, ScaledMmGeluMatchesScaledMmThenGelu) {
  if (at::cuda::getCurrentDeviceProperties()->major < 9) GTEST_SKIP() << "no FP8 tensor cores";
  for (const at::ScalarType out : {at::kBFloat16, at::kHalf}) {
    at::manual_seed(4);
    const at::Tensor a = Randn({2048 + 48, 768}, at::kFloat).to(at::kFloat8_e4m3fn);
    const at::Tensor b = Randn({3072, 768}, at::kFloat).to(at::kFloat8_e4m3fn).t();
    const at::Tensor scale_a = at::full({}, 0.5f, at::TensorOptions(gpu_));
    const at::Tensor scale_b = at::full({}, 0.125f, at::TensorOptions(gpu_));
    const at::Tensor bias = Randn({3072}, out);
    const LinearGeluResult want =
        ScaledMmGelu(a, b, scale_a, scale_b, bias, out, true, GemmPath::kReference);
    for (int call = 0; call < 2; ++call) {
      Poison();
      const LinearGeluResult got = ScaledMmGelu(a, b, scale_a, scale_b, bias, out, true);
      EXPECT_TRUE(LastGemmEpilogueWasFused()) << out << " call " << call;
      ASSERT_EQ(got.act.scalar_type(), out);
      ASSERT_EQ(got.pre.scalar_type(), out);
      EXPECT_REL_ERR(got.pre.to(at::kFloat), want.pre.to(at::kFloat), 2e-3, "pre");
      EXPECT_REL_ERR(got.act.to(at::kFloat), at::gelu(want.pre.to(at::kFloat), "tanh"), 1e-2,
                     "act");
    }
  }
}

// The FFN-in GEMM of an FP8 training forward (ScaledMmGeluAuxToFp8): the activation in E4M3 at
// scale_out, the pre-activation, and the activation's amax before the scale, against the
// reference. amax_out starts far above the answer and must be overwritten. The scale is chosen so
// that the largest activations land near 448 and none saturates, and the E4M3 bytes agree within
// one step plus fast accumulation's error (as ScaledMmGeluToFp8's, fp8_static_test.cc).
TEST_F(GemmEpilogueCudaTest, ScaledMmGeluAuxToFp8MatchesTheReference) {
  if (at::cuda::getCurrentDeviceProperties()->major < 9) GTEST_SKIP() << "no FP8 tensor cores";
  for (const at::ScalarType bias_type : {at::kBFloat16, at::kHalf}) {
    at::manual_seed(5);
    const at::Tensor a = Randn({2048 + 48, 768}, at::kFloat).to(at::kFloat8_e4m3fn);
    const at::Tensor b = Randn({3072, 768}, at::kFloat, 0.5).to(at::kFloat8_e4m3fn).t();
    const at::Tensor scale_a = at::full({}, 0.5f, at::TensorOptions(gpu_));
    const at::Tensor scale_b = at::full({}, 0.125f, at::TensorOptions(gpu_));
    const at::Tensor bias = Randn({3072}, bias_type);
    const at::Tensor want_amax = at::full({1}, 1e30f, at::TensorOptions(gpu_));
    const LinearGeluResult sample =
        ScaledMmGeluAuxToFp8(a, b, scale_a, scale_b, bias, at::ones({}, at::TensorOptions(gpu_)),
                             want_amax, true, GemmPath::kReference);
    const float amax = want_amax.item<float>();
    const at::Tensor scale_out = at::full({}, 400.f / amax, at::TensorOptions(gpu_));
    const LinearGeluResult want = ScaledMmGeluAuxToFp8(a, b, scale_a, scale_b, bias, scale_out,
                                                       want_amax, true, GemmPath::kReference);
    EXPECT_EQ(want_amax.item<float>(), amax);
    const at::Tensor r = want.act.to(at::kFloat) / scale_out;
    for (int call = 0; call < 2; ++call) {
      Poison();
      const at::Tensor got_amax = at::full({1}, 1e30f, at::TensorOptions(gpu_));
      const LinearGeluResult got =
          ScaledMmGeluAuxToFp8(a, b, scale_a, scale_b, bias, scale_out, got_amax, true);
      const std::string what =
          std::string(c10::toString(bias_type)) + " call " + std::to_string(call);
      ASSERT_TRUE(LastGemmEpilogueWasFused()) << what;
      ASSERT_EQ(got.act.scalar_type(), at::kFloat8_e4m3fn);
      ASSERT_EQ(got.pre.scalar_type(), bias_type);
      EXPECT_REL_ERR(got.pre.to(at::kFloat), want.pre.to(at::kFloat), 2e-3, what + " pre");
      EXPECT_NEAR(got_amax.item<float>(), amax, amax * 1e-2) << what;
      const at::Tensor g = got.act.to(at::kFloat) / scale_out;
      EXPECT_FALSE(at::isnan(g).any().item<bool>()) << what;
      const at::Tensor allowed = r.abs() / 8 + r.abs().max() / 64;
      EXPECT_TRUE(((g - r).abs() <= allowed).all().item<bool>()) << what;
      EXPECT_LT(RelErr(g, r), 0.02) << what;
    }
  }
}

// The FP8 input gradient added into a residual's gradient by the GEMM (beta = 1), for token counts
// that are not multiples of 16 and within one cache bucket: the sum against the reference's
// (at::_scaled_mm, then add_), the target updated in place.
TEST_F(GemmEpilogueCudaTest, ScaledMmAccumulateAddsIntoTheTarget) {
  if (at::cuda::getCurrentDeviceProperties()->major < 9) GTEST_SKIP() << "no FP8 tensor cores";
  for (const int64_t m : {1000, 347, 1024, 16}) {
    at::manual_seed(8);
    const at::Tensor a = Randn({m, 3072}, at::kFloat).to(at::kFloat8_e5m2);
    const at::Tensor b = Randn({768, 3072}, at::kFloat).to(at::kFloat8_e4m3fn).t();
    const at::Tensor scale_a = at::full({}, 0.25f, at::TensorOptions(gpu_));
    const at::Tensor scale_b = at::full({}, 0.125f, at::TensorOptions(gpu_));
    const at::Tensor start = Randn({m, 768}, at::kBFloat16, 8.0);
    const at::Tensor want =
        ScaledMmAccumulate(a, b, scale_a, scale_b, start.clone(), false, GemmPath::kReference);
    const at::Tensor target = start.clone();
    Poison();
    const at::Tensor got = ScaledMmAccumulate(a, b, scale_a, scale_b, target, false);
    EXPECT_TRUE(LastGemmEpilogueWasFused()) << m;
    EXPECT_EQ(got.data_ptr(), target.data_ptr()) << m;
    EXPECT_REL_ERR(got.to(at::kFloat), want.to(at::kFloat), 1e-2, std::to_string(m));
    // The product alone matters, not just the start it was added to.
    EXPECT_REL_ERR((got - start).to(at::kFloat), (want - start).to(at::kFloat), 2e-2,
                   std::to_string(m) + " product");
  }
}

TEST_F(GemmEpilogueCudaTest, DeviceMismatchIsRejected) {
  const at::Tensor x = Randn({4, 8}, at::kBFloat16);
  ExpectC10Error(
      [&] {
        LinearGelu(x, at::randn({16, 8}).to(at::kBFloat16), Randn({16}, at::kBFloat16));
      },
      "is on cpu");
}

}  // namespace
}  // namespace padless::cuda

namespace padless::cuda {
namespace {

// LinearBiasGelu (inference: the GELU_BIAS epilogue, no pre-activation written) computes
// LinearGelu's act: on the CPU through the same reference ops exactly, on the GPU within bf16/fp16
// rounding of the fp32 ops, on fresh random inputs each time, the output poisoned first.
TEST(GemmEpilogueTest, LinearBiasGeluIsLinearGelusActivation) {
  at::manual_seed(17);
  const at::Tensor x = at::randn({37, 24}), w = at::randn({40, 24}) * 0.2, b = at::randn({40});
  EXPECT_TRUE(LinearBiasGelu(x, w, b).equal(LinearGelu(x, w, b).act));
  EXPECT_TRUE(LinearBiasGelu(x, w, b, GemmPath::kReference).equal(LinearGelu(x, w, b).act));
  EXPECT_THROW(LinearBiasGelu(x, w, at::Tensor()), c10::Error);
}

TEST_F(GemmEpilogueCudaTest, LinearBiasGeluMatchesFp32Ops) {
  at::manual_seed(43);
  for (at::ScalarType dtype : {at::kBFloat16, at::kHalf}) {
    for (int64_t t : {1, 300, 16384}) {
      const at::Tensor x = Randn({t, 768}, dtype), w = Randn({3072, 768}, dtype, 0.05);
      const at::Tensor b = Randn({3072}, dtype);
      Poison();
      const at::Tensor got = LinearBiasGelu(x, w, b);
      EXPECT_TRUE(LastGemmEpilogueWasFused()) << "T " << t;
      const at::Tensor want = at::gelu(Fp32PreActivation(x, w, b), "tanh");
      EXPECT_REL_ERR(got.to(at::kFloat), want, 1e-2, "T " << t);
      EXPECT_EQ(got.scalar_type(), dtype);
    }
  }
}

}  // namespace
}  // namespace padless::cuda
