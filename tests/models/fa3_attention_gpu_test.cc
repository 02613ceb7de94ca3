// GPU only (skips without a CUDA device of compute capability 9.0, or in a build without
// PADLESS_FA3_ATTENTION): FlashAttention-3 (kVarlenFa3) against the FA2 path and a float64
// reference on mixed lengths with 1-token and empty sequences, global and windowed; the [CLS]
// rows; batch independence; gradients in their inputs' layouts; the fallback to FA2 with
// dropout; BERT (fused layers on and off) and ModernBERT (windows) with the backend.
//
// Tolerances as cudnn_attention_gpu_test.cc's: outputs within 3e-2 absolute of float64 and the
// gradients within 3e-2 of the largest reference gradient, and in both no worse than twice FA2's
// own error plus a bf16 step, so that a wrong kernel cannot pass while FA2 is accurate.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "batch_factory.h"
#include "gpu_test_util.h"
#include "padless/cuda/kernels/fa3_attention.h"
#include "padless/models/attention.h"
#include "padless/models/autocast.h"
#include "padless/models/encoder.h"
#include "varlen_attention_test_util.h"

namespace padless::models {
namespace {

using testing::AttentionResult;
using testing::Context;
using testing::CuSeqlens;
using testing::ExpectFirstTokensMatchFullRows;
using testing::ExpectMatchesFlashAndReference;
using testing::ExpectTrainingStepMatchesFlash;
using testing::GpuModernBertConfig;
using testing::GpuTestConfig;
using testing::HasCuda;
using testing::kHeadDim;
using testing::kHeads;
using testing::LargestDifference;
using testing::RandomQkv;
using testing::Reference;
using testing::ThroughAttend;
using testing::Total;
using testing::WithGrads;

bool CanRun() {
  if (!HasCuda() || !cuda::Fa3AttentionBuilt()) return false;
  const cudaDeviceProp* prop = at::cuda::getCurrentDeviceProperties();
  return prop->major == 9 && prop->minor == 0;
}
#define SKIP_UNLESS_FA3() \
  if (!CanRun()) GTEST_SKIP() << "no sm90 CUDA device or no FA3 attention in this build"

// The kernels called directly: q, k, v [T, heads, 64] -> [T, heads * 64], with gradients.
AttentionResult ThroughFa3(const std::vector<at::Tensor>& qkv, const at::Tensor& d_out,
                           const std::vector<int64_t>& lengths, int64_t window) {
  const at::Tensor cu = CuSeqlens(lengths);
  const int64_t longest = std::max<int64_t>(1, *std::max_element(lengths.begin(), lengths.end()));
  const cuda::VarlenSequences s{cu, cu, longest, longest};
  const cuda::AttentionWindow w{window, window};
  const cuda::Fa3Forward f = cuda::Fa3VarlenAttention(qkv[0], qkv[1], qkv[2], s, w);
  const at::Tensor d = d_out.to(at::kBFloat16).view(f.out.sizes());
  const std::array<at::Tensor, 3> g =
      cuda::Fa3VarlenAttentionBackward(d, qkv[0], qkv[1], qkv[2], f, s, w);
  return {f.out.to(at::kDouble), g[0].to(at::kDouble), g[1].to(at::kDouble), g[2].to(at::kDouble)};
}

// FA2 with the same window (at::_flash_attention_forward's window_size_left/right).
AttentionResult ThroughFlashWindowed(const std::vector<at::Tensor>& qkv, const at::Tensor& d_out,
                                     const std::vector<int64_t>& lengths, int64_t window) {
  const AttentionContext ctx = Context(lengths, AttentionBackend::kVarlenFlash);
  return WithGrads(qkv, d_out, [&](const std::vector<at::Tensor>& in) {
    return std::get<0>(at::_flash_attention_forward(
        in[0], in[1], in[2], ctx.cu_seqlens, ctx.cu_seqlens, ctx.max_seqlen, ctx.max_seqlen, 0.0,
        /*is_causal=*/false, /*return_debug_mask=*/false, std::nullopt, window, window));
  });
}

TEST(Fa3AttentionTest, MatchesFlashAndFloat64OnMixedLengths) {
  SKIP_UNLESS_FA3();
  const std::vector<int64_t> lengths = {1, 0, 37, 128, 5, 0, 300, 64, 1, 250};
  const std::vector<at::Tensor> qkv = RandomQkv(Total(lengths), 1);
  const at::Tensor d_out = at::randn({Total(lengths), kHeads * kHeadDim}, at::kCUDA);
  const AttentionResult ref = Reference(qkv, d_out, lengths);
  const AttentionResult flash =
      ThroughAttend(qkv, d_out, Context(lengths, AttentionBackend::kVarlenFlash));
  ExpectMatchesFlashAndReference(
      ThroughAttend(qkv, d_out, Context(lengths, AttentionBackend::kVarlenFa3)), flash, ref,
      "through Attend");
  ExpectMatchesFlashAndReference(ThroughFa3(qkv, d_out, lengths, -1), flash, ref, "kernels");
}

// Windows that cut every long sequence, one wider than some sequences (those are global), and
// sequences side by side in the batch, so that a window leaking across a boundary shows.
TEST(Fa3AttentionTest, WindowedMatchesFlashAndFloat64) {
  SKIP_UNLESS_FA3();
  const std::vector<int64_t> lengths = {1, 0, 37, 128, 5, 300, 64, 1, 250, 700};
  const std::vector<at::Tensor> qkv = RandomQkv(Total(lengths), 4);
  const at::Tensor d_out = at::randn({Total(lengths), kHeads * kHeadDim}, at::kCUDA);
  for (int64_t window : {0, 8, 64}) {
    const AttentionResult ref = Reference(qkv, d_out, lengths, window);
    const AttentionResult flash = ThroughFlashWindowed(qkv, d_out, lengths, window);
    ExpectMatchesFlashAndReference(ThroughFa3(qkv, d_out, lengths, window), flash, ref,
                                   "window " + std::to_string(window));
  }
}

TEST(Fa3AttentionTest, FirstTokensMatchTheFullAttentionRows) {
  SKIP_UNLESS_FA3();
  ExpectFirstTokensMatchFullRows(AttentionBackend::kVarlenFa3);
}

TEST(Fa3AttentionTest, GradientsHaveTheLayoutsOfTheirInputs) {
  SKIP_UNLESS_FA3();
  const std::vector<int64_t> lengths = {7, 0, 20};
  const std::vector<at::Tensor> qkv = RandomQkv(Total(lengths), 5);
  const cuda::VarlenSequences seqs{CuSeqlens(lengths), CuSeqlens(lengths), 20, 20};
  const cuda::Fa3Forward f = cuda::Fa3VarlenAttention(qkv[0], qkv[1], qkv[2], seqs, {});
  const std::array<at::Tensor, 3> g =
      cuda::Fa3VarlenAttentionBackward(at::randn_like(f.out), qkv[0], qkv[1], qkv[2], f, seqs, {});
  for (const at::Tensor& d : g) {
    EXPECT_EQ(d.strides(), qkv[0].strides());
    EXPECT_TRUE(d.is_alias_of(g[0]));
  }
  EXPECT_EQ(g[1].storage_offset() - g[0].storage_offset(), kHeads * kHeadDim);
}

TEST(Fa3AttentionTest, ResultsDoNotDependOnBatchMates) {
  SKIP_UNLESS_FA3();
  const std::vector<int64_t> alone = {90, 17};
  const std::vector<int64_t> crowd = {5, 90, 17, 400, 0, 33, 7, 1, 64};
  const std::vector<at::Tensor> big = RandomQkv(Total(crowd), 3);
  std::vector<at::Tensor> small;  // crowd's sequences 1 and 2: tokens 5 .. 112
  for (const at::Tensor& t : big) small.push_back(t.narrow(0, 5, 107));
  const at::Tensor d_out = at::randn({Total(crowd), kHeads * kHeadDim}, at::kCUDA);
  for (int64_t window : {-1, 8}) {
    const AttentionResult a =
        ThroughFa3(small, d_out.narrow(0, 5, 107).contiguous(), alone, window);
    const AttentionResult c = ThroughFa3(big, d_out, crowd, window);
    EXPECT_LE(LargestDifference(a.out, c.out.narrow(0, 5, 107)), 4e-3) << window;
    for (auto part : {&AttentionResult::dq, &AttentionResult::dk, &AttentionResult::dv}) {
      EXPECT_LE(LargestDifference(a.*part, (c.*part).narrow(0, 5, 107)),
                4e-3 * (a.*part).abs().max().item<double>())
          << window;
    }
  }
}

// FA3 has no dropout: the backend's calls that drop run FA2, the same mask for the same seed.
TEST(Fa3AttentionTest, DropoutRunsFlash) {
  SKIP_UNLESS_FA3();
  const std::vector<int64_t> lengths = {40, 3, 100};
  const std::vector<at::Tensor> qkv = RandomQkv(Total(lengths), 6);
  auto run = [&](AttentionBackend backend) {
    at::manual_seed(9);
    return Attend(qkv[0], qkv[1], qkv[2], Context(lengths, backend), /*dropout_p=*/0.2);
  };
  EXPECT_TRUE(at::equal(run(AttentionBackend::kVarlenFa3), run(AttentionBackend::kVarlenFlash)));
}

// A training step (bf16 autocast, no dropout) with kVarlenFa3 against kVarlenFlash: BERT with the
// fused layers (FA3's kernels called by the layer) and without (the autograd function), and
// ModernBERT (windowed layers).
TEST(Fa3AttentionTest, EncodersMatchFlash) {
  SKIP_UNLESS_FA3();
  ExpectTrainingStepMatchesFlash(GpuTestConfig(0.0), true, AttentionBackend::kVarlenFa3,
                                 "bert fused");
  ExpectTrainingStepMatchesFlash(GpuTestConfig(0.0), false, AttentionBackend::kVarlenFa3, "bert");
  ExpectTrainingStepMatchesFlash(GpuModernBertConfig().dropout(0.0).attention_dropout(0.0), false,
                                 AttentionBackend::kVarlenFa3, "modernbert");
}

}  // namespace
}  // namespace padless::models
