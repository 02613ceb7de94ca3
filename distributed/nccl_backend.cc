// NCCL for CUDA devices. This file is compiled in CUDA builds only (with USE_C10D_NCCL);
// no_nccl_backend.cc stands in for it otherwise.
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include <cstdlib>

#include "backends.h"

namespace padless::distributed::internal {

absl::StatusOr<c10::intrusive_ptr<c10d::Backend>> MakeNcclBackend(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int world_size,
    std::chrono::milliseconds timeout) {
  // 1: on a failed or timed-out collective the watchdog aborts the communicator and ends the
  // process, so that a dead peer never leaves the others waiting. The user's choice wins.
  setenv("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1", /*overwrite=*/0);
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  return c10::intrusive_ptr<c10d::Backend>(
      c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world_size, options));
}

}  // namespace padless::distributed::internal
