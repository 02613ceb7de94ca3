// Process settings for running a CPU engine, which eager LibTorch's defaults get wrong on a small
// machine (issue 44; measured in bench/serve/README.md, "CPU int8 against quantize_dynamic").
// Call PrepareHostForCpuEngine on the thread that loaded the model, before the engine's threads
// start.
//
// RetainFreedHostMemory: keeps the memory a CPU forward frees inside the process for the next
// forward. Every operator of an eager forward allocates its output, and at the CPU engine's batches
// those are megabytes ([2048, 1536] fp32 is 12 MiB); glibc serves such blocks with mmap, or trims
// them off the top of the heap when they are freed, so each forward faulted its activations in
// again, page by page: about a million page faults over SST-2 dev x8 with MiniLM int8, 11-14% of
// the engine's time on a 2-core machine. Process-wide (mallopt); the process's memory then stays
// at its high-water mark. False where the C library is not glibc (which keeps its own policy).
//
// ReleaseCallerOpenMpThreads: frees the OpenMP threads the calling thread has started. GNU OpenMP
// keeps one pool of threads per thread that ever ran a parallel region, and once the pools hold
// more threads than the machine has cores it stops spinning between parallel regions and puts its
// threads to sleep after ~100 spins, so each of the forward's thousands of short parallel regions
// starts with a futex wake-up. Loading a model runs parallel operators on the loading thread, and
// the engine's forwards run on its device worker: two pools, and the forward ran 18% slower than on
// the loading thread itself (2 cores, MiniLM int8). Releasing the loader's pool (OpenMP 5.0's
// omp_pause_resource_all, looked up in the OpenMP runtime LibTorch loaded) leaves one. A later
// parallel operator on the calling thread starts a new pool. False where the runtime has no such
// call (LibTorch without OpenMP) or refused.
#ifndef PADLESS_SERVE_CPU_HOST_SETUP_H_
#define PADLESS_SERVE_CPU_HOST_SETUP_H_

#include <cstddef>

namespace padless::serve::internal {

// Blocks up to this size come from the heap, not mmap (a BERT-base FFN activation of a
// 16384-token batch is 192 MiB).
inline constexpr size_t kHeapBlockLimit = size_t{256} << 20;
// Free memory up to this size stays at the top of the heap.
inline constexpr size_t kKeptFreeMemory = size_t{1} << 30;

// Idempotent and thread-safe.
bool RetainFreedHostMemory();

// Must not be called inside a parallel region.
bool ReleaseCallerOpenMpThreads();

// Both of the above.
void PrepareHostForCpuEngine();

}  // namespace padless::serve::internal

#endif  // PADLESS_SERVE_CPU_HOST_SETUP_H_
