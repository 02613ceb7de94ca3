// PoolSequences and FinishEmbeddings (sentence_pooling.h): every pooling mode of a varlen batch
// against a per-sequence loop in float64 (slice the sequence, reduce it), in fp32, fp64 and bf16
// (pooled in fp32) on the CPU and on CUDA, with its gradient; Matryoshka truncation and
// normalization; broken arguments as statuses; on CUDA, no host sync and empty sequences as zeros.
#include "padless/models/sentence_pooling.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#if __has_include(<c10/cuda/CUDAFunctions.h>)
#include <c10/cuda/CUDAFunctions.h>
#define PADLESS_TEST_HAVE_C10_CUDA 1
#endif

#include "absl/status/status.h"
#include "gpu_test_util.h"

namespace padless::models {
namespace {

constexpr SentencePooling kAllModes[] = {
    SentencePooling::kCls,       SentencePooling::kMean,         SentencePooling::kMax,
    SentencePooling::kLastToken, SentencePooling::kWeightedMean, SentencePooling::kMeanSqrtLen};

std::string ModeName(SentencePooling mode) {
  switch (mode) {
    case SentencePooling::kCls:
      return "cls";
    case SentencePooling::kMean:
      return "mean";
    case SentencePooling::kMax:
      return "max";
    case SentencePooling::kLastToken:
      return "last_token";
    case SentencePooling::kWeightedMean:
      return "weighted_mean";
    case SentencePooling::kMeanSqrtLen:
      return "mean_sqrt_len";
  }
  return "?";
}

// The CPU int32 cu_seqlens of `lengths`.
at::Tensor CuSeqlens(const std::vector<int32_t>& lengths) {
  std::vector<int32_t> cu = {0};
  for (int32_t length : lengths) cu.push_back(cu.back() + length);
  return at::tensor(cu, at::kInt);
}

// One sequence [L, H] reduced as `mode` says, written the obvious way.
at::Tensor ReduceOne(const at::Tensor& seq, SentencePooling mode) {
  const int64_t length = seq.size(0);
  switch (mode) {
    case SentencePooling::kCls:
      return seq[0];
    case SentencePooling::kMean:
      return seq.mean(0);
    case SentencePooling::kMax:
      return std::get<0>(seq.max(0));
    case SentencePooling::kLastToken:
      return seq[length - 1];
    case SentencePooling::kWeightedMean: {
      const at::Tensor weights = at::arange(1, length + 1, seq.options());
      return (seq * weights.unsqueeze(1)).sum(0) / weights.sum();
    }
    case SentencePooling::kMeanSqrtLen:
      return seq.sum(0) / std::sqrt(static_cast<double>(length));
  }
  return at::Tensor();
}

// The per-sequence loop in float64 over hidden's values as they are (a bf16 input's rounding is
// in both sides, so only the accumulation differs).
at::Tensor Reference(const at::Tensor& hidden, const std::vector<int32_t>& lengths,
                     SentencePooling mode) {
  const at::Tensor h = hidden.cpu().to(at::kDouble);
  std::vector<at::Tensor> rows;
  int64_t start = 0;
  for (int32_t length : lengths) {
    rows.push_back(ReduceOne(h.slice(0, start, start + length), mode));
    start += length;
  }
  return at::stack(rows);
}

// Includes one-token sequences at the start, middle and end, and a long one.
const std::vector<int32_t> kLengths = {1, 5, 1, 17, 2, 64, 3, 1};
constexpr int64_t kPoolHidden = 48;

at::Tensor RandomHidden(at::ScalarType dtype, at::Device device) {
  at::manual_seed(44);
  int64_t total = 0;
  for (int32_t length : kLengths) total += length;
  return (at::randn({total, kPoolHidden}, at::kDouble) * 2 + 0.5).to(device, dtype);
}

void ExpectModesMatch(at::ScalarType dtype, at::Device device, double tol) {
  const at::Tensor hidden = RandomHidden(dtype, device);
  const at::Tensor cu = CuSeqlens(kLengths).to(device);
  const at::ScalarType want_type = dtype == at::kDouble ? at::kDouble : at::kFloat;
  for (SentencePooling mode : kAllModes) {
    absl::StatusOr<at::Tensor> got = PoolSequences(hidden, cu, mode);
    ASSERT_TRUE(got.ok()) << ModeName(mode) << ": " << got.status();
    EXPECT_EQ(got->sizes(), (at::IntArrayRef{static_cast<int64_t>(kLengths.size()), kPoolHidden}))
        << ModeName(mode);
    EXPECT_EQ(got->scalar_type(), want_type) << ModeName(mode);
    EXPECT_EQ(got->device().type(), device.type()) << ModeName(mode);  // cuda:0 for "cuda"
    const at::Tensor want = Reference(hidden, kLengths, mode);
    const double err = (got->cpu().to(at::kDouble) - want).abs().max().item<double>();
    EXPECT_LT(err, tol) << ModeName(mode);
  }
}

TEST(SentencePoolingTest, EveryModeMatchesThePerSequenceLoopInFp32) {
  ExpectModesMatch(at::kFloat, at::kCPU, 1e-5);
}

TEST(SentencePoolingTest, Fp64StaysFp64) { ExpectModesMatch(at::kDouble, at::kCPU, 1e-12); }

TEST(SentencePoolingTest, Bf16PoolsInFp32) {
  // Against the loop over the same bf16 values: a bf16 accumulation would be off by ~1e-2.
  ExpectModesMatch(at::kBFloat16, at::kCPU, 1e-5);
}

TEST(SentencePoolingTest, OneTokenPoolsToItself) {
  at::manual_seed(3);
  const at::Tensor hidden = at::randn({1, 8});
  for (SentencePooling mode : kAllModes) {
    absl::StatusOr<at::Tensor> got = PoolSequences(hidden, CuSeqlens({1}), mode);
    ASSERT_TRUE(got.ok()) << ModeName(mode) << ": " << got.status();
    EXPECT_TRUE(at::allclose(*got, hidden)) << ModeName(mode);
  }
}

TEST(SentencePoolingTest, NoSequencesPoolToNoRows) {
  absl::StatusOr<at::Tensor> got =
      PoolSequences(at::zeros({0, 8}), CuSeqlens({}), SentencePooling::kMean);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->sizes(), (at::IntArrayRef{0, 8}));
}

TEST(SentencePoolingTest, GradientsMatchThePerSequenceLoop) {
  const at::Tensor base = RandomHidden(at::kDouble, at::kCPU);
  const at::Tensor upstream =
      at::randn({static_cast<int64_t>(kLengths.size()), kPoolHidden}, at::kDouble);
  for (SentencePooling mode : kAllModes) {
    const at::Tensor hidden = base.clone().set_requires_grad(true);
    absl::StatusOr<at::Tensor> got = PoolSequences(hidden, CuSeqlens(kLengths), mode);
    ASSERT_TRUE(got.ok()) << ModeName(mode) << ": " << got.status();
    (*got * upstream).sum().backward();
    const at::Tensor ref_hidden = base.clone().set_requires_grad(true);
    (Reference(ref_hidden, kLengths, mode) * upstream).sum().backward();
    EXPECT_TRUE(at::allclose(hidden.grad(), ref_hidden.grad(), 1e-10, 1e-12)) << ModeName(mode);
  }
}

TEST(SentencePoolingTest, BrokenPoolArgumentsAreStatuses) {
  const at::Tensor hidden = at::randn({5, 4});
  const at::Tensor cu = CuSeqlens({2, 3});
  const auto invalid = [](const absl::StatusOr<at::Tensor>& r) {
    return absl::IsInvalidArgument(r.status());
  };
  const SentencePooling mean = SentencePooling::kMean;
  EXPECT_TRUE(invalid(PoolSequences(at::Tensor(), cu, mean)));
  EXPECT_TRUE(invalid(PoolSequences(at::randn({5}), cu, mean)));
  EXPECT_TRUE(invalid(PoolSequences(at::ones({5, 4}, at::kInt), cu, mean)));
  EXPECT_TRUE(invalid(PoolSequences(hidden, at::Tensor(), mean)));
  EXPECT_TRUE(invalid(PoolSequences(hidden, cu.to(at::kLong), mean)));
  EXPECT_TRUE(invalid(PoolSequences(hidden, cu.unsqueeze(0), mean)));
  EXPECT_TRUE(invalid(PoolSequences(hidden, at::zeros({0}, at::kInt), mean)));
  // An empty sequence, in every mode.
  for (SentencePooling mode : kAllModes) {
    EXPECT_TRUE(invalid(PoolSequences(hidden, CuSeqlens({2, 0, 3}), mode))) << ModeName(mode);
  }
  EXPECT_TRUE(invalid(PoolSequences(at::zeros({0, 4}), CuSeqlens({0}), mean)));
  EXPECT_TRUE(invalid(PoolSequences(hidden, CuSeqlens({2, 2}), mean)));  // 4 != 5 rows
  EXPECT_TRUE(invalid(PoolSequences(hidden, CuSeqlens({2, 4}), mean)));  // 6 != 5 rows
  EXPECT_TRUE(
      invalid(PoolSequences(hidden, at::tensor(std::vector<int32_t>{1, 3, 5}), mean)));  // cu[0]
  EXPECT_TRUE(invalid(PoolSequences(hidden, at::tensor(std::vector<int32_t>{0, 3, 2, 5}), mean)));
  EXPECT_TRUE(invalid(PoolSequences(hidden, cu, static_cast<SentencePooling>(99))));
}

TEST(SentencePoolingTest, NormalizeGivesUnitRows) {
  at::manual_seed(7);
  const at::Tensor pooled = at::randn({6, 32}) * 5;
  absl::StatusOr<at::Tensor> got = FinishEmbeddings(pooled, /*normalize=*/true, 0);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->sizes(), pooled.sizes());
  EXPECT_TRUE(at::allclose(got->norm(2, {1}), at::ones({6}), 1e-6, 1e-6));
  // Same direction as the input.
  EXPECT_TRUE(at::allclose(*got * pooled.norm(2, {1}, true), pooled, 1e-5, 1e-5));
  // A zero row stays zero instead of NaN.
  absl::StatusOr<at::Tensor> zero = FinishEmbeddings(at::zeros({2, 4}), true, 0);
  ASSERT_TRUE(zero.ok()) << zero.status();
  EXPECT_TRUE(zero->eq(0).all().item<bool>());
  // Without normalization and truncation the values are untouched.
  absl::StatusOr<at::Tensor> same = FinishEmbeddings(pooled, false, 0);
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_TRUE(same->equal(pooled));
}

