// Whether this build of padless contains the fused CUDA kernels (it does when nvcc and a CUDA
// LibTorch were found at configure time). Without them every op runs its torch reference path.
#ifndef PADLESS_CUDA_KERNELS_KERNEL_SUPPORT_H_
#define PADLESS_CUDA_KERNELS_KERNEL_SUPPORT_H_

namespace padless::cuda {

bool CudaKernelsBuilt();

}  // namespace padless::cuda

#endif  // PADLESS_CUDA_KERNELS_KERNEL_SUPPORT_H_
