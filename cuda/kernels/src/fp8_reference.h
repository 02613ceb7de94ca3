// Pieces shared by the FP8 ops (fp8_quantize.cc, fp8_rowwise.cc, fp8_static.cc, scaled_mm.cc):
// the FFN activations as ATen ops, the saturating cast of the reference paths, and the checks of a
// GEMM's two Fp8Rows operands.
#ifndef PADLESS_CUDA_SRC_FP8_REFERENCE_H_
#define PADLESS_CUDA_SRC_FP8_REFERENCE_H_

#include <ATen/core/Tensor.h>

#include "padless/cuda/kernels/fp8_quantize.h"
#include "padless/cuda/kernels/fp8_rowwise.h"

namespace padless::cuda::internal {

// activation(x) in x's dtype (kNone: x itself).
at::Tensor ActivateRows(const at::Tensor& x, RowActivation activation);

// x (floating) cast to `format` with values beyond +-Fp8Max(format) saturating (inf included), as
// the kernels and cuBLASLt convert: torch's own cast turns them into NaN (E4M3) or inf (E5M2). NaN
// passes the clamp with its sign and stays NaN.
at::Tensor SaturatingFp8Cast(const at::Tensor& x, Fp8Format format = Fp8Format::kE4M3);

// Both operands of an Fp8Rows GEMM: 2-D E4M3 values, fp32 scale_inv [R_pad, 1], rows in range, the
// same K and device. Throws c10::Error naming `op`.
void CheckFp8Operands(const Fp8Rows& x, const Fp8Rows& weight, const char* op);

}  // namespace padless::cuda::internal

#endif  // PADLESS_CUDA_SRC_FP8_REFERENCE_H_
