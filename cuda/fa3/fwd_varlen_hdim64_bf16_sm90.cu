// FA3's forward for what padless runs: varlen, bf16, head dim 64, sm90, MHA, non-causal, global or
// windowed (Is_local), no softcap, paging, append-KV, PackGQA or split. Calls FA3's run_flash_fwd
// template directly (the arguments that its run_mha_fwd_ would pick for these settings), so that
// only these two kernels are compiled, not FA3's whole switch of variants. Built by
// scripts/build_fa3.sh (with FA3's hopper/ and CUTLASS on the include path), never by CMake.
// First: FA3's CUDA checks throw instead of ending the process (cuda_check_throws.h).
#include "cuda_check_throws.h"
#include "flash_fwd_launch_template.h"

namespace padless::cuda::fa3 {

void RunFwdVarlenHdim64Bf16(Flash_fwd_params& params, cudaStream_t stream) {
  using T = cutlass::bfloat16_t;
  // Arch, hdim, hdim_v, cluster, element, element out, causal, local, softcap, varlen,
  // paged non-TMA, append KV, has Qv, PackGQA, split, V column-major.
  if (params.is_local) {
    run_flash_fwd<90, 64, 64, 1, T, T, false, true, false, true, false, false, false, false, false,
                  false>(params, stream);
  } else {
    run_flash_fwd<90, 64, 64, 1, T, T, false, false, false, true, false, false, false, false, false,
                  false>(params, stream);
  }
}

}  // namespace padless::cuda::fa3
