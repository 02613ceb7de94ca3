// The c10d backends a ProcessGroup is made of, private to the dist library: the only file set that
// includes c10d's headers (compiled with USE_DISTRIBUTED, USE_C10D_GLOO and, in CUDA builds,
// USE_C10D_NCCL).
#ifndef PADLESS_DISTRIBUTED_BACKENDS_H_
#define PADLESS_DISTRIBUTED_BACKENDS_H_

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>

#include "absl/status/statusor.h"

namespace padless::distributed::internal {

// Gloo over TCP; the interface is GLOO_SOCKET_IFNAME when set, else the host name's address.
c10::intrusive_ptr<c10d::Backend> MakeGlooBackend(const c10::intrusive_ptr<c10d::Store>& store,
                                                  int rank, int world_size,
                                                  std::chrono::milliseconds timeout);

// NCCL on the current CUDA device, with the watchdog's timeout and asynchronous error handling.
// Unimplemented in builds without NCCL.
absl::StatusOr<c10::intrusive_ptr<c10d::Backend>> MakeNcclBackend(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int world_size,
    std::chrono::milliseconds timeout);

}  // namespace padless::distributed::internal

#endif  // PADLESS_DISTRIBUTED_BACKENDS_H_
