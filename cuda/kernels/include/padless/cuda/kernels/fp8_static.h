// FP8 at fixed scales: the FFN of quantized inference (models/inference_gemms.h). For the FFN-in
// GEMM to write the FFN-out GEMM's FP8 input itself (the GELU in its epilogue), the activation's
// scale must be known before the GEMM runs: no GEMM tile sees a whole row, so no per-token amax
// exists yet, and cuBLASLt writes FP8 only with per-tensor scales (bench/serve/
// fp8_output_probe.cc). So the FFN's input and its activation each get one scale fixed from the
// weights alone (an upper bound of their magnitude: models' Fp8StaticFfn), and the FFN-in weight
// one scale for the whole tensor. A text's result still depends on nothing it is batched with.
//
//   Fp8QuantizeAtScale   q = fp8(saturate(x * Fp8ScaleOf(scale_inv))), one scale_inv on every row
//   Fp8QuantizeTensor    the same at scale_inv = amax(x) / 448 (a weight)
//   Fp8StaticLinearAct   act(x @ w^T + bias), quantized at a fixed scale for the next GEMM
//
// The results are Fp8Rows whose scale_inv is one value repeated (padded rows included), so they
// feed Fp8RowwiseLinear unchanged. Not differentiable. Broken arguments throw c10::Error naming
// the function.
#ifndef PADLESS_CUDA_KERNELS_FP8_STATIC_H_
#define PADLESS_CUDA_KERNELS_FP8_STATIC_H_

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>

#include "padless/cuda/kernels/fp8_rowwise.h"

namespace padless::cuda {

// The factor a value is multiplied by before its cast at dequantization factor scale_inv: one
// fp32 rounding of 1 / scale_inv, shared by every path so that they write the same bytes.
float Fp8ScaleOf(float scale_inv);

// A fixed scale of a GEMM's output: its dequantization factor and, on the GEMM's device, the
// factor the epilogue multiplies values by before their cast ([1] fp32, Fp8ScaleOf(scale_inv)),
// made once so that no call has to write it.
struct Fp8FixedScale {
  float scale_inv = 0.f;
  at::Tensor scale;
};
// scale_inv > 0 and finite.
Fp8FixedScale MakeFp8FixedScale(float scale_inv, const c10::Device& device);

// x: [R, C] floating; scale_inv > 0 and finite; pad_rows_to >= 1 (zero rows added). Unfused ATen
// ops (the LayerNorm kernel writes the same bytes itself: residual_layer_norm.h).
Fp8Rows Fp8QuantizeAtScale(const at::Tensor& x, float scale_inv, int64_t pad_rows_to = 16);

// x [R, C] floating with R, C >= 1: Fp8QuantizeAtScale at amax(x) / 448 (scale_inv 1 when that is
// 0), no padded rows. Reads the amax back to the host: for weights, once, at load.
Fp8Rows Fp8QuantizeTensor(const at::Tensor& x);

// y = act(x @ weight^T + bias) [x.rows, N] as Fp8QuantizeAtScale(y, out.scale_inv) with x's padded
// rows (they hold act(bias), not zeros: they feed only padded rows of the next GEMM). x and weight
// each with one scale (Fp8QuantizeAtScale / Fp8QuantizeTensor results; row 0's scale is used);
// bias [N] floating (required); `out` on x's device (MakeFp8FixedScale).
// One cuBLASLt GEMM (ScaledMmGeluToFp8, gemm_epilogue.h) for act == kGeluTanh and a bf16 / fp16
// bias when Fp8RowwiseLinearFast(weight) and x's padded rows are a multiple of 16; else the
// reference: both operands dequantized to fp32 and multiplied exactly, the bias, act and the cast
// in fp32.
Fp8Rows Fp8StaticLinearAct(const Fp8Rows& x, const Fp8Rows& weight, const at::Tensor& bias,
                           RowActivation activation, const Fp8FixedScale& out);

namespace reference {
Fp8Rows Fp8StaticLinearAct(const Fp8Rows& x, const Fp8Rows& weight, const at::Tensor& bias,
                           RowActivation activation, const Fp8FixedScale& out);
}  // namespace reference

// Diagnostics for tests and benchmarks: whether the calling thread's last Fp8StaticLinearAct ran
// the fused GEMM.
bool LastFp8StaticLinearActWasFused();

}  // namespace padless::cuda

#endif  // PADLESS_CUDA_KERNELS_FP8_STATIC_H_
