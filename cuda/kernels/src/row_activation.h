// The FFN activations of the FP8 quantizers (RowActivation) as ATen ops, shared by the reference
// paths of fp8_rowwise.cc and fp8_static.cc.
#ifndef PADLESS_CUDA_SRC_ROW_ACTIVATION_H_
#define PADLESS_CUDA_SRC_ROW_ACTIVATION_H_

#include <ATen/core/Tensor.h>

#include "padless/cuda/kernels/fp8_rowwise.h"

namespace padless::cuda::internal {

// activation(x) in x's dtype (kNone: x itself).
at::Tensor ActivateRows(const at::Tensor& x, RowActivation activation);

}  // namespace padless::cuda::internal

#endif  // PADLESS_CUDA_SRC_ROW_ACTIVATION_H_
