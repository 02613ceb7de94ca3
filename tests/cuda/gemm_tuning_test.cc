// Choosing cuBLASLt algorithms by timing them (gemm_tuning.h).
// CPU (everywhere): the rule that picks among timed candidates, and the PADLESS_GEMM_TUNING values,
// broken ones included.
// GPU (skipped without one): the cached GEMMs give the reference's results with tuning on and off.
// Tuning launches every candidate several times, so a GEMM that adds into its target (beta = 1)
// must still have added one product, and the outputs, the aux output and the amax a later launch
// overwrites must be the chosen launch's. Each shape is new to the cache under each setting (the
// cache keys the setting), so every first call here is tuned or not as its setting says.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <cstdint>
#include <string>
#include <vector>

#include "packing_test_util.h"
#include "padless/cuda/kernels/gemm_epilogue.h"
#include "padless/cuda/kernels/gemm_tuning.h"
#include "padless/cuda/kernels/kernel_support.h"

namespace padless::cuda {
namespace {

using testing::kPoisonBytes;
using testing::PoisonFreeMemory;
using testing::RelErr;

TEST(GemmTuningTest, PickFastestKeepsTheHeuristicsChoiceOnNearTies) {
  EXPECT_EQ(PickFastestAlgorithm({}), -1);
  EXPECT_EQ(PickFastestAlgorithm({-1.0, -1.0}), -1);
  EXPECT_EQ(PickFastestAlgorithm({1.0}), 0);
  // 2% faster is within the default 3% margin: the heuristic's first choice stays.
  EXPECT_EQ(PickFastestAlgorithm({1.0, 0.98, 0.99}), 0);
  // 10% faster wins; a later one must beat the new best by the margin too.
  EXPECT_EQ(PickFastestAlgorithm({1.0, 0.9, 0.88}), 1);
  EXPECT_EQ(PickFastestAlgorithm({1.0, 0.9, 0.8}), 2);
  // Candidates that could not run are skipped, the first one included.
  EXPECT_EQ(PickFastestAlgorithm({-1.0, 2.0, -1.0, 1.0}), 3);
  EXPECT_EQ(PickFastestAlgorithm({-1.0, 2.0}), 1);
  // The margin is the caller's: with none, the strictly fastest wins.
  EXPECT_EQ(PickFastestAlgorithm({1.0, 0.99}, 0.0), 1);
  EXPECT_EQ(PickFastestAlgorithm({1.0, 1.0}, 0.0), 0);
}

TEST(GemmTuningTest, SettingReadsTheEnvironmentValue) {
  for (const char* on : {"1", "true", "on", ""}) {
    ASSERT_TRUE(GemmTuningSetting(on).ok()) << on;
    EXPECT_TRUE(*GemmTuningSetting(on)) << on;
  }
  EXPECT_TRUE(*GemmTuningSetting(nullptr));
  for (const char* off : {"0", "false", "off"}) {
    ASSERT_TRUE(GemmTuningSetting(off).ok()) << off;
    EXPECT_FALSE(*GemmTuningSetting(off)) << off;
  }
  for (const char* bad : {"2", "yes please", "OFF ", "\x01\xff"}) {
    const absl::StatusOr<bool> s = GemmTuningSetting(bad);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.status().message().find("PADLESS_GEMM_TUNING"), std::string::npos);
  }
}

TEST(GemmTuningTest, SetGemmTuningTogglesTheSetting) {
  const bool before = GemmTuningEnabled();
  SetGemmTuning(false);
  EXPECT_FALSE(GemmTuningEnabled());
  SetGemmTuning(true);
  EXPECT_TRUE(GemmTuningEnabled());
  SetGemmTuning(before);
}

class GemmTuningCudaTest : public ::testing::TestWithParam<bool> {
 public:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    if (!CudaKernelsBuilt()) GTEST_SKIP() << "built without the CUDA kernels (no cuBLASLt path)";
    before_ = GemmTuningEnabled();
    SetGemmTuning(GetParam());
  }
  void TearDown() override { SetGemmTuning(before_); }
  at::Tensor Randn(std::vector<int64_t> shape, at::ScalarType dtype, double scale = 1.0) {
    return (at::randn(shape, at::TensorOptions(gpu_)) * scale).to(dtype);
  }
  at::Tensor Scalar(float v) { return at::full({}, v, at::TensorOptions(gpu_)); }
  void Poison() { PoisonFreeMemory(gpu_, kPoisonBytes); }
  bool Fp8() const { return at::cuda::getCurrentDeviceProperties()->major >= 9; }
  const c10::Device gpu_{c10::kCUDA, 0};

 private:
  bool before_ = true;
};

std::string Setting(bool tuned) { return tuned ? " (tuned)" : " (heuristic)"; }

