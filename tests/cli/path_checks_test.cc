// Every path flag of every subcommand against every kind of bad path (issue 13.2): the command
// exits 1 (never aborts), names the flag as written and the path, says what is wrong, and writes
// nothing. The other flags of each row name valid paths, so the flag under test is the one that
// fails; the model directories and tokenizer files only need to pass the path checks (a row that
// got past them would fail later, loading them, and break the "what is wrong" expectation).
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli_runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace padless::cli {
namespace {

using testing::CliResult;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::RunPadless;
using testing::ScratchDir;
using testing::WriteFile;

// What a path flag names.
enum class Role { kTextIn, kTokenizerIn, kModelDirIn, kOutFile, kOutDir, kOutPrefix };

struct Row {
  std::vector<std::string> command;  // e.g. {"tokenize", "stats"}
  std::string flag;                  // as written on the command line, e.g. "--metrics-json"
  Role role;
};

// A bad path of one kind and the words the message must hold.
struct BadPath {
  std::string kind;
  std::string path;
  std::string expect;
  bool needs_non_root = false;  // permission cases: root reads and writes anyway (see root_)
};

// Name -> path and mode of everything in the fixture directory, to prove nothing was written.
std::map<std::string, std::string> Snapshot(const std::string& dir) {
  std::map<std::string, std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    ::lstat((dir + "/" + name).c_str(), &st);
    out[name] = absl::StrCat(st.st_mode, ":", st.st_size, ":", st.st_mtime);
    if (S_ISDIR(st.st_mode)) {
      for (const auto& [n, v] : Snapshot(dir + "/" + name)) out[name + "/" + n] = v;
    }
  }
  ::closedir(d);
  return out;
}

class PathChecksTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(ScratchDir("path_checks"));
    const std::string& d = *dir_;
    WriteFile(d + "/good.tsv", "label\ttext\n0\thello there\n1\tgood bye\n");
    WriteFile(d + "/good.txt", "hello there\ngood bye\n");
    WriteFile(d + "/tok.model", "not parsed before the path checks pass");
    ::mkdir((d + "/model").c_str(), 0755);
    WriteFile(d + "/model/config.json", "{}");
    WriteFile(d + "/model/tokenizer.model", "x");
    ::mkdir((d + "/emptydir").c_str(), 0755);
    WriteFile(d + "/empty.tsv", "");
    WriteFile(d + "/binary.tsv", std::string("0\tab\0cd\n", 8));
    WriteFile(d + "/secret.tsv", "0\thidden\n");
    ::chmod((d + "/secret.tsv").c_str(), 0);
    ::mkdir((d + "/lockeddir").c_str(), 0);
    ::mkdir((d + "/readonly").c_str(), 0555);
    ::mkfifo((d + "/fifo").c_str(), 0644);
    const int fd = ::open((d + "/secret.tsv").c_str(), O_RDONLY);
    // Root reads and writes through modes (CI may run as root), unless it dropped
    // CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH; so the permission cases run only where the modes
    // are seen to hold: as root that first opens the file anyway is skipped.
    root_ = fd >= 0 || ::access((d + "/readonly").c_str(), W_OK) == 0;
    if (fd >= 0) ::close(fd);
  }
  static void TearDownTestSuite() {
    ::chmod((*dir_ + "/lockeddir").c_str(), 0755);
    ::chmod((*dir_ + "/readonly").c_str(), 0755);
    delete dir_;
  }

  // Valid arguments for every path flag of `command`, and fast settings for the rest.
  static std::vector<std::string> ValidArgs(const std::vector<std::string>& command) {
    const std::string& d = *dir_;
    std::vector<std::string> a = command;
    const std::string c = absl::StrCat(command[0], command.size() > 1 ? " " + command[1] : "");
    std::vector<std::string> more;
    if (c == "train") {
      more = {"--data",         d + "/good.tsv",    "--dev",    d + "/good.tsv",
              "--init-from",    d + "/model",       "--out",    d + "/train_out",
              "--metrics-json", d + "/train.json",  "--device", "cpu",
              "--token-cache",  d + "/tokens.cache"};
    } else if (c == "eval") {
      more = {"--model",        d + "/model",     "--data",   d + "/good.tsv",
              "--metrics-json", d + "/eval.json", "--device", "cpu"};
    } else if (c == "predict") {
      more = {"--model", d + "/model", "--data", d + "/good.tsv", "--device", "cpu"};
    } else if (c == "prune") {
      more = {"--model",       d + "/model", "--data",         d + "/good.tsv", "--dev",
              d + "/good.tsv", "--out",      d + "/prune_out", "--device",      "cpu"};
    } else if (c == "tokenize train") {
      more = {"--input", d + "/good.txt", "--out", d + "/newtok"};
    } else if (c == "tokenize encode") {
      more = {"--model", d + "/tok.model", "--data", d + "/good.tsv", "--out", d + "/cache"};
    } else if (c == "tokenize stats") {
      more = {"--model", d + "/tok.model", "--data", d + "/good.tsv",
              "--csv",   d + "/h.csv",     "--svg",  d + "/h.svg"};
    } else if (c == "bench-padding") {
      more = {"--data", d + "/good.tsv", "--model", d + "/tok.model",
              "--csv",  d + "/b.csv",    "--svg",   d + "/b.svg"};
    } else if (c == "profile-memory") {
      more = {"--sweep-device",
              "cpu",
              "--sweep-preset",
              "tiny",
              "--sweep-seq-lens",
              "8",
              "--sweep-batch-sizes",
              "1",
              "--held-out-lens",
              "8",
              "--csv",
              d + "/p.csv",
              "--svg",
              d + "/p.svg"};
    }
    a.insert(a.end(), more.begin(), more.end());
    return a;
  }

  static std::vector<BadPath> BadPaths(Role role) {
    const std::string& d = *dir_;
    const BadPath missing{"missing", d + "/missing", "does not exist"};
    const BadPath fifo{"fifo", d + "/fifo", "FIFO"};
    switch (role) {
      case Role::kTextIn:
        return {missing,
                {"directory", d + "/emptydir", "is a directory"},
                {"unreadable", d + "/secret.tsv", "cannot be read", true},
                {"empty", d + "/empty.tsv", "is empty"},
                {"binary", d + "/binary.tsv", "binary"},
                fifo};
      case Role::kTokenizerIn:
        return {missing,
                {"directory without a tokenizer", d + "/emptydir", "has none of tokenizer.model"},
                {"unreadable", d + "/secret.tsv", "cannot be read", true},
                {"empty", d + "/empty.tsv", "is empty"},
                fifo};
      case Role::kModelDirIn:
        return {missing,
                {"file", d + "/good.tsv", "is a file, expected a directory"},
                {"directory without config.json", d + "/emptydir", "has no config.json"},
                {"unreadable", d + "/lockeddir", "cannot be read", true},
                fifo};
      case Role::kOutFile:
        return {{"parent missing", d + "/nope/out", "nope does not exist"},
                {"directory", d + "/emptydir", "is a directory"},
                {"unwritable", d + "/readonly/out", "is not writable", true},
                fifo};
      case Role::kOutDir:
        return {{"file", d + "/good.tsv", "expected a directory"},
                {"below a file", d + "/good.tsv/sub", "not a directory"},
                {"unwritable", d + "/readonly/sub", "is not writable", true},
                fifo};
      case Role::kOutPrefix:
        return {{"parent missing", d + "/nope/out", "nope does not exist"},
                {"unwritable", d + "/readonly/out", "is not writable", true}};
    }
    return {};
  }

  static std::string* dir_;
  static bool root_;
};

