// GPU only: the sm90 varlen attention backends against the FA2 path and a float64 reference.
// Each backend's tests skip without a CUDA device of compute capability 9.0 (cuDNN: 9.0 or
// newer) or in a build without it (PADLESS_CUDNN_ATTENTION, PADLESS_FA3_ATTENTION).
// - cuDNN's fused attention (kVarlenCudnn): mixed lengths with 1-token and empty sequences; the
//   [CLS] rows; batch independence; dropout's determinism, rate, and the same mask in forward and
//   backward; the encoder with the backend, fused layers on and off.
// - FlashAttention-3 (kVarlenFa3): the same, global and windowed; gradients in their inputs'
//   layouts; the fallback to FA2 with dropout; BERT (fused layers on and off) and ModernBERT
//   (windows) with the backend.
// One file for both backends: as two files, each cost about 11 s of compiling in every CI build.
//
// Tolerances: bf16 inputs, fp32 accumulation, bf16 outputs. Outputs (|out| <= max |v| ~ 3) within
// 3e-2 absolute of float64 and the gradients within 3e-2 of the largest reference gradient; in
// both, no worse than twice FA2's own error plus a bf16 step, so a wrong kernel (cuDNN has shipped
// all-zero ragged dk) cannot pass while FA2 is accurate.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "batch_factory.h"
#include "gpu_test_util.h"
#include "padless/cuda/kernels/cudnn_attention.h"
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

// cuDNN.

bool CudnnCanRun() {
  return HasCuda() && cuda::CudnnAttentionBuilt() &&
         at::cuda::getCurrentDeviceProperties()->major >= 9;
}
#define SKIP_UNLESS_CUDNN() \
  if (!CudnnCanRun()) GTEST_SKIP() << "no sm90 CUDA device or no cuDNN attention in this build"

TEST(CudnnAttentionTest, ShapeBucketsAreOneOrOneAndAHalfPowersOfTwo) {
  const std::vector<int64_t> n = {1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 17, 25, 33, 300, 512, 513};
  const std::vector<int64_t> want = {1, 2, 3, 4, 6, 6, 8, 8, 12, 16, 24, 32, 48, 384, 512, 768};
  for (size_t i = 0; i < n.size(); ++i) EXPECT_EQ(cuda::CudnnShapeBucket(n[i]), want[i]) << n[i];
}

TEST(CudnnAttentionTest, TokenBoundsAreBucketsInWholeTiles) {
  const std::vector<int64_t> n = {0, 1, 64, 65, 100, 150, 700, 65230};
  const std::vector<int64_t> want = {64, 64, 64, 128, 128, 192, 768, 65536};
  for (size_t i = 0; i < n.size(); ++i) EXPECT_EQ(cuda::CudnnTokenBound(n[i]), want[i]) << n[i];
}

TEST(CudnnAttentionTest, GradientsMirrorTheThirdsOfOneProjection) {
  using Offsets = std::array<int64_t, 3>;
  // [T, 3, 4, 64]: rows of 768 elements, q, k, v 256 apart, wherever the projection starts.
  EXPECT_EQ(cuda::MirroredGradientOffsets({0, 256, 512}, 768, 256), Offsets({0, 256, 512}));
  EXPECT_EQ(cuda::MirroredGradientOffsets({1000, 1256, 1512}, 768, 256), Offsets({0, 256, 512}));
  EXPECT_EQ(cuda::MirroredGradientOffsets({512, 0, 256}, 768, 256), Offsets({512, 0, 256}));
  // With room between them (a [T, 3, 4, 64] slice of wider rows).
  EXPECT_EQ(cuda::MirroredGradientOffsets({0, 300, 600}, 1024, 256), Offsets({0, 300, 600}));
  // The same tensor twice, overlapping rows, or rows past the stride: one buffer each.
  EXPECT_FALSE(cuda::MirroredGradientOffsets({0, 0, 512}, 768, 256).has_value());
  EXPECT_FALSE(cuda::MirroredGradientOffsets({0, 200, 512}, 768, 256).has_value());
  EXPECT_FALSE(cuda::MirroredGradientOffsets({0, 256, 600}, 768, 256).has_value());
  EXPECT_FALSE(cuda::MirroredGradientOffsets({0, 256, 512}, 768, 0).has_value());
}