// beta = 1: one product added, however many times the candidates ran. A target that took every
// timed launch would hold start + 21 products (8 candidates x (1 + 4) runs, plus the chosen one).
TEST_P(GemmTuningCudaTest, AccumulatingGemmsAddOneProduct) {
  at::manual_seed(61);
  const int64_t t = 5000, n = 3072, k = 768;
  const at::Tensor dy = Randn({t, n}, at::kBFloat16), w = Randn({n, k}, at::kBFloat16, 0.02);
  const at::Tensor start = Randn({t, k}, at::kBFloat16);
  const at::Tensor product = dy.to(at::kFloat).mm(w.to(at::kFloat));
  for (int call = 0; call < 2; ++call) {
    const std::string what = "bf16 call " + std::to_string(call) + Setting(GetParam());
    const at::Tensor target = start.clone();
    Poison();
    LinearInputGrad(dy, w, target);
    EXPECT_TRUE(LastGemmEpilogueWasFused()) << what;
    EXPECT_LT(RelErr((target.to(at::kFloat) - start.to(at::kFloat)), product), 2e-2) << what;
  }
  if (!Fp8()) return;
  const at::Tensor a = Randn({t, n}, at::kFloat).to(at::kFloat8_e5m2);
  const at::Tensor b = Randn({k, n}, at::kFloat).to(at::kFloat8_e4m3fn).t();
  const at::Tensor sa = Scalar(0.25f), sb = Scalar(0.125f);
  const at::Tensor want = reference::ScaledMmAccumulate(a, b, sa, sb, start.clone(), false);
  for (int call = 0; call < 2; ++call) {
    const std::string what = "fp8 call " + std::to_string(call) + Setting(GetParam());
    const at::Tensor target = start.clone();
    Poison();
    ScaledMmAccumulate(a, b, sa, sb, target, false);
    EXPECT_TRUE(LastGemmEpilogueWasFused()) << what;
    EXPECT_LT(RelErr((target - start).to(at::kFloat), (want - start).to(at::kFloat)), 2e-2) << what;
  }
}

// The outputs a GEMM writes (D, GELU's aux output, the amax) come from the chosen launch: against
// the fp32 ops (16-bit) and at::_scaled_mm (FP8), in a token bucket that is new to the cache.
TEST_P(GemmTuningCudaTest, TunedGemmsMatchTheReference) {
  at::manual_seed(62);
  const int64_t t = 6000, k = 768, n = 3072;
  const std::string setting = Setting(GetParam());
  const at::Tensor x = Randn({t, k}, at::kBFloat16), w = Randn({n, k}, at::kBFloat16, 0.03);
  const at::Tensor bias = Randn({n}, at::kBFloat16);
  Poison();
  const LinearGeluResult r = LinearGelu(x, w, bias);
  EXPECT_TRUE(LastGemmEpilogueWasFused()) << setting;
  const at::Tensor pre = at::addmm(bias.to(at::kFloat), x.to(at::kFloat), w.to(at::kFloat).t());
  EXPECT_LT(RelErr(r.pre.to(at::kFloat), pre), 1e-2) << "pre" << setting;
  EXPECT_LT(RelErr(r.act.to(at::kFloat), at::gelu(pre, "tanh")), 1e-2) << "act" << setting;
  const at::Tensor dy = Randn({t, n}, at::kBFloat16);
  Poison();
  const at::Tensor dw = LinearWeightGrad(dy, x);
  EXPECT_LT(RelErr(dw, dy.to(at::kFloat).t().mm(x.to(at::kFloat))), 1e-2) << "dw" << setting;
  if (!Fp8()) return;
  const at::Tensor x8 = Randn({t, k}, at::kFloat).to(at::kFloat8_e4m3fn);
  const at::Tensor w8 = Randn({n, k}, at::kFloat, 0.5).to(at::kFloat8_e4m3fn);
  const at::Tensor sx = Scalar(0.5f), sw = Scalar(0.125f);
  const at::Tensor scale_out = Scalar(16.f);
  const at::Tensor want_amax = Scalar(1e30f).reshape({1});
  const LinearGeluResult want =
      reference::ScaledMmGeluAuxToFp8(x8, w8.t(), sx, sw, bias, scale_out, want_amax, true);
  const at::Tensor got_amax = Scalar(1e30f).reshape({1});
  Poison();
  const LinearGeluResult got =
      ScaledMmGeluAuxToFp8(x8, w8.t(), sx, sw, bias, scale_out, got_amax, true);
  EXPECT_TRUE(LastGemmEpilogueWasFused()) << setting;
  EXPECT_LT(RelErr(got.pre.to(at::kFloat), want.pre.to(at::kFloat)), 2e-3) << "pre8" << setting;
  EXPECT_NEAR(got_amax.item<float>(), want_amax.item<float>(), want_amax.item<float>() * 1e-2)
      << setting;
  EXPECT_LT(RelErr(got.act.to(at::kFloat), want.act.to(at::kFloat)), 0.05) << "act8" << setting;
  // The FP8 weight gradient, the token count as K (bucketed): T = 6016 fills its bucket's entry,
  // 6400 takes it for another problem.
  for (const int64_t tokens : {6016, 6400}) {
    const at::Tensor g8 = Randn({n, tokens}, at::kFloat).to(at::kFloat8_e5m2);
    const at::Tensor in8 = Randn({k, tokens}, at::kFloat).to(at::kFloat8_e4m3fn);
    const at::Tensor ref =
        reference::ScaledMm(g8, in8.t(), sx, sw, at::Tensor(), at::kFloat, false);
    Poison();
    const at::Tensor dw8 =
        ScaledMm(g8, in8.t(), sx, sw, at::Tensor(), at::kFloat, false, TokenAxis::kK);
    EXPECT_TRUE(LastGemmEpilogueWasFused()) << tokens << setting;
    EXPECT_LT(RelErr(dw8, ref), 1e-5) << "dw8 T=" << tokens << setting;
  }
}

INSTANTIATE_TEST_SUITE_P(Settings, GemmTuningCudaTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? std::string("Tuned") : std::string("Heuristic");
                         });

}  // namespace
}  // namespace padless::cuda
