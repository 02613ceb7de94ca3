// serve/cpu_host_setup.h: a large tensor freed and allocated again is served from memory the
// process already holds (not from fresh pages the kernel must fault in and zero), and the calling
// thread's OpenMP threads are released (and come back for the next parallel operator).
#include "cpu_host_setup.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <thread>

namespace padless::serve::internal {
namespace {

int64_t MinorFaults() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return r.ru_minflt;
}

// 48 MiB of floats: above glibc's largest dynamic mmap threshold (32 MiB), so that by default every
// such block is a fresh mapping, faulted in page by page when written.
constexpr int64_t kFloats = int64_t{12} << 20;
constexpr int64_t kPages = kFloats * 4 / 4096;

// Allocates the block, writes every page, and frees it; returns what it read back.
double WriteBlock(float value) {
  at::Tensor t = at::empty({kFloats}, at::kFloat);
  t.fill_(value);
  return t.sum().item<double>();
}

TEST(CpuHostSetupTest, FreedBlocksAreReusedWithoutPageFaults) {
#if !defined(__GLIBC__)
  GTEST_SKIP() << "the setting is glibc's";
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // The sanitizers replace malloc: glibc's thresholds do not apply, and mallopt refuses them.
  GTEST_SKIP() << "a sanitizer's allocator has no glibc thresholds";
#endif
  ASSERT_TRUE(RetainFreedHostMemory());
  ASSERT_TRUE(RetainFreedHostMemory()) << "a second call must keep the setting";
  // The first blocks may take new pages: glibc places aligned blocks further up the heap until
  // the freed space before them fits one.
  for (int i = 0; i < 8; ++i) EXPECT_EQ(WriteBlock(1.0f), static_cast<double>(kFloats));
  const int64_t before = MinorFaults();
  for (int i = 0; i < 4; ++i) {
    // The values change each time: a block that was not written would not read back.
    EXPECT_EQ(WriteBlock(static_cast<float>(i + 2)), static_cast<double>(kFloats) * (i + 2)) << i;
  }
  // Fresh blocks would take 4 x kPages faults (12288 each).
  EXPECT_LT(MinorFaults() - before, kPages / 4);
}

int64_t ProcessThreads() {
  int64_t n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (const dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

// Polls until the process has `want` threads (pool threads exit asynchronously) or 2 s passed.
int64_t WaitForThreads(int64_t want) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  int64_t n = ProcessThreads();
  while (n != want && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    n = ProcessThreads();
  }
  return n;
}

// A parallel operator: OpenMP starts the pool's threads for it.
void RunParallel() {
  at::Tensor t = at::ones({int64_t{1} << 22});
  EXPECT_EQ(t.sum().item<double>(), static_cast<double>(int64_t{1} << 22));
}

TEST(CpuHostSetupTest, ReleasesTheCallersOpenMpThreads) {
  if (at::get_num_threads() < 2 || at::get_parallel_info().find("OpenMP") == std::string::npos) {
    GTEST_SKIP() << "needs LibTorch's OpenMP backend with 2 or more threads";
  }
  // On a thread of its own: the released pool is that thread's alone.
  std::thread([] {
    const int64_t alone = ProcessThreads();
    RunParallel();
    const int64_t with_pool = WaitForThreads(alone + at::get_num_threads() - 1);
    ASSERT_GT(with_pool, alone) << "the parallel operator started no threads";
    ASSERT_TRUE(ReleaseCallerOpenMpThreads());
    EXPECT_EQ(WaitForThreads(alone), alone) << "the pool's threads are still there";
    RunParallel();  // a new pool, and correct results
    EXPECT_EQ(WaitForThreads(with_pool), with_pool);
    EXPECT_TRUE(ReleaseCallerOpenMpThreads());
  }).join();
}

}  // namespace
}  // namespace padless::serve::internal
