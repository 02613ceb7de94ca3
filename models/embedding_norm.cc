#include "padless/models/embedding_norm.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include "padless/cuda/kernels/residual_layer_norm.h"

namespace padless::models {
namespace {

// The fused kernels' sublayer epilogue, residual + dropout(input), with no dropout: input = a,
// residual = b, so their sum is the LayerNorm's input and its gradient is both a's and b's.
class FusedSumLayerNorm : public torch::autograd::Function<FusedSumLayerNorm> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* actx, const at::Tensor& a,
                            const at::Tensor& b, const at::Tensor& gamma, const at::Tensor& beta,
                            double eps) {
    const int64_t hidden = a.size(-1);
    const cuda::DropoutResidualLayerNormResult r = cuda::DropoutResidualLayerNorm(
        a.reshape({-1, hidden}).contiguous(), /*bias=*/at::Tensor(),
        b.reshape({-1, hidden}).contiguous(), gamma, beta, /*p=*/0.0, eps);
    actx->save_for_backward({r.sum, r.mean, r.rstd, gamma});
    return r.out.view(a.sizes());
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* actx,
                                                 torch::autograd::variable_list grad_outputs) {
    const torch::autograd::variable_list saved = actx->get_saved_variables();
    const at::Tensor& sum = saved[0];
    const at::Tensor& gamma = saved[3];
    const at::Tensor d_out =
        grad_outputs[0].reshape({-1, sum.size(1)}).to(sum.scalar_type()).contiguous();
    const cuda::DropoutResidualLayerNormGrads g = cuda::DropoutResidualLayerNormBackward(
        d_out, /*extra=*/at::Tensor(), sum, saved[1], saved[2], gamma, /*mask=*/at::Tensor(),
        /*p=*/0.0, /*need_bias_grad=*/false);
    const at::Tensor d_sum = g.d_sum.view(grad_outputs[0].sizes());
    return {d_sum, d_sum, g.d_gamma.to(gamma.scalar_type()), g.d_beta.to(gamma.scalar_type()),
            at::Tensor()};
  }
};

}  // namespace

at::Tensor SumLayerNorm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& gamma,
                        const at::Tensor& beta, double eps) {
  // Other dtypes keep at::layer_norm's autocast behaviour (an fp32 result from half rows).
  const bool fused = a.is_cuda() && a.scalar_type() == at::kFloat &&
                     b.scalar_type() == at::kFloat && a.sizes() == b.sizes() && gamma.defined() &&
                     beta.defined();
  if (!fused) return at::layer_norm(a + b, {a.size(-1)}, gamma, beta, eps);
  return FusedSumLayerNorm::apply(a, b, gamma, beta, eps);
}

}  // namespace padless::models
