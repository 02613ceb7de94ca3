// DistEnv: where this process stands in a data-parallel job, read from the environment that
// torchrun (and Slurm wrappers, and `padless train --nproc-per-node`) set: RANK, WORLD_SIZE,
// LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK (the node's index), MASTER_ADDR, MASTER_PORT. With none
// of them set the process trains alone (world 1).
// Pure: no LibTorch, no communication.
#ifndef PADLESS_DISTRIBUTED_DIST_ENV_H_
#define PADLESS_DISTRIBUTED_DIST_ENV_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"

namespace padless::distributed {

struct DistEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  // Ranks on this node (LOCAL_WORLD_SIZE; unset: every rank on one node) and this node's index
  // (GROUP_RANK; unset: rank / local_world_size).
  int local_world_size = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;

  bool distributed() const { return world_size > 1; }
  // Nodes in the job when every node runs local_world_size ranks (torchrun's and the launcher's
  // layout; with uneven nodes, an estimate).
  int nodes() const { return (world_size + local_world_size - 1) / local_world_size; }
};

// Reads the torchrun variables through `getenv` (std::getenv by default; tests pass their own).
// None set: a single process. WORLD_SIZE set but one of the others missing or malformed, a rank
// outside [0, WORLD_SIZE) or LOCAL_WORLD_SIZE above it: InvalidArgument naming the variable and
// its value.
absl::StatusOr<DistEnv> DistEnvFromEnvironment(
    const std::function<const char*(const char*)>& getenv = nullptr);

}  // namespace padless::distributed

#endif  // PADLESS_DISTRIBUTED_DIST_ENV_H_
