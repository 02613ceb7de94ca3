// `padless serve` as a child process for the server tests: started with its stderr in a file
// (a pipe nobody reads would block a chatty server), waited for until its startup line names the
// port, signalled, and reaped with its exit code. The process is killed if the test ends first.
#ifndef PADLESS_TESTS_SERVE_HTTP_SERVER_PROCESS_H_
#define PADLESS_TESTS_SERVE_HTTP_SERVER_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace padless::serve::testing {

class ServerProcess {
 public:
  ServerProcess() = default;
  ~ServerProcess();  // SIGKILL and reap, if still running
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // Runs `padless serve args...` (PADLESS_CLI_PATH) and waits up to `timeout` for the startup
  // line; false (with the log in `log()`) when the process exits or the time runs out first.
  bool Start(const std::vector<std::string>& args,
             std::chrono::seconds timeout = std::chrono::seconds(60));

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  void Signal(int signal) const;
  // The exit code once the process exits within `timeout`; -1 for a death by signal; empty
  // when it is still running.
  std::optional<int> Wait(std::chrono::seconds timeout);
  // Everything the server wrote to stderr so far.
  std::string log() const;

 private:
  pid_t pid_ = -1;
  int port_ = -1;
  std::string log_path_;
};

}  // namespace padless::serve::testing

#endif  // PADLESS_TESTS_SERVE_HTTP_SERVER_PROCESS_H_
