#include "padless/cuda/kernels/fp8_rowwise.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <optional>
#include <utility>

#include "src/fp8_reference.h"
#include "src/op_util.h"

#ifdef PADLESS_HAVE_CUDA_KERNELS
#include <ATen/cuda/CUDAContext.h>

#include "src/fp8_rowwise_kernels.h"
#endif

namespace padless::cuda {
namespace {

thread_local bool g_last_quantize_kernel = false;
thread_local bool g_last_linear_fast = false;

void CheckQuantizeArgs(const at::Tensor& x, int64_t pad_rows_to) {
  constexpr const char* kOp = "Fp8QuantizeRows";
  TORCH_CHECK(x.defined(), kOp, ": x is undefined");
  TORCH_CHECK(x.dim() == 2, kOp, ": x must be 2-D [R, C], got shape ", x.sizes());
  TORCH_CHECK(at::isFloatingType(x.scalar_type()), kOp, ": x must be a floating-point tensor, got ",
              x.scalar_type());
  TORCH_CHECK(pad_rows_to >= 1, kOp, ": pad_rows_to must be >= 1, got ", pad_rows_to);
}

Fp8Rows ReferenceQuantize(const at::Tensor& x, RowActivation activation, int64_t pad_rows_to) {
  const at::Tensor v = internal::ActivateRows(x.to(at::kFloat), activation);
  at::Tensor magnitude = v.abs();
  magnitude.masked_fill_(at::isnan(magnitude), 0.0);  // amax ignores NaN, as the kernel's fmaxf
  const at::Tensor amax = x.size(0) == 0 ? at::zeros({0, 1}, magnitude.options())
                                         : std::get<0>(magnitude.max(1, /*keepdim=*/true));
  const at::Tensor scaled = at::logical_and(amax > 0, at::isfinite(amax));
  const at::Tensor one = at::ones_like(amax);
  // Divisions of tensors by tensors: ATen turns a division by a scalar into a multiplication by
  // its reciprocal (rounded differently), and the kernel divides.
  const at::Tensor max = at::full_like(amax, Fp8Max(Fp8Format::kE4M3));
  const at::Tensor scale = at::where(scaled, max / amax, one);
  const int64_t pad = internal::PaddedRows(x.size(0), pad_rows_to) - x.size(0);
  Fp8Rows q;
  q.rows = x.size(0);
  q.values = internal::SaturatingFp8Cast(at::constant_pad_nd(v * scale, {0, 0, 0, pad}));
  q.scale_inv = at::constant_pad_nd(at::where(scaled, amax / max, one), {0, 0, 0, pad}, 1.0);
  return q;
}

void CheckLinearArgs(const Fp8Rows& x, const Fp8Rows& weight, const at::Tensor& bias,
                     at::ScalarType out_dtype) {
  constexpr const char* kOp = "Fp8RowwiseLinear";
  internal::CheckFp8Operands(x, weight, kOp);
  TORCH_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == weight.rows), kOp,
              ": bias must be [N] with N = ", weight.rows);
  TORCH_CHECK(out_dtype == at::kFloat || out_dtype == at::kBFloat16 || out_dtype == at::kHalf, kOp,
              ": out_dtype must be fp32, bf16 or fp16, got ", out_dtype);
}

at::Tensor ReferenceLinear(const Fp8Rows& x, const Fp8Rows& weight, const at::Tensor& bias,
                           at::ScalarType out_dtype) {
  const at::Tensor a =
      x.values.narrow(0, 0, x.rows).to(at::kFloat) * x.scale_inv.narrow(0, 0, x.rows);
  const at::Tensor w = weight.values.narrow(0, 0, weight.rows).to(at::kFloat) *
                       weight.scale_inv.narrow(0, 0, weight.rows);
  const at::Tensor y = bias.defined() ? at::addmm(bias.to(at::kFloat), a, w.t()) : at::mm(a, w.t());
  return y.to(out_dtype);
}

