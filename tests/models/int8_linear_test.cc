// Int8Linear (int8_linear.h): int8 weights with per-channel scales through FBGEMM against the fp32
// product, the bias, any floating input dtype, and broken arguments as statuses.
#include "padless/models/int8_linear.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "absl/status/status.h"

namespace padless::models {
namespace {

double RelErr(const at::Tensor& got, const at::Tensor& want) {
  return ((got - want).norm() / want.norm()).item<double>();
}

TEST(Int8LinearTest, CloseToTheFp32Product) {
  at::manual_seed(21);
  const at::Tensor x = at::randn({37, 64});
  const at::Tensor w = at::randn({48, 64}) * 0.05;
  const at::Tensor b = at::randn({48});
  absl::StatusOr<Int8Linear> q = Int8Linear::Pack(w, b);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->out_features(), 48);
  const at::Tensor y = q->Apply(x);
  EXPECT_EQ(y.sizes(), (at::IntArrayRef{37, 48}));
  EXPECT_EQ(y.scalar_type(), at::kFloat);
  const at::Tensor want = at::addmm(b, x, w.t());
  // 8-bit weights and per-tensor 8-bit activations: 4.3 % of the product's norm on this seed.
  EXPECT_LT(RelErr(y - b, want - b), 0.06);
  EXPECT_GT(RelErr(y, want), 0.0);  // it did quantize
  // Without a bias, and from a bf16 input (computed in fp32).
  absl::StatusOr<Int8Linear> nb = Int8Linear::Pack(w, at::Tensor());
  ASSERT_TRUE(nb.ok()) << nb.status();
  EXPECT_LT(RelErr(nb->Apply(x), want - b), 0.06);
  EXPECT_LT(RelErr(nb->Apply(x.to(at::kBFloat16)), want - b), 0.06);
}

TEST(Int8LinearTest, BrokenArgumentsAreStatuses) {
  EXPECT_TRUE(absl::IsInvalidArgument(Int8Linear::Pack(at::zeros({4}), {}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(Int8Linear::Pack(at::Tensor(), {}).status()));
  EXPECT_TRUE(
      absl::IsInvalidArgument(Int8Linear::Pack(at::zeros({4, 8}, at::kInt), {}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(Int8Linear::Pack(at::zeros({4, 8}), at::zeros({5})).status()));
  // A zero weight is fine (scale 1): the product is the bias.
  absl::StatusOr<Int8Linear> zero = Int8Linear::Pack(at::zeros({4, 8}), at::ones({4}));
  ASSERT_TRUE(zero.ok()) << zero.status();
  EXPECT_TRUE(at::allclose(zero->Apply(at::randn({3, 8})), at::ones({3, 4})));
}

}  // namespace
}  // namespace padless::models
