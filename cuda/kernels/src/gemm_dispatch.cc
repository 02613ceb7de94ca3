#include "gemm_dispatch.h"

namespace padless::cuda {
namespace {

thread_local bool g_last_fused = false;

}  // namespace

namespace internal {

void NoteGemmEpilogueFused(bool fused) { g_last_fused = fused; }

}  // namespace internal

bool LastGemmEpilogueWasFused() { return g_last_fused; }

}  // namespace padless::cuda
