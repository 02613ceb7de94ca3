#include "padless/cuda/kernels/fp8_quantize.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <optional>

#include "src/fp8_reference.h"
#include "src/op_util.h"

#ifdef PADLESS_HAVE_CUDA_KERNELS
#include "src/fp8_quantize_kernels.h"
#endif

namespace padless::cuda {
namespace {

constexpr const char* kOp = "Fp8Quantize";

thread_local bool g_last_kernel = false;

// One fp32 element on x's device: the scale, or the amax.
void CheckOneFloat(const at::Tensor& t, const char* name, const at::Tensor& x) {
  TORCH_CHECK(t.defined(), kOp, ": ", name, " is undefined");
  TORCH_CHECK(t.scalar_type() == at::kFloat, kOp, ": ", name, " must be fp32, got ",
              t.scalar_type());
  TORCH_CHECK(t.numel() == 1, kOp, ": ", name, " must have exactly one element, got shape ",
              t.sizes());
  TORCH_CHECK(t.device() == x.device(), kOp, ": ", name, " is on ", t.device(),
              " but x is on ", x.device());
}

void CheckArgs(const at::Tensor& x, const at::Tensor& scale, const Fp8QuantizeOptions& options,
               const at::Tensor& amax) {
  TORCH_CHECK(x.defined(), kOp, ": x is undefined");
  TORCH_CHECK(x.dim() == 2, kOp, ": x must be 2-D [R, C], got shape ", x.sizes());
  TORCH_CHECK(at::isFloatingType(x.scalar_type()), kOp,
              ": x must be a floating-point tensor, got ", x.scalar_type());
  CheckOneFloat(scale, "scale", x);
  if (amax.defined()) CheckOneFloat(amax, "amax", x);
  TORCH_CHECK(options.pad_rows_to >= 1, kOp, ": pad_rows_to must be >= 1, got ",
              options.pad_rows_to);
  TORCH_CHECK(options.rows || options.transposed, kOp,
              ": neither rows nor transposed is asked for");
}

// amax = max(amax, max |x|) with the NaN elements left out (at::max would return NaN).
void RecordAmax(const at::Tensor& x, const at::Tensor& amax) {
  if (x.numel() == 0) return;  // the max of nothing leaves amax as it is
  at::Tensor a = x.abs().to(at::kFloat);
  a.masked_fill_(at::isnan(a), 0.0);
  amax.copy_(at::maximum(amax, a.max()));
}

Fp8Quantized ReferenceQuantize(const at::Tensor& x, const at::Tensor& scale, Fp8Format format,
                               const Fp8QuantizeOptions& options, const at::Tensor& amax) {
  const int64_t rows = x.size(0);
  const at::Tensor scaled = x.to(at::kFloat) * scale.reshape({});
  const int64_t pad = internal::PaddedRows(rows, options.pad_rows_to) - rows;
  const at::Tensor fp8 =
      internal::SaturatingFp8Cast(at::constant_pad_nd(scaled, {0, 0, 0, pad}), format);
  Fp8Quantized q;
  if (options.rows) q.rows = fp8;
  if (options.transposed) q.transposed = fp8.t().contiguous();
  if (amax.defined()) RecordAmax(x, amax);
  return q;
}

#ifdef PADLESS_HAVE_CUDA_KERNELS
// The outputs asked for, allocated, and the launch arguments pointing at them (x, scale and amax
// are the caller's to fill in).
internal::Fp8QuantizeArgs MakeOutputs(const at::Tensor& x, int64_t padded_rows, Fp8Format format,
                                      const Fp8QuantizeOptions& options, Fp8Quantized& q) {
  const auto fp8_opts = x.options().dtype(Fp8ScalarType(format));
  internal::Fp8QuantizeArgs args;
  if (options.rows) {
    q.rows = at::empty({padded_rows, x.size(1)}, fp8_opts);
    args.out = static_cast<uint8_t*>(q.rows.data_ptr());
  }
  if (options.transposed) {
    q.transposed = at::empty({x.size(1), padded_rows}, fp8_opts);
    args.out_t = static_cast<uint8_t*>(q.transposed.data_ptr());
  }
  args.rows = x.size(0);
  args.padded_rows = padded_rows;
  args.cols = x.size(1);
  args.fp8 = format == Fp8Format::kE4M3 ? internal::Fp8Type::kE4M3 : internal::Fp8Type::kE5M2;
  return args;
}

std::optional<Fp8Quantized> QuantizeKernel(const at::Tensor& x_in, const at::Tensor& scale,
                                           Fp8Format format, const Fp8QuantizeOptions& options,
                                           const at::Tensor& amax) {
  const std::optional<internal::FloatType> type = internal::KernelFloatType(x_in.scalar_type());
  if (!internal::UseKernel(x_in) || !type) return std::nullopt;
  const int64_t padded_rows = internal::PaddedRows(x_in.size(0), options.pad_rows_to);
  if (!internal::Fp8QuantizeSupported(padded_rows, x_in.size(1), options.transposed)) {
    return std::nullopt;
  }
  const at::Tensor x = x_in.contiguous();
  if (!internal::Aligned16({&x})) return std::nullopt;
  const c10::cuda::CUDAGuard guard(x.device());
  Fp8Quantized q;
  internal::Fp8QuantizeArgs args = MakeOutputs(x, padded_rows, format, options, q);
  args.x = x.data_ptr();
  args.type = *type;
  args.scale = scale.data_ptr<float>();
  args.amax = amax.defined() ? amax.data_ptr<float>() : nullptr;
  internal::CheckLaunch(internal::LaunchFp8Quantize(args, c10::cuda::getCurrentCUDAStream()), kOp);
  return q;
}
#endif  // PADLESS_HAVE_CUDA_KERNELS

at::Tensor Transpose(const at::Tensor& rows, bool allow_kernel) {
  constexpr const char* kTransposeOp = "Fp8Transpose";
  TORCH_CHECK(rows.defined(), kTransposeOp, ": rows is undefined");
  TORCH_CHECK(rows.dim() == 2, kTransposeOp, ": rows must be 2-D [R, C], got shape ", rows.sizes());
  TORCH_CHECK(internal::IsFp8(rows.scalar_type()), kTransposeOp,
              ": rows must be float8_e4m3fn or float8_e5m2, got ", rows.scalar_type());
  g_last_kernel = false;
#ifdef PADLESS_HAVE_CUDA_KERNELS
  if (allow_kernel && internal::UseKernel(rows) && rows.is_contiguous() &&
      internal::Fp8TransposeSupported(rows.size(0), rows.size(1)) && internal::Aligned16({&rows})) {
    const c10::cuda::CUDAGuard guard(rows.device());
    at::Tensor out = at::empty({rows.size(1), rows.size(0)}, rows.options());
    internal::CheckLaunch(
        internal::LaunchFp8Transpose(static_cast<const uint8_t*>(rows.data_ptr()),
                                     static_cast<uint8_t*>(out.data_ptr()), rows.size(0),
                                     rows.size(1), c10::cuda::getCurrentCUDAStream()),
        kTransposeOp);
    g_last_kernel = true;
    return out;
  }
#endif
  (void)allow_kernel;
  return rows.t().contiguous();
}

Fp8Quantized Quantize(const at::Tensor& x, const at::Tensor& scale, Fp8Format format,
                      const Fp8QuantizeOptions& options, const at::Tensor& amax,
                      bool allow_kernel) {
  CheckArgs(x, scale, options, amax);
  const at::NoGradGuard no_grad;
  g_last_kernel = false;
#ifdef PADLESS_HAVE_CUDA_KERNELS
  if (allow_kernel) {
    if (auto q = QuantizeKernel(x, scale, format, options, amax)) {
      g_last_kernel = true;
      return *std::move(q);
    }
  }
#endif
  (void)allow_kernel;
  return ReferenceQuantize(x, scale, format, options, amax);
}

}  // namespace

namespace internal {

at::Tensor SaturatingFp8Cast(const at::Tensor& x, Fp8Format format) {
  const double max = Fp8Max(format);
  return at::clamp(x, -max, max).to(Fp8ScalarType(format));
}

}  // namespace internal

at::ScalarType Fp8ScalarType(Fp8Format format) {
  return format == Fp8Format::kE4M3 ? at::kFloat8_e4m3fn : at::kFloat8_e5m2;
}

double Fp8Max(Fp8Format format) { return format == Fp8Format::kE4M3 ? 448.0 : 57344.0; }

Fp8Quantized Fp8Quantize(const at::Tensor& x, const at::Tensor& scale, Fp8Format format,
                         const Fp8QuantizeOptions& options, const at::Tensor& amax) {
  return Quantize(x, scale, format, options, amax, /*allow_kernel=*/true);
}

void CheckFp8GradOutput(const Fp8GradOutput* out, const at::Tensor& like, const char* op) {
  if (out == nullptr) return;
  const auto check = [&](const at::Tensor& t, const char* name) {
    TORCH_CHECK(t.defined() && t.scalar_type() == at::kFloat && t.numel() == 1 &&
                    t.device() == like.device(),
                op, ": the FP8 output's ", name, " must be one fp32 element on ", like.device());
  };
  check(out->scale, "scale");
  if (out->amax.defined()) check(out->amax, "amax");
  TORCH_CHECK(out->pad_rows_to >= 1, op, ": pad_rows_to must be >= 1, got ", out->pad_rows_to);
}

at::Tensor QuantizeGradOutput(const at::Tensor& grad, const Fp8GradOutput& out) {
  Fp8QuantizeOptions rows_only;
  rows_only.pad_rows_to = out.pad_rows_to;
  return Fp8Quantize(grad, out.scale, out.format, rows_only, out.amax).rows;
}

at::Tensor Fp8Transpose(const at::Tensor& rows) { return Transpose(rows, /*allow_kernel=*/true); }

bool LastFp8QuantizeRanKernel() { return g_last_kernel; }

namespace reference {

at::Tensor Fp8Transpose(const at::Tensor& rows) { return Transpose(rows, /*allow_kernel=*/false); }

Fp8Quantized Fp8Quantize(const at::Tensor& x, const at::Tensor& scale, Fp8Format format,
                         const Fp8QuantizeOptions& options, const at::Tensor& amax) {
  return Quantize(x, scale, format, options, amax, /*allow_kernel=*/false);
}

}  // namespace reference
}  // namespace padless::cuda
