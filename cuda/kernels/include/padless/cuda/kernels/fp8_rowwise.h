// FP8 with one scale per row, the recipe of quantized inference: a weight [N, K] gets one scale
// per output channel (row), an activation [T, K] one per token (row), both E4M3, so that
//   y[t, n] = (sum_k q_x[t, k] * q_w[n, k]) * scale_inv_x[t] * scale_inv_w[n] (+ bias[n])
// Per-token scales make a text's result independent of what it is batched with (a per-tensor
// scale would let one long outlier text coarsen every other text's activations), and per-channel
// weight scales keep small output channels from rounding to zero.
//
//   Fp8QuantizeRows      q = fp8(saturate(act(x) * 448 / amax_row)), scale_inv = amax_row / 448
//   Fp8RowwiseLinear     the product above, in the caller's 16-bit dtype or fp32
//
// Fp8QuantizeRows optionally applies the FFN's activation first, so that the FFN-in GEMM's output
// is read once for activation and quantization together. A row whose amax is 0, NaN or infinite
// gets scale 1 (its values saturate; NaN stays NaN); amax ignores NaN elements.
//
// On a GPU with the kernels built, for contiguous bf16 / fp16 / fp32 x with C a multiple of 8 up to
// 8192 and 16-byte aligned data: one kernel, one block per row, the row kept in registers between
// its amax and its cast. Fp8RowwiseLinear runs at::_scaled_mm's rowwise product (cuBLASLt's
// outer-vector-scaled kernels on the H200, bf16 output) when K and N are multiples of 16 on a GPU
// with FP8 tensor cores. Otherwise, and as
// the reference namespace, unfused ATen ops: the reference linear dequantizes both operands to
// fp32 and multiplies them, so it is the exact product of the quantized values (the GPU product
// accumulates in fp32 with Hopper's fast accumulation).
//
// Not differentiable. Broken arguments throw c10::Error naming the function.
#ifndef PADLESS_CUDA_KERNELS_FP8_ROWWISE_H_
#define PADLESS_CUDA_KERNELS_FP8_ROWWISE_H_

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <cstdint>

namespace padless::cuda {

// What Fp8QuantizeRows applies to x before quantizing (the encoder's FFN activations).
enum class RowActivation { kNone, kGelu, kGeluTanh, kRelu };

// E4M3 rows and their dequantization factors.
struct Fp8Rows {
  at::Tensor values;     // [R_pad, C] float8_e4m3fn; rows from `rows` on are zero
  at::Tensor scale_inv;  // [R_pad, 1] fp32: x[r] ~= values[r] * scale_inv[r]; 1 for padded rows
  int64_t rows = 0;      // the real rows R
};

// x: [R, C] floating (R == 0 allowed). pad_rows_to >= 1: R_pad = R rounded up to its multiple
// (FP8 GEMMs on cuBLASLt/CUTLASS want 16).
Fp8Rows Fp8QuantizeRows(const at::Tensor& x, RowActivation activation = RowActivation::kNone,
                        int64_t pad_rows_to = 16);

// x: activations [T_pad, K]; weight: [N, K] (each quantized by Fp8QuantizeRows); bias [N] or
// undefined. Returns [x.rows, N] in out_dtype (fp32, bf16 or fp16), the padded rows left out.
at::Tensor Fp8RowwiseLinear(const Fp8Rows& x, const Fp8Rows& weight, const at::Tensor& bias,
                            at::ScalarType out_dtype);

// Whether Fp8RowwiseLinear runs a weight [N, K] on the FP8 tensor cores of `device` (false on the
// CPU and where the kernels are not built; the reference then emulates it).
bool Fp8RowwiseLinearFast(const Fp8Rows& weight, const c10::Device& device);

namespace reference {
Fp8Rows Fp8QuantizeRows(const at::Tensor& x, RowActivation activation = RowActivation::kNone,
                        int64_t pad_rows_to = 16);
at::Tensor Fp8RowwiseLinear(const Fp8Rows& x, const Fp8Rows& weight, const at::Tensor& bias,
                            at::ScalarType out_dtype);
}  // namespace reference

// Diagnostics for tests and benchmarks: whether the calling thread's last Fp8QuantizeRows ran
// the kernel, and its last Fp8RowwiseLinear the FP8 tensor cores.
bool LastFp8QuantizeRowsRanKernel();
bool LastFp8RowwiseLinearWasFast();

}  // namespace padless::cuda

#endif  // PADLESS_CUDA_KERNELS_FP8_ROWWISE_H_
