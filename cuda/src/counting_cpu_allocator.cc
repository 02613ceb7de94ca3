#include "counting_cpu_allocator.h"

#include <c10/core/CPUAllocator.h>

#include <cstring>
#include <utility>

namespace padless::cuda::internal {
namespace {

// The DataPtr's context owns the inner allocator's DataPtr, so a free goes through our deleter
// (which knows the size) and then through the inner deleter. Frees of memory allocated before
// installation never reach us: their DataPtr carries the default deleter.
struct Block {
  c10::DataPtr inner;
  int64_t bytes;
  CountingCpuAllocator* owner;
};

// Above c10's default registration (priority 0), so our allocator wins.
constexpr uint8_t kPriority = 1;

}  // namespace

CountingCpuAllocator& CountingCpuAllocator::Install() {
  // Leaked on purpose: tensors freed during static destruction still call our deleter.
  static CountingCpuAllocator* instance = [] {
    auto* a = new CountingCpuAllocator();
    c10::SetCPUAllocator(a, kPriority);
    return a;
  }();
  return *instance;
}

c10::DataPtr CountingCpuAllocator::allocate(size_t n) {
  c10::DataPtr inner = c10::GetDefaultCPUAllocator()->allocate(n);
  void* data = inner.get();
  c10::Device device = inner.device();
  Add(static_cast<int64_t>(n));
  auto* block = new Block{std::move(inner), static_cast<int64_t>(n), this};
  return c10::DataPtr(data, block, &CountingCpuAllocator::Delete, device);
}

void CountingCpuAllocator::Delete(void* ctx) {
  auto* block = static_cast<Block*>(ctx);
  block->owner->Sub(block->bytes);
  delete block;  // frees the memory through the inner DataPtr's deleter
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
