// Stands in for nccl_backend.cc in builds whose LibTorch has no CUDA (hence no NCCL).
#include "backends.h"

namespace padless::distributed::internal {

absl::StatusOr<c10::intrusive_ptr<c10d::Backend>> MakeNcclBackend(
    const c10::intrusive_ptr<c10d::Store>&, int, int, std::chrono::milliseconds) {
  return absl::UnimplementedError(
      "distributed training on CUDA needs NCCL, and this build's LibTorch has no CUDA");
}

}  // namespace padless::distributed::internal
