#include "python_worker.h"

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

extern char** environ;

namespace padless::model_files::testing {
namespace {

// Long enough for a loaded 2-core CI machine to import torch and transformers, or to run the
// slowest reference job; a hung worker still fails the test instead of hanging it.
constexpr int kStartSeconds = 300;

std::string DescribeExit(int status) {
  if (WIFEXITED(status)) return absl::StrCat("exit status ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return absl::StrCat("signal ", WTERMSIG(status));
  return absl::StrCat("wait status ", status);
}

// One `python3 SCRIPT --serve` child. Its stdin and stdout are one end of a socket pair: a socket,
// unlike a pipe, can be written with MSG_NOSIGNAL, so that a dead worker is an error here rather
// than a SIGPIPE that kills the test binary.
class PythonWorker {
 public:
  explicit PythonWorker(std::string script) : script_(std::move(script)) {}
  PythonWorker(const PythonWorker&) = delete;
  PythonWorker& operator=(const PythonWorker&) = delete;
  // Closing its stdin ends the serve loop; a worker that does not end within seconds is killed.
  ~PythonWorker() { Stop(/*kill=*/false); }

  // Starts the child and waits for its "ready" line (its imports done).
  absl::Status Start() {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
      return absl::InternalError(absl::StrCat("socketpair: ", std::strerror(errno)));
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    std::string python = "python3", script = script_, serve = "--serve";
    char* argv[] = {python.data(), script.data(), serve.data(), nullptr};
    const int spawned = ::posix_spawnp(&pid_, "python3", &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    socket_ = fds[0];
    if (spawned != 0) {
      pid_ = -1;
      return Broken(absl::UnavailableError(
          absl::StrCat("cannot start python3 ", script_, ": ", std::strerror(spawned))));
    }
    for (;;) {
      absl::StatusOr<std::string> line = ReadLine(kStartSeconds, "before it was ready");
      if (!line.ok()) return line.status();
      if (*line == "ready") return absl::OkStatus();
      std::fprintf(stderr, "%s (before ready): %s\n", script_.c_str(), line->c_str());
    }
  }

  absl::Status Run(const std::vector<std::string>& args, int timeout_seconds) {
    const std::lock_guard<std::mutex> lock(mutex_);
    const std::string job = absl::StrCat(script_, " ", absl::StrJoin(args, " "));
    if (!broken_.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat(job, ": the Python worker is gone (", broken_.message(), ")"));
    }
    const std::string line = nlohmann::json(args).dump() + "\n";
    for (size_t sent = 0; sent < line.size();) {
      const ssize_t n = ::send(socket_, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const std::string error = std::strerror(errno);
        const std::string ended = Stop(/*kill=*/true);
        return Broken(absl::UnavailableError(absl::StrCat(
            job, ": cannot send the job to the Python worker (", error, "; ", ended, ")")));
      }
      sent += static_cast<size_t>(n);
    }
    absl::StatusOr<std::string> reply = ReadLine(timeout_seconds, "during " + job);
    if (!reply.ok()) return reply.status();
    if (*reply == "ok") return absl::OkStatus();
    return absl::InternalError(absl::StrCat(job, ": ", *reply));
  }

 private:
  // The next line from the worker, or an error (the worker then stopped) when it ends or gives no
  // line within `timeout_seconds`. `when` says what the worker was doing, for the message.
  absl::StatusOr<std::string> ReadLine(int timeout_seconds, const std::string& when) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
    for (;;) {
      const size_t newline = pending_.find('\n');
      if (newline != std::string::npos) {
        std::string line = pending_.substr(0, newline);
        pending_.erase(0, newline + 1);
        return line;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            deadline - std::chrono::steady_clock::now())
                            .count();
      if (left <= 0) {
        const std::string ended = Stop(/*kill=*/true);
        return Broken(absl::DeadlineExceededError(
            absl::StrCat("python3 ", script_, " --serve gave no answer within ", timeout_seconds,
                         " s ", when, " (", ended, ")")));
      }
      pollfd readable{socket_, POLLIN, 0};
      const int polled = ::poll(&readable, 1, static_cast<int>(std::min<int64_t>(left, 60000)));
      if (polled <= 0) continue;  // timed out (the deadline is checked above) or interrupted
      char chunk[4096];
      const ssize_t n = ::read(socket_, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const std::string ended = Stop(/*kill=*/false);
        return Broken(absl::UnavailableError(
            absl::StrCat("python3 ", script_, " --serve ended ", when, " (", ended, ")")));
      }
      pending_.append(chunk, static_cast<size_t>(n));
    }
  }

  absl::Status Broken(absl::Status why) {
    broken_ = why;
    return why;
  }

  // Closes the worker's stdin and reaps it, killing it first when `kill` or when it outlives a
  // grace period; says how it ended.
  std::string Stop(bool kill) {
    if (socket_ >= 0) ::close(socket_);
    socket_ = -1;
    if (pid_ < 0) return "not running";
    if (kill) ::kill(pid_, SIGKILL);
    int status = 0;
    for (int waited_ms = 0;; waited_ms += 10) {
      const pid_t reaped = ::waitpid(pid_, &status, WNOHANG);
      if (reaped == pid_) break;
      if (reaped < 0 && errno != EINTR) {
        pid_ = -1;
        return "lost";
      }
      if (waited_ms == 10000) ::kill(pid_, SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    pid_ = -1;
    return DescribeExit(status);
  }

  const std::string script_;
  pid_t pid_ = -1;
  int socket_ = -1;
  std::string pending_;  // what was read past the last whole line
  absl::Status broken_;  // set once the worker cannot take jobs any more
  std::mutex mutex_;
};

struct Started {
  std::unique_ptr<PythonWorker> worker;
  absl::Status status;  // of its start
};

// The worker for `script`, started on the first call; its start's outcome is kept.
Started& WorkerFor(const std::string& script) {
  static std::mutex mutex;
  static std::map<std::string, Started> workers;  // destroyed at exit, which ends the workers
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = workers.find(script);
  if (it == workers.end()) {
    Started started;
    started.worker = std::make_unique<PythonWorker>(script);
    if (std::getenv("PADLESS_NO_PYTHON") != nullptr) {
      started.status = absl::FailedPreconditionError("PADLESS_NO_PYTHON is set");
    } else {
      started.status = started.worker->Start();
      if (!started.status.ok()) {
        std::fprintf(stderr, "No Python reference worker: %s\n", started.status.ToString().c_str());
      }
    }
    it = workers.emplace(script, std::move(started)).first;
  }
  return it->second;
}

}  // namespace

bool PythonWorkerReady(const std::string& script) { return WorkerFor(script).status.ok(); }

absl::Status RunPythonJob(const std::string& script, const std::vector<std::string>& args,
                          int timeout_seconds) {
  Started& started = WorkerFor(script);
  if (!started.status.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat(script, ": no Python worker: ", started.status.message()));
  }
  return started.worker->Run(args, timeout_seconds);
}

}  // namespace padless::model_files::testing
