#include "fa3_attention.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/custom_function.h>

namespace padless::models::internal {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

cuda::AttentionWindow WindowOf(int64_t window) { return {window, window}; }

// The forward keeps q, k, v (views: no copies), the output and the log-sum-exp; the backward
// hands them back to FA3.
class Fa3AttentionFunction : public torch::autograd::Function<Fa3AttentionFunction> {
 public:
  static at::Tensor forward(AutogradContext* actx, const at::Tensor& q, const at::Tensor& k,
                            const at::Tensor& v, const at::Tensor& cu_seqlens, int64_t max_seqlen,
                            int64_t window) {
    const cuda::VarlenSequences s = Fa3Sequences(cu_seqlens, max_seqlen);
    cuda::Fa3Forward f = cuda::Fa3VarlenAttention(q, k, v, s, WindowOf(window));
    actx->save_for_backward({q, k, v, f.out, f.lse, s.cu_seqlens_q});
    actx->saved_data["max_seqlen"] = max_seqlen;
    actx->saved_data["window"] = window;
    return f.out;
  }

  static variable_list backward(AutogradContext* actx, variable_list grad_out) {
    const variable_list saved = actx->get_saved_variables();
    const cuda::VarlenSequences s = Fa3Sequences(saved[5], actx->saved_data["max_seqlen"].toInt());
    const std::array<at::Tensor, 3> d = cuda::Fa3VarlenAttentionBackward(
        grad_out[0].to(at::kBFloat16), saved[0], saved[1], saved[2], {saved[3], saved[4]}, s,
        WindowOf(actx->saved_data["window"].toInt()));
    return {d[0], d[1], d[2], at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

cuda::VarlenSequences Fa3Sequences(const at::Tensor& cu_seqlens, int64_t max_seqlen) {
  const at::Tensor cu = cu_seqlens.to(at::kInt).contiguous();
  return {cu, cu, max_seqlen, max_seqlen};
}

bool Fa3RunsCall(const c10::Device& device, at::ScalarType dtype, int64_t head_dim,
                 double dropout_p) {
  return dropout_p == 0.0 && head_dim == 64 &&
         (dtype == at::kBFloat16 || dtype == at::kFloat) && cuda::Fa3AttentionRunsOn(device);
}

bool RunsFa3(const at::Tensor& q, double dropout_p) {
  return Fa3RunsCall(q.device(), q.scalar_type(), q.size(-1), dropout_p);
}

at::Tensor AttendFa3(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     const AttentionContext& ctx, int64_t window) {
  const at::Tensor q16 = q.to(at::kBFloat16), k16 = k.to(at::kBFloat16), v16 = v.to(at::kBFloat16);
  const bool grad =
      at::GradMode::is_enabled() && (q.requires_grad() || k.requires_grad() || v.requires_grad());
  const at::Tensor out =
      grad ? Fa3AttentionFunction::apply(q16, k16, v16, ctx.cu_seqlens, ctx.max_seqlen, window)
           : cuda::Fa3VarlenAttention(q16, k16, v16, Fa3Sequences(ctx.cu_seqlens, ctx.max_seqlen),
                                      WindowOf(window))
                 .out;
  return out.to(q.scalar_type()).reshape({q.size(0), q.size(1) * q.size(2)});
}

at::Tensor FirstTokensFa3(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          const AttentionContext& ctx) {
  const int64_t n = q.size(0);
  const at::Tensor cu_kv = ctx.cu_seqlens.to(at::kInt).contiguous();
  // Sequence i's one query is row i: cu_seqlens_q = 0, 1, ..., n.
  const cuda::VarlenSequences s{at::arange(n + 1, cu_kv.options()), cu_kv, /*max_seqlen_q=*/1,
                                ctx.max_seqlen};
  at::Tensor out = cuda::Fa3VarlenAttention(q.to(at::kBFloat16).contiguous(), k.to(at::kBFloat16),
                                            v.to(at::kBFloat16), s, {})
                       .out;
  // A query without keys has no softmax: zeros, as the other backends give.
  const at::Tensor lengths = cu_kv.narrow(0, 1, n) - cu_kv.narrow(0, 0, n);
  out.masked_fill_((lengths == 0).view({n, 1, 1}), 0);
  return out.to(q.scalar_type()).reshape({n, q.size(1) * q.size(2)});
}

}  // namespace padless::models::internal
