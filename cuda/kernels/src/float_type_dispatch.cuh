// From the runtime FloatType of a launcher's arguments to the storage type its kernel templates are
// instantiated for: the launchers call f(TypeTag<T>{}) and read T back as decltype(tag)::type.
// CUDA-only (included by .cu files, never by C++ translation units).
#ifndef PADLESS_CUDA_SRC_FLOAT_TYPE_DISPATCH_CUH_
#define PADLESS_CUDA_SRC_FLOAT_TYPE_DISPATCH_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels.h"

namespace padless::cuda::internal {

template <typename T>
struct TypeTag {
  using type = T;
};

// f(TypeTag<T>{}) for the 16-bit storage types (bf16, fp16); `fallback` for any other type, so
// that kernels written for 16-bit elements only are never instantiated for fp32.
template <typename R, typename F>
R Dispatch16BitType(FloatType type, R fallback, F&& f) {
  switch (type) {
    case FloatType::kBFloat16:
      return f(TypeTag<__nv_bfloat16>{});
    case FloatType::kFloat16:
      return f(TypeTag<__half>{});
    case FloatType::kFloat32:
      break;
  }
  return fallback;
}

// f(TypeTag<T>{}) for every storage type (fp32, bf16, fp16); `fallback` for an unknown one.
template <typename R, typename F>
R DispatchType(FloatType type, R fallback, F&& f) {
  if (type == FloatType::kFloat32) return f(TypeTag<float>{});
  return Dispatch16BitType(type, fallback, f);
}

}  // namespace padless::cuda::internal

#endif  // PADLESS_CUDA_SRC_FLOAT_TYPE_DISPATCH_CUH_
