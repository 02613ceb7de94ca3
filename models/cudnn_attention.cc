#include "cudnn_attention.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/custom_function.h>

namespace padless::models::internal {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The forward keeps q, k, v (views: no copies), the output, the softmax statistics and the
// dropout's seed and offset; the backward hands them back to cuDNN.
class CudnnAttentionFunction : public torch::autograd::Function<CudnnAttentionFunction> {
 public:
  static at::Tensor forward(AutogradContext* actx, const at::Tensor& q, const at::Tensor& k,
                            const at::Tensor& v, const at::Tensor& cu_seqlens, int64_t max_seqlen,
                            double dropout_p) {
    const cuda::VarlenSequences s{cu_seqlens, cu_seqlens, max_seqlen, max_seqlen};
    cuda::CudnnAttentionForward f =
        cuda::CudnnVarlenAttention(q, k, v, s, dropout_p, /*save_stats=*/true);
    actx->save_for_backward({q, k, v, f.out, f.stats, f.rng, cu_seqlens});
    actx->saved_data["max_seqlen"] = max_seqlen;
    actx->saved_data["dropout_p"] = dropout_p;
    return f.out;
  }

  static variable_list backward(AutogradContext* actx, variable_list grad_out) {
    const variable_list saved = actx->get_saved_variables();
    const int64_t max_seqlen = actx->saved_data["max_seqlen"].toInt();
    const cuda::VarlenSequences s{saved[6], saved[6], max_seqlen, max_seqlen};
    const cuda::CudnnAttentionForward f{saved[3], saved[4], saved[5]};
    cuda::CudnnAttentionGrads g = cuda::CudnnVarlenAttentionBackward(
        grad_out[0], saved[0], saved[1], saved[2], f, s, actx->saved_data["dropout_p"].toDouble());
    return {g.dq, g.dk, g.dv, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

cuda::VarlenSequences SelfSequences(const AttentionContext& ctx) {
  return {ctx.cu_seqlens, ctx.cu_seqlens, ctx.max_seqlen, ctx.max_seqlen};
}

at::Tensor AttendCudnn(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                       const AttentionContext& ctx, double dropout_p) {
  // cuDNN's graphs are bf16; other dtypes are computed in bf16 (as AttendFlash does for fp32).
  const at::Tensor q16 = q.to(at::kBFloat16), k16 = k.to(at::kBFloat16), v16 = v.to(at::kBFloat16);
  const bool grad =
      at::GradMode::is_enabled() && (q.requires_grad() || k.requires_grad() || v.requires_grad());
  const at::Tensor out =
      grad ? CudnnAttentionFunction::apply(q16, k16, v16, ctx.cu_seqlens, ctx.max_seqlen, dropout_p)
           : cuda::CudnnVarlenAttention(q16, k16, v16, SelfSequences(ctx), dropout_p,
                                        /*save_stats=*/false)
                 .out;
  return out.to(q.scalar_type()).reshape({q.size(0), q.size(1) * q.size(2)});
}

at::Tensor FirstTokensCudnn(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            const AttentionContext& ctx) {
  const int64_t n = q.size(0);
  // Sequence i's one query is row i: cu_seqlens_q = 0, 1, ..., n.
  const cuda::VarlenSequences s{at::arange(n + 1, ctx.cu_seqlens.options()), ctx.cu_seqlens,
                                /*max_seqlen_q=*/1, ctx.max_seqlen};
  at::Tensor out = cuda::CudnnVarlenAttention(q.to(at::kBFloat16).contiguous(), k.to(at::kBFloat16),
                                              v.to(at::kBFloat16), s,
                                              /*dropout_p=*/0.0, /*save_stats=*/false)
                       .out;
  // A query without keys has no softmax: zeros, as the other backends give.
  const at::Tensor lengths = ctx.cu_seqlens.narrow(0, 1, n) - ctx.cu_seqlens.narrow(0, 0, n);
  out.masked_fill_((lengths == 0).view({n, 1, 1}), 0);
  return out.to(q.scalar_type()).reshape({n, q.size(1) * q.size(2)});
}

}  // namespace padless::models::internal
