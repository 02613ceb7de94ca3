// AutocastGuard sets and restores the thread-local autocast state; GradScaler skips steps with
// inf/NaN gradients, backs off the scale and grows it after the interval.
#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "padless/models/autocast.h"
#include "padless/train/grad_scaler.h"

namespace padless::models {
namespace {

TEST(AutocastGuardTest, CastsInsideAndRestoresOutside) {
  const at::Tensor a = at::randn({4, 8});
  const at::Tensor w = at::randn({3, 8});
  ASSERT_FALSE(at::autocast::is_autocast_enabled(at::kCPU));
  {
    AutocastGuard guard(at::kCPU, AmpMode::kBf16);
    EXPECT_TRUE(at::autocast::is_autocast_enabled(at::kCPU));
    EXPECT_EQ(at::linear(a, w).scalar_type(), at::kBFloat16);
    {
      AutocastGuard off(at::kCPU, AmpMode::kOff);
      EXPECT_EQ(at::linear(a, w).scalar_type(), at::kFloat);
    }
    EXPECT_EQ(at::linear(a, w).scalar_type(), at::kBFloat16);
  }
  EXPECT_FALSE(at::autocast::is_autocast_enabled(at::kCPU));
  EXPECT_EQ(at::linear(a, w).scalar_type(), at::kFloat);
}

TEST(AutocastGuardTest, ParsesModes) {
  EXPECT_EQ(*ParseAmpMode("off"), AmpMode::kOff);
  EXPECT_EQ(*ParseAmpMode("bf16"), AmpMode::kBf16);
  EXPECT_EQ(*ParseAmpMode("fp16"), AmpMode::kFp16);
  EXPECT_EQ(*ParseAmpMode("fp8"), AmpMode::kFp8);
  for (AmpMode m : {AmpMode::kOff, AmpMode::kBf16, AmpMode::kFp16, AmpMode::kFp8}) {
    EXPECT_EQ(*ParseAmpMode(AmpModeName(m)), m);
  }
  const absl::StatusOr<AmpMode> bad = ParseAmpMode("fp4");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("off, bf16, fp16 or fp8"), std::string::npos);
}

// FP8 GEMMs run inside a bf16 autocast region (the rest of the model computes in bf16).
TEST(AutocastGuardTest, Fp8AutocastsToBf16) {
  const at::Tensor a = at::randn({4, 8});
  const at::Tensor w = at::randn({3, 8});
  AutocastGuard guard(at::kCPU, AmpMode::kFp8);
  EXPECT_EQ(at::linear(a, w).scalar_type(), at::kBFloat16);
}

struct Params {
  std::vector<at::Tensor> list;
  Params() {
    list.push_back(at::ones({3}).requires_grad_());
    list.push_back(at::ones({2, 2}).requires_grad_());
  }
  void SetGrads(double value) {
    for (at::Tensor& p : list) p.mutable_grad() = at::full_like(p, value);
  }
};

TEST(GradScalerTest, ScalesLossAndUnscalesGradients) {
  train::GradScalerOptions options;
  options.init_scale = 1024.0;
  train::GradScaler scaler(options);
  const at::Tensor loss = at::full({}, 2.0);
  EXPECT_DOUBLE_EQ(scaler.Scale(loss).item<double>(), 2048.0);
  Params p;
  p.SetGrads(512.0);
  EXPECT_FALSE(scaler.FoundInf(p.list));
  for (const at::Tensor& t : p.list) EXPECT_TRUE(at::allclose(t.grad(), at::full_like(t, 0.5)));
  // A second unscale in the same step is a no-op.
  scaler.Unscale(p.list);
  for (const at::Tensor& t : p.list) EXPECT_TRUE(at::allclose(t.grad(), at::full_like(t, 0.5)));
}

TEST(GradScalerTest, InfSkipsStepAndHalvesScale) {
  train::GradScalerOptions options;
  options.init_scale = 65536.0;
  options.growth_interval = 3;
  train::GradScaler scaler(options);
  scaler.Scale(at::ones({}));
  Params p;
  p.SetGrads(1.0);
  p.list[1].mutable_grad()[0][1] = std::numeric_limits<float>::infinity();
  int steps = 0;
  EXPECT_FALSE(scaler.Step([&] { ++steps; }, p.list));
  EXPECT_EQ(steps, 0);
  scaler.Update();
  EXPECT_DOUBLE_EQ(scaler.scale(), 32768.0);

  p.SetGrads(std::nan(""));
  EXPECT_FALSE(scaler.Step([&] { ++steps; }, p.list));
  scaler.Update();
  EXPECT_DOUBLE_EQ(scaler.scale(), 16384.0);
  EXPECT_EQ(steps, 0);
}

TEST(GradScalerTest, GrowsAfterInterval) {
  train::GradScalerOptions options;
  options.init_scale = 8.0;
  options.growth_interval = 3;
  train::GradScaler scaler(options);
  scaler.Scale(at::ones({}));
  Params p;
  int steps = 0;
  for (int i = 0; i < 2; ++i) {
    p.SetGrads(1.0);
    EXPECT_TRUE(scaler.Step([&] { ++steps; }, p.list));
    scaler.Update();
    EXPECT_DOUBLE_EQ(scaler.scale(), 8.0);
  }
  p.SetGrads(1.0);
  EXPECT_TRUE(scaler.Step([&] { ++steps; }, p.list));
  scaler.Update();
  EXPECT_DOUBLE_EQ(scaler.scale(), 16.0);
  EXPECT_EQ(steps, 3);
  // The state round-trips through a checkpoint.
  train::GradScalerOptions restored_options;
  restored_options.growth_interval = 3;
  train::GradScaler restored(restored_options);
  restored.load_state(scaler.state());
  EXPECT_DOUBLE_EQ(restored.scale(), 16.0);
}

TEST(GradScalerTest, DisabledIsIdentity) {
  train::GradScalerOptions options;
  options.enabled = false;
  train::GradScaler scaler(options);
  const at::Tensor loss = at::full({}, 3.0);
  EXPECT_TRUE(at::equal(scaler.Scale(loss), loss));
  Params p;
  p.SetGrads(std::numeric_limits<float>::infinity());
  int steps = 0;
  EXPECT_TRUE(scaler.Step([&] { ++steps; }, p.list));
  EXPECT_EQ(steps, 1);
}

}  // namespace
}  // namespace padless::models
