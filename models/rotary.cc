#include "padless/models/rotary.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include "padless/cuda/kernels/rotary.h"

namespace padless::models {
namespace {

// One pass forward and one backward (the inverse rotation of the gradient) instead of the ATen
// form's chain, whose autograd graph also keeps an fp32 copy of q and k per layer.
class RotaryFunction : public torch::autograd::Function<RotaryFunction> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x,
                            const at::Tensor& cos, const at::Tensor& sin) {
    ctx->save_for_backward({cos, sin});
    return cuda::RotaryEmbedding(x, cos, sin);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    return {cuda::RotaryEmbedding(grads[0], saved[0], saved[1], /*inverse=*/true), at::Tensor(),
            at::Tensor()};
  }
};

}  // namespace

RotaryTable BuildRotaryTable(const at::Tensor& positions, int64_t head_dim, double theta) {
  const at::TensorOptions fp32 = positions.options().dtype(at::kFloat);
  // As transformers: 1 / theta ** (arange(0, d, 2) / d), in fp32.
  const at::Tensor exponents = at::arange(0, head_dim, 2, fp32) / static_cast<double>(head_dim);
  const at::Tensor inv_freq = at::pow(at::scalar_tensor(theta, fp32), exponents).reciprocal();
  const at::Tensor freqs = positions.to(at::kFloat).unsqueeze(-1) * inv_freq;
  const at::Tensor angles = at::cat({freqs, freqs}, -1);
  return RotaryTable{angles.cos(), angles.sin()};
}

at::Tensor ApplyRotary(const at::Tensor& x, const RotaryTable& table) {
  // [tokens..., heads, head_dim] as [T, heads, head_dim] (a view for the layers' q and k).
  const int64_t head_dim = x.size(-1);
  const at::Tensor flat = x.reshape({-1, x.size(-2), head_dim});
  const at::Tensor rotated = RotaryFunction::apply(flat, table.cos.reshape({-1, head_dim}),
                                                   table.sin.reshape({-1, head_dim}));
  return rotated.view(x.sizes());
}

}  // namespace padless::models
