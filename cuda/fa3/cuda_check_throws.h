// Included by cuda/fa3/*.cu before FA3's launch templates. FA3's hopper/cuda_check.h ends the
// process (exit(1)) on a CUDA or CUTLASS error in its host-side launch code; padless's CLI and
// server must never abort, so here the same checks throw std::runtime_error instead, which
// cuda/kernels/fa3_attention.cc turns into a c10::Error like any other kernel failure. FA3's
// header is included first so that its #pragma once keeps the templates from redefining these.
#pragma once

#include <stdexcept>
#include <string>

#include "cuda_check.h"  // FA3's (hopper/)

#undef CHECK_CUDA
#define CHECK_CUDA(call)                                                                     \
  do {                                                                                       \
    const cudaError_t status_ = (call);                                                      \
    if (status_ != cudaSuccess) {                                                            \
      throw std::runtime_error(std::string("CUDA error (") + __FILE__ + ":" +                \
                               std::to_string(__LINE__) + "): " + cudaGetErrorString(status_)); \
    }                                                                                        \
  } while (0)

#undef CHECK_CUTLASS
#define CHECK_CUTLASS(call)                                                                  \
  do {                                                                                       \
    const cutlass::Status status_ = (call);                                                  \
    if (status_ != cutlass::Status::kSuccess) {                                              \
      throw std::runtime_error(std::string("CUTLASS error (") + __FILE__ + ":" +             \
                               std::to_string(__LINE__) +                                    \
                               "): " + cutlass::cutlassGetStatusString(status_));            \
    }                                                                                        \
  } while (0)
