// Data-parallel `padless train`: the flags --nproc-per-node, --nnodes, --node-rank, --master-addr,
// --master-port, --grad-comm and --dist-timeout, the local launcher (the command re-executes
// itself as N workers on this node) and joining the job that torchrun, srun or the launcher
// described in the environment. The work is in padless/distributed/.
#ifndef PADLESS_CLI_DISTRIBUTED_TRAIN_H_
#define PADLESS_CLI_DISTRIBUTED_TRAIN_H_

#include <optional>

#include "absl/status/status.h"
#include "padless/train/train_job.h"

namespace padless::cli {

// The flag names `padless train` accepts for this (Subcommand::flags).
inline constexpr const char* kDistributedFlags[] = {
    "nproc_per_node", "nnodes", "node_rank", "master_addr", "master_port", "grad_comm",
    "dist_timeout"};

// The flags above in range and consistent (a job of several nodes names where its ranks meet);
// InvalidArgument in the flags' words. Before any path is looked at.
absl::Status CheckDistributedFlags();

// With --nproc-per-node N (N >= 1, and no WORLD_SIZE in the environment yet): runs this very
// command N times as this node's workers (node --node-rank of --nnodes, meeting at --master-addr
// and --master-port) and returns the exit code (0, or 1 after naming the failed rank and its
// error). Otherwise nullopt: this process trains itself. CheckDistributedFlags() first.
std::optional<int> RunLocalWorkersIfAsked();

// Reads torchrun's variables; in a job of several ranks, joins it (NCCL on CUDA:LOCAL_RANK, Gloo
// on the CPU) and sets job.device and job.train.data_parallel. Usage errors name the flag or the
// variable (InvalidArgument); a failed rendezvous is Unavailable.
absl::Status JoinDataParallelJob(train::TrainJobOptions& job);

}  // namespace padless::cli

#endif  // PADLESS_CLI_DISTRIBUTED_TRAIN_H_