std::string* PathChecksTest::dir_ = nullptr;
bool PathChecksTest::root_ = false;

const std::vector<Row>& Matrix() {
  static const auto* rows = new std::vector<Row>{
      {{"train"}, "--data", Role::kTextIn},
      {{"train"}, "--dev", Role::kTextIn},
      {{"train"}, "--init-from", Role::kModelDirIn},
      {{"train"}, "--out", Role::kOutDir},
      {{"train"}, "--token-cache", Role::kOutFile},
      {{"train"}, "--metrics-json", Role::kOutFile},
      {{"eval"}, "--model", Role::kModelDirIn},
      {{"eval"}, "--data", Role::kTextIn},
      {{"eval"}, "--metrics-json", Role::kOutFile},
      {{"predict"}, "--model", Role::kModelDirIn},
      {{"predict"}, "--data", Role::kTextIn},
      {{"prune"}, "--model", Role::kModelDirIn},
      {{"prune"}, "--data", Role::kTextIn},
      {{"prune"}, "--dev", Role::kTextIn},
      {{"prune"}, "--out", Role::kOutDir},
      {{"tokenize", "train"}, "--input", Role::kTextIn},
      {{"tokenize", "train"}, "--out", Role::kOutPrefix},
      {{"tokenize", "encode"}, "--model", Role::kTokenizerIn},
      {{"tokenize", "encode"}, "--data", Role::kTextIn},
      {{"tokenize", "encode"}, "--out", Role::kOutFile},
      {{"tokenize", "stats"}, "--model", Role::kTokenizerIn},
      {{"tokenize", "stats"}, "--data", Role::kTextIn},
      {{"tokenize", "stats"}, "--csv", Role::kOutFile},
      {{"tokenize", "stats"}, "--svg", Role::kOutFile},
      {{"bench-padding"}, "--data", Role::kTextIn},
      {{"bench-padding"}, "--model", Role::kTokenizerIn},
      {{"bench-padding"}, "--csv", Role::kOutFile},
      {{"bench-padding"}, "--svg", Role::kOutFile},
      {{"profile-memory"}, "--csv", Role::kOutFile},
      {{"profile-memory"}, "--svg", Role::kOutFile},
  };
  return *rows;
}