TEST(SentencePoolingTest, DimensionsTruncateBeforeNormalizing) {
  at::manual_seed(8);
  const at::Tensor pooled = at::randn({5, 32}, at::kDouble);
  absl::StatusOr<at::Tensor> got = FinishEmbeddings(pooled, /*normalize=*/true, 8);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->sizes(), (at::IntArrayRef{5, 8}));
  const at::Tensor first = pooled.slice(1, 0, 8);
  EXPECT_TRUE(at::allclose(*got, first / first.norm(2, {1}, true), 1e-12, 1e-12));
  absl::StatusOr<at::Tensor> cut = FinishEmbeddings(pooled, /*normalize=*/false, 8);
  ASSERT_TRUE(cut.ok()) << cut.status();
  EXPECT_TRUE(cut->equal(first));
  absl::StatusOr<at::Tensor> all = FinishEmbeddings(pooled, /*normalize=*/false, 32);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_TRUE(all->equal(pooled));
  // bf16 in, float32 out.
  absl::StatusOr<at::Tensor> half = FinishEmbeddings(pooled.to(at::kBFloat16), true, 8);
  ASSERT_TRUE(half.ok()) << half.status();
  EXPECT_EQ(half->scalar_type(), at::kFloat);
  EXPECT_TRUE(at::allclose(half->norm(2, {1}), at::ones({5}), 1e-6, 1e-6));
}

