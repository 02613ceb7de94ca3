// A CPU allocator that counts live and peak bytes, so memory behaviour is measurable (and testable)
// on machines without a GPU. It wraps c10's default CPU allocator and is installed process-wide.
#ifndef PADLESS_CUDA_SRC_COUNTING_CPU_ALLOCATOR_H_
#define PADLESS_CUDA_SRC_COUNTING_CPU_ALLOCATOR_H_

#include <c10/core/Allocator.h>

#include <atomic>
#include <cstdint>

namespace padless::cuda::internal {

class CountingCpuAllocator final : public c10::Allocator {
 public:
  // Installs the process-wide instance as torch's CPU allocator on first call and returns it.
  // Tensors allocated before that keep their own deleter and are never counted. Buffers taken with
  // c10's raw_allocate before installation must be freed before it (raw_deallocate asks the
  // allocator installed at free time), so install early: MemoryMeter(kCPU) does it.
  static CountingCpuAllocator& Install();

  c10::DataPtr allocate(size_t n) override;
  void copy_data(void* dest, const void* src, std::size_t count) const override;
  c10::DeleterFnPtr raw_deleter() const override;

  int64_t current_bytes() const { return current_.load(std::memory_order_relaxed); }
  int64_t peak_bytes() const { return peak_.load(std::memory_order_relaxed); }
  void ResetPeak();

 private:
  CountingCpuAllocator() = default;
  static void Delete(void* data);
  void Add(int64_t n);
  void Sub(int64_t n) { current_.fetch_sub(n, std::memory_order_relaxed); }

  std::atomic<int64_t> current_{0};
  std::atomic<int64_t> peak_{0};
};

}  // namespace padless::cuda::internal

#endif  // PADLESS_CUDA_SRC_COUNTING_CPU_ALLOCATOR_H_
