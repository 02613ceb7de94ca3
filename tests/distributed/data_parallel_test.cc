// Data-parallel TrainStep on the CPU with Gloo. The test binary starts itself twice as ranks 0 and
// 1 (torchrun's environment; the DataParallelWorker tests run only there) and checks:
// - the gradient all-reduces start during backward (most buckets);
// - the loss of every step equals, within 1e-5, one process stepping on the union of both ranks'
//   batches (the same global batch), with gradient accumulation and clipping on;
// - the parameters then equal the single process's within 1e-5, and are bitwise equal on the ranks
//   (rank 1 starts from other weights: the broadcast from rank 0 must fix them);
// - bf16 communication keeps the ranks bitwise equal and close to fp32;
// - a NaN loss on one rank makes both ranks skip the step;
// - a rank that dies makes the other fail with an error naming it, within the timeout, no hang;
// - a rank that hangs outside any collective makes the other fail within the timeout.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "padless/batching/collator.h"
#include "padless/batching/planner.h"
#include "padless/distributed/dist_env.h"
#include "padless/distributed/gradient_reducer.h"
#include "padless/distributed/local_launcher.h"
#include "padless/distributed/process_group.h"
#include "padless/train/train_step.h"
#include "padless/tokenize/special_tokens.h"
#include "trainer_fixtures.h"

extern char** environ;

