// The CUDA kernels against their torch reference paths on random data: exact for copies and
// integers, 1e-6 for fp32 means, the dtype's tolerance for bf16 / fp16. Skipped without a GPU.
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include "packing_test_util.h"
#include "padless/cuda/kernels/kernel_support.h"
#include "padless/cuda/kernels/packed_masks.h"
#include "padless/cuda/kernels/segment_pool.h"
#include "padless/cuda/kernels/unpad.h"

namespace padless::cuda {
namespace {

using testing::CuSeqlens;
using testing::PoisonFreeMemory;
using testing::RandomLengths;
using testing::Total;

// Less than testing::kPoisonBytes: poisoned before every case, and the largest output here (32 x
// 512 x 768 bf16) is 24 MiB.
constexpr int64_t kCasePoisonBytes = int64_t{64} << 20;

class CudaKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    if (!CudaKernelsBuilt()) GTEST_SKIP() << "built without the CUDA kernels";
  }
  const c10::Device gpu_{c10::kCUDA, 0};
};

struct Case {
  int64_t batch;
  int32_t max_len;
  int64_t hidden;  // 0: a 2-D [B, L] input
  at::ScalarType dtype;
};

// Wide rows (16-byte vectors), odd widths (scalar path), and 2-D integer ids.
const Case kCases[] = {
    {32, 512, 768, at::kBFloat16}, {7, 100, 768, at::kFloat}, {5, 33, 7, at::kHalf},
    {9, 64, 3, at::kFloat},        {12, 40, 0, at::kLong},    {1, 1, 4, at::kBFloat16},
};

at::Tensor Random(std::vector<int64_t> shape, at::ScalarType dtype, const c10::Device& device) {
  if (dtype == at::kLong) return at::randint(0, 1 << 20, shape, at::TensorOptions(device));
  return at::randn(shape, at::TensorOptions(device)).to(dtype);
}

TEST_F(CudaKernelTest, UnpadAndPadMatchReferenceExactly) {
  at::manual_seed(31);
  uint32_t seed = 100;
  for (const Case& c : kCases) {
    const std::vector<int32_t> lengths = RandomLengths(c.batch, c.max_len, seed++);
    const at::Tensor cu = CuSeqlens(lengths).to(gpu_);
    std::vector<int64_t> shape = {c.batch, c.max_len};
    if (c.hidden > 0) shape.push_back(c.hidden);
    const at::Tensor padded = Random(shape, c.dtype, gpu_);
    PoisonFreeMemory(gpu_, kCasePoisonBytes);
    auto packed = Unpad(padded, cu, Total(lengths));
    auto packed_ref = reference::Unpad(padded, cu, Total(lengths));
    ASSERT_TRUE(packed.ok() && packed_ref.ok()) << packed.status() << packed_ref.status();
    EXPECT_TRUE(at::equal(*packed, *packed_ref)) << c.batch << "x" << c.max_len;

    PoisonFreeMemory(gpu_, kCasePoisonBytes);
    auto repadded = Pad(*packed, cu, c.max_len + 3);
    auto repadded_ref = reference::Pad(*packed, cu, c.max_len + 3);
    ASSERT_TRUE(repadded.ok() && repadded_ref.ok());
    EXPECT_TRUE(at::equal(*repadded, *repadded_ref)) << c.batch << "x" << c.max_len;
  }
}

TEST_F(CudaKernelTest, MisalignedPointersTakeTheNarrowPath) {
  const std::vector<int32_t> lengths = RandomLengths(6, 50, 7);
  const at::Tensor cu = CuSeqlens(lengths).to(gpu_);
  const int64_t total = Total(lengths), hidden = 64;
  at::manual_seed(32);
  // One element of offset: a 2-byte aligned but not 16-byte aligned bf16 view.
  const at::Tensor storage = at::randn({total * hidden + 1}, gpu_).to(at::kBFloat16);
  const at::Tensor packed = storage.narrow(0, 1, total * hidden).view({total, hidden});
  auto padded = Pad(packed, cu, 50);
  auto padded_ref = reference::Pad(packed, cu, 50);
  ASSERT_TRUE(padded.ok() && padded_ref.ok());
  EXPECT_TRUE(at::equal(*padded, *padded_ref));
  auto mean = SegmentPool(packed, cu, PoolMode::kMean);
  auto mean_ref = reference::SegmentPool(packed, cu, PoolMode::kMean);
  ASSERT_TRUE(mean.ok() && mean_ref.ok());
  EXPECT_TRUE(at::allclose(*mean, *mean_ref, 1.6e-2, 1e-5));
}

TEST_F(CudaKernelTest, SegmentPoolMatchesReference) {
  at::manual_seed(33);
  uint32_t seed = 200;
  for (const Case& c : kCases) {
    if (c.hidden == 0 || c.dtype == at::kLong) continue;
    const std::vector<int32_t> lengths = RandomLengths(c.batch, c.max_len, seed++);
    const at::Tensor cu = CuSeqlens(lengths).to(gpu_);
    const at::Tensor hidden = Random({Total(lengths), c.hidden}, c.dtype, gpu_);
    for (PoolMode mode : {PoolMode::kMean, PoolMode::kCls}) {
      PoisonFreeMemory(gpu_, kCasePoisonBytes);
      auto out = SegmentPool(hidden, cu, mode);
      auto ref = reference::SegmentPool(hidden, cu, mode);
      ASSERT_TRUE(out.ok() && ref.ok()) << out.status() << ref.status();
      ASSERT_EQ(out->scalar_type(), c.dtype);
      if (mode == PoolMode::kCls) {
        EXPECT_TRUE(at::equal(*out, *ref));
      } else if (c.dtype == at::kFloat) {
        EXPECT_TRUE(at::allclose(*out, *ref, 1e-6, 1e-6))
            << (*out - *ref).abs().max().item<float>();
      } else {
        // One rounding of the same fp32 mean: at most one ulp apart.
        EXPECT_TRUE(at::allclose(out->to(at::kFloat), ref->to(at::kFloat), 1.6e-2, 1e-5));
      }
    }
  }
}

