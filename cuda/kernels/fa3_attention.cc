#include "padless/cuda/kernels/fa3_attention.h"

#include <ATen/ATen.h>

#ifdef PADLESS_HAVE_FA3_ATTENTION
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>

#include "flash.h"  // FA3's Flash_fwd_params / Flash_bwd_params (PADLESS_FA3_DIR/include)

// The library's entry points (cuda/fa3/*.cu, compiled by scripts/build_fa3.sh): only the varlen,
// non-causal, global-or-windowed, bf16 head-dim-64 kernels, so params must ask for nothing else.
namespace padless::cuda::fa3 {
void RunFwdVarlenHdim64Bf16(Flash_fwd_params& params, cudaStream_t stream);
void RunBwdVarlenHdim64Bf16(Flash_bwd_params& params, cudaStream_t stream);
}  // namespace padless::cuda::fa3
#endif

namespace padless::cuda {

bool Fa3AttentionBuilt() {
#ifdef PADLESS_HAVE_FA3_ATTENTION
  return true;
#else
  return false;
#endif
}

bool Fa3AttentionRunsOn(const c10::Device& device) {
#ifdef PADLESS_HAVE_FA3_ATTENTION
  if (!device.is_cuda()) return false;
  const cudaDeviceProp* p = at::cuda::getDeviceProperties(
      device.has_index() ? device.index() : at::cuda::current_device());
  return p->major == 9 && p->minor == 0;
#else
  (void)device;
  return false;
#endif
}

#ifdef PADLESS_HAVE_FA3_ATTENTION
namespace {

constexpr int kHeadDim = 64;
constexpr int kBlock = 128;  // the hdim-64 kernels' query and key tiles (FA3's tile_size.h)

int64_t RoundUp(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

void CheckTokens(const at::Tensor& t, const char* name, const at::Tensor& q) {
  TORCH_CHECK(t.dim() == 3 && t.size(2) == kHeadDim, "FA3 attention: ", name,
              " must be [tokens, heads, 64], not ", t.sizes());
  TORCH_CHECK(t.is_cuda() && t.device() == q.device(), "FA3 attention: ", name,
              " must be on q's CUDA device");
  TORCH_CHECK(t.scalar_type() == at::kBFloat16, "FA3 attention: ", name, " must be bf16, not ",
              t.scalar_type());
  TORCH_CHECK(t.size(1) == q.size(1), "FA3 attention: ", name, " has ", t.size(1), " heads, q ",
              q.size(1));
  TORCH_CHECK(t.stride(2) == 1 && t.stride(1) == kHeadDim && t.stride(0) % 8 == 0,
              "FA3 attention: ", name,
              " needs contiguous heads x 64 rows with a row stride in multiples of 8");
  TORCH_CHECK(reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0, "FA3 attention: ", name,
              " must start 16-byte aligned (TMA)");
}

void CheckCall(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
               const VarlenSequences& s) {
  CheckTokens(q, "q", q);
  CheckTokens(k, "k", q);
  CheckTokens(v, "v", q);
  TORCH_CHECK(k.size(0) == v.size(0), "FA3 attention: k and v must have the same tokens");
  const cudaDeviceProp* prop = at::cuda::getDeviceProperties(q.get_device());
  TORCH_CHECK(prop->major == 9 && prop->minor == 0,
              "FA3 attention: its kernels are built for sm90 (Hopper), not sm", prop->major,
              prop->minor);
  for (const at::Tensor* cu : {&s.cu_seqlens_q, &s.cu_seqlens_kv}) {
    TORCH_CHECK(cu->dim() == 1 && cu->scalar_type() == at::kInt && cu->is_contiguous() &&
                    cu->device() == q.device(),
                "FA3 attention: cu_seqlens must be contiguous int32 on q's device");
  }
  TORCH_CHECK(s.cu_seqlens_q.numel() == s.cu_seqlens_kv.numel() && s.cu_seqlens_q.numel() >= 1,
              "FA3 attention: q and k/v need the same number of sequences");
}

// flash_api.cpp's set_params_fprop for the varlen call padless makes: no dropout, no softcap, no
// paging, one split, MHA. Windows as mha_fwd normalizes them: a side at least the longest
// sequence is no bound.
void FillForward(Flash_fwd_params& p, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                 const at::Tensor& out, const at::Tensor& lse, const VarlenSequences& s,
                 AttentionWindow window) {
  p = {};
  p.is_bf16 = true;
  p.q_ptr = q.data_ptr();
  p.k_ptr = k.data_ptr();
  p.v_ptr = v.data_ptr();
  p.o_ptr = out.data_ptr();
  p.q_row_stride = q.stride(0);
  p.k_row_stride = k.stride(0);
  p.v_row_stride = v.stride(0);
  p.o_row_stride = out.stride(0);
  p.q_head_stride = p.k_head_stride = p.v_head_stride = p.o_head_stride = kHeadDim;
  p.v_dim_stride = 1;
  p.cu_seqlens_q = s.cu_seqlens_q.data_ptr<int>();
  p.cu_seqlens_k = s.cu_seqlens_kv.data_ptr<int>();
  p.softmax_lse_ptr = lse.data_ptr();
  p.b = p.b_k = static_cast<int>(s.cu_seqlens_q.numel() - 1);
  p.h = p.h_k = static_cast<int>(q.size(1));
  p.seqlen_q = static_cast<int>(std::max<int64_t>(s.max_seqlen_q, 1));
  p.seqlen_k = static_cast<int>(std::max<int64_t>(s.max_seqlen_kv, 1));
  p.seqlen_q_rounded = static_cast<int>(RoundUp(p.seqlen_q, kBlock));
  p.seqlen_k_rounded = static_cast<int>(RoundUp(p.seqlen_k, kBlock));
  p.total_q = static_cast<int>(q.size(0));
  p.total_k = static_cast<int>(k.size(0));
  p.d = p.d_rounded = p.dv = p.dv_rounded = kHeadDim;
  p.scale_softmax = static_cast<float>(1.0 / std::sqrt(static_cast<double>(kHeadDim)));
  p.p_dropout = 1.f;  // the probability of keeping: FA3 has no dropout
  p.rp_dropout = 1.f;
  int left = window.left >= p.seqlen_k - 1 ? -1 : static_cast<int>(window.left);
  int right = window.right >= p.seqlen_q - 1 ? -1 : static_cast<int>(window.right);
  p.is_local = left >= 0 || right >= 0;
  // Only the non-causal kernels are built: a window of (none, 0) would be causal.
  TORCH_CHECK(!(left < 0 && right == 0), "FA3 attention: causal windows are not built");
  p.window_size_left = left < 0 ? p.seqlen_k - 1 : left;
  p.window_size_right = right < 0 ? p.seqlen_q - 1 : right;
  const cudaDeviceProp* prop = at::cuda::getDeviceProperties(q.get_device());
  p.arch = prop->major * 10 + prop->minor;
  p.num_sm = prop->multiProcessorCount;
  p.num_splits = 1;
  p.page_size = 1;
}

// The varlen tile scheduler's metadata, as mha_fwd lays it out (every call recomputes it with
// prepare_varlen_num_blocks, which also zeroes the semaphore): per sequence the split count, the
// query tiles, then the sort order (global) or the heads kept in L2 (windowed), then the
// semaphore.
at::Tensor SchedulerMetadata(Flash_fwd_params& p, const at::Tensor& q) {
  const int b_rounded = static_cast<int>(RoundUp(p.b, 4));  // 16-byte aligned vectors
  p.varlen_sort_batches = !p.is_local;
  p.head_swizzle = p.is_local;
  p.prepare_varlen_pdl = p.b <= 992;  // one CTA prepares up to 992 sequences (flash_api.cpp)
  const int vectors = 3;              // splits, query tiles, and sort order or heads in L2
  at::Tensor meta = at::empty({b_rounded * vectors + 1}, q.options().dtype(at::kInt));
  int* base = meta.data_ptr<int>();
  p.num_splits_dynamic_ptr = base;
  p.num_m_blocks_ptr = base + b_rounded;
  p.varlen_batch_idx_ptr = p.varlen_sort_batches ? base + 2 * b_rounded : nullptr;
  p.num_nheads_in_l2_ptr = p.head_swizzle ? base + 2 * b_rounded : nullptr;
  p.tile_count_semaphore = base + vectors * b_rounded;
  p.tile_count_semaphore_offset = vectors * b_rounded;
  return meta;
}

// FA3's launch code throws std::runtime_error on a CUDA or CUTLASS error (cuda/fa3/
// cuda_check_throws.h, where FA3 itself would exit): reported as every other kernel failure is.
template <typename Body>
void LaunchFa3(const char* pass, Body launch) {
  try {
    launch();
  } catch (const std::runtime_error& e) {
    TORCH_CHECK(false, "FA3 attention ", pass, ": ", e.what());
  }
}

}  // namespace

Fa3Forward Fa3VarlenAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                              const VarlenSequences& seqs, AttentionWindow window) {
  CheckCall(q, k, v, seqs);
  const c10::cuda::CUDAGuard guard(q.device());
  Fa3Forward f;
  f.out = at::empty({q.size(0), q.size(1), kHeadDim}, q.options());
  f.lse = at::empty({q.size(1), q.size(0)}, q.options().dtype(at::kFloat));
  if (q.size(0) == 0) return f;
  if (k.size(0) == 0) {  // no keys anywhere: no softmax, zeros as the other backends give
    f.out.zero_();
    f.lse.fill_(std::numeric_limits<float>::infinity());
    return f;
  }
  Flash_fwd_params p;
  FillForward(p, q, k, v, f.out, f.lse, seqs, window);
  const at::Tensor meta = SchedulerMetadata(p, q);
  LaunchFa3("forward",
            [&] { fa3::RunFwdVarlenHdim64Bf16(p, at::cuda::getCurrentCUDAStream().stream()); });
  return f;
}

std::array<at::Tensor, 3> Fa3VarlenAttentionBackward(const at::Tensor& d_out, const at::Tensor& q,
                                                     const at::Tensor& k, const at::Tensor& v,
                                                     const Fa3Forward& fwd,
                                                     const VarlenSequences& seqs,
                                                     AttentionWindow window) {
  CheckCall(q, k, v, seqs);
  TORCH_CHECK(d_out.sizes() == fwd.out.sizes() && d_out.scalar_type() == at::kBFloat16,
              "FA3 attention: d_out must be bf16 shaped as the forward's output");
  const c10::cuda::CUDAGuard guard(q.device());
  const CudnnAttentionGrads g = AllocateMirroredGradients(q, k, v);
  if (q.size(0) == 0 || k.size(0) == 0) {
    g.dq.zero_();
    g.dk.zero_();
    g.dv.zero_();
    return {g.dq, g.dk, g.dv};
  }
  const at::Tensor grad =
      d_out.stride(2) == 1 && d_out.stride(1) == kHeadDim ? d_out : d_out.contiguous();
  Flash_bwd_params p;
  FillForward(p, q, k, v, fwd.out, fwd.lse, seqs, window);
  p.do_ptr = grad.data_ptr();
  p.do_row_stride = grad.stride(0);
  p.do_head_stride = kHeadDim;
  p.dq_ptr = g.dq.data_ptr();
  p.dk_ptr = g.dk.data_ptr();
  p.dv_ptr = g.dv.data_ptr();
  p.dq_row_stride = g.dq.stride(0);
  p.dk_row_stride = g.dk.stride(0);
  p.dv_row_stride = g.dv.stride(0);
  p.dq_head_stride = p.dk_head_stride = p.dv_head_stride = kHeadDim;
  // Scratch as mha_bwd sizes it for varlen: every sequence padded to whole query tiles.
  const int64_t heads = q.size(1), batch = p.b;
  const int64_t tokens_q = RoundUp(q.size(0) + batch * kBlock, kBlock);
  const at::TensorOptions f32 = q.options().dtype(at::kFloat);
  const at::Tensor dq_accum = at::empty({heads, tokens_q * kHeadDim}, f32);
  const at::Tensor softmax_d = at::empty({heads, tokens_q}, f32);
  const at::Tensor lse_log2 = at::empty({heads, tokens_q}, f32);
  const at::Tensor dq_semaphore =
      at::empty({(p.seqlen_q + kBlock - 1) / kBlock, batch, heads}, q.options().dtype(at::kInt));
  p.dq_accum_ptr = dq_accum.data_ptr();
  p.dsoftmax_sum = softmax_d.data_ptr();
  p.softmax_lse_log2_ptr = lse_log2.data_ptr();
  p.dq_semaphore = dq_semaphore.data_ptr<int>();  // zeroed by the backward's preprocess kernel
  LaunchFa3("backward",
            [&] { fa3::RunBwdVarlenHdim64Bf16(p, at::cuda::getCurrentCUDAStream().stream()); });
  return {g.dq, g.dk, g.dv};
}

#else  // !PADLESS_HAVE_FA3_ATTENTION

Fa3Forward Fa3VarlenAttention(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                              const VarlenSequences&, AttentionWindow) {
  TORCH_CHECK(false, "FA3 attention is not built (PADLESS_FA3_ATTENTION; scripts/build_fa3.sh)");
}

std::array<at::Tensor, 3> Fa3VarlenAttentionBackward(const at::Tensor&, const at::Tensor&,
                                                     const at::Tensor&, const at::Tensor&,
                                                     const Fa3Forward&, const VarlenSequences&,
                                                     AttentionWindow) {
  TORCH_CHECK(false, "FA3 attention is not built (PADLESS_FA3_ATTENTION; scripts/build_fa3.sh)");
}

#endif  // PADLESS_HAVE_FA3_ATTENTION

}  // namespace padless::cuda
