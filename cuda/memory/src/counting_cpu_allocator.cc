#include "counting_cpu_allocator.h"

#include <c10/core/CPUAllocator.h>

#include <cstring>

namespace padless::cuda::internal {
namespace {

// Each block carries its size in a header in front of the data, so that the DataPtr stays
// "simple" (context == data): c10's raw_allocate / raw_deleter path (used by some CPU kernels for
// scratch buffers) requires that. 64 bytes keep the data at c10's 64-byte alignment.
constexpr size_t kHeader = 64;

// Above c10's default registration (priority 0), so our allocator wins.
constexpr uint8_t kPriority = 1;

CountingCpuAllocator* g_instance = nullptr;

}  // namespace

CountingCpuAllocator& CountingCpuAllocator::Install() {
  // Leaked on purpose: tensors freed during static destruction still call our deleter.
  static CountingCpuAllocator* instance = [] {
    auto* a = new CountingCpuAllocator();
    g_instance = a;
    c10::SetCPUAllocator(a, kPriority);
    return a;
  }();
  return *instance;
}

c10::DataPtr CountingCpuAllocator::allocate(size_t n) {
  const c10::Device cpu(c10::kCPU);
  if (n == 0) return c10::DataPtr(nullptr, nullptr, &CountingCpuAllocator::Delete, cpu);
  // Memory allocated before Install() keeps its own deleter and never reaches Delete.
  c10::DataPtr inner = c10::GetDefaultCPUAllocator()->allocate(n + kHeader);
  auto* base = static_cast<char*>(inner.release_context());
  *reinterpret_cast<int64_t*>(base) = static_cast<int64_t>(n);
  Add(static_cast<int64_t>(n));
  void* data = base + kHeader;
  return c10::DataPtr(data, data, &CountingCpuAllocator::Delete, cpu);
}

c10::DeleterFnPtr CountingCpuAllocator::raw_deleter() const {
  return &CountingCpuAllocator::Delete;
}

void CountingCpuAllocator::Delete(void* data) {
  if (data == nullptr) return;
  char* base = static_cast<char*>(data) - kHeader;
  g_instance->Sub(*reinterpret_cast<int64_t*>(base));
  c10::GetDefaultCPUAllocator()->raw_deleter()(base);
}

void CountingCpuAllocator::copy_data(void* dest, const void* src, std::size_t count) const {
  if (count > 0) std::memcpy(dest, src, count);
}

void CountingCpuAllocator::Add(int64_t n) {
  const int64_t now = current_.fetch_add(n, std::memory_order_relaxed) + n;
  int64_t peak = peak_.load(std::memory_order_relaxed);
  while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

void CountingCpuAllocator::ResetPeak() {
  peak_.store(current_.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

}  // namespace padless::cuda::internal
