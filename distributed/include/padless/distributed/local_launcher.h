// LaunchLocalWorkers: what `torchrun --nproc-per-node N` does for one node, in C++. Starts `argv`
// N times with torchrun's environment (RANK = LOCAL_RANK = i, WORLD_SIZE = N, MASTER_ADDR =
// 127.0.0.1, MASTER_PORT = a free port), forwards every worker's stderr line prefixed with
// "[rank i] ", and waits. When a worker fails (non-zero exit or a signal), the others are
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
  int nproc = 2;
  std::chrono::milliseconds grace = std::chrono::seconds(10);
};

// OK when every worker exited 0. Otherwise Aborted: "rank R failed (exit code C | signal S):
// <its last stderr line>"; InvalidArgument for nproc < 1 or an empty argv; Internal when a worker
// cannot be started.
absl::Status LaunchLocalWorkers(const std::vector<std::string>& argv, LaunchOptions options);

// A TCP port on 127.0.0.1 that was free a moment ago (MASTER_PORT for local jobs and tests).
int FreeLocalPort();

}  // namespace padless::distributed

#endif  // PADLESS_DISTRIBUTED_LOCAL_LAUNCHER_H_
