#include "cpu_host_setup.h"

#include <dlfcn.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace padless::serve::internal {

bool RetainFreedHostMemory() {
#if defined(__GLIBC__)
  // Both thresholds at once: setting either alone turns off glibc's dynamic thresholds and leaves
  // the other at its 128 KiB start, which is worse than the default (every block over 128 KiB
  // mmapped, or the heap's top trimmed at every free).
  static const bool set = mallopt(M_MMAP_THRESHOLD, static_cast<int>(kHeapBlockLimit)) == 1 &&
                          mallopt(M_TRIM_THRESHOLD, static_cast<int>(kKeptFreeMemory)) == 1;
  return set;
#else
  return false;
#endif
}

bool ReleaseCallerOpenMpThreads() {
  // Looked up rather than linked: the OpenMP runtime is LibTorch's (GNU OpenMP in the PyPI wheel,
  // loaded with it), and a build without one must still link. omp_pause_soft is 1 in OpenMP 5.0.
  using PauseAll = int (*)(int);
  static const auto pause_all =
      reinterpret_cast<PauseAll>(dlsym(RTLD_DEFAULT, "omp_pause_resource_all"));
  constexpr int kOmpPauseSoft = 1;
  return pause_all != nullptr && pause_all(kOmpPauseSoft) == 0;
}

void PrepareHostForCpuEngine() {
  RetainFreedHostMemory();
  ReleaseCallerOpenMpThreads();
}

}  // namespace padless::serve::internal
