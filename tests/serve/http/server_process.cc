#include "server_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <regex>
#include <thread>

#include "gtest/gtest.h"

namespace padless::serve::testing {
namespace {

// The child: stdin from /dev/null, stdout and stderr to `log_path`, then exec. Only
// async-signal-safe calls between fork and exec (the test may have threads: no allocation).
[[noreturn]] void ExecServer(char* const* argv, const char* log_path) {
  const int in = open("/dev/null", O_RDONLY);
  const int out = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (in < 0 || out < 0) _exit(127);
  dup2(in, 0);
  dup2(out, 1);
  dup2(out, 2);
  execv(argv[0], argv);
  _exit(127);
}

}  // namespace

ServerProcess::~ServerProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (!log_path_.empty()) std::remove(log_path_.c_str());
}

bool ServerProcess::Start(const std::vector<std::string>& args, std::chrono::seconds timeout) {
  static std::atomic<int> count{0};
  log_path_ = ::testing::TempDir() + "/padless_serve_log_" + std::to_string(getpid()) + "_" +
              std::to_string(count++);
  std::vector<char*> argv = {const_cast<char*>(PADLESS_CLI_PATH), const_cast<char*>("serve")};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_ = fork();
  if (pid_ == 0) ExecServer(argv.data(), log_path_.c_str());
  if (pid_ < 0) return false;
  const std::regex ready(R"(ready on http://[^ :]+:(\d+) )");
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    std::smatch m;
    const std::string text = log();
    if (std::regex_search(text, m, ready)) {
      port_ = std::stoi(m[1]);
      return true;
    }
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

void ServerProcess::Signal(int signal) const {
  if (pid_ > 0) kill(pid_, signal);
}

std::optional<int> ServerProcess::Wait(std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (pid_ > 0) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return std::nullopt;
}

std::string ServerProcess::log() const {
  std::ifstream in(log_path_, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace padless::serve::testing
