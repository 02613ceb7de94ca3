// Fault tests of training (issue 6). An inf/NaN loss or gradient skips the step without touching
// any state, in every AMP mode, and a run of them stops after exactly the bound. A SIGKILL in the
// middle of a checkpoint write (the real `padless train`, through PADLESS_FAULT_INJECT) leaves the
// earlier checkpoints, and resuming reproduces the uninterrupted run bit for bit. A full disk or a
// read-only checkpoint directory is a clear error that keeps the earlier checkpoint. An
// out-of-memory split loses no example. GPU tests: fp16 through the GradScaler, a real OOM.
#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <c10/util/Exception.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <torch/serialize/input-archive.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gpu_test_util.h"
#include "padless/model_files/safetensors.h"
#include "padless/train/trainer.h"
#include "trainer_fixtures.h"

#ifdef PADLESS_TORCH_HAS_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda_runtime_api.h>
#endif

extern char** environ;

namespace padless::train {
namespace {

using testing::AllFinite;
using testing::BitwiseEqual;
using testing::FilesEndingWith;
using models::testing::HasCuda;
using testing::MaxDiff;
using testing::Params;
using testing::Plan;
using testing::Quiet;
using testing::SyntheticCorpus;
using testing::TempDir;
using testing::TinyConfig;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteAll(const std::string& path, const std::string& content) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
}

int64_t FileSize(const std::string& path) {
  struct stat st = {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : -1;
}

// Every tensor of a model's safetensors weights by name (empty when unreadable).
std::map<std::string, at::Tensor> ReadWeights(const std::string& path) {
  std::map<std::string, at::Tensor> out;
  absl::StatusOr<padless::model_files::SafetensorsFile> f = padless::model_files::SafetensorsFile::Open(path);
  if (!f.ok()) return out;
  for (const auto& entry : f->entries()) out[entry.first] = *f->Tensor(entry.first, true);
  return out;
}

// Every tensor of a torch archive by key.
std::map<std::string, at::Tensor> ReadArchive(const std::string& path) {
  torch::serialize::InputArchive a;
  a.load_from(path, at::Device(at::kCPU));
  std::map<std::string, at::Tensor> out;
  for (const std::string& key : a.keys()) {
    at::Tensor t;
    if (a.try_read(key, t)) out[key] = t;
  }
  return out;
}

// Keys (with `prefix`) whose tensors are not bitwise equal in `a` and `b`; "<missing>" entries
// for keys present in only one of them.
std::vector<std::string> Differences(const std::map<std::string, at::Tensor>& a,
                                     const std::map<std::string, at::Tensor>& b,
                                     const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& [key, t] : a) {
    if (key.rfind(prefix, 0) != 0) continue;
    auto it = b.find(key);
    if (it == b.end()) {
      out.push_back(key + " <missing>");
    } else if (!at::equal(t, it->second)) {
      out.push_back(key);
    }
  }
  for (const auto& [key, t] : b) {
    if (key.rfind(prefix, 0) == 0 && a.count(key) == 0) out.push_back(key + " <missing>");
  }
  return out;
}

std::string CheckpointName(int64_t step) {
  char name[32];
  std::snprintf(name, sizeof name, "step-%08lld.pt", static_cast<long long>(step));
  return name;
}

// Column `name` of every data row of a CSV log.
std::vector<std::string> CsvColumn(const std::string& path, const std::string& name) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = absl::StrSplit(line, ',');
  const size_t col = std::find(header.begin(), header.end(), name) - header.begin();
  std::vector<std::string> out;
  while (std::getline(in, line)) {
    const std::vector<std::string> f = absl::StrSplit(line, ',');
    out.push_back(col < f.size() ? f[col] : "<none>");
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// inf / NaN

enum class Fault { kNanLoss, kInfGradient };

// 48 examples in batches of 8: 6 optimizer steps per epoch, a checkpoint after each.
TEST(NonFiniteTest, StepIsSkippedWithoutChangingAnyStateAndTrainingContinues) {
  const auto data = SyntheticCorpus(21, 48);
  constexpr int64_t kBadStep = 2;  // 0-based: the step that leaves checkpoint step-3
  for (models::AmpMode amp : {models::AmpMode::kOff, models::AmpMode::kBf16}) {
    for (Fault fault : {Fault::kNanLoss, Fault::kInfGradient}) {
      SCOPED_TRACE(
          absl::StrCat(models::AmpModeName(amp), fault == Fault::kNanLoss ? " NaN loss" : " inf grad"));
      TempDir dir;
      at::manual_seed(22);
      models::EncoderClassifier model(TinyConfig(0.1));
      TrainConfig config = Quiet()
                               .epochs(1)
                               .lr(1e-3)
                               .amp(amp)
                               .checkpoint_dir(dir.file("ckpt"))
                               .checkpoint_every(1)
                               .keep_checkpoints(100)
                               .log_csv(dir.file("log.csv"))
                               .log_every(1);
      int injected = 0;
      if (fault == Fault::kNanLoss) {
        config.on_loss = [&](int64_t step, at::Tensor& loss) {
          if (step == kBadStep) {
            loss = loss * kNaN;
            ++injected;
          }
        };
      } else {
        config.after_backward = [&](int64_t step, const std::vector<at::Tensor>& params) {
          if (step != kBadStep) return;
          for (const at::Tensor& p : params) {
            if (p.grad().defined()) {
              p.grad().view(-1)[0].fill_(kInf);  // one element of one gradient
              ++injected;
              return;
            }
          }
        };
      }
      absl::StatusOr<TrainResult> r =
          Trainer(model, config, Plan(batching::Sampler::kRandom), at::kCPU).Train(data, nullptr);
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_EQ(injected, 1);
      EXPECT_EQ(r->steps, 6) << "training continues after the skip";
      EXPECT_EQ(r->skipped_steps, 1);
      EXPECT_TRUE(std::isfinite(r->final_loss)) << r->final_loss;
      EXPECT_TRUE(AllFinite(Params(model)));

      // The skipped step changed neither a parameter nor the optimizer state; the next one did.
      const auto before = ReadArchive(dir.file("ckpt/" + CheckpointName(kBadStep)));
      const auto after = ReadArchive(dir.file("ckpt/" + CheckpointName(kBadStep + 1)));
      const auto next = ReadArchive(dir.file("ckpt/" + CheckpointName(kBadStep + 2)));
      ASSERT_FALSE(before.empty());
      EXPECT_TRUE(Differences(before, after, "model.").empty());
      EXPECT_TRUE(Differences(before, after, "optim.").empty());
      EXPECT_FALSE(Differences(after, next, "model.").empty());
      EXPECT_FALSE(Differences(after, next, "optim.").empty());

      // The log marks exactly that step (rows are 1-based steps).
      const std::vector<std::string> skipped = CsvColumn(dir.file("log.csv"), "skipped");
      ASSERT_EQ(skipped.size(), 6u);
      for (size_t i = 0; i < skipped.size(); ++i) {
        EXPECT_EQ(skipped[i], i == kBadStep ? "1" : "0") << "row " << i;
      }
      const std::string bad_loss = CsvColumn(dir.file("log.csv"), "loss")[kBadStep];
      if (fault == Fault::kNanLoss) {
        EXPECT_NE(bad_loss.find("nan"), std::string::npos) << bad_loss;
      } else {
        EXPECT_TRUE(std::isfinite(std::stod(bad_loss))) << bad_loss;
      }
    }
  }
}

TEST(NonFiniteTest, OnlyNanStopsWithAClearErrorAfterExactlyTheBound) {
  const auto data = SyntheticCorpus(23, 48);
  for (int64_t bound : {1, 3, 7}) {
    at::manual_seed(24);
    models::EncoderClassifier model(TinyConfig(0.0));
    const std::vector<at::Tensor> init = Params(model);
    TrainConfig config = Quiet().epochs(3).max_nonfinite_steps(bound);
    int64_t forwards = 0;
    config.before_forward = [&](const batching::Batch&) { ++forwards; };
    config.on_loss = [](int64_t, at::Tensor& loss) { loss = loss * kNaN; };
    absl::StatusOr<TrainResult> r =
        Trainer(model, config, Plan(batching::Sampler::kRandom), at::kCPU).Train(data, nullptr);
    ASSERT_FALSE(r.ok()) << "bound " << bound;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kAborted);
    const std::string message(r.status().message());
    EXPECT_NE(message.find(absl::StrCat(bound, " optimizer steps in a row")), std::string::npos)
        << message;
    EXPECT_NE(message.find("non-finite loss"), std::string::npos) << message;
    EXPECT_NE(message.find("max_nonfinite_steps"), std::string::npos) << message;
    EXPECT_EQ(forwards, bound) << "no step runs after the bound is reached";
    EXPECT_TRUE(BitwiseEqual(Params(model), init)) << "every step was skipped";
  }
}

TEST(NonFiniteTest, OnlyConsecutiveSkipsCountTowardsTheBound) {
  const auto data = SyntheticCorpus(25, 48);  // 18 steps over 3 epochs
  // Every other step NaN, bound 2: never two in a row, so the run completes.
  at::manual_seed(26);
  models::EncoderClassifier model(TinyConfig(0.0));
  const std::vector<at::Tensor> init = Params(model);
  TrainConfig config = Quiet().epochs(3).lr(1e-3).max_nonfinite_steps(2);
  config.on_loss = [](int64_t step, at::Tensor& loss) {
    if (step % 2 == 1) loss = loss * kNaN;
  };
  absl::StatusOr<TrainResult> r =
      Trainer(model, config, Plan(batching::Sampler::kRandom), at::kCPU).Train(data, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->steps, 18);
  EXPECT_EQ(r->skipped_steps, 9);
  EXPECT_GT(MaxDiff(Params(model), init), 1e-4);
  EXPECT_TRUE(AllFinite(Params(model)));

  // Bound 0: never stops, even when every step is skipped; nothing changes.
  at::manual_seed(26);
  models::EncoderClassifier unbounded(TinyConfig(0.0));
  TrainConfig all_nan = Quiet().epochs(3).max_nonfinite_steps(0);
  all_nan.on_loss = [](int64_t, at::Tensor& loss) { loss = loss * kNaN; };
  r = Trainer(unbounded, all_nan, Plan(batching::Sampler::kRandom), at::kCPU).Train(data, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->skipped_steps, 18);
  EXPECT_TRUE(BitwiseEqual(Params(unbounded), init));
}

// ---------------------------------------------------------------------------------------------
// Write failures

TEST(WriteFailureTest, ReadOnlyCheckpointDirectoryIsAClearErrorAndKeepsTheEarlierCheckpoint) {
  if (::geteuid() == 0)
    GTEST_SKIP() << "root ignores directory permissions (ENOSPC test covers it)";
  const auto data = SyntheticCorpus(27, 48);
  const TrainConfig base = Quiet().epochs(1).lr(1e-3);
  at::manual_seed(28);
  models::EncoderClassifier reference(TinyConfig(0.0));
  ASSERT_TRUE(Trainer(reference, base, Plan(batching::Sampler::kRandom), at::kCPU)
                  .Train(data, nullptr)
                  .ok());

  TempDir dir;
  const std::string ckpt = dir.file("ckpt");
  at::manual_seed(28);
  models::EncoderClassifier model(TinyConfig(0.0));
  TrainConfig config = base;
  config.checkpoint_dir(ckpt).checkpoint_every(2);
  bool made_read_only = false;
  config.before_forward = [&](const batching::Batch&) {
    if (!made_read_only && FileSize(ckpt + "/" + CheckpointName(2)) > 0) {
      ASSERT_EQ(::chmod(ckpt.c_str(), 0555), 0) << std::strerror(errno);
      made_read_only = true;
    }
  };
  absl::StatusOr<TrainResult> r =
      Trainer(model, config, Plan(batching::Sampler::kRandom), at::kCPU).Train(data, nullptr);
  ASSERT_TRUE(made_read_only);
  ::chmod(ckpt.c_str(), 0755);
  ASSERT_FALSE(r.ok());
  const std::string message(r.status().message());
  EXPECT_NE(message.find(ckpt + "/" + CheckpointName(4)), std::string::npos) << message;
  EXPECT_NE(message.find(std::strerror(EACCES)), std::string::npos) << message;
  EXPECT_EQ(FilesEndingWith(ckpt, ""), std::vector<std::string>{CheckpointName(2)});

  // The earlier checkpoint is intact: resuming from it finishes the run as if nothing happened.
  at::manual_seed(999);
  models::EncoderClassifier resumed(TinyConfig(0.0));
  TrainConfig resume = base;
  resume.checkpoint_dir(ckpt).checkpoint_every(2).resume(true);
  r = Trainer(resumed, resume, Plan(batching::Sampler::kRandom), at::kCPU).Train(data, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->steps, 6);
  EXPECT_TRUE(BitwiseEqual(Params(reference), Params(resumed)));
}

// /dev/full fails every write with ENOSPC, for root too.
TEST(WriteFailureTest, FullDiskForTheLogIsAClearError) {
  const auto data = SyntheticCorpus(29, 16);
  models::EncoderClassifier model(TinyConfig(0.0));
  absl::StatusOr<TrainResult> r =
      Trainer(model, Quiet().epochs(1).log_csv("/dev/full").log_every(1),
              Plan(batching::Sampler::kRandom), at::kCPU)
          .Train(data, nullptr);
  ASSERT_FALSE(r.ok());
  const std::string message(r.status().message());
  EXPECT_NE(message.find("/dev/full"), std::string::npos) << message;
  EXPECT_NE(message.find(std::strerror(ENOSPC)), std::string::npos) << message;
}

// ---------------------------------------------------------------------------------------------
// Out of memory

// The CPU hook throws c10::OutOfMemoryError for batches of more than `max_rows` rows, so every
// batch is split; each example must still be trained on exactly once per epoch.
TEST(OutOfMemoryTest, SplitBatchesLoseNoExample) {
  const auto data = SyntheticCorpus(30, 44);  // the random sampler's last batch has 4 sequences
  int64_t data_tokens = 0;
  for (int64_t length : data.Lengths()) data_tokens += length;
  struct Case {
    batching::Sampler sampler;
    int64_t max_rows;
  };
  for (const Case& k : {Case{batching::Sampler::kRandom, 2}, Case{batching::Sampler::kPacked, 1}}) {
    SCOPED_TRACE(k.sampler == batching::Sampler::kRandom ? "random" : "packed");
    TempDir dir;
    at::manual_seed(31);
    models::EncoderClassifier model(TinyConfig(0.0));
    TrainConfig config = Quiet().epochs(2).lr(1e-3).log_csv(dir.file("log.csv")).log_every(1);
    std::map<int64_t, int64_t> seen;  // example id -> times trained on
    int64_t injected = 0;
    config.before_forward = [&](const batching::Batch& b) {
      if (b.input_ids.size(0) > k.max_rows) {
        ++injected;
        TORCH_CHECK_WITH(OutOfMemoryError, false, "injected out of memory");
      }
      const at::Tensor ids = b.example_ids.cpu();
      for (int64_t i = 0; i < ids.size(0); ++i) ++seen[ids[i].item<int64_t>()];
    };
    absl::StatusOr<TrainResult> r =
        Trainer(model, config, Plan(k.sampler), at::kCPU).Train(data, nullptr);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_GT(injected, 0);
    EXPECT_EQ(r->oom_splits, injected);
    EXPECT_EQ(r->oom_events.size(), static_cast<size_t>(r->oom_splits));
    int64_t logged_splits = 0;
    for (const std::string& v : CsvColumn(dir.file("log.csv"), "oom_splits")) {
      logged_splits += std::stoll(v);
    }
    EXPECT_EQ(logged_splits, r->oom_splits);
    ASSERT_EQ(seen.size(), data.size());
    for (const auto& [id, times] : seen) EXPECT_EQ(times, 2) << "example " << id;
    EXPECT_EQ(r->sequences, 2 * static_cast<int64_t>(data.size()));
    EXPECT_EQ(r->real_tokens, 2 * data_tokens);
    EXPECT_TRUE(AllFinite(Params(model)));
  }
}

// ---------------------------------------------------------------------------------------------
// Kill and disk full, through the real CLI

struct Child {
  bool exited = false;
  int exit_code = -1;
  int signal = 0;  // when killed by a signal
  std::string out, err;
};

// Runs `padless args...` with OMP_NUM_THREADS=1 and PADLESS_FAULT_INJECT=`fault` (unset when
// empty), stdout and stderr captured through files in `scratch`.
Child RunCli(const std::vector<std::string>& args, const std::string& fault,
             const std::string& scratch) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (entry.rfind("OMP_NUM_THREADS=", 0) != 0 && entry.rfind("PADLESS_FAULT_INJECT=", 0) != 0) {
      env.push_back(entry);
    }
  }
  env.push_back("OMP_NUM_THREADS=1");
  if (!fault.empty()) env.push_back("PADLESS_FAULT_INJECT=" + fault);
  std::vector<std::string> argv_s = {PADLESS_CLI_PATH};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv, envp;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  const std::string out_path = scratch + "/child.out", err_path = scratch + "/child.err";
  const int in = ::open("/dev/null", O_RDONLY);
  const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  Child c;
  if (in < 0 || out < 0 || err < 0) {
    ADD_FAILURE() << "cannot open the child's files in " << scratch;
    return c;
  }
  const pid_t pid = ::fork();
  if (pid == 0) {  // only async-signal-safe calls until exec
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(in);
  ::close(out);
  ::close(err);
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid) {
    ADD_FAILURE() << "cannot run " << PADLESS_CLI_PATH;
    return c;
  }
  c.exited = WIFEXITED(status);
  c.exit_code = c.exited ? WEXITSTATUS(status) : -1;
  c.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  c.out = ReadAll(out_path);
  c.err = ReadAll(err_path);
  return c;
}

