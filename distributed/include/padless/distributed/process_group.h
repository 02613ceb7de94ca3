// ProcessGroup: the communicator of a data-parallel job, on LibTorch's c10d. Rendezvous through a
// c10d::TCPStore at MASTER_ADDR:MASTER_PORT (rank 0 hosts it); collectives through
// ProcessGroupNCCL for CUDA devices and ProcessGroupGloo for the CPU. A Gloo group on the same
// store also carries small host-side values (counts), so that agreeing on them never waits for the
// GPU. Every operation is bounded by `timeout`: a dead or stuck peer turns into an error (Gloo) or,
// on NCCL, into the watchdog's abort with TORCH_NCCL_ASYNC_ERROR_HANDLING (set to 1 unless the user
// set it), so no rank hangs. c10d's headers stay inside the library (they need USE_C10D_* macros).
//
// Collectives must be called in the same order on every rank. Not thread-safe.
#ifndef PADLESS_DISTRIBUTED_PROCESS_GROUP_H_
#define PADLESS_DISTRIBUTED_PROCESS_GROUP_H_

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "padless/distributed/dist_env.h"

namespace padless::distributed {

// In every error of a collective that failed because a peer died or timed out; the local launcher
// uses it to name the rank that failed first rather than those that followed.
inline constexpr char kPeerFailed[] = "failed (a peer died or timed out)";

struct ProcessGroupOptions {
  // Rendezvous and every collective. The default matches NCCL's own (10 minutes).
  std::chrono::milliseconds timeout = std::chrono::minutes(10);
};

// An all-reduce in flight. Wait() returns once the result may be used: on the CPU when it is
// there; on CUDA when the current stream is ordered after it (the host does not wait).
class PendingReduce {
 public:
  PendingReduce() = default;
  absl::Status Wait();
  bool valid() const { return impl_ != nullptr; }

 private:
  friend class ProcessGroup;
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

class ProcessGroup {
 public:
  // Joins the job described by `env` (rank 0 waits for all ranks). `device` picks the backend:
  // NCCL for CUDA (errors when this build has no NCCL), Gloo for the CPU.
  static absl::StatusOr<std::shared_ptr<ProcessGroup>> Create(const DistEnv& env,
                                                              c10::Device device,
                                                              ProcessGroupOptions options = {});
  ~ProcessGroup();

  int rank() const { return env_.rank; }
  int world_size() const { return env_.world_size; }
  int nodes() const { return env_.nodes(); }
  int local_rank() const { return env_.local_rank; }
  int node_rank() const { return env_.node_rank; }
  c10::Device device() const { return device_; }
  const std::string& backend_name() const { return backend_name_; }

  // Sums `tensor` (dense, on the group's device) over the ranks, in place.
  PendingReduce AllReduceSumAsync(at::Tensor tensor);
  absl::Status AllReduceSum(at::Tensor tensor);
  // Sums host integers over the ranks through the Gloo group (no device work).
  absl::StatusOr<std::vector<int64_t>> AllReduceSumHost(std::vector<int64_t> values);
  // Every rank's `values` (the same count on every rank), concatenated in rank order, through the
  // Gloo group.
  absl::StatusOr<std::vector<int64_t>> AllGatherHost(const std::vector<int64_t>& values);
  // `root`'s `bytes` on every rank (e.g. a tokenizer file), through the Gloo group.
  absl::Status BroadcastHostBytes(std::string& bytes, int root);
  // Copies `root`'s tensors to every rank, in place (e.g. the initial parameters from rank 0).
  absl::Status Broadcast(const std::vector<at::Tensor>& tensors, int root);
  // Returns once every rank has called it (or the timeout has passed: an error).
  absl::Status Barrier();

 private:
  struct Impl;
  ProcessGroup(DistEnv env, c10::Device device, std::unique_ptr<Impl> impl);
  absl::Status Failed(const std::string& what, const std::exception& e) const;

  DistEnv env_;
  c10::Device device_;
  std::string backend_name_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace padless::distributed

#endif  // PADLESS_DISTRIBUTED_PROCESS_GROUP_H_
