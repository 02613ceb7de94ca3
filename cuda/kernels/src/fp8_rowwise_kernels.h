// Launcher of the per-row FP8 cast behind fp8_rowwise.h. Raw pointers only (the .cu file must not
// include torch headers). It enqueues on `stream`, returns cudaGetLastError(), and assumes the
// caller checked Fp8QuantizeRowsSupported() and the 16-byte alignment of x.
//
// Layout: one block per row of the padded output, one thread per 8 elements of the row (one
// 16-byte load of bf16 / fp16, two of fp32), so the row stays in registers: each thread applies the
// activation and keeps its max |v|, the block reduces the row's amax, and each thread writes its 8
// bytes and thread 0 the row's scale_inv. Blocks of padded rows write zeros and scale 1.
#ifndef PADLESS_CUDA_SRC_FP8_ROWWISE_KERNELS_H_
#define PADLESS_CUDA_SRC_FP8_ROWWISE_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels.h"

namespace padless::cuda::internal {

enum class RowActivationKind { kNone, kGelu, kGeluTanh, kRelu };

struct Fp8QuantizeRowsArgs {
  const void* x = nullptr;  // [rows, cols] of `type`, contiguous, 16-byte aligned
  uint8_t* out = nullptr;   // [padded_rows, cols] E4M3 bytes
  float* scale_inv = nullptr;  // [padded_rows]
  int64_t rows = 0;
  int64_t padded_rows = 0;  // >= rows
  int64_t cols = 0;
  FloatType type = FloatType::kBFloat16;
  RowActivationKind activation = RowActivationKind::kNone;
};

// cols a multiple of 8, at most 8192 (one thread per 8 elements, 1024 threads a block).
bool Fp8QuantizeRowsSupported(int64_t cols);

cudaError_t LaunchFp8QuantizeRows(const Fp8QuantizeRowsArgs& args, cudaStream_t stream);

}  // namespace padless::cuda::internal

#endif  // PADLESS_CUDA_SRC_FP8_ROWWISE_KERNELS_H_