bool HaveSst2() { return FileSize(std::string(PADLESS_SHARED_DATA) + "/sst2_train.tsv") > 0; }

// 600 SST-2 rows, tiny preset, padded batches of 16, 10 optimizer steps with a checkpoint every
// 2 (keeping 2), dropout on: a few seconds per run on one core.
class CliFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HaveSst2()) GTEST_SKIP() << "no SST-2 data under " << PADLESS_SHARED_DATA;
    std::ifstream in(std::string(PADLESS_SHARED_DATA) + "/sst2_train.tsv");
    std::string rows, line;
    for (int i = 0; i <= 600 && std::getline(in, line); ++i) rows += line + "\n";
    WriteAll(dir_.file("train.tsv"), rows);
    // The uninterrupted run every faulty run is compared with.
    full_ = RunCli(Args("full"), "", dir_.str());
    ASSERT_EQ(full_.exit_code, 0) << full_.err;
  }

  std::vector<std::string> Args(const std::string& out) const {
    return {"train",
            "--data",
            dir_.file("train.tsv"),
            "--out",
            dir_.file(out),
            "--preset",
            "tiny",
            "--max-len",
            "32",
            "--batching",
            "padded",
            "--batch-size",
            "16",
            "--max-steps",
            "10",
            "--checkpoint-every",
            "2",
            "--keep-checkpoints",
            "2",
            "--vocab-size",
            "400",
            "--lr",
            "1e-3",
            "--seed",
            "7",
            "--device",
            "cpu"};
  }

  // A run directory that shares the uninterrupted run's tokenizer, so all runs see equal data.
  std::string NewRunDir(const std::string& name) const {
    const std::string d = dir_.file(name);
    EXPECT_EQ(::mkdir(d.c_str(), 0755), 0);
    WriteAll(d + "/tokenizer.model", ReadAll(dir_.file("full/tokenizer.model")));
    return d;
  }

  void ExpectSameModelAsTheUninterruptedRun(const std::string& run) const {
    const auto expected = ReadWeights(dir_.file("full/model.safetensors"));
    const auto got = ReadWeights(run + "/model.safetensors");
    ASSERT_FALSE(expected.empty());
    EXPECT_EQ(Differences(expected, got, ""), std::vector<std::string>{});
  }

  TempDir dir_;
  Child full_;
};

