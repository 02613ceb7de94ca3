// Launcher of the FP8 cast (and cast-transpose) behind fp8_quantize.h. Raw pointers only (the .cu
// file must not include torch headers). The launcher enqueues on `stream`, returns
// cudaGetLastError(), and assumes the caller checked Fp8QuantizeSupported() and the 16-byte
// alignment of the input.
//
// Layout: rows only, a grid-stride pass in which a thread converts 8 elements (one 16-byte load of
// bf16 / fp16, two of fp32) into one 8-byte store. With the transpose, one block per 64 x 64 tile:
// coalesced loads along the rows, the converted bytes staged in shared memory, then each thread
// transposes a 4 x 4 byte block in registers and writes 4-byte words along the transposed rows.
// Either way each thread keeps its max |x| (fmaxf drops NaN), the block reduces it, and one
// atomicMax on the float's bits per block folds it into amax.
#ifndef PADLESS_CUDA_SRC_FP8_QUANTIZE_KERNELS_H_
#define PADLESS_CUDA_SRC_FP8_QUANTIZE_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels.h"

namespace padless::cuda::internal {

enum class Fp8Type { kE4M3, kE5M2 };

struct Fp8QuantizeArgs {
  const void* x = nullptr;       // [rows, cols] of `type`, contiguous, 16-byte aligned
  const float* scale = nullptr;  // one element, read on the device
  float* amax = nullptr;         // one element, max-updated on the device; null: not recorded
  uint8_t* out = nullptr;        // [padded_rows, cols] fp8 bytes; null: not written
  uint8_t* out_t = nullptr;      // [cols, padded_rows] fp8 bytes; null: not written
  int64_t rows = 0;
  int64_t padded_rows = 0;  // >= rows; rows [rows, padded_rows) are written as zero
  int64_t cols = 0;
  FloatType type = FloatType::kBFloat16;
  Fp8Type fp8 = Fp8Type::kE4M3;
};

// An output that a kernel computing it writes in FP8 instead of its 16-bit type (fp8_quantize.h's
// Fp8GradOutput, taken by bias_grad.h and residual_layer_norm.h): each element as rounded to that
// type (what the 16-bit output would hold), times *scale, saturated into the format as Fp8Quantize
// does; max |element| folded into *amax (one atomicMax per warp).
struct Fp8RowsOutput {
  const float* scale = nullptr;  // null: no FP8 output
  float* amax = nullptr;         // null: not recorded
  int64_t padded_rows = 0;       // >= the rows; rows beyond them are written as zero
  Fp8Type format = Fp8Type::kE5M2;
};

// cols a multiple of 16 and within the grid's limits; with the transpose, padded_rows a multiple
// of 4 (the 4-byte stores along the transposed rows).
bool Fp8QuantizeSupported(int64_t padded_rows, int64_t cols, bool transposed);

// At least one of out / out_t set. Nothing is launched when an output is empty.
cudaError_t LaunchFp8Quantize(const Fp8QuantizeArgs& args, cudaStream_t stream);

// The transpose of FP8 bytes, in [rows, cols] -> out_t [cols, rows] (the cast-transpose's tiles,
// with nothing to convert): cols a multiple of 8 (8-byte aligned loads), rows of 4.
bool Fp8TransposeSupported(int64_t rows, int64_t cols);
cudaError_t LaunchFp8Transpose(const uint8_t* in, uint8_t* out_t, int64_t rows, int64_t cols,
                               cudaStream_t stream);

}  // namespace padless::cuda::internal

#endif  // PADLESS_CUDA_SRC_FP8_QUANTIZE_KERNELS_H_
