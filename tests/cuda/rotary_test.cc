// RotaryEmbedding: the ATen reference against a per-element loop on the CPU, the inverse against
// the forward, bad arguments; on a GPU the kernel against the reference for every storage type,
// on q/k views into a fused QKV output (skipped without a GPU).
#include "padless/cuda/kernels/rotary.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

namespace padless::cuda::rotary_test {
namespace {

// cos/sin [T, D] of random angles, halves repeated as RotaryTable builds them.
std::pair<at::Tensor, at::Tensor> Tables(int64_t tokens, int64_t head_dim, at::ScalarType type) {
  const at::Tensor half = at::rand({tokens, head_dim / 2}, at::kDouble) * 20 - 10;
  const at::Tensor angles = at::cat({half, half}, 1);
  return {angles.cos().to(type), angles.sin().to(type)};
}

TEST(RotaryEmbeddingTest, ReferenceRotatesEachHalfPairByItsAngle) {
  at::manual_seed(1);
  const int64_t tokens = 5, heads = 3, head_dim = 8, half = 4;
  const at::Tensor x = at::randn({tokens, heads, head_dim}, at::kDouble);
  const auto [cos, sin] = Tables(tokens, head_dim, at::kDouble);
  const at::Tensor y = reference::RotaryEmbedding(x, cos, sin);
  auto xa = x.accessor<double, 3>();
  auto ya = y.accessor<double, 3>();
  auto ca = cos.accessor<double, 2>();
  auto sa = sin.accessor<double, 2>();
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t i = 0; i < half; ++i) {
        const double x1 = xa[t][h][i], x2 = xa[t][h][i + half], c = ca[t][i], s = sa[t][i];
        ASSERT_NEAR(ya[t][h][i], x1 * c - x2 * s, 1e-12);
        ASSERT_NEAR(ya[t][h][i + half], x2 * c + x1 * s, 1e-12);
      }
    }
  }
  // The inverse undoes it, and a rotation keeps each pair's length.
  const at::Tensor back = reference::RotaryEmbedding(y, cos, sin, /*inverse=*/true);
  EXPECT_LE((back - x).abs().max().item<double>(), 1e-12);
  EXPECT_NEAR(y.norm().item<double>(), x.norm().item<double>(), 1e-9);
}

TEST(RotaryEmbeddingTest, BadArgumentsThrow) {
  const at::Tensor x = at::zeros({4, 2, 8});
  const at::Tensor table = at::zeros({4, 8});
  EXPECT_THROW(RotaryEmbedding(at::zeros({4, 8}), table, table), c10::Error);     // 2-D
  EXPECT_THROW(RotaryEmbedding(at::zeros({4, 2, 7}), table, table), c10::Error);  // odd dim
  EXPECT_THROW(RotaryEmbedding(x, at::zeros({3, 8}), table), c10::Error);         // tokens
  EXPECT_THROW(RotaryEmbedding(x, table, at::zeros({4, 6})), c10::Error);         // head_dim
  EXPECT_THROW(RotaryEmbedding(x.to(at::kLong), table, table), c10::Error);       // integer
  EXPECT_NO_THROW(RotaryEmbedding(at::zeros({0, 2, 8}), at::zeros({0, 8}), at::zeros({0, 8})));
}

// The kernel on q and k as views of a [T, 3, heads, head_dim] QKV output (row stride 3 x heads x
// head_dim), forward and inverse, against the reference computed in fp32 from the same stored
// inputs: at most one rounding step of the storage type apart.
TEST(RotaryEmbeddingTest, KernelMatchesReferenceOnQkvViews) {
  if (!at::hasCUDA()) GTEST_SKIP() << "no CUDA device";
  at::manual_seed(2);
  const int64_t tokens = 1000, heads = 12, head_dim = 64;
  for (const at::ScalarType type : {at::kBFloat16, at::kHalf, at::kFloat}) {
    SCOPED_TRACE(c10::toString(type));
    const at::Tensor qkv = at::randn({tokens, 3, heads, head_dim}).to(at::kCUDA, type);
    const auto [cos, sin] = Tables(tokens, head_dim, at::kFloat);
    const at::Tensor c = cos.cuda(), s = sin.cuda();
    const double ulp = type == at::kFloat ? 1e-5 : type == at::kHalf ? 4e-3 : 3.2e-2;
    for (const bool inverse : {false, true}) {
      const at::Tensor k = qkv.select(1, 1);
      ASSERT_FALSE(k.is_contiguous());
      at::Tensor out = RotaryEmbedding(k, c, s, inverse);
      const at::Tensor want = reference::RotaryEmbedding(k.cpu(), cos, sin, inverse);
      ASSERT_EQ(out.scalar_type(), type);
      ASSERT_TRUE(out.is_contiguous());
      const at::Tensor diff = (out.cpu().to(at::kFloat) - want.to(at::kFloat)).abs();
      // Relative to each value's magnitude (max 1 ulp of rounding, 4 for |x| near 0).
      EXPECT_LE((diff / (want.to(at::kFloat).abs() + 1e-2)).max().item<double>(), ulp)
          << "inverse " << inverse;
    }
  }
}

}  // namespace
}  // namespace padless::cuda::rotary_test