namespace padless::distributed {
namespace {

using train::testing::NoLossScaling;
using train::testing::SyntheticCorpus;
using train::testing::TinyConfig;

constexpr int kSteps = 4;
constexpr int kAccum = 2;  // batches per rank per step
constexpr double kLr = 2e-3;
constexpr double kClip = 0.5;

batching::PlannerOptions PackedPlan() {
  return batching::PlannerOptions()
      .sampler(batching::Sampler::kPacked)
      .packed_layout(batching::Layout::kVarlen)
      .max_len(64)
      .max_tokens(96)
      .seed(11);
}

// Both ranks' batches of the first epoch: ranks[r][batch].
std::vector<std::vector<batching::BatchSpec>> RankPlans(const corpus::TokenizedCorpus& data) {
  absl::StatusOr<batching::EpochPlan> plan =
      batching::Planner(PackedPlan()).PlanEpoch(data.Lengths(), 0, /*world_size=*/2);
  EXPECT_TRUE(plan.ok()) << plan.status();
  EXPECT_GE(plan->ranks[0].size(), static_cast<size_t>(kSteps * kAccum));
  return plan->ranks;
}

std::vector<train::StepBatch> Collate(const corpus::TokenizedCorpus& data,
                               const std::vector<const batching::BatchSpec*>& specs,
                               c10::Device device = at::kCPU) {
  batching::CollatorOptions collator_options;
  collator_options.pad_id = tokenize::kPadId;
  batching::Collator collator(collator_options);
  std::vector<train::StepBatch> out;
  for (const batching::BatchSpec* spec : specs) {
    absl::StatusOr<batching::Batch> b = collator.Collate(data, *spec);
    EXPECT_TRUE(b.ok()) << b.status();
    out.push_back(train::StepBatch{spec, b->To(device)});
  }
  return out;
}

// A tiny model with its optimizer and one TrainStep; `group` makes it data parallel.
struct Rig {
  Rig(uint64_t seed, std::shared_ptr<distributed::ProcessGroup> group, at::ScalarType comm,
      std::function<void(int64_t, at::Tensor&)> on_loss = nullptr, c10::Device device = at::kCPU) {
    at::manual_seed(seed);
    model = models::EncoderClassifier(TinyConfig(0.0));
    model->to(device);
    model->train();
    params = train::ParametersForAdamW(model);
    optimizer = std::make_unique<train::FusedAdamW>(params.params, params.decay, train::AdamWOptions{});
    train::TrainStepOptions options;
    options.clip_norm = kClip;
    options.on_loss = std::move(on_loss);
    if (group != nullptr) {
      EXPECT_TRUE(group->Broadcast(params.params, 0).ok());
      distributed::GradientReducerOptions reducer_options;
      reducer_options.bucket_bytes = 4096;
      reducer_options.comm_dtype = comm;
      reducer =
          std::make_unique<distributed::GradientReducer>(group, params.params, reducer_options);
      options.reducer = reducer.get();
    }
    step = std::make_unique<train::TrainStep>(model, params.params, *optimizer, scaler, device,
                                       std::move(options));
  }
  models::EncoderClassifier model{nullptr};
  train::AdamWParameters params;
  std::unique_ptr<train::FusedAdamW> optimizer;
  train::GradScaler scaler{NoLossScaling()};
  std::unique_ptr<distributed::GradientReducer> reducer;
  std::unique_ptr<train::TrainStep> step;
};

at::Tensor Flat(models::EncoderClassifier& m) {
  std::vector<at::Tensor> flat;
  for (const at::Tensor& p : m->parameters()) flat.push_back(p.detach().cpu().reshape({-1}));
  return at::cat(flat);
}

void WriteFloats(const std::string& path, const at::Tensor& t) {
  at::Tensor c = t.to(at::kFloat).contiguous();
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(c.data_ptr<float>()), c.numel() * sizeof(float));
}

at::Tensor ReadFloats(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  at::Tensor t = at::empty({static_cast<int64_t>(bytes.size() / sizeof(float))}, at::kFloat);
  std::memcpy(t.data_ptr<float>(), bytes.data(), bytes.size());
  return t;
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

// ---------------------------------------------------------------------------------------------
// The worker: one rank. Runs only when the parent test started this binary with PADLESS_TEST_OUT.

TEST(DataParallelWorker, Run) {
  const std::string out = Env("PADLESS_TEST_OUT");
  if (out.empty()) GTEST_SKIP() << "runs as a rank of DataParallelTest only";
  const std::string mode = Env("PADLESS_TEST_MODE");
  absl::StatusOr<distributed::DistEnv> env = distributed::DistEnvFromEnvironment();
  ASSERT_TRUE(env.ok()) << env.status();
  const c10::Device device =
      mode == "nccl" ? c10::Device(c10::kCUDA, env->local_rank) : c10::Device(at::kCPU);
  distributed::ProcessGroupOptions group_options;
  // "hang": a short timeout, which the parent's time bound checks.
  group_options.timeout = std::chrono::seconds(mode == "hang" ? 4 : 30);
  absl::StatusOr<std::shared_ptr<distributed::ProcessGroup>> group =
      distributed::ProcessGroup::Create(*env, device, group_options);
  ASSERT_TRUE(group.ok()) << group.status();
  const auto data = SyntheticCorpus(3, 200);
  const auto plans = RankPlans(data);
  auto nan_on_rank_1 = [&](int64_t step, at::Tensor& loss) {
    if (step == 1 && env->rank == 1) loss = loss * std::numeric_limits<float>::quiet_NaN();
  };
  Rig rig(/*seed=*/6 + env->rank, *group, mode == "bf16" ? at::kBFloat16 : at::kFloat,
          mode == "nan" ? std::function<void(int64_t, at::Tensor&)>(nan_on_rank_1) : nullptr,
          device);
  std::ofstream losses(absl::StrCat(out, "/losses.", env->rank));
  losses.precision(10);
  for (int s = 0; s < kSteps; ++s) {
    if (mode == "die" && env->rank == 1 && s == 2) std::_Exit(3);
    // Hung outside any collective (the parent kills it): rank 0's all-reduce must time out.
    if (mode == "hang" && env->rank == 1 && s == 2) std::this_thread::sleep_for(std::chrono::hours(1));
    std::vector<const batching::BatchSpec*> specs;
    for (int a = 0; a < kAccum; ++a) specs.push_back(&plans[env->rank][s * kAccum + a]);
    absl::StatusOr<train::StepResult> r = rig.step->Run(s, kLr, Collate(data, specs, device));
    if (!r.ok()) {
      std::ofstream(absl::StrCat(out, "/error.", env->rank)) << r.status().ToString();
      std::_Exit(1);
    }
    losses << r->loss.item<double>() << " " << (r->outcome.skipped() ? 1 : 0) << "\n";
  }
  losses.close();
  // The all-reduces overlapped backward: most buckets (4 KiB each here) started inside it.
  EXPECT_GT(rig.reducer->buckets(), 4);
  EXPECT_GE(rig.reducer->launched_in_backward() * 2, rig.reducer->buckets());
  WriteFloats(absl::StrCat(out, "/params.", env->rank), Flat(rig.model));
}

// ---------------------------------------------------------------------------------------------
// The parent side.

struct RankRun {
  std::vector<int> exit_codes;
  double seconds = 0;
};

// Starts this binary as ranks 0 and 1 of a 2-process job and waits for both.
RankRun RunRanks(const std::string& out, const std::string& mode) {
  const int port = distributed::FreeLocalPort();
  std::vector<pid_t> pids;
  const auto start = std::chrono::steady_clock::now();
  for (int rank = 0; rank < 2; ++rank) {
    std::vector<std::string> vars = {
        "RANK=" + std::to_string(rank),        "WORLD_SIZE=2",
        "LOCAL_RANK=" + std::to_string(rank),  "MASTER_ADDR=127.0.0.1",
        "MASTER_PORT=" + std::to_string(port), "PADLESS_TEST_OUT=" + out,
        "PADLESS_TEST_MODE=" + mode,           "OMP_NUM_THREADS=1"};
    for (char** e = environ; *e != nullptr; ++e) vars.push_back(*e);
    std::vector<char*> envp;
    for (std::string& v : vars) envp.push_back(v.data());
    envp.push_back(nullptr);
    std::string self = "/proc/self/exe", filter = "--gtest_filter=DataParallelWorker.Run";
    char* argv[] = {self.data(), filter.data(), nullptr};
    pid_t pid = 0;
    EXPECT_EQ(posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv, envp.data()), 0);
    pids.push_back(pid);
  }
  RankRun run;
  for (pid_t pid : pids) {
    // "hang": once rank 0 has ended, rank 1 is still sleeping (as a launcher would, kill it).
    if (mode == "hang" && pid == pids[1]) kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    run.exit_codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

std::vector<std::pair<double, int>> ReadLosses(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::pair<double, int>> out;
  std::string loss;  // std::stod, not operator>>, reads "nan"
  int skipped = 0;
  while (in >> loss >> skipped) out.emplace_back(std::stod(loss), skipped);
  return out;
}

// One process on the union of both ranks' batches of each step (the same global batch).
struct Reference {
  std::vector<double> losses;
  at::Tensor params;
};

Reference SingleProcess(c10::Device device = at::kCPU) {
  // As the ranks (OMP_NUM_THREADS=1): torch's spinning CPU pool crawls on a loaded CI machine.
  at::set_num_threads(1);
  const auto data = SyntheticCorpus(3, 200);
  const auto plans = RankPlans(data);
  Rig rig(/*seed=*/6, nullptr, at::kFloat, nullptr, device);
  Reference ref;
  for (int s = 0; s < kSteps; ++s) {
    std::vector<const batching::BatchSpec*> specs;
    for (int r = 0; r < 2; ++r) {
      for (int a = 0; a < kAccum; ++a) specs.push_back(&plans[r][s * kAccum + a]);
    }
    absl::StatusOr<train::StepResult> step = rig.step->Run(s, kLr, Collate(data, specs, device));
    EXPECT_TRUE(step.ok()) << step.status();
    ref.losses.push_back(step->loss.item<double>());
  }
  ref.params = Flat(rig.model);
  return ref;
}

TEST(DataParallelTest, TwoRanksMatchOneProcessWithTheSameGlobalBatch) {
  train::testing::TempDir dir;
  const RankRun run = RunRanks(dir.str(), "fp32");
  ASSERT_EQ(run.exit_codes, (std::vector<int>{0, 0}));
  const Reference ref = SingleProcess();
  for (int rank = 0; rank < 2; ++rank) {
    const auto losses = ReadLosses(dir.file("losses." + std::to_string(rank)));
    ASSERT_EQ(losses.size(), static_cast<size_t>(kSteps));
    for (int s = 0; s < kSteps; ++s) {
      EXPECT_NEAR(losses[s].first, ref.losses[s], 1e-5) << "rank " << rank << " step " << s;
      EXPECT_EQ(losses[s].second, 0);
    }
  }
  const at::Tensor p0 = ReadFloats(dir.file("params.0")), p1 = ReadFloats(dir.file("params.1"));
  ASSERT_EQ(p0.numel(), ref.params.numel());
  EXPECT_TRUE(at::equal(p0, p1)) << "the ranks' parameters must be bitwise equal";
  EXPECT_LE((p0 - ref.params).abs().max().item<double>(), 1e-5);
  Rig untrained(6, nullptr, at::kFloat);
  EXPECT_GT((p0 - Flat(untrained.model)).abs().max().item<double>(), 1e-4) << "training ran";
}

// The same on 2 GPUs over NCCL (skips without them): what the lead runs on nvidia-h200-x2.
TEST(DataParallelTest, NcclOnTwoGpusMatchesOneGpu) {
  if (at::detail::getCUDAHooks().deviceCount() < 2) GTEST_SKIP() << "needs 2 CUDA devices";
  train::testing::TempDir dir;
  const RankRun run = RunRanks(dir.str(), "nccl");
  ASSERT_EQ(run.exit_codes, (std::vector<int>{0, 0}));
  const Reference ref = SingleProcess(c10::Device(c10::kCUDA, 0));
  for (int rank = 0; rank < 2; ++rank) {
    const auto losses = ReadLosses(dir.file("losses." + std::to_string(rank)));
    ASSERT_EQ(losses.size(), static_cast<size_t>(kSteps));
    for (int s = 0; s < kSteps; ++s) {
      // TF32 matmuls and atomics in backward: the GPU is not bitwise reproducible across layouts.
      EXPECT_NEAR(losses[s].first, ref.losses[s], 1e-4) << "rank " << rank << " step " << s;
    }
  }
  const at::Tensor p0 = ReadFloats(dir.file("params.0")), p1 = ReadFloats(dir.file("params.1"));
  EXPECT_TRUE(at::equal(p0, p1)) << "the ranks' parameters must be bitwise equal";
  EXPECT_LE((p0 - ref.params).abs().max().item<double>(), 1e-4);
}

TEST(DataParallelTest, Bf16CommunicationKeepsRanksBitwiseEqual) {
  train::testing::TempDir dir;
  const RankRun run = RunRanks(dir.str(), "bf16");
  ASSERT_EQ(run.exit_codes, (std::vector<int>{0, 0}));
  const Reference ref = SingleProcess();
  const at::Tensor p0 = ReadFloats(dir.file("params.0")), p1 = ReadFloats(dir.file("params.1"));
  EXPECT_TRUE(at::equal(p0, p1));
  // bf16 rounds each summed gradient to 8 bits of mantissa; AdamW normalizes the step size.
  EXPECT_LE((p0 - ref.params).abs().max().item<double>(), 5 * kLr * kSteps);
  EXPECT_GT((p0 - ref.params).abs().max().item<double>(), 0) << "bf16 must have travelled";
}

TEST(DataParallelTest, NanLossOnOneRankSkipsTheStepOnBoth) {
  train::testing::TempDir dir;
  const RankRun run = RunRanks(dir.str(), "nan");
  ASSERT_EQ(run.exit_codes, (std::vector<int>{0, 0}));
  for (int rank = 0; rank < 2; ++rank) {
    const auto losses = ReadLosses(dir.file("losses." + std::to_string(rank)));
    ASSERT_EQ(losses.size(), static_cast<size_t>(kSteps));
    EXPECT_EQ(losses[1].second, 1) << "rank " << rank << " must skip step 1";
    EXPECT_EQ(losses[2].second, 0) << "rank " << rank;
  }
  EXPECT_TRUE(at::equal(ReadFloats(dir.file("params.0")), ReadFloats(dir.file("params.1"))));
}

TEST(DataParallelTest, ADeadRankFailsTheOtherCleanlyWithinTheTimeout) {
  train::testing::TempDir dir;
  const RankRun run = RunRanks(dir.str(), "die");
  EXPECT_EQ(run.exit_codes, (std::vector<int>{1, 3}));
  EXPECT_LT(run.seconds, 30) << "bounded by the 5 s timeout, not a hang";
  std::ifstream in(dir.file("error.0"));
  std::stringstream error;
  error << in.rdbuf();
  EXPECT_NE(error.str().find("rank 0 of 2"), std::string::npos) << error.str();
  EXPECT_NE(error.str().find("failed"), std::string::npos) << error.str();
}

// A rank that hangs (alive, never joining the all-reduce) makes the other fail within the group's
// timeout (4 s here) with a peer-failure error, instead of waiting forever.
TEST(DataParallelTest, AHungRankFailsTheOtherWithinTheTimeout) {
  train::testing::TempDir dir;
  const RankRun run = RunRanks(dir.str(), "hang");
  EXPECT_EQ(run.exit_codes, (std::vector<int>{1, 128 + SIGKILL}));
  EXPECT_LT(run.seconds, 30) << "bounded by the 4 s timeout, not a hang";
  std::ifstream in(dir.file("error.0"));
  std::stringstream error;
  error << in.rdbuf();
  EXPECT_NE(error.str().find(distributed::kPeerFailed), std::string::npos) << error.str();
}

}  // namespace
}  // namespace padless::distributed
