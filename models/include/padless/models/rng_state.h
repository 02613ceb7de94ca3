// Internal: snapshots of the default RNG streams that dropout draws from (the CPU generator, plus
// the CUDA one of a device), for checkpoint recompute and for resumable training.
#ifndef PADLESS_MODELS_RNG_STATE_H_
#define PADLESS_MODELS_RNG_STATE_H_

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace padless::models::internal {

struct RngState {
  at::Tensor cpu;
  at::Tensor cuda;  // undefined unless captured for a CUDA device
};

RngState CaptureRng(const c10::Device& device);
void RestoreRng(const RngState& state, const c10::Device& device);

}  // namespace padless::models::internal

#endif  // PADLESS_MODELS_RNG_STATE_H_
