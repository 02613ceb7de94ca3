// Local worker launcher (see local_launcher.h): posix_spawn with torchrun's variables, one stderr
// pipe per worker read through poll(2), and a fail-fast teardown.
#include "padless/distributed/local_launcher.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "padless/distributed/process_group.h"

extern char** environ;

namespace padless::distributed {

namespace {

struct Worker {
  int rank = 0;  // in the job (RANK)
  pid_t pid = -1;
  int stderr_fd = -1;   // read end; -1 once closed
  std::string partial;  // stderr text after the last newline
  std::string last_line;
  bool done = false;
  int status = 0;
};

// The variables the launcher sets; the rest of its environment passes through.
constexpr const char* kJobVariables[] = {"RANK",       "LOCAL_RANK",  "WORLD_SIZE", "LOCAL_WORLD_SIZE",
                                         "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT"};

// Local worker `local` of the job `o` describes (the address and port resolved).
std::vector<std::string> WorkerEnvironment(int local, const LaunchOptions& o) {
  const int nproc = o.nproc;
  std::vector<std::string> vars = {absl::StrCat("RANK=", o.node_rank * nproc + local),
                                   absl::StrCat("LOCAL_RANK=", local),
                                   absl::StrCat("WORLD_SIZE=", o.nnodes * nproc),
                                   absl::StrCat("LOCAL_WORLD_SIZE=", nproc),
                                   absl::StrCat("GROUP_RANK=", o.node_rank),
                                   absl::StrCat("MASTER_ADDR=", o.master_addr),
                                   absl::StrCat("MASTER_PORT=", o.master_port)};
  // As torchrun does: unless the user chose, N workers share the cores instead of each starting
  // one OpenMP thread per core (which spin against each other).
  if (std::getenv("OMP_NUM_THREADS") == nullptr) {
    const int cores = static_cast<int>(std::thread::hardware_concurrency());
    vars.push_back(absl::StrCat("OMP_NUM_THREADS=", std::max(1, cores / nproc)));
  }
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string v = *e;
    const std::string name = v.substr(0, v.find('='));
    if (std::find(std::begin(kJobVariables), std::end(kJobVariables), name) ==
        std::end(kJobVariables)) {
      vars.push_back(v);
    }
  }
  return vars;
}

absl::Status Spawn(const std::vector<std::string>& argv, int local, const LaunchOptions& o,
                   Worker& w) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return absl::InternalError("launcher: pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  std::vector<std::string> env = WorkerEnvironment(local, o);
  std::vector<char*> envp, args;
  for (std::string& v : env) envp.push_back(v.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (std::string& a : argv_copy) args.push_back(a.data());
  args.push_back(nullptr);
  const int rc = posix_spawn(&w.pid, argv[0].c_str(), &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return absl::InternalError(
        absl::StrCat("launcher: cannot start rank ", o.node_rank * o.nproc + local, " (", argv[0],
                     "): ", strerror(rc)));
  }
  w.stderr_fd = fds[0];
  return absl::OkStatus();
}

// Forwards complete lines of `w`'s stderr with the rank prefix; closes the pipe at EOF.
void Drain(Worker& w) {
  char buf[4096];
  const ssize_t n = read(w.stderr_fd, buf, sizeof(buf));
  if (n <= 0) {
    close(w.stderr_fd);
    w.stderr_fd = -1;
    if (!w.partial.empty()) w.last_line = w.partial;
    return;
  }
  w.partial.append(buf, n);
  size_t nl;
  while ((nl = w.partial.find('\n')) != std::string::npos) {
    const std::string line = w.partial.substr(0, nl);
    w.partial.erase(0, nl + 1);
    absl::FPrintF(stderr, "[rank %d] %s\n", w.rank, line);
    if (!line.empty()) w.last_line = line;
  }
}

std::string HowItEnded(int status) {
  if (WIFSIGNALED(status)) return absl::StrCat("signal ", WTERMSIG(status));
  return absl::StrCat("exit code ", WEXITSTATUS(status));
}

bool Failed(const Worker& w) {
  return w.done && !(WIFEXITED(w.status) && WEXITSTATUS(w.status) == 0);
}

// One round: forward stderr for up to 100 ms, then reap exited workers.
void PollOnce(std::vector<Worker>& workers) {
  std::vector<pollfd> fds;
  std::vector<int> ranks;
  for (size_t r = 0; r < workers.size(); ++r) {
    if (workers[r].stderr_fd < 0) continue;
    fds.push_back(pollfd{workers[r].stderr_fd, POLLIN, 0});
    ranks.push_back(static_cast<int>(r));
  }
  if (!fds.empty() && poll(fds.data(), fds.size(), 100) > 0) {
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents != 0) Drain(workers[ranks[i]]);
    }
  } else if (fds.empty()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (Worker& w : workers) {
    if (!w.done && waitpid(w.pid, &w.status, WNOHANG) == w.pid) w.done = true;
  }
}

// Terminates the workers still running: SIGTERM, then SIGKILL after `grace`.
void TerminateOthers(std::vector<Worker>& workers, std::chrono::milliseconds grace) {
  for (Worker& w : workers) {
    if (!w.done) kill(w.pid, SIGTERM);
  }
  const auto deadline = std::chrono::steady_clock::now() + grace;
  auto running = [&] {
    for (const Worker& w : workers) {
      if (!w.done) return true;
    }
    return false;
  };
  while (running() && std::chrono::steady_clock::now() < deadline) PollOnce(workers);
  for (Worker& w : workers) {
    if (w.done) continue;
    kill(w.pid, SIGKILL);
    waitpid(w.pid, &w.status, 0);
    w.done = true;
  }
}

// Whom to blame once worker `first` has failed, and whether it hung rather than failed.
struct Blame {
  int index = 0;
  bool hung = false;
};

// The other ranks usually fail right after the first, because of it; they get 2 s to say so, and
// among the workers that ended by themselves (not by the teardown) the first whose error was not
// a peer's failure is named. When every failure is a peer's (a collective timed out) and a worker
// is still running, that worker never joined the collective: it hung, and is named.
Blame RootCause(std::vector<Worker>& workers, int first) {
  const auto settle = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < settle) {
    bool running = false;
    for (const Worker& w : workers) running = running || !w.done;
    if (!running) break;
    PollOnce(workers);
  }
  for (size_t r = 0; r < workers.size(); ++r) {
    while (workers[r].done && workers[r].stderr_fd >= 0) Drain(workers[r]);
  }
  for (size_t r = 0; r < workers.size(); ++r) {
    if (Failed(workers[r]) && !absl::StrContains(workers[r].last_line, kPeerFailed)) {
      return Blame{static_cast<int>(r), false};
    }
  }
  if (absl::StrContains(workers[first].last_line, kPeerFailed)) {
    for (size_t r = 0; r < workers.size(); ++r) {
      if (!workers[r].done) return Blame{static_cast<int>(r), true};
    }
  }
  return Blame{first, false};
}

}  // namespace

int FreeLocalPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 29500;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

namespace {

// The job's shape checked, and for one node the address and port filled in.
absl::Status ResolveJob(LaunchOptions& o) {
  if (o.nproc < 1) return absl::InvalidArgumentError("launcher: nproc must be >= 1");
  if (o.nnodes < 1) return absl::InvalidArgumentError("launcher: nnodes must be >= 1");
  if (o.node_rank < 0 || o.node_rank >= o.nnodes) {
    return absl::InvalidArgumentError(absl::StrCat("launcher: node_rank must be in [0, ",
                                                   o.nnodes, "), got ", o.node_rank));
  }
  if (o.master_port < 0 || o.master_port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("launcher: master_port must be in [1, 65535], got ", o.master_port));
  }
  if (o.nnodes > 1 && (o.master_addr.empty() || o.master_port == 0)) {
    return absl::InvalidArgumentError(
        "launcher: a job of several nodes needs rank 0's address and port (master_addr, "
        "master_port), the same on every node");
  }
  if (o.master_addr.empty()) o.master_addr = "127.0.0.1";
  if (o.master_port == 0) o.master_port = FreeLocalPort();
  return absl::OkStatus();
}

}  // namespace

absl::Status LaunchLocalWorkers(const std::vector<std::string>& argv, LaunchOptions options) {
  if (absl::Status s = ResolveJob(options); !s.ok()) return s;
  if (argv.empty()) return absl::InvalidArgumentError("launcher: no program to run");
  std::vector<Worker> workers(options.nproc);
  for (int r = 0; r < options.nproc; ++r) {
    workers[r].rank = options.node_rank * options.nproc + r;
    if (absl::Status s = Spawn(argv, r, options, workers[r]); !s.ok()) {
      workers.resize(r);
      TerminateOthers(workers, options.grace);
      return s;
    }
  }
  int failed = -1;
  for (;;) {
    PollOnce(workers);
    bool all_done = true;
    for (int r = 0; r < options.nproc; ++r) {
      if (failed < 0 && Failed(workers[r])) failed = r;
      all_done = all_done && workers[r].done;
    }
    if (failed >= 0 || all_done) break;
  }
  if (failed < 0) {
    while (true) {  // forward what is left in the pipes
      bool open = false;
      for (int r = 0; r < options.nproc; ++r) {
        if (workers[r].stderr_fd >= 0) {
          open = true;
          Drain(workers[r]);
        }
      }
      if (!open) break;
    }
    return absl::OkStatus();
  }
  const Blame blame = RootCause(workers, failed);
  TerminateOthers(workers, options.grace);
  for (int r = 0; r < options.nproc; ++r) {
    while (workers[r].stderr_fd >= 0) Drain(workers[r]);
  }
  const int world = options.nnodes * options.nproc;
  const Worker& w = workers[blame.index];
  if (blame.hung) {
    return absl::AbortedError(absl::StrCat(
        "rank ", w.rank, " of ", world, " hung: it was still running when rank ",
        workers[failed].rank, " failed with '", workers[failed].last_line, "'; terminated"));
  }
  return absl::AbortedError(absl::StrCat("rank ", w.rank, " of ", world, " failed (",
                                         HowItEnded(w.status), "): ",
                                         w.last_line.empty() ? "(no output)" : w.last_line));
}

}  // namespace padless::distributed
