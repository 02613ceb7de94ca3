#include "padless/cuda/kernels/rotary.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include "src/op_util.h"
#ifdef PADLESS_HAVE_CUDA_KERNELS
#include "src/rotary_kernels.h"
#endif

namespace padless::cuda {
namespace {

void CheckArguments(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  TORCH_CHECK(x.defined() && x.dim() == 3 && at::isFloatingType(x.scalar_type()),
              "RotaryEmbedding: x must be a floating [T, heads, head_dim] tensor");
  TORCH_CHECK(x.size(2) % 2 == 0, "RotaryEmbedding: head_dim must be even, not ", x.size(2));
  for (const at::Tensor* t : {&cos, &sin}) {
    TORCH_CHECK(t->defined() && t->dim() == 2 && t->size(0) == x.size(0) &&
                    t->size(1) == x.size(2) && at::isFloatingType(t->scalar_type()),
                "RotaryEmbedding: cos and sin must be floating [T, head_dim] = [", x.size(0), ", ",
                x.size(2), "] tensors");
    TORCH_CHECK(t->device() == x.device(), "RotaryEmbedding: cos and sin must be on x's device");
  }
}

}  // namespace

at::Tensor RotaryEmbedding(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                           bool inverse) {
  CheckArguments(x, cos, sin);
#ifdef PADLESS_HAVE_CUDA_KERNELS
  const std::optional<internal::FloatType> type = internal::KernelFloatType(x.scalar_type());
  if (internal::UseKernel(x) && type.has_value()) {
    const c10::cuda::CUDAGuard guard(x.device());
    const int64_t head_dim = x.size(2);
    // The kernel reads each token's heads as one contiguous row; other layouts are copied once.
    const at::Tensor in = x.stride(2) == 1 && x.stride(1) == head_dim ? x : x.contiguous();
    const at::Tensor c = cos.to(at::kFloat).contiguous();
    const at::Tensor s = sin.to(at::kFloat).contiguous();
    at::Tensor out = at::empty(x.sizes(), x.options().memory_format(at::MemoryFormat::Contiguous));
    internal::CheckLaunch(internal::LaunchRotary(in.data_ptr(), in.stride(0), c.data_ptr<float>(),
                                                 s.data_ptr<float>(), out.data_ptr(), x.size(0),
                                                 x.size(1), head_dim, inverse, *type,
                                                 c10::cuda::getCurrentCUDAStream()),
                          "RotaryEmbedding");
    return out;
  }
#endif
  return reference::RotaryEmbedding(x, cos, sin, inverse);
}

namespace reference {

at::Tensor RotaryEmbedding(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                           bool inverse) {
  CheckArguments(x, cos, sin);
  // fp32 at least (transformers' precision), fp64 for fp64 x.
  const at::ScalarType compute = at::promote_types(x.scalar_type(), at::kFloat);
  const at::Tensor xf = x.to(compute);
  const int64_t half = x.size(-1) / 2;
  // rotate_half: (-x2, x1).
  const at::Tensor rotated = at::cat({-xf.narrow(-1, half, half), xf.narrow(-1, 0, half)}, -1);
  // The tables have no heads dimension: broadcast over it.
  const at::Tensor c = cos.unsqueeze(-2).to(compute);
  const at::Tensor s = sin.unsqueeze(-2).to(compute);
  return (xf * c + rotated * (inverse ? -s : s)).to(x.scalar_type()).contiguous();
}

}  // namespace reference

}  // namespace padless::cuda
