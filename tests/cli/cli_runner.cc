#include "cli_runner.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"

namespace padless::cli::testing {
namespace {

std::string ShellQuote(const std::string& s) {
  return absl::StrCat("'", absl::StrReplaceAll(s, {{"'", "'\\''"}}), "'");
}

}  // namespace

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
}

std::string ScratchDir(const std::string& name) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/padless_cli_", name, "_", getpid());
  const std::string command =
      absl::StrCat("rm -rf ", ShellQuote(dir), " && mkdir -p ", ShellQuote(dir));
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  return dir;
}

CliResult RunPadless(const std::vector<std::string>& args) {
  static std::atomic<int> calls{0};  // RunPadless may be called from several threads
  const std::string base =
      absl::StrCat(::testing::TempDir(), "/padless_cli_run_", getpid(), "_", calls++);
  std::string command = ShellQuote(PADLESS_CLI_PATH);
  for (const std::string& a : args) absl::StrAppend(&command, " ", ShellQuote(a));
  absl::StrAppend(&command, " </dev/null >", ShellQuote(base + ".out"), " 2>",
                  ShellQuote(base + ".err"));
  const int status = std::system(command.c_str());
  CliResult r;
  r.exit_code = (status != -1 && WIFEXITED(status)) ? WEXITSTATUS(status) : -1;
  r.out = ReadFile(base + ".out");
  r.err = ReadFile(base + ".err");
  std::remove((base + ".out").c_str());
  std::remove((base + ".err").c_str());
  return r;
}

}  // namespace padless::cli::testing
