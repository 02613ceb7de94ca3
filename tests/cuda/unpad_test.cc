// CPU tests of Unpad / Pad (the torch reference path) against per-sequence loops.
#include "padless/cuda/kernels/unpad.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "packing_test_util.h"

namespace padless::cuda {
namespace {

using testing::CuSeqlens;
using ::testing::HasSubstr;
using testing::RandomLengths;
using testing::Total;

TEST(UnpadTest, MatchesPerSequenceLoop) {
  const std::vector<int32_t> lengths = RandomLengths(9, 13, 1);
  const int64_t batch = 9, max_len = 13, hidden = 5;
  at::manual_seed(11);
  const at::Tensor padded = at::randn({batch, max_len, hidden});
  const at::Tensor cu = CuSeqlens(lengths);
  auto packed = Unpad(padded, cu);
  ASSERT_TRUE(packed.ok()) << packed.status();
  ASSERT_EQ(packed->sizes(), (std::vector<int64_t>{Total(lengths), hidden}));
  auto a = padded.accessor<float, 3>();
  auto p = packed->accessor<float, 2>();
  int64_t t = 0;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < lengths[b]; ++i, ++t) {
      for (int64_t h = 0; h < hidden; ++h) ASSERT_EQ(p[t][h], a[b][i][h]) << b << "," << i;
    }
  }
  // Passing the total explicitly gives the same result.
  auto again = Unpad(padded, cu, Total(lengths));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(at::equal(*again, *packed));
}

TEST(UnpadTest, TwoDimensionalIntegerInput) {
  const std::vector<int32_t> lengths = {3, 0, 2};
  const at::Tensor ids = at::arange(12, at::kLong).reshape({3, 4});
  auto packed = Unpad(ids, CuSeqlens(lengths));
  ASSERT_TRUE(packed.ok()) << packed.status();
  EXPECT_TRUE(at::equal(*packed, at::tensor(std::vector<int64_t>{0, 1, 2, 8, 9})));
}

TEST(PadTest, MatchesPerSequenceLoopWithZeroPadding) {
  const std::vector<int32_t> lengths = RandomLengths(7, 10, 2);
  const int64_t max_len = 12, hidden = 3;
  at::manual_seed(12);
  const at::Tensor packed = at::randn({Total(lengths), hidden}).to(at::kBFloat16);
  auto padded = Pad(packed, CuSeqlens(lengths), max_len);
  ASSERT_TRUE(padded.ok()) << padded.status();
  ASSERT_EQ(padded->sizes(), (std::vector<int64_t>{7, max_len, hidden}));
  const at::Tensor pf = padded->to(at::kFloat), kf = packed.to(at::kFloat);
  auto a = pf.accessor<float, 3>();
  auto p = kf.accessor<float, 2>();
  int64_t t = 0;
  for (int64_t b = 0; b < 7; ++b) {
    for (int64_t i = 0; i < max_len; ++i) {
      for (int64_t h = 0; h < hidden; ++h) {
        ASSERT_EQ(a[b][i][h], i < lengths[b] ? p[t + i][h] : 0.f) << b << "," << i;
      }
    }
    t += lengths[b];
  }
}

TEST(PadTest, RoundTripsWithUnpad) {
  const std::vector<int32_t> lengths = RandomLengths(16, 31, 3);
  at::manual_seed(13);
  const at::Tensor cu = CuSeqlens(lengths);
  const at::Tensor packed = at::randn({Total(lengths), 2, 4});
  auto padded = Pad(packed, cu, 31);
  ASSERT_TRUE(padded.ok());
  auto back = Unpad(*padded, cu);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(at::equal(*back, packed));
}

TEST(UnpadTest, GradientIsPad) {
  const std::vector<int32_t> lengths = {4, 1, 0, 3};
  const at::Tensor cu = CuSeqlens(lengths);
  at::manual_seed(14);
  const at::Tensor padded = at::randn({4, 5, 3}).requires_grad_();
  const at::Tensor weight = at::randn({8, 3});
  auto packed = Unpad(padded, cu);
  ASSERT_TRUE(packed.ok());
  (*packed * weight).sum().backward();
  auto expected = Pad(weight, cu, 5);
  ASSERT_TRUE(expected.ok());
  EXPECT_TRUE(at::equal(padded.grad(), *expected));
}

TEST(PadTest, GradientIsUnpad) {
  const std::vector<int32_t> lengths = {2, 5, 3};
  const at::Tensor cu = CuSeqlens(lengths);
  at::manual_seed(15);
  const at::Tensor packed = at::randn({10, 4}).requires_grad_();
  const at::Tensor weight = at::randn({3, 6, 4});
  auto padded = Pad(packed, cu, 6);
  ASSERT_TRUE(padded.ok());
  (*padded * weight).sum().backward();
  auto expected = Unpad(weight, cu);
  ASSERT_TRUE(expected.ok());
  EXPECT_TRUE(at::equal(packed.grad(), *expected));
}

TEST(UnpadTest, RejectsBadArguments) {
  const at::Tensor padded = at::zeros({2, 4, 3});
  auto wrong_dtype = Unpad(padded, at::tensor(std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(wrong_dtype.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(wrong_dtype.status().message()), HasSubstr("int32"));
  auto wrong_batch = Unpad(padded, CuSeqlens({1, 1, 1}));
  EXPECT_THAT(std::string(wrong_batch.status().message()), HasSubstr("3 sequences"));
  at::Tensor decreasing = CuSeqlens({2, 2});
  decreasing.data_ptr<int32_t>()[1] = 5;
  decreasing.data_ptr<int32_t>()[2] = 3;
  EXPECT_THAT(std::string(Unpad(padded, decreasing).status().message()), HasSubstr("decreases"));
  auto too_long = Unpad(padded, CuSeqlens({5, 1}));
  EXPECT_FALSE(too_long.ok());
  EXPECT_THAT(std::string(too_long.status().message()), HasSubstr("unpad.cc"));
  EXPECT_FALSE(Pad(at::zeros({6, 3}), CuSeqlens({5, 1}), 4).ok());
  EXPECT_FALSE(Pad(at::zeros({5, 3}), CuSeqlens({5, 1}), 8).ok());  // T != cu[-1]
}

}  // namespace
}  // namespace padless::cuda