TEST_F(CliFaultTest, ProgressLineEndsBeforeTheSummary) {
  const size_t last = full_.err.rfind("\rstep 10/10");
  ASSERT_NE(last, std::string::npos) << full_.err;
  EXPECT_EQ(full_.err.back(), '\n') << full_.err;
  EXPECT_EQ(full_.err.find('\r', last + 1), std::string::npos) << full_.err;
  EXPECT_NE(full_.out.find("model written to"), std::string::npos) << full_.out;
}

TEST_F(CliFaultTest, KilledDuringACheckpointWriteResumesToTheUninterruptedResult) {
  const std::string run = NewRunDir("killed");
  std::vector<std::string> a = Args("killed");
  const Child killed = RunCli(a, "kill_during_checkpoint:3", dir_.str());
  ASSERT_FALSE(killed.exited) << "exit " << killed.exit_code << ": " << killed.err;
  ASSERT_EQ(killed.signal, SIGKILL);

  // Checkpoints 1 and 2 (steps 2, 4) are complete; the third (step 6) is a partial temporary file.
  const std::string ckpt = run + "/checkpoints";
  EXPECT_EQ(FilesEndingWith(ckpt, ".pt"),
            (std::vector<std::string>{CheckpointName(2), CheckpointName(4)}));
  std::vector<std::string> partial;
  for (const std::string& name : FilesEndingWith(ckpt, "")) {
    if (name.rfind(CheckpointName(6) + ".tmp.", 0) == 0) partial.push_back(name);
  }
  ASSERT_EQ(partial.size(), 1u);
  EXPECT_GE(FileSize(ckpt + "/" + partial[0]), 4096);
  EXPECT_LT(FileSize(ckpt + "/" + partial[0]), FileSize(ckpt + "/" + CheckpointName(4)));

  a.push_back("--resume");
  const Child resumed = RunCli(a, "", dir_.str());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("resuming from " + ckpt + "/" + CheckpointName(4)), std::string::npos)
      << resumed.err;
  EXPECT_NE(resumed.err.find("removed " + ckpt + "/" + partial[0]), std::string::npos)
      << resumed.err;
  for (const std::string& name : FilesEndingWith(ckpt, "")) {
    EXPECT_EQ(name.find(".tmp."), std::string::npos) << name;
  }
  ExpectSameModelAsTheUninterruptedRun(run);
}

