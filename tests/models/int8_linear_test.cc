// Int8Linear (int8_linear.h): int8 weights with per-channel scales through FBGEMM against the fp32
// product, the bias, any floating input dtype, and broken arguments as statuses.
#include "padless/models/int8_linear.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/quantized/PackedParams.h>
#include <gtest/gtest.h>

#include <optional>

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

// PyTorch's dynamic int8 linear (quantized::linear_dynamic, the op of quantize_dynamic's modules)
// over the same per-channel int8 weight: what Int8Linear::Apply must give bit for bit, whichever
// way it finds the input's range.
at::Tensor ReferenceDynamicLinear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  const at::Tensor amax = std::get<0>(w.abs().max(1));
  const at::Tensor scales = at::where(amax > 0, amax / 127.0, at::ones_like(amax)).to(at::kDouble);
  const at::Tensor qw =
      at::quantize_per_channel(w, scales, at::zeros({w.size(0)}, at::kLong), 0, at::kQInt8);
  using Packed = c10::intrusive_ptr<LinearPackedParamsBase>;
  const Packed packed = c10::Dispatcher::singleton()
                            .findSchemaOrThrow("quantized::linear_prepack", "")
                            .typed<Packed(at::Tensor, std::optional<at::Tensor>)>()
                            .call(qw, b.defined() ? std::optional<at::Tensor>(b) : std::nullopt);
  return c10::Dispatcher::singleton()
      .findSchemaOrThrow("quantized::linear_dynamic", "")
      .typed<at::Tensor(at::Tensor, const Packed&, bool)>()
      .call(x, packed, /*reduce_range=*/false);
}

TEST(Int8LinearTest, EqualsPyTorchsDynamicLinearBitForBit) {
  at::manual_seed(22);
  const at::Tensor w = at::randn({40, 96}) * 0.05;
  const at::Tensor b = at::randn({40});
  for (const at::Tensor& bias : {b, at::Tensor()}) {
    absl::StatusOr<Int8Linear> q = Int8Linear::Pack(w, bias);
    ASSERT_TRUE(q.ok()) << q.status();
    // Mixed signs, all positive (the range is widened to 0), all zero (a degenerate range), one
    // row, and many rows (several threads).
    for (const at::Tensor& x : {at::randn({29, 96}) * 3, at::rand({7, 96}) + 0.5,
                                at::zeros({5, 96}), at::randn({1, 96}), at::randn({1031, 96})}) {
      const at::Tensor want = ReferenceDynamicLinear(x, w, bias);
      const at::Tensor got = q->Apply(x);
      EXPECT_TRUE(at::equal(got, want)) << x.sizes() << " bias " << bias.defined() << ": "
                                        << (got - want).abs().max().item<double>();
    }
    EXPECT_EQ(q->Apply(at::zeros({0, 96})).sizes(), (at::IntArrayRef{0, 40}));
  }
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