#ifdef PADLESS_HAVE_CUDA_KERNELS
internal::RowActivationKind KernelActivation(RowActivation a) {
  switch (a) {
    case RowActivation::kGelu:
      return internal::RowActivationKind::kGelu;
    case RowActivation::kGeluTanh:
      return internal::RowActivationKind::kGeluTanh;
    case RowActivation::kRelu:
      return internal::RowActivationKind::kRelu;
    case RowActivation::kNone:
      break;
  }
  return internal::RowActivationKind::kNone;
}

std::optional<Fp8Rows> QuantizeKernel(const at::Tensor& x_in, RowActivation activation,
                                      int64_t pad_rows_to) {
  const std::optional<internal::FloatType> type = internal::KernelFloatType(x_in.scalar_type());
  if (!internal::UseKernel(x_in) || !type || !internal::Fp8QuantizeRowsSupported(x_in.size(1))) {
    return std::nullopt;
  }
  const at::Tensor x = x_in.contiguous();
  if (!internal::Aligned16({&x})) return std::nullopt;
  const c10::cuda::CUDAGuard guard(x.device());
  const int64_t padded_rows = internal::PaddedRows(x.size(0), pad_rows_to);
  Fp8Rows q;
  q.rows = x.size(0);
  q.values = at::empty({padded_rows, x.size(1)}, x.options().dtype(at::kFloat8_e4m3fn));
  q.scale_inv = at::empty({padded_rows, 1}, x.options().dtype(at::kFloat));
  internal::Fp8QuantizeRowsArgs args;
  args.x = x.data_ptr();
  args.out = static_cast<uint8_t*>(q.values.data_ptr());
  args.scale_inv = q.scale_inv.data_ptr<float>();
  args.rows = x.size(0);
  args.padded_rows = padded_rows;
  args.cols = x.size(1);
  args.type = *type;
  args.activation = KernelActivation(activation);
  internal::CheckLaunch(internal::LaunchFp8QuantizeRows(args, c10::cuda::getCurrentCUDAStream()),
                        "Fp8QuantizeRows");
  return q;
}

bool Fp8TensorCores(const c10::Device& device) {
  if (!device.is_cuda()) return false;
  const cudaDeviceProp* p = at::cuda::getDeviceProperties(device.index());
  return p->major > 8 || (p->major == 8 && p->minor >= 9);
}

// at::_scaled_mm's rowwise product: scale_a [M, 1], scale_b [1, N], a bf16 output (the only one
// its rowwise kernels write) and a bf16 bias, cast to out_dtype afterwards when that differs.
at::Tensor FastLinear(const Fp8Rows& x, const Fp8Rows& weight, const at::Tensor& bias,
                      at::ScalarType out_dtype) {
  const std::optional<at::Tensor> b =
      bias.defined() ? std::optional<at::Tensor>(bias.to(at::kBFloat16)) : std::nullopt;
  const at::Tensor y =
      at::_scaled_mm(x.values, weight.values.t(), x.scale_inv, weight.scale_inv.view({1, -1}), b,
                     std::nullopt, at::kBFloat16, /*use_fast_accum=*/true);
  const at::Tensor real = y.narrow(0, 0, x.rows);
  return out_dtype == at::kBFloat16 ? real : real.to(out_dtype);
}

// Beyond Fp8RowwiseLinearFast's weight sides: the activation's padded rows are a multiple of 16
// too (cuBLASLt wants every side so), and the weight has no padded rows.
bool FastLinearFits(const Fp8Rows& x, const Fp8Rows& weight) {
  return x.values.size(0) % 16 == 0 && weight.values.size(0) == weight.rows;
}

#endif  // PADLESS_HAVE_CUDA_KERNELS

Fp8Rows Quantize(const at::Tensor& x, RowActivation activation, int64_t pad_rows_to,
                 bool allow_kernel) {
  CheckQuantizeArgs(x, pad_rows_to);
  const at::NoGradGuard no_grad;
  g_last_quantize_kernel = false;
#ifdef PADLESS_HAVE_CUDA_KERNELS
  if (allow_kernel) {
    if (auto q = QuantizeKernel(x, activation, pad_rows_to)) {
      g_last_quantize_kernel = true;
      return *std::move(q);
    }
  }
#endif
  (void)allow_kernel;
  return ReferenceQuantize(x, activation, pad_rows_to);
}

