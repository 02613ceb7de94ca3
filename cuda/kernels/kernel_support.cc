#include "padless/cuda/kernels/kernel_support.h"

namespace padless::cuda {

bool CudaKernelsBuilt() {
#ifdef PADLESS_HAVE_CUDA_KERNELS
  return true;
#else
  return false;
#endif
}

}  // namespace padless::cuda
