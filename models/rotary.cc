#include "padless/models/rotary.h"

#include <ATen/ATen.h>

namespace padless::models {

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
  // fp32 at least (transformers' precision), fp64 for fp64 models.
  const at::ScalarType compute = at::promote_types(x.scalar_type(), at::kFloat);
  const at::Tensor xf = x.to(compute);
  const int64_t half = x.size(-1) / 2;
  // rotate_half: (-x2, x1).
  const at::Tensor rotated = at::cat({-xf.narrow(-1, half, half), xf.narrow(-1, 0, half)}, -1);
  // The table has no heads dimension: broadcast over it.
  const at::Tensor cos = table.cos.unsqueeze(-2).to(compute);
  const at::Tensor sin = table.sin.unsqueeze(-2).to(compute);
  return (xf * cos + rotated * sin).to(x.scalar_type());
}

}  // namespace padless::models
