#include "padless/cuda/memory/memory_meter.h"

#include <ATen/ATen.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <thread>
#include <vector>

namespace padless::cuda {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kMiB = 1 << 20;

at::Tensor Bytes(int64_t n, c10::Device device = c10::kCPU) {
  return at::empty({n}, at::TensorOptions().dtype(at::kByte).device(device));
}

TEST(CpuMemoryMeterTest, AllocationRaisesAndFreeLowersAllocated) {
  MemoryMeter meter(c10::kCPU);
  const MemorySnapshot before = meter.Snapshot();
  {
    at::Tensor t = Bytes(3 * kMiB);
    const MemorySnapshot during = meter.Snapshot();
    EXPECT_GE(during.allocated_bytes - before.allocated_bytes, 3 * kMiB);
    EXPECT_EQ(during.reserved_bytes, during.allocated_bytes);
    EXPECT_EQ(during.active_bytes, during.allocated_bytes);
  }
  EXPECT_EQ(meter.Snapshot().allocated_bytes, before.allocated_bytes);
}

TEST(CpuMemoryMeterTest, PeakSurvivesFreeAndResets) {
  MemoryMeter meter(c10::kCPU);
  meter.ResetPeak();
  const int64_t base = meter.Snapshot().allocated_bytes;
  { at::Tensor t = Bytes(5 * kMiB); }
  MemorySnapshot s = meter.Snapshot();
  EXPECT_EQ(s.allocated_bytes, base);
  EXPECT_GE(s.peak_allocated_bytes - base, 5 * kMiB);
  EXPECT_EQ(s.peak_reserved_bytes, s.peak_allocated_bytes);
  meter.ResetPeak();
  s = meter.Snapshot();
  EXPECT_EQ(s.peak_allocated_bytes, s.allocated_bytes);
}

TEST(CpuMemoryMeterTest, CountsTensorsFromOps) {
  MemoryMeter meter(c10::kCPU);
  at::Tensor a = at::ones({256, 1024}, at::kFloat);  // 1 MiB
  const int64_t before = meter.Snapshot().allocated_bytes;
  at::Tensor b = a * 2;  // a new 1 MiB result
  EXPECT_GE(meter.Snapshot().allocated_bytes - before, kMiB);
  b.reset();
  EXPECT_EQ(meter.Snapshot().allocated_bytes, before);
}

TEST(CpuMemoryMeterTest, ScopedPeakMeasuresOneRegion) {
  MemoryMeter meter(c10::kCPU);
  at::Tensor held = Bytes(8 * kMiB);  // a peak from before the region must not leak into it
  held.reset();
  ScopedPeak peak(meter);
  {
    std::vector<at::Tensor> live;
    for (int i = 0; i < 3; ++i) live.push_back(Bytes(kMiB));
  }
  { at::Tensor t = Bytes(2 * kMiB); }
  peak.Stop();
  const int64_t delta = peak.PeakAllocatedDelta();
  EXPECT_GE(delta, 3 * kMiB);
  EXPECT_LT(delta, 4 * kMiB);
  EXPECT_EQ(peak.PeakAllocated(), peak.baseline_allocated() + delta);
  // Stopped: later allocations do not change the region's result.
  { at::Tensor t = Bytes(16 * kMiB); }
  EXPECT_EQ(peak.PeakAllocatedDelta(), delta);
  EXPECT_EQ(peak.PeakReserved(), peak.PeakAllocated());
}

TEST(CpuMemoryMeterTest, ConcurrentAllocationsBalance) {
  MemoryMeter meter(c10::kCPU);
  meter.ResetPeak();
  const int64_t before = meter.Snapshot().allocated_bytes;
  constexpr int kThreads = 4;
  constexpr int kIters = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < kIters; ++i) {
        at::Tensor x = Bytes(4096 + 64 * ((t * kIters + i) % 17));
        x.fill_(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  const MemorySnapshot s = meter.Snapshot();
  EXPECT_EQ(s.allocated_bytes, before);
  EXPECT_GE(s.peak_allocated_bytes - before, 4096);
  EXPECT_LE(s.peak_allocated_bytes - before, kThreads * (4096 + 64 * 16));
}

TEST(MemoryMeterTest, CreateRejectsUnsupportedDevices) {
  EXPECT_TRUE(MemoryMeter::Create(c10::kCPU).ok());
  auto meta = MemoryMeter::Create(c10::Device(c10::kMeta));
  EXPECT_EQ(meta.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(meta.status().message()), HasSubstr("memory_meter.cc"));
  if (!torch::cuda::is_available()) {
    auto cuda = MemoryMeter::Create(c10::Device(c10::kCUDA, 0));
    EXPECT_EQ(cuda.status().code(), absl::StatusCode::kFailedPrecondition);
  }
}

TEST(FormatTest, Bytes) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(1024), "1.00 KiB");
  EXPECT_EQ(FormatBytes(12 * kMiB + kMiB / 2), "12.5 MiB");
  EXPECT_EQ(FormatBytes(3 * (int64_t{1} << 30) / 2), "1.50 GiB");
  EXPECT_EQ(FormatBytes(-2 * kMiB), "-2.00 MiB");
}