TEST(CudnnAttentionTest, MatchesFlashAndFloat64OnMixedLengths) {
  SKIP_UNLESS_CUDNN();
  const std::vector<int64_t> lengths = {1, 0, 37, 128, 5, 0, 300, 64, 1, 250};
  const std::vector<at::Tensor> qkv = RandomQkv(Total(lengths), 1);
  const at::Tensor d_out = at::randn({Total(lengths), kHeads * kHeadDim}, at::kCUDA);
  const AttentionResult ref = Reference(qkv, d_out, lengths);
  const AttentionResult flash =
      ThroughAttend(qkv, d_out, Context(lengths, AttentionBackend::kVarlenFlash));
  const AttentionResult cudnn =
      ThroughAttend(qkv, d_out, Context(lengths, AttentionBackend::kVarlenCudnn));
  ExpectMatchesFlashAndReference(cudnn, flash, ref, "cudnn");
}

TEST(CudnnAttentionTest, FirstTokensMatchTheFullAttentionRows) {
  SKIP_UNLESS_CUDNN();
  ExpectFirstTokensMatchFullRows(AttentionBackend::kVarlenCudnn);
}

// cuDNN writes each gradient in its input's layout: for the thirds of one projection, the thirds
// of one gradient buffer; for separate tensors (here q and k the same one), buffers of their own.
TEST(CudnnAttentionTest, GradientsHaveTheLayoutsOfTheirInputs) {
  SKIP_UNLESS_CUDNN();
  const std::vector<int64_t> lengths = {7, 0, 20};
  const std::vector<at::Tensor> qkv = RandomQkv(Total(lengths), 5);
  const cuda::VarlenSequences seqs{CuSeqlens(lengths), CuSeqlens(lengths), 20, 20};
  const cuda::CudnnAttentionForward f =
      cuda::CudnnVarlenAttention(qkv[0], qkv[1], qkv[2], seqs, 0.0, /*save_stats=*/true);
  const at::Tensor d_out = at::randn_like(f.out);
  const cuda::CudnnAttentionGrads g =
      cuda::CudnnVarlenAttentionBackward(d_out, qkv[0], qkv[1], qkv[2], f, seqs, 0.0);
  for (const at::Tensor& d : {g.dq, g.dk, g.dv}) {
    EXPECT_EQ(d.strides(), qkv[0].strides());
    EXPECT_TRUE(d.is_alias_of(g.dq));
  }
  EXPECT_EQ(g.dk.storage_offset() - g.dq.storage_offset(), kHeads * kHeadDim);
  EXPECT_EQ(g.dv.storage_offset() - g.dq.storage_offset(), 2 * kHeads * kHeadDim);
  const cuda::CudnnAttentionGrads same =
      cuda::CudnnVarlenAttentionBackward(d_out, qkv[0], qkv[0], qkv[2], f, seqs, 0.0);
  EXPECT_FALSE(same.dq.is_alias_of(same.dk));
  EXPECT_EQ(same.dk.strides(), qkv[0].strides());
}

// A sequence's attention does not depend on its batch-mates (nor on the graph bucket that their
// count and lengths choose).
TEST(CudnnAttentionTest, ResultsDoNotDependOnBatchMates) {
  SKIP_UNLESS_CUDNN();
  const std::vector<int64_t> alone = {90, 17};
  const std::vector<int64_t> crowd = {5, 90, 17, 400, 0, 33, 7, 1, 64};
  const std::vector<at::Tensor> big = RandomQkv(Total(crowd), 3);
  // `alone` is crowd's sequences 1 and 2: tokens 5 .. 112.
  std::vector<at::Tensor> small;
  for (const at::Tensor& t : big) small.push_back(t.narrow(0, 5, 107));
  const at::Tensor d_out = at::randn({Total(crowd), kHeads * kHeadDim}, at::kCUDA);
  const AttentionResult a = ThroughAttend(small, d_out.narrow(0, 5, 107).contiguous(),
                                          Context(alone, AttentionBackend::kVarlenCudnn));
  const AttentionResult c =
      ThroughAttend(big, d_out, Context(crowd, AttentionBackend::kVarlenCudnn));
  EXPECT_LE(LargestDifference(a.out, c.out.narrow(0, 5, 107)), 4e-3);
  EXPECT_LE(LargestDifference(a.dq, c.dq.narrow(0, 5, 107)),
            4e-3 * a.dq.abs().max().item<double>());
  EXPECT_LE(LargestDifference(a.dk, c.dk.narrow(0, 5, 107)),
            4e-3 * a.dk.abs().max().item<double>());
  EXPECT_LE(LargestDifference(a.dv, c.dv.narrow(0, 5, 107)),
            4e-3 * a.dv.abs().max().item<double>());
}