TEST_F(CliFaultTest, DiskFullDuringACheckpointIsAClearErrorAndKeepsTheEarlierOne) {
  const std::string run = NewRunDir("full_disk");
  std::vector<std::string> a = Args("full_disk");
  const Child failed = RunCli(a, "enospc_during_checkpoint:2", dir_.str());
  ASSERT_TRUE(failed.exited) << "signal " << failed.signal;
  EXPECT_EQ(failed.exit_code, 1) << failed.err;
  const std::string ckpt = run + "/checkpoints";
  EXPECT_NE(failed.err.find("cannot write checkpoint: " + ckpt + "/" + CheckpointName(4)),
            std::string::npos)
      << failed.err;
  EXPECT_NE(failed.err.find(std::strerror(ENOSPC)), std::string::npos) << failed.err;
  // No partial file stays behind, and the earlier checkpoint is untouched.
  EXPECT_EQ(FilesEndingWith(ckpt, ""), std::vector<std::string>{CheckpointName(2)});

  a.push_back("--resume");
  const Child resumed = RunCli(a, "", dir_.str());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("resuming from " + ckpt + "/" + CheckpointName(2)), std::string::npos)
      << resumed.err;
  ExpectSameModelAsTheUninterruptedRun(run);
}

TEST(CliFlagsTest, MaxNonfiniteStepsMustNotBeNegative) {
  TempDir dir;
  const Child c =
      RunCli({"train", "--data", "x.tsv", "--out", dir.file("o"), "--max-nonfinite-steps", "-1"},
             "", dir.str());
  EXPECT_EQ(c.exit_code, 2) << c.err;
  EXPECT_NE(c.err.find("--max-nonfinite-steps"), std::string::npos) << c.err;
}

