// FA3's backward for what padless runs: varlen, bf16, head dim 64, sm90, MHA, not deterministic,
// non-causal, global or windowed. The tile configuration is run_mha_bwd_hdim64's for sm90 without
// softcap; calling run_flash_bwd directly compiles only these two kernels (with their pre- and
// post-processing). Built by scripts/build_fa3.sh, never by CMake.
// First: FA3's CUDA checks throw instead of ending the process (cuda_check_throws.h).
#include "cuda_check_throws.h"
#include "flash_bwd_launch_template.h"

namespace padless::cuda::fa3 {

void RunBwdVarlenHdim64Bf16(Flash_bwd_params& params, cudaStream_t stream) {
  using T = cutlass::bfloat16_t;
  // Arch, hdim, block M, block N, element, causal, local, softcap, varlen, deterministic, GQA,
  // stages dO, stages dS (or dQ), SdP swapAB, dKV swapAB, dQ swapAB, warp groups, atom SdP,
  // atom dKV, atom dQ, V in registers.
  if (params.is_local) {
    run_flash_bwd<90, 64, 128, 128, T, false, true, false, true, false, false, 2, 2, true, false,
                  false, 2, 1, 2, 2, false>(params, stream);
  } else {
    run_flash_bwd<90, 64, 128, 128, T, false, false, false, true, false, false, 2, 2, true, false,
                  false, 2, 1, 2, 2, false>(params, stream);
  }
}

}  // namespace padless::cuda::fa3
