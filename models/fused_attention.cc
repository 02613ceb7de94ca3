#include "fused_attention.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/autograd.h>

#include <tuple>

#include "cudnn_attention.h"
#include "fa3_attention.h"

namespace padless::models::internal {

namespace {

// kVarlenFa3's calls that FA3 runs (the others run FA2, as kVarlenFlash).
bool Fa3Call(const std::vector<at::Tensor>& qkv, const AttentionContext& ctx, double dropout_p) {
  return ctx.backend == AttentionBackend::kVarlenFa3 && RunsFa3(qkv[0], dropout_p);
}

}  // namespace

KeptAttention FusedAttentionForward(const std::vector<at::Tensor>& qkv, const AttentionContext& ctx,
                                    double dropout_p) {
  KeptAttention k;
  if (Fa3Call(qkv, ctx, dropout_p)) {
    cuda::Fa3Forward f = cuda::Fa3VarlenAttention(qkv[0], qkv[1], qkv[2],
                                                  Fa3Sequences(ctx.cu_seqlens, ctx.max_seqlen), {});
    k.attended = std::move(f.out);
    k.lse = std::move(f.lse);
    return k;
  }
  if (ctx.backend == AttentionBackend::kVarlenFlash ||
      ctx.backend == AttentionBackend::kVarlenFa3) {
    std::tie(k.attended, k.lse, k.rng, k.unused, std::ignore) =
        at::_flash_attention_forward(qkv[0], qkv[1], qkv[2], ctx.cu_seqlens, ctx.cu_seqlens,
                                     ctx.max_seqlen, ctx.max_seqlen, dropout_p,
                                     /*is_causal=*/false, /*return_debug_mask=*/false);
    return k;
  }
  if (ctx.backend == AttentionBackend::kVarlenCudnn) {
    cuda::CudnnAttentionForward f = cuda::CudnnVarlenAttention(
        qkv[0], qkv[1], qkv[2], SelfSequences(ctx), dropout_p, /*save_stats=*/true);
    k.attended = std::move(f.out);
    k.lse = std::move(f.stats);
    k.rng = std::move(f.rng);
    return k;
  }
  // The reference runs without dropout (FusedLayerSupported).
  k.attended = Attend(qkv[0], qkv[1], qkv[2], ctx, 0.0).view(qkv[0].sizes());
  return k;
}

std::array<at::Tensor, 3> FusedAttentionBackward(const at::Tensor& grad,
                                                 const std::vector<at::Tensor>& qkv,
                                                 const KeptAttention& kept,
                                                 const AttentionContext& ctx, double dropout_p) {
  std::array<at::Tensor, 3> d;
  if (Fa3Call(qkv, ctx, dropout_p)) {
    d = cuda::Fa3VarlenAttentionBackward(grad, qkv[0], qkv[1], qkv[2], {kept.attended, kept.lse},
                                         Fa3Sequences(ctx.cu_seqlens, ctx.max_seqlen), {});
  } else if (ctx.backend == AttentionBackend::kVarlenFlash ||
             ctx.backend == AttentionBackend::kVarlenFa3) {
    std::tie(d[0], d[1], d[2]) = at::_flash_attention_backward(
        grad, qkv[0], qkv[1], qkv[2], kept.attended, kept.lse, ctx.cu_seqlens, ctx.cu_seqlens,
        ctx.max_seqlen, ctx.max_seqlen, dropout_p, /*is_causal=*/false, kept.rng, kept.unused);
  } else if (ctx.backend == AttentionBackend::kVarlenCudnn) {
    const cuda::CudnnAttentionGrads g = cuda::CudnnVarlenAttentionBackward(
        grad, qkv[0], qkv[1], qkv[2], {kept.attended, kept.lse, kept.rng}, SelfSequences(ctx),
        dropout_p);
    d = {g.dq, g.dk, g.dv};
  } else {
    at::AutoGradMode grad_on(true);
    std::vector<at::Tensor> in;
    for (const at::Tensor& t : qkv) in.push_back(t.detach().requires_grad_(true));
    at::Tensor out = Attend(in[0], in[1], in[2], ctx, 0.0).view(grad.sizes());
    std::vector<at::Tensor> g = torch::autograd::grad({out}, in, {grad});
    for (int i = 0; i < 3; ++i) d[i] = g[i];
  }
  return d;
}

}  // namespace padless::models::internal
