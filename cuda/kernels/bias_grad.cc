#include "padless/cuda/kernels/bias_grad.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <optional>
#include <utility>

#include "src/op_util.h"

#ifdef PADLESS_HAVE_CUDA_KERNELS
#include "src/bias_grad_kernels.h"
#endif

namespace padless::cuda {
namespace {

thread_local bool g_last_bias_grad_kernel = false;

using internal::Is16BitFloat;

// The gradients: [T, N] of any floating type (internal::CheckRows).
constexpr internal::RowsSpec kGradRows = {
    "[T, N]", [](at::ScalarType type) { return at::isFloatingType(type); },
    "a floating-point tensor"};

// The column sums of a written gradient, as the kernels give them.
at::Tensor ColumnSums(const at::Tensor& grad) {
  return at::sum(grad, {0}, false,
                 Is16BitFloat(grad.scalar_type()) ? at::kFloat : grad.scalar_type());
}

// The reference's result from the gradient as written: its column sums, then its FP8 rows.
GradWithBiasGrad Finish(at::Tensor grad, bool need_bias_grad, const Fp8GradOutput* fp8) {
  GradWithBiasGrad r;
  if (need_bias_grad) r.bias_grad = ColumnSums(grad);
  if (fp8 == nullptr) {
    r.grad = std::move(grad);
    return r;
  }
  r.grad = QuantizeGradOutput(grad, *fp8);
  return r;
}

GradWithBiasGrad ReferenceGelu(const at::Tensor& dy, const at::Tensor& pre, bool need_bias_grad,
                               const Fp8GradOutput* fp8) {
  return Finish(at::gelu_backward(dy, pre, "tanh").contiguous(), need_bias_grad, fp8);
}

GradWithBiasGrad ReferenceStack(const at::Tensor& dq, const at::Tensor& dk, const at::Tensor& dv,
                                bool need_bias_grad, const Fp8GradOutput* fp8) {
  return Finish(at::cat({dq, dk, dv}, 1), need_bias_grad, fp8);
}

#ifdef PADLESS_HAVE_CUDA_KERNELS
std::optional<internal::FloatType> KernelType(const at::Tensor& t, int64_t width) {
  if (!internal::UseKernel(t) || !Is16BitFloat(t.scalar_type())) return std::nullopt;
  const internal::FloatType type = t.scalar_type() == at::kBFloat16 ? internal::FloatType::kBFloat16
                                                                    : internal::FloatType::kFloat16;
  if (!internal::BiasGradSupported(width, type)) return std::nullopt;
  return type;
}

// The output [rows, cols] and, when asked for, the partials and the fp32 bias gradient.
struct KernelOutputs {
  GradWithBiasGrad result;
  at::Tensor partials;
  internal::BiasGradOutput args;
};

KernelOutputs MakeOutputs(const at::Tensor& like, int64_t cols, internal::FloatType type,
                          bool need_bias_grad, const Fp8GradOutput* fp8) {
  KernelOutputs o;
  const int64_t rows = like.size(0);
  if (fp8 == nullptr) {
    o.result.grad = at::empty({rows, cols}, like.options());
  } else {
    internal::Fp8GradRows f = internal::MakeFp8GradRows(*fp8, like, rows, cols);
    o.result.grad = std::move(f.rows);
    o.args.fp8 = f.args;
  }
  o.args.out = o.result.grad.data_ptr();
  o.args.rows = rows;
  o.args.cols = cols;
  o.args.type = type;
  if (need_bias_grad) {
    const auto float_opts = like.options().dtype(at::kFloat);
    o.partials = at::empty({internal::BiasGradBlocks(rows), cols}, float_opts);
    o.result.bias_grad = at::empty({cols}, float_opts);
    o.args.partials = o.partials.data_ptr<float>();
    o.args.bias_grad = o.result.bias_grad.data_ptr<float>();
  }
  return o;
}

std::optional<GradWithBiasGrad> GeluKernel(const at::Tensor& dy_in, const at::Tensor& pre_in,
                                           bool need_bias_grad, const Fp8GradOutput* fp8) {
  const std::optional<internal::FloatType> type = KernelType(dy_in, dy_in.size(1));
  if (!type) return std::nullopt;
  const at::Tensor dy = dy_in.contiguous(), pre = pre_in.contiguous();
  if (!internal::Aligned16({&dy, &pre})) return std::nullopt;
  const c10::cuda::CUDAGuard guard(dy.device());
  KernelOutputs o = MakeOutputs(dy, dy.size(1), *type, need_bias_grad, fp8);
  internal::CheckLaunch(internal::LaunchGeluTanhBackward(dy.data_ptr(), pre.data_ptr(), o.args,
                                                         c10::cuda::getCurrentCUDAStream()),
                        "GeluTanhBackwardWithBiasGrad");
  return o.result;
}

std::optional<GradWithBiasGrad> StackKernel(const at::Tensor& dq_in, const at::Tensor& dk_in,
                                            const at::Tensor& dv_in, bool need_bias_grad,
                                            const Fp8GradOutput* fp8) {
  const std::optional<internal::FloatType> type = KernelType(dq_in, dq_in.size(1));
  if (!type) return std::nullopt;
  const at::Tensor dq = dq_in.contiguous(), dk = dk_in.contiguous(), dv = dv_in.contiguous();
  if (!internal::Aligned16({&dq, &dk, &dv})) return std::nullopt;
  const c10::cuda::CUDAGuard guard(dq.device());
  KernelOutputs o = MakeOutputs(dq, 3 * dq.size(1), *type, need_bias_grad, fp8);
  internal::CheckLaunch(internal::LaunchStack3(dq.data_ptr(), dk.data_ptr(), dv.data_ptr(), o.args,
                                               c10::cuda::getCurrentCUDAStream()),
                        "StackWithBiasGrad");
  return o.result;
}
#else
// Without the kernels built, every input takes the reference path.
std::optional<GradWithBiasGrad> GeluKernel(const at::Tensor&, const at::Tensor&, bool,
                                           const Fp8GradOutput*) {
  return std::nullopt;
}

std::optional<GradWithBiasGrad> StackKernel(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                            bool, const Fp8GradOutput*) {
  return std::nullopt;
}
#endif  // PADLESS_HAVE_CUDA_KERNELS

// The kernel when allowed and it takes the input (`kernel` returns nullopt where it does not),
// else `reference`; records which ran for LastBiasGradRanKernel().
template <typename Kernel, typename Reference>
GradWithBiasGrad Dispatch(bool allow_kernel, const Kernel& kernel, const Reference& reference) {
  const at::NoGradGuard no_grad;
  g_last_bias_grad_kernel = false;
  if (allow_kernel) {
    if (std::optional<GradWithBiasGrad> r = kernel()) {
      g_last_bias_grad_kernel = true;
      return *std::move(r);
    }
  }
  return reference();
}

GradWithBiasGrad Gelu(const at::Tensor& dy, const at::Tensor& pre, bool need_bias_grad,
                      const Fp8GradOutput* fp8, bool allow_kernel) {
  const char* kOp = "GeluTanhBackwardWithBiasGrad";
  internal::CheckRows(dy, "dy", dy, kGradRows, kOp);
  internal::CheckRows(pre, "pre", dy, kGradRows, kOp);
  CheckFp8GradOutput(fp8, dy, kOp);
  return Dispatch(
      allow_kernel, [&] { return GeluKernel(dy, pre, need_bias_grad, fp8); },
      [&] { return ReferenceGelu(dy, pre, need_bias_grad, fp8); });
}

// The [T, 3N] buffer whose column thirds dq, dk, dv are, if they are: FA3 and cuDNN write the
// gradients in their inputs' layout, which for the fused layer is the QKV projection's.
std::optional<at::Tensor> ThirdsOfOneBuffer(const at::Tensor& dq, const at::Tensor& dk,
                                            const at::Tensor& dv) {
  const int64_t n = dq.size(1);
  const auto third = [&](const at::Tensor& t, int64_t i) {
    return t.sizes() == dq.sizes() && t.scalar_type() == dq.scalar_type() && t.stride(0) == 3 * n &&
           t.stride(1) == 1 && t.is_alias_of(dq) &&
           t.storage_offset() == dq.storage_offset() + i * n;
  };
  if (n == 0 || dq.size(0) == 0 || !third(dq, 0) || !third(dk, 1) || !third(dv, 2)) {
    return std::nullopt;
  }
  return dq.as_strided({dq.size(0), 3 * n}, {3 * n, 1});
}

GradWithBiasGrad Stack(const at::Tensor& dq, const at::Tensor& dk, const at::Tensor& dv,
                       bool need_bias_grad, const Fp8GradOutput* fp8, bool allow_kernel) {
  const char* kOp = "StackWithBiasGrad";
  internal::CheckRows(dq, "dq", dq, kGradRows, kOp);
  internal::CheckRows(dk, "dk", dq, kGradRows, kOp);
  internal::CheckRows(dv, "dv", dq, kGradRows, kOp);
  CheckFp8GradOutput(fp8, dq, kOp);
  // Already stacked: the buffer itself and its column sums. The kernel would copy each third out
  // and stack them again (1.2 ms of a 25 ms BERT-base training step with FA3 on an H100).
  if (allow_kernel && fp8 == nullptr) {
    if (std::optional<at::Tensor> whole = ThirdsOfOneBuffer(dq, dk, dv)) {
      const at::NoGradGuard no_grad;
      g_last_bias_grad_kernel = false;
      return Finish(*std::move(whole), need_bias_grad, nullptr);
    }
  }
  return Dispatch(
      allow_kernel, [&] { return StackKernel(dq, dk, dv, need_bias_grad, fp8); },
      [&] { return ReferenceStack(dq, dk, dv, need_bias_grad, fp8); });
}

}  // namespace

GradWithBiasGrad GeluTanhBackwardWithBiasGrad(const at::Tensor& dy, const at::Tensor& pre,
                                              bool need_bias_grad, const Fp8GradOutput* fp8) {
  return Gelu(dy, pre, need_bias_grad, fp8, /*allow_kernel=*/true);
}

GradWithBiasGrad StackWithBiasGrad(const at::Tensor& dq, const at::Tensor& dk, const at::Tensor& dv,
                                   bool need_bias_grad, const Fp8GradOutput* fp8) {
  return Stack(dq, dk, dv, need_bias_grad, fp8, /*allow_kernel=*/true);
}

bool LastBiasGradRanKernel() { return g_last_bias_grad_kernel; }

namespace reference {

GradWithBiasGrad GeluTanhBackwardWithBiasGrad(const at::Tensor& dy, const at::Tensor& pre,
                                              bool need_bias_grad, const Fp8GradOutput* fp8) {
  return Gelu(dy, pre, need_bias_grad, fp8, /*allow_kernel=*/false);
}

GradWithBiasGrad StackWithBiasGrad(const at::Tensor& dq, const at::Tensor& dk, const at::Tensor& dv,
                                   bool need_bias_grad, const Fp8GradOutput* fp8) {
  return Stack(dq, dk, dv, need_bias_grad, fp8, /*allow_kernel=*/false);
}

}  // namespace reference
}  // namespace padless::cuda