// Half hidden states pooled straight into fp32 by the kernel (no fp32 copy first): bit for bit
// the pooling of their fp32 copy (the same fp32 sums in the same order), aligned or not.
TEST_F(CudaKernelTest, SegmentPoolIntoFloatEqualsPoolingTheFloatCopy) {
  const std::vector<int32_t> lengths = RandomLengths(13, 90, 11);
  const at::Tensor cu = CuSeqlens(lengths).to(gpu_);
  const int64_t total = Total(lengths);
  at::manual_seed(35);
  for (at::ScalarType dtype : {at::kBFloat16, at::kHalf}) {
    for (int64_t hidden : {int64_t{768}, int64_t{36}}) {
      for (int64_t offset : {0, 1}) {
        const at::Tensor storage = at::randn({total * hidden + offset}, gpu_).to(dtype);
        const at::Tensor x = storage.narrow(0, offset, total * hidden).view({total, hidden});
        for (PoolMode mode : {PoolMode::kMean, PoolMode::kCls}) {
          PoisonFreeMemory(gpu_, kCasePoisonBytes);
          auto got = SegmentPool(x, cu, mode, at::kFloat);
          auto want = SegmentPool(x.to(at::kFloat), cu, mode);
          ASSERT_TRUE(got.ok() && want.ok()) << got.status();
          ASSERT_EQ(got->scalar_type(), at::kFloat);
          EXPECT_TRUE(at::equal(*got, *want)) << hidden << " " << offset;
        }
      }
    }
  }
}

TEST_F(CudaKernelTest, GradientsMatchReference) {
  const std::vector<int32_t> lengths = RandomLengths(8, 70, 9);
  const at::Tensor cu = CuSeqlens(lengths).to(gpu_);
  at::manual_seed(34);
  const at::Tensor base = at::randn({8, 70, 32}, gpu_);
  const at::Tensor weight = at::randn({8, 32}, gpu_);
  at::Tensor grads[2];
  for (int use_ref = 0; use_ref < 2; ++use_ref) {
    const at::Tensor x = base.clone().requires_grad_();
    auto packed = use_ref ? reference::Unpad(x, cu) : Unpad(x, cu);
    ASSERT_TRUE(packed.ok());
    auto pooled = use_ref ? reference::SegmentPool(*packed, cu, PoolMode::kMean)
                          : SegmentPool(*packed, cu, PoolMode::kMean);
    ASSERT_TRUE(pooled.ok());
    (*pooled * weight).sum().backward();
    grads[use_ref] = x.grad();
  }
  EXPECT_TRUE(at::allclose(grads[0], grads[1], 1e-6, 1e-6));
}

TEST_F(CudaKernelTest, IdsAndMasksMatchReferenceExactly) {
  uint32_t seed = 300;
  for (int64_t len : {64, 100, 512}) {
    const std::vector<int32_t> lengths = RandomLengths(40, static_cast<int32_t>(len / 2), seed++);
    const at::Tensor cu = CuSeqlens(lengths).to(gpu_);
    const int64_t total = Total(lengths);
    auto ids = VarlenIdsFromCuSeqlens(cu, total);
    auto ids_ref = reference::VarlenIdsFromCuSeqlens(cu, total);
    ASSERT_TRUE(ids.ok() && ids_ref.ok());
    EXPECT_TRUE(at::equal(ids->sequence_ids, ids_ref->sequence_ids));
    EXPECT_TRUE(at::equal(ids->position_ids, ids_ref->position_ids));

    // Two sequences per row in order: row b / 2, offset 0 or the first one's length.
    at::Tensor loc = at::zeros({40, 2}, at::kLong);
    for (int64_t b = 0; b < 40; ++b) {
      loc[b][0] = b / 2;
      loc[b][1] = b % 2 == 0 ? 0 : lengths[b - 1];
    }
    loc = loc.to(gpu_);
    PoisonFreeMemory(gpu_, kCasePoisonBytes);
    auto seg = SegmentIdsFromCuSeqlens(cu, loc, 20, len, total);
    auto seg_ref = reference::SegmentIdsFromCuSeqlens(cu, loc, 20, len, total);
    ASSERT_TRUE(seg.ok() && seg_ref.ok()) << seg.status() << seg_ref.status();
    EXPECT_TRUE(at::equal(*seg, *seg_ref)) << len;
    for (bool pad_self : {true, false}) {
      PoisonFreeMemory(gpu_, kCasePoisonBytes);
      auto mask = BlockDiagonalMask(*seg, pad_self);
      auto mask_ref = reference::BlockDiagonalMask(*seg, pad_self);
      ASSERT_TRUE(mask.ok() && mask_ref.ok());
      EXPECT_TRUE(at::equal(*mask, *mask_ref)) << len << " " << pad_self;
    }
  }
}

}  // namespace
}  // namespace padless::cuda
