#include "distributed_train.h"

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "padless/distributed/dist_env.h"
#include "padless/distributed/local_launcher.h"
#include "padless/distributed/process_group.h"
#include "padless/base/read_file.h"
#include "subcommand.h"

ABSL_FLAG(int, nproc_per_node, 0,
          "train: start this many local workers (data parallel; 0: this process trains, or is "
          "one rank of a torchrun/srun job when RANK/WORLD_SIZE are set)");
ABSL_FLAG(std::string, grad_comm, "fp32",
          "train: data type of the gradient all-reduce: fp32 or bf16");
ABSL_FLAG(int64_t, dist_timeout, 600,
          "train: seconds a rendezvous or collective may take before the job fails");

namespace padless::cli {

namespace {

// This process's command line without --nproc-per-node (both the "=N" and the "N" forms).
std::vector<std::string> WorkerCommandLine() {
  absl::StatusOr<std::string> raw = base::ReadFile("/proc/self/cmdline");
  std::vector<std::string> args;
  if (!raw.ok()) return args;
  for (size_t start = 0; start < raw->size();) {
    const size_t end = raw->find('\0', start);
    args.push_back(raw->substr(start, end - start));
    start = end == std::string::npos ? raw->size() : end + 1;
  }
  std::vector<std::string> out = {"/proc/self/exe"};
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string flag = args[i].substr(0, args[i].find('='));
    if (flag == "--nproc-per-node" || flag == "--nproc_per_node") {
      if (args[i].find('=') == std::string::npos) ++i;  // its value is the next argument
      continue;
    }
    out.push_back(args[i]);
  }
  return out;
}

}  // namespace

std::optional<int> RunLocalWorkersIfAsked() {
  const int n = absl::GetFlag(FLAGS_nproc_per_node);
  if (n <= 0 || std::getenv("WORLD_SIZE") != nullptr) return std::nullopt;
  distributed::LaunchOptions launch;
  launch.nproc = n;
  absl::Status s = distributed::LaunchLocalWorkers(WorkerCommandLine(), launch);
  if (s.ok()) return kExitOk;
  absl::FPrintF(stderr, "padless train: %s\n", s.message());
  return kExitFailure;
}

absl::Status JoinDataParallelJob(models::TrainJobOptions& job) {
  const std::string comm = absl::GetFlag(FLAGS_grad_comm);
  if (comm != "fp32" && comm != "bf16") {
    return absl::InvalidArgumentError(
        absl::StrCat("--grad-comm must be fp32 or bf16, not '", comm, "'"));
  }
  if (absl::GetFlag(FLAGS_dist_timeout) < 1) {
    return absl::InvalidArgumentError("--dist-timeout must be >= 1 (seconds)");
  }
  absl::StatusOr<distributed::DistEnv> env = distributed::DistEnvFromEnvironment();
  if (!env.ok()) return env.status();
  if (!env->distributed()) return absl::OkStatus();
  c10::Device device = job.device.value_or(models::DefaultTrainingDevice());
  if (device.is_cuda()) device = c10::Device(c10::kCUDA, env->local_rank);
  job.device = device;
  distributed::ProcessGroupOptions group_options;
  group_options.timeout = std::chrono::seconds(absl::GetFlag(FLAGS_dist_timeout));
  absl::StatusOr<std::shared_ptr<distributed::ProcessGroup>> group =
      distributed::ProcessGroup::Create(*env, device, group_options);
  if (!group.ok()) return group.status();
  distributed::DataParallel dp;
  dp.group = *group;
  dp.reducer.comm_dtype = comm == "bf16" ? at::kBFloat16 : at::kFloat;
  job.train.data_parallel(dp);
  return absl::OkStatus();
}

}  // namespace padless::cli