TEST(SentencePoolingTest, BrokenFinishArgumentsAreStatuses) {
  const at::Tensor pooled = at::randn({3, 16});
  EXPECT_TRUE(absl::IsInvalidArgument(FinishEmbeddings(pooled, true, -1).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(FinishEmbeddings(pooled, true, 17).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(FinishEmbeddings(at::Tensor(), true, 0).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(FinishEmbeddings(at::randn({16}), true, 0).status()));
  EXPECT_TRUE(
      absl::IsInvalidArgument(FinishEmbeddings(at::ones({3, 16}, at::kLong), true, 0).status()));
}

TEST(SentencePoolingGpuTest, EveryModeMatchesOnCuda) {
  if (!testing::HasCuda()) GTEST_SKIP() << "no CUDA device";
  ExpectModesMatch(at::kFloat, at::kCUDA, 1e-5);
  ExpectModesMatch(at::kBFloat16, at::kCUDA, 1e-5);
  ExpectModesMatch(at::kHalf, at::kCUDA, 1e-5);
}

TEST(SentencePoolingGpuTest, GradientsOnCuda) {
  if (!testing::HasCuda()) GTEST_SKIP() << "no CUDA device";
  const at::Tensor base = RandomHidden(at::kFloat, at::kCUDA);
  const at::Tensor cu = CuSeqlens(kLengths).cuda();
  for (SentencePooling mode : kAllModes) {
    const at::Tensor hidden = base.clone().set_requires_grad(true);
    absl::StatusOr<at::Tensor> got = PoolSequences(hidden, cu, mode);
    ASSERT_TRUE(got.ok()) << ModeName(mode) << ": " << got.status();
    got->sum().backward();
    const at::Tensor ref_hidden = base.cpu().to(at::kDouble).set_requires_grad(true);
    Reference(ref_hidden, kLengths, mode).sum().backward();
    EXPECT_TRUE(at::allclose(hidden.grad().cpu().to(at::kDouble), ref_hidden.grad(), 1e-5, 1e-6))
        << ModeName(mode);
  }
}

// On the device the contents of cu_seqlens go unchecked (no sync): an empty sequence pools to
// zeros in every mode, and the others are unaffected.
TEST(SentencePoolingGpuTest, EmptySequencesPoolToZerosOnCuda) {
  if (!testing::HasCuda()) GTEST_SKIP() << "no CUDA device";
  at::manual_seed(5);
  const at::Tensor hidden = at::randn({5, 8}).cuda();
  const at::Tensor cu = CuSeqlens({2, 0, 3}).cuda();
  for (SentencePooling mode : kAllModes) {
    absl::StatusOr<at::Tensor> got = PoolSequences(hidden, cu, mode);
    ASSERT_TRUE(got.ok()) << ModeName(mode) << ": " << got.status();
    const at::Tensor host = got->cpu();
    EXPECT_TRUE(host[1].eq(0).all().item<bool>()) << ModeName(mode);
    const at::Tensor want = Reference(hidden, {2, 3}, mode);
    EXPECT_TRUE(
        at::allclose(host.index_select(0, at::tensor(std::vector<int64_t>{0, 2})).to(at::kDouble),
                     want, 1e-5, 1e-5))
        << ModeName(mode);
  }
  absl::StatusOr<at::Tensor> none =
      PoolSequences(at::zeros({0, 8}).cuda(), CuSeqlens({0, 0}).cuda(), SentencePooling::kMax);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->cpu().equal(at::zeros({2, 8})));
  EXPECT_TRUE(absl::IsInvalidArgument(
      PoolSequences(hidden, CuSeqlens({2, 3}), SentencePooling::kMean).status()));  // devices
}

#ifdef PADLESS_TEST_HAVE_C10_CUDA
// PyTorch's sync debug mode turns every device-to-host synchronization into an error.
TEST(SentencePoolingGpuTest, NoHostSyncOnCuda) {
  if (!testing::HasCuda()) GTEST_SKIP() << "no CUDA device";
  const at::Tensor hidden = RandomHidden(at::kBFloat16, at::kCUDA);
  const at::Tensor cu = CuSeqlens(kLengths).cuda();
  c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_ERROR);
  std::vector<absl::Status> statuses;
  for (SentencePooling mode : kAllModes) {
    absl::StatusOr<at::Tensor> pooled = PoolSequences(hidden, cu, mode);
    statuses.push_back(pooled.status());
    if (pooled.ok()) statuses.push_back(FinishEmbeddings(*pooled, true, 16).status());
  }
  c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_DISABLED);
  for (const absl::Status& s : statuses) EXPECT_TRUE(s.ok()) << s;
}
#endif

}  // namespace
}  // namespace padless::models
