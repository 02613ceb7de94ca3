// CPU tests of the varlen ids, segment ids and block-diagonal masks (the torch reference path)
// against loops.
#include "padless/cuda/kernels/packed_masks.h"

#include <gtest/gtest.h>

#include "packing_test_util.h"

namespace padless::cuda {
namespace {

using testing::CuSeqlens;
using testing::RandomLengths;
using testing::Total;

TEST(VarlenIdsTest, MatchesLoop) {
  const std::vector<int32_t> lengths = RandomLengths(13, 20, 6);
  auto ids = VarlenIdsFromCuSeqlens(CuSeqlens(lengths));
  ASSERT_TRUE(ids.ok()) << ids.status();
  ASSERT_EQ(ids->position_ids.numel(), Total(lengths));
  auto seq = ids->sequence_ids.accessor<int64_t, 1>();
  auto pos = ids->position_ids.accessor<int64_t, 1>();
  int64_t t = 0;
  for (int64_t b = 0; b < 13; ++b) {
    for (int64_t i = 0; i < lengths[b]; ++i, ++t) {
      ASSERT_EQ(seq[t], b);
      ASSERT_EQ(pos[t], i);
    }
  }
}

// Packs `lengths` first-fit into rows of `len`, returning int64 [n, 2] (row, offset).
at::Tensor FirstFitLocations(const std::vector<int32_t>& lengths, int64_t len, int64_t* rows) {
  at::Tensor loc = at::zeros({static_cast<int64_t>(lengths.size()), 2}, at::kLong);
  std::vector<int64_t> used;
  for (size_t b = 0; b < lengths.size(); ++b) {
    size_t r = 0;
    while (r < used.size() && used[r] + lengths[b] > len) ++r;
    if (r == used.size()) used.push_back(0);
    loc[b][0] = static_cast<int64_t>(r);
    loc[b][1] = used[r];
    used[r] += lengths[b];
  }
  *rows = static_cast<int64_t>(used.size());
  return loc;
}

TEST(SegmentIdsTest, MatchesLoopAndMarksPadding) {
  const std::vector<int32_t> lengths = RandomLengths(17, 24, 7);
  const int64_t len = 32;
  int64_t rows = 0;
  const at::Tensor loc = FirstFitLocations(lengths, len, &rows);
  auto seg = SegmentIdsFromCuSeqlens(CuSeqlens(lengths), loc, rows, len);
  ASSERT_TRUE(seg.ok()) << seg.status();
  std::vector<int64_t> expected(rows * len, -1);
  auto la = loc.accessor<int64_t, 2>();
  for (int64_t b = 0; b < 17; ++b) {
    for (int64_t i = 0; i < lengths[b]; ++i) expected[la[b][0] * len + la[b][1] + i] = b;
  }
  auto sa = seg->accessor<int64_t, 2>();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < len; ++c) ASSERT_EQ(sa[r][c], expected[r * len + c]) << r << "," << c;
  }
}

TEST(SegmentIdsTest, DropsTokensOutsideTheGrid) {
  const at::Tensor loc = at::tensor(std::vector<int64_t>{0, 0, 0, 3}).reshape({2, 2});
  auto seg = SegmentIdsFromCuSeqlens(CuSeqlens({3, 2}), loc, 1, 4);
  ASSERT_TRUE(seg.ok()) << seg.status();
  EXPECT_TRUE(at::equal(*seg, at::tensor(std::vector<int64_t>{0, 0, 0, 1}).reshape({1, 4})));
}

TEST(BlockDiagonalMaskTest, MatchesLoop) {
  const at::Tensor seg =
      at::tensor(std::vector<int64_t>{0, 0, 1, 1, 1, -1, 2, 3, 3, 3, 3, 3}).reshape({2, 6});
  for (bool pad_self : {true, false}) {
    auto mask = BlockDiagonalMask(seg, pad_self);
    ASSERT_TRUE(mask.ok()) << mask.status();
    ASSERT_EQ(mask->sizes(), (std::vector<int64_t>{2, 1, 6, 6}));
    auto m = mask->accessor<bool, 4>();
    auto s = seg.accessor<int64_t, 2>();
    for (int64_t r = 0; r < 2; ++r) {
      for (int64_t i = 0; i < 6; ++i) {
        for (int64_t j = 0; j < 6; ++j) {
          const bool same = s[r][i] >= 0 && s[r][i] == s[r][j];
          ASSERT_EQ(m[r][0][i][j], same || (pad_self && i == j)) << r << i << j << pad_self;
        }
      }
    }
  }
}

TEST(BlockDiagonalMaskTest, FromCuSeqlensComposes) {
  const std::vector<int32_t> lengths = RandomLengths(9, 10, 8);
  int64_t rows = 0;
  const at::Tensor loc = FirstFitLocations(lengths, 16, &rows);
  const at::Tensor cu = CuSeqlens(lengths);
  auto direct = BlockDiagonalMaskFromCuSeqlens(cu, loc, rows, 16);
  auto seg = SegmentIdsFromCuSeqlens(cu, loc, rows, 16);
  ASSERT_TRUE(direct.ok() && seg.ok());
  auto composed = BlockDiagonalMask(*seg);
  ASSERT_TRUE(composed.ok());
  EXPECT_TRUE(at::equal(*direct, *composed));
}

TEST(PackedMasksTest, RejectsBadArguments) {
  EXPECT_FALSE(BlockDiagonalMask(at::zeros({4}, at::kLong)).ok());
  EXPECT_FALSE(BlockDiagonalMask(at::zeros({2, 4}, at::kInt)).ok());
  EXPECT_FALSE(SegmentIdsFromCuSeqlens(CuSeqlens({2}), at::zeros({2, 2}, at::kLong), 1, 4).ok());
  EXPECT_FALSE(VarlenIdsFromCuSeqlens(at::zeros({3}, at::kLong)).ok());
}

}  // namespace
}  // namespace padless::cuda
