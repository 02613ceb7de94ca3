// Runs the built padless binary as a child process and captures its exit code and output, for
// tests of the command-line tool.
#ifndef PADLESS_TESTS_CLI_CLI_RUNNER_H_
#define PADLESS_TESTS_CLI_CLI_RUNNER_H_

#include <string>
#include <vector>

namespace padless::cli::testing {

struct CliResult {
  int exit_code = -1;  // -1 when the process did not exit normally (e.g. a crash)
  std::string out;
  std::string err;
};

// Runs `padless args...` (each argument shell-quoted) with stdin from /dev/null. Thread-safe.
CliResult RunPadless(const std::vector<std::string>& args);

// A fresh, empty directory under the test temp dir, unique to this process and `name`.
std::string ScratchDir(const std::string& name);

std::string ReadFile(const std::string& path);
void WriteFile(const std::string& path, const std::string& content);

}  // namespace padless::cli::testing

#endif  // PADLESS_TESTS_CLI_CLI_RUNNER_H_