// Dropout made visible: with q = k = 0 every probability of a sequence of length L is 1/L, and
// with v_j the j-th unit vector, out_i[j] = mask_ij / (L (1 - p)): the forward's mask itself.
// Then dv_j = sum_i out_i[j] dO_i must hold if the backward drops what the forward dropped.
TEST(CudnnAttentionTest, DropoutRateDeterminismAndTheSameMaskInBackward) {
  SKIP_UNLESS_CUDNN();
  const std::vector<int64_t> lengths = {64, 40, 17, 1};
  const int64_t tokens = Total(lengths);
  const double p = 0.25;
  const at::Tensor zeros = at::zeros({tokens, kHeads, kHeadDim}, at::kCUDA).to(at::kBFloat16);
  std::vector<at::Tensor> one_hot;
  for (int64_t len : lengths) {
    one_hot.push_back(
        at::eye(len, kHeadDim, at::kCUDA).unsqueeze(1).expand({len, kHeads, kHeadDim}));
  }
  const at::Tensor v = at::cat(one_hot, 0).to(at::kBFloat16).contiguous();
  const cuda::VarlenSequences seqs{CuSeqlens(lengths), CuSeqlens(lengths), 64, 64};
  at::manual_seed(7);
  const at::Tensor d_out = at::randn({tokens, kHeads, kHeadDim}, at::kCUDA).to(at::kBFloat16);
  auto run = [&](uint64_t seed) {
    at::manual_seed(seed);
    cuda::CudnnAttentionForward f = cuda::CudnnVarlenAttention(zeros, zeros, v, seqs, p, true);
    cuda::CudnnAttentionGrads g =
        cuda::CudnnVarlenAttentionBackward(d_out, zeros, zeros, v, f, seqs, p);
    return std::make_pair(f, g);
  };
  const auto [f1, g1] = run(11);
  const auto [f2, g2] = run(11);
  const auto [f3, g3] = run(12);
  EXPECT_TRUE(at::equal(f1.out, f2.out));
  EXPECT_TRUE(at::equal(g1.dq, g2.dq) && at::equal(g1.dk, g2.dk) && at::equal(g1.dv, g2.dv));
  EXPECT_FALSE(at::equal(f1.out, f3.out));

  int64_t kept = 0, total = 0, start = 0;
  for (int64_t len : lengths) {
    const at::Tensor out = f1.out.narrow(0, start, len).to(at::kDouble);  // [L, heads, d]
    const at::Tensor probs = out.narrow(2, 0, len);                       // [L, heads, L]
    const double keep_value = 1.0 / (len * (1.0 - p));
    // Columns past the sequence's own keys (none when it has head_dim of them) stay zero.
    if (len < kHeadDim) {
      EXPECT_EQ(out.narrow(2, len, kHeadDim - len).abs().max().item<double>(), 0.0) << len;
    }
    const at::Tensor is_kept = probs > 0.5 * keep_value;
    EXPECT_LE((probs - is_kept.to(at::kDouble) * keep_value).abs().max().item<double>(),
              1e-2 * keep_value)
        << len;
    kept += is_kept.sum().item<int64_t>();
    total += probs.numel();
    // dv_j = sum_i P_dropped[i, j] dO_i, per head: [heads, L, L]^T x [heads, L, d].
    const at::Tensor p_dropped = probs.permute({1, 0, 2});
    const at::Tensor d_o = d_out.narrow(0, start, len).to(at::kDouble).transpose(0, 1);
    const at::Tensor dv_expected = at::matmul(p_dropped.transpose(1, 2), d_o).transpose(0, 1);
    const at::Tensor dv = g1.dv.narrow(0, start, len).to(at::kDouble);
    EXPECT_LE(LargestDifference(dv, dv_expected),
              2e-2 * dv_expected.abs().max().item<double>() + 1e-3)
        << len;
    start += len;
  }
  const double rate = 1.0 - static_cast<double>(kept) / static_cast<double>(total);
  const double sigma = std::sqrt(p * (1 - p) / static_cast<double>(total));
  EXPECT_NEAR(rate, p, 5 * sigma) << kept << " of " << total << " kept";
}

// The encoder with kVarlenCudnn against kVarlenFlash (bf16 autocast, no dropout), with the fused
// layers (cuDNN's forward and backward called by the layer) and without (the autograd function).
TEST(CudnnAttentionTest, EncoderMatchesFlash) {
  SKIP_UNLESS_CUDNN();
  for (bool fused : {true, false}) {
    ExpectTrainingStepMatchesFlash(GpuTestConfig(0.0), fused, AttentionBackend::kVarlenCudnn,
                                   fused ? "fused" : "unfused");
  }
}

// FlashAttention-3.

bool Fa3CanRun() {
  if (!HasCuda() || !cuda::Fa3AttentionBuilt()) return false;
  const cudaDeviceProp* prop = at::cuda::getCurrentDeviceProperties();
  return prop->major == 9 && prop->minor == 0;
}
#define SKIP_UNLESS_FA3() \
  if (!Fa3CanRun()) GTEST_SKIP() << "no sm90 CUDA device or no FA3 attention in this build"

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
