// Issue 13.6: --memory-budget bounds the device's reserved memory for a whole training run. On a
// CUDA device (skipped without one): cuda::DeviceMemoryCap makes the caching allocator refuse to
// reserve past the cap and lifts it afterwards; a small run of RunTrainJob with dev evaluations,
// checkpoints and a best-weights copy stays within the budget by the allocator's own peak
// statistics, keeps the copy on the host and needs no out-of-memory recovery. On every machine:
// the cap's argument checks.
#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <dirent.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "gpu_test_util.h"
#include "padless/cuda/memory/device_memory_cap.h"
#include "padless/cuda/memory/memory_meter.h"
#include "padless/train/train_job.h"

namespace padless::train {
namespace {

using models::testing::HasCuda;

constexpr int64_t kMiB = int64_t{1} << 20;

TEST(DeviceMemoryCapTest, ArgumentsAndCpu) {
  EXPECT_FALSE(cuda::DeviceMemoryCap::Create(c10::Device(c10::kCPU), 0).ok());
  EXPECT_TRUE(cuda::DeviceMemoryCap::Create(c10::Device(c10::kCPU), kMiB).ok());  // no-op
  if (!HasCuda()) {
    EXPECT_FALSE(cuda::DeviceMemoryCap::Create(c10::Device(c10::kCUDA, 0), kMiB).ok());
  }
}

TEST(DeviceMemoryCapTest, AllocatorRefusesToReservePastTheCap) {
  if (!HasCuda()) GTEST_SKIP() << "no CUDA device";
  const c10::Device device(c10::kCUDA, 0);
  cuda::MemoryMeter meter(device);
  meter.EmptyCache();
  const int64_t elements = 512 * kMiB / 4;  // 512 MiB of float
  {
    absl::StatusOr<cuda::DeviceMemoryCap> cap = cuda::DeviceMemoryCap::Create(device, 256 * kMiB);
    ASSERT_TRUE(cap.ok()) << cap.status();
    EXPECT_THROW(at::empty({elements}, at::TensorOptions().device(device)), c10::OutOfMemoryError);
  }
  // Lifted with the cap.
  EXPECT_NO_THROW(at::empty({elements}, at::TensorOptions().device(device)));
  EXPECT_FALSE(cuda::DeviceMemoryCap::Create(device, int64_t{1} << 50).ok());  // 1 PiB
}

int CountFiles(const std::string& dir, const std::string& suffix) {
  int n = 0;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return -1;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    n += name.size() > suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  }
  ::closedir(d);
  return n;
}

std::string WriteReviews(int rows) {
  const std::string path = ::testing::TempDir() + "/budget_gpu_train.tsv";
  std::ofstream out(path);
  out << "label\ttext\n";
  for (int i = 0; i < rows; ++i) {
    std::string text = i % 2 ? "a truly wonderful , moving film" : "a dull and tedious mess";
    for (int k = 0; k < 5 + i % 40; ++k) text += " scene " + std::to_string((i * 7 + k) % 97);
    out << (i % 2 ? "pos\t" : "neg\t") << text << "\n";
  }
  return path;
}

TEST(MemoryBudgetGpuTest, WholeRunStaysWithinTheBudget) {
  if (!HasCuda()) GTEST_SKIP() << "no CUDA device";
  const c10::Device device(c10::kCUDA, 0);
  constexpr int64_t kBudget = 1024 * kMiB;
  TrainJobOptions job;
  job.data = WriteReviews(800);
  job.dev_fraction = 0.25;
  job.out = ::testing::TempDir() + "/budget_gpu_model";
  job.preset = "small";
  job.vocab_size = 400;
  job.max_len = 256;
  job.device = device;
  job.quiet = true;
  int best_copies = 0;
  // A dev evaluation and a checkpoint at every epoch's end, whatever token budget the plan picks.
  job.epochs = 3;
  job.train.memory_budget_bytes(kBudget);
  job.train.on_best_weights = [&](const std::vector<at::Tensor>& best) {
    ++best_copies;
    for (const at::Tensor& t : best) EXPECT_TRUE(t.device().is_cpu());
  };
  cuda::MemoryMeter meter(device);
  meter.EmptyCache();
  meter.ResetPeak();
  absl::StatusOr<TrainJobResult> r = RunTrainJob(job);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->train.memory_plan.has_value());
  ASSERT_TRUE(r->dev.has_value());
  EXPECT_GT(best_copies, 0);
  EXPECT_TRUE(r->train.oom_events.empty())
      << r->train.oom_events.size()
      << " out-of-memory splits, the first: " << r->train.oom_events.front() << "\n"
      << r->train.memory_plan->Summary();
  EXPECT_GE(r->train.steps, 3);
  EXPECT_EQ(r->train.epochs_completed, 3);
  EXPECT_EQ(CountFiles(job.out + "/checkpoints", ".pt"), 2);  // written each epoch, 2 kept
  // The trainer resets the peaks after its probe steps (which the cap held too), so these cover
  // every training step, dev evaluation and checkpoint write of the run.
  const cuda::MemorySnapshot after = meter.Snapshot();
  EXPECT_GT(after.peak_reserved_bytes, 0);
  EXPECT_LE(after.peak_reserved_bytes, kBudget) << cuda::FormatMemoryReport(after);
  EXPECT_LE(r->train.peak_reserved_bytes, kBudget);
  EXPECT_LE(r->train.peak_allocated_bytes, kBudget);
}

}  // namespace
}  // namespace padless::train
