#include "padless/cuda/kernels/cudnn_attention.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <vector>

#ifdef PADLESS_HAVE_CUDNN_ATTENTION
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <c10/cuda/CUDAGuard.h>

#include <mutex>

#include "src/cudnn_sdpa.h"
#endif

namespace padless::cuda {

bool CudnnAttentionBuilt() {
#ifdef PADLESS_HAVE_CUDNN_ATTENTION
  return true;
#else
  return false;
#endif
}

int CudnnLibraryVersion() {
#ifdef PADLESS_HAVE_CUDNN_ATTENTION
  return internal::LoadedCudnnVersion();
#else
  return 0;
#endif
}

int64_t CudnnShapeBucket(int64_t n) {
  TORCH_CHECK(n >= 1, "CudnnShapeBucket: n must be positive, not ", n);
  int64_t power = 1;
  while (power < n) {
    if (power + power / 2 >= n && power >= 2) return power + power / 2;
    power *= 2;
  }
  return power;
}

int64_t CudnnTokenBound(int64_t n) {
  TORCH_CHECK(n >= 0, "CudnnTokenBound: n must not be negative, not ", n);
  constexpr int64_t kTile = 64;
  return (CudnnShapeBucket(std::max<int64_t>(n, 1)) + kTile - 1) / kTile * kTile;
}

std::optional<std::array<int64_t, 3>> MirroredGradientOffsets(const std::array<int64_t, 3>& offsets,
                                                              int64_t row_stride, int64_t width) {
  const int64_t base = *std::min_element(offsets.begin(), offsets.end());
  std::array<int64_t, 3> relative;
  for (size_t i = 0; i < 3; ++i) relative[i] = offsets[i] - base;
  std::array<int64_t, 3> sorted = relative;
  std::sort(sorted.begin(), sorted.end());
  if (width <= 0 || sorted[2] + width > row_stride) return std::nullopt;
  for (size_t i = 0; i + 1 < 3; ++i) {
    if (sorted[i] + width > sorted[i + 1]) return std::nullopt;
  }
  return relative;
}

namespace {

// One gradient in the layout of its input t: [T, heads, head_dim] with t's token-row stride, at
// `offset` elements into `buffer` (rows of that stride).
at::Tensor GradientView(const at::Tensor& buffer, const at::Tensor& t, int64_t offset) {
  return buffer.as_strided(t.sizes(), {t.stride(0), t.size(2), 1},
                           buffer.storage_offset() + offset);
}

}  // namespace

CudnnAttentionGrads AllocateMirroredGradients(const at::Tensor& q, const at::Tensor& k,
                                              const at::Tensor& v) {
  CudnnAttentionGrads g;
  const auto own_buffer = [](const at::Tensor& t) {
    if (t.size(0) == 0 || t.stride(0) == t.size(1) * t.size(2)) {
      return at::empty(t.sizes(), t.options());
    }
    return GradientView(at::empty({t.size(0), t.stride(0)}, t.options()), t, 0);
  };
  const bool one_projection = q.size(0) == k.size(0) && q.size(0) > 0 &&
                              q.stride(0) == k.stride(0) && q.is_alias_of(k) && q.is_alias_of(v);
  const std::optional<std::array<int64_t, 3>> offsets =
      one_projection
          ? MirroredGradientOffsets({q.storage_offset(), k.storage_offset(), v.storage_offset()},
                                    q.stride(0), q.size(1) * q.size(2))
          : std::nullopt;
  if (!offsets) {
    g.dq = own_buffer(q);
    g.dk = own_buffer(k);
    g.dv = own_buffer(v);
    return g;
  }
  const at::Tensor buffer = at::empty({q.size(0), q.stride(0)}, q.options());
  g.dq = GradientView(buffer, q, (*offsets)[0]);
  g.dk = GradientView(buffer, k, (*offsets)[1]);
  g.dv = GradientView(buffer, v, (*offsets)[2]);
  return g;
}

#ifdef PADLESS_HAVE_CUDNN_ATTENTION
namespace {

void CheckTokens(const at::Tensor& t, const char* name, const at::Tensor& q) {
  TORCH_CHECK(t.dim() == 3, "cuDNN attention: ", name, " must be [tokens, heads, head_dim], not ",
              t.sizes());
  TORCH_CHECK(t.is_cuda() && t.device() == q.device(), "cuDNN attention: ", name,
              " must be on q's CUDA device");
  TORCH_CHECK(t.scalar_type() == at::kBFloat16, "cuDNN attention: ", name, " must be bf16, not ",
              t.scalar_type());
  TORCH_CHECK(t.size(1) == q.size(1) && t.size(2) == q.size(2), "cuDNN attention: ", name, " has ",
              t.size(1), " heads of ", t.size(2), ", q ", q.size(1), " of ", q.size(2));
  TORCH_CHECK(t.stride(2) == 1 && t.stride(1) == t.size(2) && t.stride(0) >= t.size(1) * t.size(2),
              "cuDNN attention: ", name, "'s token rows must be contiguous heads x head_dim");
  TORCH_CHECK(t.stride(0) % 8 == 0 && t.size(2) % 8 == 0, "cuDNN attention: ", name,
              " needs head_dim and the row stride in multiples of 8");
}

// The call's index tensors, padded to the graph's batch bucket with empty sequences.
struct SequenceIndex {
  at::Tensor seq_len;  // int32 [batch]
  at::Tensor cu;       // int32 [batch + 1]
  at::Tensor Offsets(int64_t row_stride) const { return cu.mul(static_cast<int32_t>(row_stride)); }
};

SequenceIndex IndexFor(const at::Tensor& cu_seqlens, int64_t batch) {
  TORCH_CHECK(cu_seqlens.dim() == 1 && cu_seqlens.numel() >= 1,
              "cuDNN attention: cu_seqlens must be [n + 1]");
  at::Tensor cu = cu_seqlens.to(at::kInt);
  const int64_t n = cu.numel() - 1;
  if (batch > n) cu = at::cat({cu, cu.narrow(0, n, 1).expand({batch - n})});
  SequenceIndex s;
  s.cu = cu.contiguous();
  s.seq_len = s.cu.narrow(0, 1, batch) - s.cu.narrow(0, 0, batch);
  return s;
}

// The graph key of a call on q, k, v (backward: with the token bounds).
internal::SdpaGraphKey KeyFor(const at::Tensor& q, const at::Tensor& k, const VarlenSequences& s,
                              double dropout_p, bool backward) {
  internal::SdpaGraphKey key;
  key.device = q.get_device();
  key.backward = backward;
  key.dropout_p = static_cast<float>(dropout_p);
  key.batch = CudnnShapeBucket(s.cu_seqlens_q.numel() - 1);
  key.heads = q.size(1);
  key.head_dim = q.size(2);
  key.seqlen_q = CudnnShapeBucket(std::max<int64_t>(s.max_seqlen_q, 1));
  key.seqlen_kv = CudnnShapeBucket(std::max<int64_t>(s.max_seqlen_kv, 1));
  key.q_row_stride = q.stride(0);
  key.kv_row_stride = k.stride(0);
  if (backward && internal::BackwardUsesRaggedWorkspace()) {
    key.tokens_q = CudnnTokenBound(q.size(0));
    key.tokens_kv = CudnnTokenBound(k.size(0));
  }
  return key;
}

// The pointers every graph reads: q, k, v and the index tensors (kept alive in `keep`).
internal::SdpaPointers CommonPointers(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                      const VarlenSequences& s, const internal::SdpaGraphKey& key,
                                      std::vector<at::Tensor>& keep) {
  const SequenceIndex iq = IndexFor(s.cu_seqlens_q, key.batch);
  const SequenceIndex ikv =
      s.cu_seqlens_kv.is_same(s.cu_seqlens_q) ? iq : IndexFor(s.cu_seqlens_kv, key.batch);
  const int64_t width = key.heads * key.head_dim;
  keep = {iq.seq_len,
          ikv.seq_len,
          iq.Offsets(key.q_row_stride),
          ikv.Offsets(key.kv_row_stride),
          iq.Offsets(width),
          iq.Offsets(key.heads)};
  internal::SdpaPointers p;
  p.q = q.data_ptr();
  p.k = k.data_ptr();
  p.v = v.data_ptr();
  p.seq_len_q = keep[0].data_ptr();
  p.seq_len_kv = keep[1].data_ptr();
  p.q_offsets = keep[2].data_ptr();
  p.kv_offsets = keep[3].data_ptr();
  p.q_out_offsets = keep[4].data_ptr();
  p.stats_offsets = keep[5].data_ptr();
  return p;
}

void CheckCall(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
               const VarlenSequences& s, double dropout_p) {
  CheckTokens(q, "q", q);
  CheckTokens(k, "k", q);
  CheckTokens(v, "v", q);
  TORCH_CHECK(k.size(0) == v.size(0) && k.stride(0) == v.stride(0),
              "cuDNN attention: k and v must have the same tokens and row stride");
  TORCH_CHECK(dropout_p >= 0.0 && dropout_p < 1.0, "cuDNN attention: dropout_p must be in [0, 1)");
  TORCH_CHECK(s.cu_seqlens_q.numel() == s.cu_seqlens_kv.numel(),
              "cuDNN attention: q and k/v must have as many sequences");
  const int64_t rows = std::max(q.size(0), k.size(0)) + 1;
  const int64_t widest = std::max({q.stride(0), k.stride(0), q.size(1) * q.size(2)});
  TORCH_CHECK(rows * widest <= std::numeric_limits<int32_t>::max(),
              "cuDNN attention: too many tokens for int32 ragged offsets");
  TORCH_CHECK(at::cuda::getDeviceProperties(q.get_device())->major >= 9,
              "cuDNN attention: packed (ragged) layouts need a Hopper (sm90) or newer GPU");
}

// The dropout's seed and offset from the default CUDA generator, as an int64 [2] device tensor
// (filled on the stream: no host-to-device copy). The offset advances by one number per score of
// the graph's padded shape (rounded up to a multiple of 4, as the generator requires).
at::Tensor DrawDropoutRng(const internal::SdpaGraphKey& key, const at::Device& device) {
  auto* gen = at::get_generator_or_default<at::CUDAGeneratorImpl>(
      std::nullopt, at::cuda::detail::getDefaultCUDAGenerator(device.index()));
  const uint64_t scores = static_cast<uint64_t>(key.batch * key.heads) *
                          static_cast<uint64_t>(key.seqlen_q * key.seqlen_kv);
  at::PhiloxCudaState state;
  {
    const std::lock_guard<std::mutex> lock(gen->mutex_);
    state = gen->philox_cuda_state((scores + 3) / 4 * 4);
  }
  TORCH_CHECK(!state.captured_,
              "cuDNN attention: dropout under CUDA graph capture is not supported");
  at::Tensor rng = at::empty({2}, at::TensorOptions().dtype(at::kLong).device(device));
  rng.narrow(0, 0, 1).fill_(static_cast<int64_t>(state.seed_.val));
  rng.narrow(0, 1, 1).fill_(static_cast<int64_t>(state.offset_.val));
  return rng;
}

}  // namespace

CudnnAttentionForward CudnnVarlenAttention(const at::Tensor& q, const at::Tensor& k,
                                           const at::Tensor& v, const VarlenSequences& seqs,
                                           double dropout_p, bool save_stats) {
  CheckCall(q, k, v, seqs, dropout_p);
  CudnnAttentionForward r;
  r.out = at::empty({q.size(0), q.size(1), q.size(2)}, q.options());
  if (save_stats) r.stats = at::empty({q.size(0), q.size(1)}, q.options().dtype(at::kFloat));
  internal::SdpaGraphKey key = KeyFor(q, k, seqs, dropout_p, /*backward=*/false);
  key.stats = save_stats;
  if (dropout_p > 0.0) r.rng = DrawDropoutRng(key, q.device());
  if (q.size(0) == 0 || seqs.cu_seqlens_q.numel() <= 1) return r;
  if (k.size(0) == 0) {  // no keys anywhere: no softmax row has a term
    r.out.zero_();
    if (save_stats) r.stats.fill_(-std::numeric_limits<float>::infinity());
    return r;
  }
  const c10::cuda::CUDAGuard guard(q.device());
  std::vector<at::Tensor> keep;
  internal::SdpaPointers p = CommonPointers(q, k, v, seqs, key, keep);
  p.out = r.out.data_ptr();
  if (save_stats) p.stats = r.stats.data_ptr();
  if (dropout_p > 0.0) {
    p.seed = r.rng.data_ptr<int64_t>();
    p.offset = r.rng.data_ptr<int64_t>() + 1;
  }
  internal::RunCudnnSdpa(key, p);
  return r;
}

CudnnAttentionGrads CudnnVarlenAttentionBackward(const at::Tensor& d_out, const at::Tensor& q,
                                                 const at::Tensor& k, const at::Tensor& v,
                                                 const CudnnAttentionForward& fwd,
                                                 const VarlenSequences& seqs, double dropout_p) {
  CheckCall(q, k, v, seqs, dropout_p);
  TORCH_CHECK(fwd.stats.defined(), "cuDNN attention backward: the forward kept no statistics");
  TORCH_CHECK(dropout_p == 0.0 || fwd.rng.defined(),
              "cuDNN attention backward: dropout without the forward's seed and offset");
  TORCH_CHECK(d_out.sizes() == fwd.out.sizes(), "cuDNN attention backward: d_out is ",
              d_out.sizes(), ", the output ", fwd.out.sizes());
  CudnnAttentionGrads g = AllocateMirroredGradients(q, k, v);
  if (q.size(0) == 0 || k.size(0) == 0 || seqs.cu_seqlens_q.numel() <= 1) {
    g.dq.zero_();
    g.dk.zero_();
    g.dv.zero_();
    return g;
  }
  const c10::cuda::CUDAGuard guard(q.device());
  const at::Tensor d_o = d_out.to(at::kBFloat16).contiguous();
  const internal::SdpaGraphKey key = KeyFor(q, k, seqs, dropout_p, /*backward=*/true);
  std::vector<at::Tensor> keep;
  internal::SdpaPointers p = CommonPointers(q, k, v, seqs, key, keep);
  p.out = fwd.out.data_ptr();
  p.stats = fwd.stats.data_ptr();
  p.d_out = d_o.data_ptr();
  p.dq = g.dq.data_ptr();
  p.dk = g.dk.data_ptr();
  p.dv = g.dv.data_ptr();
  if (dropout_p > 0.0) {
    p.seed = fwd.rng.data_ptr<int64_t>();
    p.offset = fwd.rng.data_ptr<int64_t>() + 1;
  }
  internal::RunCudnnSdpa(key, p);
  return g;
}

#else  // !PADLESS_HAVE_CUDNN_ATTENTION

CudnnAttentionForward CudnnVarlenAttention(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                           const VarlenSequences&, double, bool) {
  TORCH_CHECK(false,
              "cuDNN attention: this build has none (configure with "
              "-DPADLESS_CUDNN_FRONTEND_DIR=...; see cmake/PadlessCudnnAttention.cmake)");
}

CudnnAttentionGrads CudnnVarlenAttentionBackward(const at::Tensor&, const at::Tensor&,
                                                 const at::Tensor&, const at::Tensor&,
                                                 const CudnnAttentionForward&,
                                                 const VarlenSequences&, double) {
  TORCH_CHECK(false,
              "cuDNN attention: this build has none (configure with "
              "-DPADLESS_CUDNN_FRONTEND_DIR=...; see cmake/PadlessCudnnAttention.cmake)");
}

#endif  // PADLESS_HAVE_CUDNN_ATTENTION

}  // namespace padless::cuda
