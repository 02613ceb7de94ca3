// The choice every entry point of gemm_epilogue.h makes between its cuBLASLt path and its unfused
// ATen ops (GemmPath), and the per-thread record of that choice behind LastGemmEpilogueWasFused.
#ifndef PADLESS_CUDA_SRC_GEMM_DISPATCH_H_
#define PADLESS_CUDA_SRC_GEMM_DISPATCH_H_

#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>

#ifdef PADLESS_HAVE_CUDA_KERNELS
#include <c10/cuda/CUDAGuard.h>
#endif

#include "padless/cuda/kernels/gemm_epilogue.h"

namespace padless::cuda::internal {

// Sets what LastGemmEpilogueWasFused returns on the calling thread.
void NoteGemmEpilogueFused(bool fused);

// Shared by every entry point: no autograd, then the fused path when `path` is kFused and `lead`
// is on a CUDA device, else (or when it declines) the reference. `fused(out)` fills `out` and
// returns true, or returns false having launched nothing; `reference()` returns the result.
template <typename Result, typename Fused, typename Reference>
Result RunGemmPath(const at::Tensor& lead, GemmPath path, Fused&& fused, Reference&& reference) {
  const at::NoGradGuard no_grad;
  NoteGemmEpilogueFused(false);
#ifdef PADLESS_HAVE_CUDA_KERNELS
  if (path == GemmPath::kFused && lead.is_cuda()) {
    const c10::cuda::CUDAGuard guard(lead.device());
    Result out;
    if (fused(out)) {
      NoteGemmEpilogueFused(true);
      return out;
    }
  }
#else
  (void)lead;
  (void)path;
  (void)fused;
#endif
  return reference();
}

}  // namespace padless::cuda::internal

#endif  // PADLESS_CUDA_SRC_GEMM_DISPATCH_H_
