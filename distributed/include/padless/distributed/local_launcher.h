// LaunchLocalWorkers: what `torchrun --nproc-per-node N --nnodes M --node-rank K` does for one
// node, in C++. Starts `argv` N times with torchrun's environment (LOCAL_RANK = i, RANK = K*N + i,
// WORLD_SIZE = M*N, LOCAL_WORLD_SIZE = N, GROUP_RANK = K, MASTER_ADDR and MASTER_PORT: rank 0's
// host and port, or 127.0.0.1 and a free port for a job of one node), forwards every worker's
// stderr line prefixed with "[rank RANK] ", and waits. Every node of a job runs its own launcher
// with the same M, N, address and port; the workers meet at rank 0's TCPStore. When a worker fails (non-zero exit or a signal), the others are
// terminated at once (SIGTERM, then SIGKILL after `grace`), so nothing hangs, and the error names
// that rank, how it ended and its last stderr line. `padless train --nproc-per-node N` re-executes
// its own binary (/proc/self/exe) through it; a C++ program can do the same.
#ifndef PADLESS_DISTRIBUTED_LOCAL_LAUNCHER_H_
#define PADLESS_DISTRIBUTED_LOCAL_LAUNCHER_H_

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace padless::distributed {

struct LaunchOptions {
  int nproc = 2;  // workers on this node
  int nnodes = 1;
  int node_rank = 0;
  // Required when nnodes > 1; for one node, empty and 0 mean 127.0.0.1 and a free port.
  std::string master_addr;
  int master_port = 0;
  std::chrono::milliseconds grace = std::chrono::seconds(10);
};

// OK when every worker exited 0. Otherwise Aborted: "rank R of W failed (exit code C | signal
// S): <its last stderr line>", or "rank R of W hung: ..." when the others only timed out waiting
// for a worker that was still running (it is terminated); InvalidArgument for nproc or nnodes < 1, node_rank outside
// [0, nnodes), several nodes without an address or port, or an empty argv; Internal when a worker
// cannot be started.
absl::Status LaunchLocalWorkers(const std::vector<std::string>& argv, LaunchOptions options);

// A TCP port on 127.0.0.1 that was free a moment ago (MASTER_PORT for local jobs and tests).
int FreeLocalPort();

}  // namespace padless::distributed

#endif  // PADLESS_DISTRIBUTED_LOCAL_LAUNCHER_H_