// Replaces the value of `flag` in `args` (ValidArgs gives every path flag a value).
std::vector<std::string> WithFlag(std::vector<std::string> args, const std::string& flag,
                                  const std::string& value) {
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == flag) {
      args[i + 1] = value;
      return args;
    }
  }
  ADD_FAILURE() << "ValidArgs lacks " << flag;
  return args;
}

TEST_F(PathChecksTest, EveryPathFlagRejectsEveryKindOfBadPathBeforeAnyWork) {
  struct Run {
    std::string what, flag_and_path, expect;
    std::vector<std::string> args;
    CliResult result;
  };
  std::vector<Run> runs;
  int skipped = 0;
  for (const Row& row : Matrix()) {
    for (const BadPath& bad : BadPaths(row.role)) {
      if (bad.needs_non_root && root_) {
        ++skipped;
        continue;
      }
      std::vector<std::string> args = WithFlag(ValidArgs(row.command), row.flag, bad.path);
      runs.push_back({absl::StrCat(args[0], " ", row.flag, " ", bad.kind),
                      row.flag + " " + bad.path,
                      bad.expect,
                      std::move(args),
                      {}});
    }
  }
  // Every run must leave the fixture untouched, so they can share one before/after snapshot and
  // run a few at a time (each process spends most of its time loading LibTorch).
  const auto before = Snapshot(*dir_);
  constexpr size_t kParallel = 4;
  std::atomic<size_t> next{0};
  std::vector<std::thread> workers;
  for (size_t w = 0; w < kParallel; ++w) {
    workers.emplace_back([&] {
      for (size_t i = next++; i < runs.size(); i = next++)
        runs[i].result = RunPadless(runs[i].args);
    });
  }
  for (std::thread& t : workers) t.join();
  EXPECT_EQ(Snapshot(*dir_), before) << "a run wrote into the fixture";
  for (const Run& run : runs) {
    const CliResult& r = run.result;
    EXPECT_EQ(r.exit_code, 1) << run.what << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(run.flag_and_path)) << run.what;
    EXPECT_THAT(r.err, HasSubstr(run.expect)) << run.what;
    EXPECT_THAT(r.err, HasSubstr(": error: ")) << run.what;
    EXPECT_THAT(r.err, Not(HasSubstr("terminate called"))) << run.what;
  }
  EXPECT_GE(runs.size() + skipped, 100u);
  if (skipped > 0) {
    std::printf("skipped %d permission cases: file modes are not enforced (euid %d)\n", skipped,
                static_cast<int>(geteuid()));
  }
}

TEST_F(PathChecksTest, MessagesNameTheFlagAsTheUserWroteIt) {
  std::vector<std::string> args = ValidArgs({"eval"});
  args = WithFlag(args, "--metrics-json", *dir_ + "/nope/m.json");
  for (std::string& a : args) {
    if (a == "--metrics-json") a = "--metrics_json";
  }
  const CliResult r = RunPadless(args);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--metrics_json " + *dir_ + "/nope/m.json"));
}

// The cases of issue 13.2, as reported.
TEST_F(PathChecksTest, ReportedCases) {
  const std::string& d = *dir_;
  CliResult r = RunPadless({"predict", "--model", d + "/good.tsv"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("is a file, expected a directory"));
  EXPECT_THAT(r.err, Not(HasSubstr("does not exist")));
  r = RunPadless({"eval", "--model", d + "/model", "--data", d + "/emptydir"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("--data " + d + "/emptydir: is a directory"));
  const auto before = Snapshot(d);
  r = RunPadless({"train", "--data", d + "/good.tsv", "--out", d + "/good.tsv"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("--out " + d + "/good.tsv: is a regular file"));
  EXPECT_THAT(r.err, Not(HasSubstr("INTERNAL")));
  EXPECT_EQ(Snapshot(d), before);
}

// `--help` says --model takes a tokenizer file or a model directory; a directory used to abort
// bench-padding with std::ios_failure (issue 13.2). Now it uses the directory's tokenizer.model.
TEST_F(PathChecksTest, TokenizerFlagsAcceptAModelDirectory) {
  const std::string model_dir = ScratchDir("path_checks_model_dir");
  const std::string data = std::string(PADLESS_SOURCE_DIR) + "/data/sst2_dev.tsv";
  CliResult r = RunPadless({"tokenize", "train", "--input", data, "--out", model_dir + "/tokenizer",
                            "--vocab-size", "300", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = RunPadless(
      {"bench-padding", "--data", data, "--model", model_dir, "--max-len", "64", "--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("pad_to_max_len"));
  r = RunPadless({"tokenize", "stats", "--data", data, "--model", model_dir, "--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("count: 872"));
}

// A usage error is reported before a bad path, whichever comes first on the command line.
TEST_F(PathChecksTest, UsageErrorsComeBeforePathErrors) {
  const CliResult r = RunPadless(
      {"eval", "--model", *dir_ + "/missing", "--data", *dir_ + "/missing", "--batch-size", "0"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--batch-size must be >= 1, got 0"));
}

}  // namespace
}  // namespace padless::cli
