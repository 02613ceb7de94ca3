#include "distributed_train.h"

#include <algorithm>
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
#include "cli_util.h"
#include "flag_spelling.h"
#include "subcommand.h"

ABSL_FLAG(int, nproc_per_node, 0,
          "train: start this many local workers (data parallel; 0: this process trains, or is "
          "one rank of a torchrun/srun job when RANK/WORLD_SIZE are set)");
ABSL_FLAG(int, nnodes, 1,
          "train: nodes in the job; each runs `padless train --nproc-per-node N` with its own "
          "--node-rank and the same --master-addr and --master-port");
ABSL_FLAG(int, node_rank, 0, "train: this node's index in [0, --nnodes)");
ABSL_FLAG(std::string, master_addr, "",
          "train: host of rank 0 (node 0), where the ranks meet (several nodes; default for one "
          "node: 127.0.0.1)");
ABSL_FLAG(int, master_port, 0,
          "train: TCP port on --master-addr where the ranks meet (several nodes; default for one "
          "node: a free port)");
ABSL_FLAG(std::string, grad_comm, "fp32",
          "train: data type of the gradient all-reduce: fp32 or bf16");
ABSL_FLAG(int64_t, dist_timeout, 600,
          "train: seconds a rendezvous or collective may take before the job fails");

namespace padless::cli {

namespace {

// The launcher's flags, which the workers must not see again.
bool IsLauncherFlag(const std::string& flag) {
  for (const char* name : {"nproc-per-node", "nnodes", "node-rank", "master-addr", "master-port"}) {
    std::string underscored = name;
    std::replace(underscored.begin(), underscored.end(), '-', '_');
    if (flag == absl::StrCat("--", name) || flag == absl::StrCat("--", underscored)) return true;
  }
  return false;
}

// This process's command line without the launcher's flags (both the "=V" and the "V" forms).
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
    if (IsLauncherFlag(flag)) {
      if (args[i].find('=') == std::string::npos) ++i;  // its value is the next argument
      continue;
    }
    out.push_back(args[i]);
  }
  return out;
}

// The launcher's flags as LaunchOptions; InvalidArgument in the flags' words.
absl::StatusOr<distributed::LaunchOptions> LaunchFromFlags() {
  distributed::LaunchOptions launch;
  launch.nproc = absl::GetFlag(FLAGS_nproc_per_node);
  launch.nnodes = absl::GetFlag(FLAGS_nnodes);
  launch.node_rank = absl::GetFlag(FLAGS_node_rank);
  launch.master_addr = absl::GetFlag(FLAGS_master_addr);
  launch.master_port = absl::GetFlag(FLAGS_master_port);
  const bool several = launch.nnodes != 1 || launch.node_rank != 0 ||
                       !launch.master_addr.empty() || launch.master_port != 0;
  if (several && launch.nproc <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        FlagAsWritten("nnodes"), ", ", FlagAsWritten("node_rank"), ", ",
        FlagAsWritten("master_addr"), " and ", FlagAsWritten("master_port"), " go with ",
        FlagAsWritten("nproc_per_node"), " (the launcher's flags)"));
  }
  if (launch.nnodes < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(FlagAsWritten("nnodes"), " must be >= 1, got ", launch.nnodes));
  }
  if (launch.node_rank < 0 || launch.node_rank >= launch.nnodes) {
    return absl::InvalidArgumentError(absl::StrCat(FlagAsWritten("node_rank"), " must be in [0, ",
                                                   launch.nnodes, "), got ", launch.node_rank));
  }
  if (launch.master_port < 0 || launch.master_port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(FlagAsWritten("master_port"),
                                                   " must be in [1, 65535], got ",
                                                   launch.master_port));
  }
  if (launch.nnodes > 1 && (launch.master_addr.empty() || launch.master_port == 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a job of ", launch.nnodes, " nodes needs ", FlagAsWritten("master_addr"), " and ",
        FlagAsWritten("master_port"), " (node 0's host and a free port, the same on every node)"));
  }
  return launch;
}

}  // namespace

absl::Status CheckDistributedFlags() {
  const std::string comm = absl::GetFlag(FLAGS_grad_comm);
  if (comm != "fp32" && comm != "bf16") {
    return absl::InvalidArgumentError(
        absl::StrCat(FlagAsWritten("grad_comm"), " must be fp32 or bf16, not '", comm, "'"));
  }
  if (absl::GetFlag(FLAGS_dist_timeout) < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(FlagAsWritten("dist_timeout"), " must be >= 1 (seconds)"));
  }
  return LaunchFromFlags().status();
}

std::optional<int> RunLocalWorkersIfAsked() {
  absl::StatusOr<distributed::LaunchOptions> launch = LaunchFromFlags();
  if (!launch.ok()) return Usage("train", launch.status().message());
  if (launch->nproc <= 0 || std::getenv("WORLD_SIZE") != nullptr) return std::nullopt;
  absl::Status s = distributed::LaunchLocalWorkers(WorkerCommandLine(), *launch);
  if (s.ok()) return kExitOk;
  absl::FPrintF(stderr, "padless train: %s\n", s.message());
  return kExitFailure;
}

absl::Status JoinDataParallelJob(train::TrainJobOptions& job) {
  if (absl::Status s = CheckDistributedFlags(); !s.ok()) return s;
  const std::string comm = absl::GetFlag(FLAGS_grad_comm);
  absl::StatusOr<distributed::DistEnv> env = distributed::DistEnvFromEnvironment();
  if (!env.ok()) return env.status();
  if (!env->distributed()) return absl::OkStatus();
  c10::Device device = job.device.value_or(train::DefaultTrainingDevice());
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