at::Tensor Linear(const Fp8Rows& x, const Fp8Rows& weight, const at::Tensor& bias,
                  at::ScalarType out_dtype, bool allow_fast) {
  CheckLinearArgs(x, weight, bias, out_dtype);
  const at::NoGradGuard no_grad;
  g_last_linear_fast = false;
#ifdef PADLESS_HAVE_CUDA_KERNELS
  if (allow_fast && Fp8RowwiseLinearFast(weight, x.values.device()) && FastLinearFits(x, weight)) {
    g_last_linear_fast = true;
    return FastLinear(x, weight, bias, out_dtype);
  }
#endif
  (void)allow_fast;
  return ReferenceLinear(x, weight, bias, out_dtype);
}

}  // namespace

namespace internal {

at::Tensor ActivateRows(const at::Tensor& x, RowActivation activation) {
  switch (activation) {
    case RowActivation::kGelu:
      return at::gelu(x);
    case RowActivation::kGeluTanh:
      return at::gelu(x, "tanh");
    case RowActivation::kRelu:
      return at::relu(x);
    case RowActivation::kNone:
      break;
  }
  return x;
}

void CheckFp8Operands(const Fp8Rows& x, const Fp8Rows& weight, const char* op) {
  for (const auto& [r, name] : {std::pair{&x, "x"}, std::pair{&weight, "the weight"}}) {
    TORCH_CHECK(r->values.defined() && r->values.dim() == 2 &&
                    r->values.scalar_type() == at::kFloat8_e4m3fn,
                op, ": ", name, " must be Fp8Rows (2-D float8_e4m3fn)");
    TORCH_CHECK(r->scale_inv.defined() && r->scale_inv.dim() == 2 &&
                    r->scale_inv.size(0) == r->values.size(0) && r->scale_inv.size(1) == 1 &&
                    r->scale_inv.scalar_type() == at::kFloat,
                op, ": ", name, "'s scale_inv must be fp32 [R_pad, 1]");
    TORCH_CHECK(r->rows >= 0 && r->rows <= r->values.size(0), op, ": ", name,
                "'s rows out of range");
  }
  TORCH_CHECK(x.values.size(1) == weight.values.size(1), op, ": x has ", x.values.size(1),
              " columns but the weight ", weight.values.size(1));
  TORCH_CHECK(x.values.device() == weight.values.device(), op, ": x is on ", x.values.device(),
              " but the weight on ", weight.values.device());
}

}  // namespace internal

Fp8Rows Fp8QuantizeRows(const at::Tensor& x, RowActivation activation, int64_t pad_rows_to) {
  return Quantize(x, activation, pad_rows_to, /*allow_kernel=*/true);
}

at::Tensor Fp8RowwiseLinear(const Fp8Rows& x, const Fp8Rows& weight, const at::Tensor& bias,
                            at::ScalarType out_dtype) {
  return Linear(x, weight, bias, out_dtype, /*allow_fast=*/true);
}

bool Fp8RowwiseLinearFast(const Fp8Rows& weight, const c10::Device& device) {
#ifdef PADLESS_HAVE_CUDA_KERNELS
  return Fp8TensorCores(device) && weight.rows % 16 == 0 && weight.values.size(1) % 16 == 0;
#else
  (void)weight;
  (void)device;
  return false;
#endif
}

bool LastFp8QuantizeRowsRanKernel() { return g_last_quantize_kernel; }
bool LastFp8RowwiseLinearWasFast() { return g_last_linear_fast; }

namespace reference {

Fp8Rows Fp8QuantizeRows(const at::Tensor& x, RowActivation activation, int64_t pad_rows_to) {
  return Quantize(x, activation, pad_rows_to, /*allow_kernel=*/false);
}

at::Tensor Fp8RowwiseLinear(const Fp8Rows& x, const Fp8Rows& weight, const at::Tensor& bias,
                            at::ScalarType out_dtype) {
  return Linear(x, weight, bias, out_dtype, /*allow_fast=*/false);
}

}  // namespace reference
}  // namespace padless::cuda