// ---------------------------------------------------------------------------------------------
// GPU (skipped without CUDA; run on the GPU machine)

TEST(FaultGpuTest, Fp16NanLossIsSkippedThroughTheScaler) {
  if (!HasCuda()) GTEST_SKIP() << "no CUDA device";
  const auto data = SyntheticCorpus(32, 48);
  TempDir dir;
  at::manual_seed(33);
  models::EncoderClassifier model(TinyConfig(0.0));
  TrainConfig config = Quiet()
                           .epochs(1)
                           .lr(1e-3)
                           .amp(models::AmpMode::kFp16)
                           .checkpoint_dir(dir.str())
                           .checkpoint_every(1)
                           .keep_checkpoints(100);
  config.on_loss = [](int64_t step, at::Tensor& loss) {
    if (step == 2) loss = loss * kNaN;
  };
  absl::StatusOr<TrainResult> r =
      Trainer(model, config, Plan(batching::Sampler::kRandom), at::Device(at::kCUDA, 0))
          .Train(data, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->steps, 6);
  EXPECT_GE(r->skipped_steps, 1);
  EXPECT_TRUE(AllFinite(Params(model)));
  const auto before = ReadArchive(dir.file(CheckpointName(2)));
  const auto after = ReadArchive(dir.file(CheckpointName(3)));
  EXPECT_TRUE(Differences(before, after, "model.").empty());
  EXPECT_TRUE(Differences(before, after, "optim.").empty());
  // The scaler backed off: half the scale.
  EXPECT_DOUBLE_EQ(after.at("scaler")[0].item<double>(), before.at("scaler")[0].item<double>() / 2);
}

