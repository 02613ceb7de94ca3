// Programmatic dependent launch (Hopper): the kernels of the training step's hot path are launched
// so that the GPU may schedule them before the kernel ahead of them on the stream has finished;
// each waits for that kernel's results at its first statement (WaitForPriorKernels), so nothing
// it reads or writes overlaps the earlier kernel. What it saves is the gap between two kernels:
// on the H200 (bench/cuda/dependent_launch_probe.cu) a bf16 GEMM followed by six 25 MB copy
// kernels and six tiny ones took 168 us an iteration with it against 185 without, 1.4 us a
// boundary; the FP8 training step, about 270 such launches, went from 764k to 773k real tokens/s
// (bench/cuda/FUSED_KERNELS.md, session 11).
//
// Every kernel launched through LaunchDependent must call WaitForPriorKernels before its first
// global memory access. A kernel launched the ordinary way after one of these waits for it to
// finish, as always. PADLESS_DEPENDENT_LAUNCH=0 in the environment launches them the ordinary way
// (for measuring the difference, or should a driver mishandle it).
#ifndef PADLESS_CUDA_SRC_DEPENDENT_LAUNCH_CUH_
#define PADLESS_CUDA_SRC_DEPENDENT_LAUNCH_CUH_

#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>

namespace padless::cuda::internal {

// Blocks until the kernels ahead on the stream have finished and their writes are visible. A
// no-op when the kernel was launched the ordinary way (they have finished already).
__device__ __forceinline__ void WaitForPriorKernels() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

inline bool DependentLaunchEnabled() {
  static const bool on = [] {
    const char* v = std::getenv("PADLESS_DEPENDENT_LAUNCH");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return on;
}

// kernel<<<grid, block, shared, stream>>>(args...), with programmatic dependent launch allowed.
template <typename... Params, typename... Args>
cudaError_t LaunchDependent(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared,
                            cudaStream_t stream, Args&&... args) {
  cudaLaunchAttribute attr = {};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared;
  config.stream = stream;
  config.attrs = &attr;
  config.numAttrs = DependentLaunchEnabled() ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, static_cast<Args&&>(args)...);
}

}  // namespace padless::cuda::internal

#endif  // PADLESS_CUDA_SRC_DEPENDENT_LAUNCH_CUH_
