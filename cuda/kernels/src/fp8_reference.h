// Pieces shared by the FP8 reference paths (fp8_quantize.cc, fp8_rowwise.cc, fp8_static.cc,
// gemm_epilogue.cc): the FFN activations as ATen ops, and the saturating cast.
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

}  // namespace padless::cuda::internal

#endif  // PADLESS_CUDA_SRC_FP8_REFERENCE_H_