#ifdef PADLESS_TORCH_HAS_CUDA
// Restores the caching allocator's memory fraction on scope exit.
class MemoryFractionGuard {
 public:
  explicit MemoryFractionGuard(double fraction) {
    c10::cuda::CUDACachingAllocator::emptyCache();
    c10::cuda::CUDACachingAllocator::setMemoryFraction(fraction, 0);
  }
  ~MemoryFractionGuard() { c10::cuda::CUDACachingAllocator::setMemoryFraction(1.0, 0); }
};
#endif

// A real CUDA OOM from a tiny per-process memory budget: the budget lies between the peak of a
// half batch and that of a full batch, measured first, so full batches fail and halves fit.
TEST(FaultGpuTest, RealOutOfMemoryIsSplitAndTrainingContinues) {
  if (!HasCuda()) GTEST_SKIP() << "no CUDA device";
#ifndef PADLESS_TORCH_HAS_CUDA
  GTEST_SKIP() << "torch without CUDA";
#else
  const at::Device cuda(at::kCUDA, 0);
  // The caching allocator initialises its per-device state on the first CUDA allocation; before
  // that, resetPeakStats(0) throws "Invalid device argument" (seen on the H200).
  at::zeros({1}, at::TensorOptions().device(cuda));
  // Long sequences (200..256 tokens) so that activations dominate the memory.
  corpus::TokenizedCorpus data;
  std::mt19937_64 rng(34);
  for (int i = 0; i < 64; ++i) {
    std::vector<int32_t> ids = {2};
    const int len = 200 + static_cast<int>(rng() % 57);
    for (int k = 0; k < len; ++k) ids.push_back(10 + static_cast<int32_t>(rng() % 990));
    ids.push_back(3);
    data.Add(ids, {}, static_cast<int64_t>(rng() % 2));
  }
  const models::EncoderConfig mc = models::EncoderConfig()
                               .vocab_size(1000)
                               .hidden(256)
                               .layers(4)
                               .heads(4)
                               .ffn(1024)
                               .max_positions(512)
                               .num_labels(2)
                               .dropout(0)
                               .attention_dropout(0);
  auto plan = [](int64_t batch) {
    return batching::PlannerOptions()
        .sampler(batching::Sampler::kRandom)
        .batch_size(batch)
        .max_len(512);
  };
  // Peak ALLOCATED bytes: the allocator frees its cache and retries before it reports out of
  // memory, so a limit between two reserved peaks need not fail (seen on the H200: no split).
  auto peak_allocated = [&](int64_t batch) {
    c10::cuda::CUDACachingAllocator::emptyCache();
    c10::cuda::CUDACachingAllocator::resetPeakStats(0);
    at::manual_seed(35);
    models::EncoderClassifier m(mc);
    absl::StatusOr<TrainResult> r =
        Trainer(m, Quiet().epochs(1), plan(batch), cuda).Train(data, nullptr);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->peak_allocated_bytes : int64_t{0};
  };
  const int64_t full = peak_allocated(32), half = peak_allocated(16);
  ASSERT_GT(full, half + half / 4) << "activations must dominate for this test to mean anything";
  size_t free_bytes = 0, total_bytes = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  const double fraction = (static_cast<double>(half) + full) / 2 / total_bytes;

  c10::cuda::CUDACachingAllocator::emptyCache();
  c10::cuda::CUDACachingAllocator::resetPeakStats(0);
  at::manual_seed(35);
  models::EncoderClassifier model(mc);
  absl::StatusOr<TrainResult> r = absl::UnknownError("not run");
  {
    MemoryFractionGuard guard(fraction);
    r = Trainer(model, Quiet().epochs(1), plan(32), cuda).Train(data, nullptr);
  }
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->oom_splits, 0) << "budget " << fraction * total_bytes << " B, full " << full
                              << " B, half " << half << " B";
  EXPECT_EQ(r->steps, 2);
  EXPECT_EQ(r->sequences, 64) << "no example lost";
  EXPECT_TRUE(AllFinite(Params(model)));
  EXPECT_LE(r->peak_reserved_bytes, static_cast<int64_t>(fraction * total_bytes));
#endif
}

}  // namespace
}  // namespace padless::train
