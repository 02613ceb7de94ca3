// CPU tests of SegmentPool (the torch reference path) against per-sequence loops.
#include "padless/cuda/kernels/segment_pool.h"

#include <gtest/gtest.h>

#include "packing_test_util.h"

namespace padless::cuda {
namespace {

using testing::CuSeqlens;
using testing::RandomLengths;
using testing::Total;

TEST(SegmentPoolTest, MeanMatchesPerSequenceLoop) {
  const std::vector<int32_t> lengths = RandomLengths(11, 40, 4);
  const int64_t hidden = 6;
  at::manual_seed(21);
  const at::Tensor x = at::randn({Total(lengths), hidden});
  auto pooled = SegmentPool(x, CuSeqlens(lengths), PoolMode::kMean);
  ASSERT_TRUE(pooled.ok()) << pooled.status();
  ASSERT_EQ(pooled->sizes(), (std::vector<int64_t>{11, hidden}));
  auto xa = x.accessor<float, 2>();
  auto pa = pooled->accessor<float, 2>();
  int64_t t = 0;
  for (int64_t b = 0; b < 11; ++b) {
    for (int64_t h = 0; h < hidden; ++h) {
      double sum = 0;
      for (int64_t i = 0; i < lengths[b]; ++i) sum += xa[t + i][h];
      const double mean = lengths[b] > 0 ? sum / lengths[b] : 0.0;
      ASSERT_NEAR(pa[b][h], mean, 1e-6) << b << "," << h;
    }
    t += lengths[b];
  }
}

TEST(SegmentPoolTest, ClsTakesFirstTokenAndZeroForEmpty) {
  const std::vector<int32_t> lengths = RandomLengths(9, 7, 5);
  at::manual_seed(22);
  const at::Tensor x = at::randn({Total(lengths), 4}).to(at::kBFloat16);
  auto pooled = SegmentPool(x, CuSeqlens(lengths), PoolMode::kCls);
  ASSERT_TRUE(pooled.ok()) << pooled.status();
  EXPECT_EQ(pooled->scalar_type(), at::kBFloat16);
  int64_t t = 0;
  for (int64_t b = 0; b < 9; ++b) {
    const at::Tensor expected = lengths[b] > 0 ? x[t] : at::zeros({4}, x.options());
    EXPECT_TRUE(at::equal((*pooled)[b], expected)) << b;
    t += lengths[b];
  }
}

TEST(SegmentPoolTest, MeanGradientSpreadsOverTokens) {
  const std::vector<int32_t> lengths = {3, 0, 1, 4};
  const at::Tensor cu = CuSeqlens(lengths);
  at::manual_seed(23);
  const at::Tensor x = at::randn({8, 2}, at::kDouble).requires_grad_();
  const at::Tensor g = at::randn({4, 2}, at::kDouble);
  auto pooled = SegmentPool(x, cu, PoolMode::kMean);
  ASSERT_TRUE(pooled.ok());
  (*pooled * g).sum().backward();
  auto ga = x.grad().accessor<double, 2>();
  auto gg = g.accessor<double, 2>();
  int64_t t = 0;
  for (int64_t b = 0; b < 4; ++b) {
    for (int64_t i = 0; i < lengths[b]; ++i, ++t) {
      for (int64_t h = 0; h < 2; ++h) ASSERT_DOUBLE_EQ(ga[t][h], gg[b][h] / lengths[b]);
    }
  }
}

TEST(SegmentPoolTest, ClsGradientGoesToFirstTokens) {
  const std::vector<int32_t> lengths = {2, 0, 3};
  at::manual_seed(24);
  const at::Tensor x = at::randn({5, 3}).requires_grad_();
  const at::Tensor g = at::randn({3, 3});
  auto pooled = SegmentPool(x, CuSeqlens(lengths), PoolMode::kCls);
  ASSERT_TRUE(pooled.ok());
  (*pooled * g).sum().backward();
  at::Tensor expected = at::zeros({5, 3});
  expected[0] = g[0];
  expected[2] = g[2];
  EXPECT_TRUE(at::equal(x.grad(), expected));
}

// A half hidden state pooled straight into fp32 equals pooling its fp32 copy, and the gradient
// goes back in the half dtype.
TEST(SegmentPoolTest, HalfPoolsIntoFloatAsItsFloatCopy) {
  const std::vector<int32_t> lengths = {3, 0, 1, 5};
  const at::Tensor cu = CuSeqlens(lengths);
  at::manual_seed(25);
  const at::Tensor x = at::randn({9, 6}).to(at::kBFloat16);
  for (PoolMode mode : {PoolMode::kMean, PoolMode::kCls}) {
    auto pooled = SegmentPool(x, cu, mode, at::kFloat);
    auto want = SegmentPool(x.to(at::kFloat), cu, mode);
    ASSERT_TRUE(pooled.ok() && want.ok()) << pooled.status();
    EXPECT_EQ(pooled->scalar_type(), at::kFloat);
    EXPECT_TRUE(at::equal(*pooled, *want));
  }
  const at::Tensor leaf = x.clone().requires_grad_();
  auto pooled = SegmentPool(leaf, cu, PoolMode::kMean, at::kFloat);
  ASSERT_TRUE(pooled.ok());
  pooled->sum().backward();
  EXPECT_EQ(leaf.grad().scalar_type(), at::kBFloat16);
  EXPECT_EQ(leaf.grad()[0][0].item<float>(), static_cast<float>(c10::BFloat16(1.0f / 3)));
}

TEST(SegmentPoolTest, RejectsBadArguments) {
  EXPECT_FALSE(SegmentPool(at::zeros({4}), CuSeqlens({4}), PoolMode::kMean).ok());
  EXPECT_FALSE(SegmentPool(at::zeros({4, 2}, at::kLong), CuSeqlens({4}), PoolMode::kMean).ok());
  EXPECT_FALSE(SegmentPool(at::zeros({4, 2}), CuSeqlens({3}), PoolMode::kMean).ok());
  // Into fp32 or the input's own dtype only.
  EXPECT_FALSE(
      SegmentPool(at::zeros({4, 2}, at::kBFloat16), CuSeqlens({4}), PoolMode::kMean, at::kHalf)
          .ok());
}

}  // namespace
}  // namespace padless::cuda
