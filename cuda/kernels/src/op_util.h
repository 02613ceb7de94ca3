// Shared plumbing of the tensor-facing ops (unpad.cc, segment_pool.cc, packed_masks.cc and the
// fused ones): argument checks, the choice between CUDA kernel and torch reference, and
// c10::Error -> absl::Status.
#ifndef PADLESS_CUDA_SRC_OP_UTIL_H_
#define PADLESS_CUDA_SRC_OP_UTIL_H_

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "padless/cuda/kernels/fp8_quantize.h"

// The kernel-side headers every op needs (device guard, current stream, launchers), here so that
// the ops' translation units share one preamble.
#ifdef PADLESS_HAVE_CUDA_KERNELS
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include "fp8_quantize_kernels.h"
#include "kernels.h"
#endif

namespace padless::cuda::internal {

// "file:line: op: message" as an InvalidArgument status.
absl::Status ArgError(const char* file, int line, const char* op, const std::string& message);

// cu_seqlens must be a defined, contiguous 1-D int32 tensor with >= 1 element on `device`. When it
// lives on the CPU, its contents are checked too (starts at 0, non-decreasing); on a GPU that would
// cost a sync, so callers own that contract there.
absl::Status CheckCuSeqlens(const at::Tensor& cu_seqlens, const c10::Device& device,
                            const char* op);

// cu_seqlens[-1] when `total_tokens` < 0 (a device sync for GPU tensors), else `total_tokens`.
int64_t ResolveTotalTokens(const at::Tensor& cu_seqlens, int64_t total_tokens);

// What CheckRows asks of a [T, N] activation beyond being defined and 2-D.
struct RowsSpec {
  const char* shape;                 // the dimensions as the op's messages name them: "[T, H]"
  bool (*dtype_ok)(at::ScalarType);  // the dtypes the op takes
  const char* dtypes;                // and how an error names them: "a floating-point tensor"
};

// Throws c10::Error "op: name ..." saying what is wrong unless `t` is a defined 2-D tensor of a
// dtype `spec` takes and, when it is not `like` itself, has like's shape, dtype and device.
void CheckRows(const at::Tensor& t, const char* name, const at::Tensor& like, const RowsSpec& spec,
               const char* op);

// Reference (torch ops) per-token sequence and position ids of a varlen batch, int64 [T] each.
std::pair<at::Tensor, at::Tensor> ReferenceVarlenIds(const at::Tensor& cu_seqlens,
                                                     int64_t total_tokens);

// `rows` rounded up to a multiple of `multiple` (>= 1): the padded row count of the FP8 copies,
// whose GEMMs want multiples of 16.
int64_t PaddedRows(int64_t rows, int64_t multiple);

// Bytes of one token row of a tensor whose first `token_dims` dimensions index tokens.
int64_t RowBytes(const at::Tensor& t, int64_t token_dims);

// True when `t` is on a CUDA device and the kernels were compiled in.
bool UseKernel(const at::Tensor& t);

// bf16 or fp16: the storage types of the fused kernels' and cuBLASLt epilogues' fast paths.
bool Is16BitFloat(at::ScalarType t);

// float8_e4m3fn or float8_e5m2.
bool IsFp8(at::ScalarType t);

// True when every defined tensor's data starts on a 16-byte boundary (the vector width of the
// fused kernels, and what cuBLASLt's epilogues need); undefined tensors pass.
bool Aligned16(std::initializer_list<const at::Tensor*> tensors);

#ifdef PADLESS_HAVE_CUDA_KERNELS
// Throws c10::Error naming the op when a launch failed.
void CheckLaunch(cudaError_t err, const char* op);

// The kernels' name for a bf16, fp16 or fp32 dtype; nullopt for any other.
std::optional<FloatType> KernelFloatType(at::ScalarType t);

// An Fp8GradOutput's tensor ([PaddedRows(rows, pad_rows_to), cols] in its format, on like's
// device) and the kernels' arguments writing it.
struct Fp8GradRows {
  at::Tensor rows;
  Fp8RowsOutput args;
};
Fp8GradRows MakeFp8GradRows(const Fp8GradOutput& out, const at::Tensor& like, int64_t rows,
                            int64_t cols);
#endif

// Runs f (which may throw c10::Error) and turns the exception into a status naming `op`.
template <typename F>
auto CatchC10(const char* file, int line, const char* op, F&& f)
    -> absl::StatusOr<decltype(std::forward<F>(f)())> {
  try {
    return std::forward<F>(f)();
  } catch (const c10::Error& e) {
    return absl::InternalError(std::string(file) + ":" + std::to_string(line) + ": " + op + ": " +
                               e.what_without_backtrace());
  }
}

}  // namespace padless::cuda::internal

#endif  // PADLESS_CUDA_SRC_OP_UTIL_H_