TEST(FormatTest, ReportShowsCacheOverhead) {
  MemorySnapshot s;
  s.allocated_bytes = int64_t{1} << 30;
  s.reserved_bytes = 3 * (int64_t{1} << 29);
  s.active_bytes = s.allocated_bytes;
  s.peak_allocated_bytes = 2 * s.allocated_bytes;
  s.peak_reserved_bytes = 2 * s.reserved_bytes;
  s.num_ooms = 1;
  s.num_alloc_retries = 2;
  const std::string r = FormatMemoryReport(s);
  EXPECT_THAT(r, HasSubstr("allocated 1.00 GiB"));
  EXPECT_THAT(r, HasSubstr("reserved 1.50 GiB (cache overhead 512 MiB, 33.3%)"));
  EXPECT_THAT(r, HasSubstr("peak allocated 2.00 GiB"));
  EXPECT_THAT(r, HasSubstr("peak reserved 3.00 GiB"));
  EXPECT_THAT(r, HasSubstr("ooms 1, alloc retries 2"));
}

TEST(CudaMemoryMeterTest, ReadsCachingAllocator) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  auto meter_or = MemoryMeter::Create(c10::Device(c10::kCUDA, 0));
  ASSERT_TRUE(meter_or.ok()) << meter_or.status();
  MemoryMeter meter = *meter_or;
  const c10::Device gpu(c10::kCUDA, 0);
  meter.EmptyCache();
  meter.ResetPeak();
  const MemorySnapshot before = meter.Snapshot();
  {
    at::Tensor t = Bytes(64 * kMiB, gpu);
    const MemorySnapshot during = meter.Snapshot();
    EXPECT_GE(during.allocated_bytes - before.allocated_bytes, 64 * kMiB);
    EXPECT_GE(during.reserved_bytes, during.allocated_bytes);
    EXPECT_GE(during.active_bytes, during.allocated_bytes);
  }
  MemorySnapshot after = meter.Snapshot();
  EXPECT_EQ(after.allocated_bytes, before.allocated_bytes);
  EXPECT_GE(after.peak_allocated_bytes - before.allocated_bytes, 64 * kMiB);
  // The freed block stays cached until EmptyCache returns it.
  EXPECT_GE(after.reserved_bytes - before.reserved_bytes, 64 * kMiB);
  meter.EmptyCache();
  EXPECT_LT(meter.Snapshot().reserved_bytes, after.reserved_bytes);
  meter.ResetPeak();
  after = meter.Snapshot();
  EXPECT_EQ(after.peak_allocated_bytes, after.allocated_bytes);
  EXPECT_EQ(after.peak_reserved_bytes, after.reserved_bytes);
}

}  // namespace
}  // namespace padless::cuda
