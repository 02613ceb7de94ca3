// The cast of an FP8 training path with per-tensor delayed scaling (as NVIDIA Transformer Engine
// does it): one memory-bound pass that turns a 16-bit (or fp32) activation, gradient or weight
// into FP8 for at::_scaled_mm, optionally also its transpose ("cast-transpose": the GEMMs of the
// backward need the other operand layout), while recording the tensor's absolute maximum for the
// next step's scale:
//   Fp8Quantize   rows = fp8(saturate(x * scale)), transposed = rows^T, amax = max(amax, max |x|)
// On a GPU with the kernels built, for contiguous bf16 / fp16 / fp32 [R, C] input with C a
// multiple of 16 and 16-byte aligned data (and, when the transpose is asked for, R_pad a multiple
// of 4): one kernel, which reads the scale and updates amax on the device (no host sync).
// Strided input is copied to contiguous first. Otherwise, and as reference::Fp8Quantize, the
// unfused ATen ops: a multiply, at::clamp, the dtype cast, a zero pad, .t().contiguous(), and a
// NaN-masked abs-max. Both paths give the same bytes.
//
// Measured on the H200 (bench/cuda/fp8_quantize_bench, bf16 to E4M3 with amax, T = 16384,
// 2026-12-01): rows only 17 against 282 us unfused at C = 768, 46 against 988 us at C = 3072;
// rows and transpose 27 against 357 us, 71 against 1289 us. Launched back to back (no host time
// in between) the kernel moves 2.7 / 3.7 TB/s rows only and 2.7 / 3.1 TB/s with the transpose at
// C = 768 / 3072, where a bf16 clone moves 3.6 / 4.0 TB/s.
//
// Values: saturate(x * scale) with the multiply in fp32, rounded to nearest-even in the format;
// |v| > Fp8Max clamps to +-Fp8Max (+-inf included); NaN stays NaN (torch's byte: 0x7f with v's
// sign). amax is the unscaled max |x| over the real rows, ignoring NaN (+-inf makes it inf),
// folded into the old value with max; it is meant to hold an amax (>= 0).
//
// Not differentiable (no autograd history). Broken input (undefined or non-2-D x, non-float x, a
// scale or amax that is not one fp32 element on x's device, pad_rows_to < 1, neither output asked
// for) throws c10::Error naming the function.
#ifndef PADLESS_CUDA_KERNELS_FP8_QUANTIZE_H_
#define PADLESS_CUDA_KERNELS_FP8_QUANTIZE_H_

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <cstdint>

namespace padless::cuda {

enum class Fp8Format { kE4M3, kE5M2 };  // at::kFloat8_e4m3fn / at::kFloat8_e5m2

at::ScalarType Fp8ScalarType(Fp8Format format);

// The largest finite value of the format: 448 (E4M3), 57344 (E5M2).
double Fp8Max(Fp8Format format);

struct Fp8QuantizeOptions {
  bool rows = true;          // write `rows`: [R_pad, C] row-major
  bool transposed = false;   // write `transposed`: [C, R_pad] row-major (= rows^T)
  int64_t pad_rows_to = 16;  // R_pad = R rounded up to a multiple of this (>= 1); padded rows are 0
};

struct Fp8Quantized {
  at::Tensor rows;        // [R_pad, C] in Fp8ScalarType(format); undefined unless asked for
  at::Tensor transposed;  // [C, R_pad] in Fp8ScalarType(format); undefined unless asked for
};

// x: [R, C] floating (R == 0 allowed: empty outputs, amax unchanged). scale: one fp32 element on
// x's device, of any shape (a 0-dim view such as scales.select(0, i) works). amax: one fp32
// element on x's device, updated in place, or undefined.
Fp8Quantized Fp8Quantize(const at::Tensor& x, const at::Tensor& scale, Fp8Format format,
                         const Fp8QuantizeOptions& options, const at::Tensor& amax);

// Where a kernel that computes a gradient for an FP8 GEMM (bias_grad.h, residual_layer_norm.h)
// writes it in FP8 itself, so that no cast pass over the 16-bit gradient is needed: its output is
// then Fp8Quantize(g, scale, format, rows only, pad_rows_to, amax).rows, g the gradient as rounded
// to the inputs' dtype, byte for byte. The kernels write it as they go; their reference paths
// write g, then quantize it (QuantizeGradOutput).
struct Fp8GradOutput {
  at::Tensor scale;  // one fp32 element on the inputs' device
  at::Tensor amax;   // one fp32 element there, max-updated in place; undefined: not recorded
  Fp8Format format = Fp8Format::kE5M2;
  int64_t pad_rows_to = 16;
};

// Throws c10::Error naming `op` unless out's scale (and amax, when defined) is one fp32 element on
// like's device and pad_rows_to >= 1; null `out` (no FP8 output asked for) passes.
void CheckFp8GradOutput(const Fp8GradOutput* out, const at::Tensor& like, const char* op);

// The reference paths' FP8 output: the rows of Fp8Quantize(grad) as `out` asks.
at::Tensor QuantizeGradOutput(const at::Tensor& grad, const Fp8GradOutput& out);

// rows^T [C, R] of FP8 rows [R, C] (float8_e4m3fn or float8_e5m2), the bytes unchanged: for an
// operand whose FP8 rows the kernel that computed it wrote (bias_grad.h's Fp8GradOutput), so that
// only the transpose's pass is left. On a GPU with the kernels built, for contiguous rows with C a
// multiple of 8, R of 4 and 16-byte aligned data: one tiled kernel (the cast-transpose's tiles).
// Otherwise, and as reference::Fp8Transpose, rows.t().contiguous(). Broken input (undefined, not
// 2-D, not FP8) throws c10::Error naming the function.
at::Tensor Fp8Transpose(const at::Tensor& rows);

namespace reference {
at::Tensor Fp8Transpose(const at::Tensor& rows);
Fp8Quantized Fp8Quantize(const at::Tensor& x, const at::Tensor& scale, Fp8Format format,
                         const Fp8QuantizeOptions& options, const at::Tensor& amax);
}  // namespace reference

// Diagnostics for tests and benchmarks: whether the calling thread's last Fp8Quantize or
// Fp8Transpose ran the kernel (false after the reference path).
bool LastFp8QuantizeRanKernel();

}  // namespace padless::cuda

#endif  // PADLESS_CUDA_KERNELS_FP8_QUANTIZE_H_
