#!/usr/bin/env bash
# Compiles FlashAttention-3's kernels that padless runs (cuda/fa3/*.cu: varlen forward and
# backward, bf16, head dim 64, global or windowed, sm90a) and FA3's varlen scheduler
# (hopper/flash_prepare_scheduler.cu) into OUT/lib/libpadless_fa3.a, with FA3's flash.h (the
# parameter structs the library takes) in OUT/include: pass OUT to CMake as
# -DPADLESS_FA3_DIR=OUT to build models' kVarlenFa3 (cmake/PadlessFa3Attention.cmake).
#   scripts/build_fa3.sh --flash-attention DIR --cutlass DIR [--out OUT] [--jobs N]
# DIR: checkouts of Dao-AILab/flash-attention (hopper/ is read) and NVIDIA/cutlass (include/ and
# tools/util/include; the commit flash-attention's csrc/cutlass submodule names). OUT defaults to
# ${XDG_CACHE_HOME:-~/.cache}/padless/fa3. Needs nvcc 12.3 or newer (sm90a); no GPU, no torch: the
# kernels include neither. The three files take about 4 minutes of one core each (5 GB of memory
# each at the peak), so this runs once per machine and toolkit, not in padless's build: an OUT
# whose BUILD_INFO matches these sources and this nvcc is kept as it is.
set -euo pipefail
usage="usage: scripts/build_fa3.sh --flash-attention DIR --cutlass DIR [--out OUT] [--jobs N]"
fa='' cutlass='' out=${XDG_CACHE_HOME:-$HOME/.cache}/padless/fa3 jobs=1
while (($#)); do
  case $1 in
    --flash-attention) fa=${2:?$usage}; shift 2 ;;
    --cutlass) cutlass=${2:?$usage}; shift 2 ;;
    --out) out=${2:?$usage}; shift 2 ;;
    --jobs) jobs=${2:?$usage}; shift 2 ;;
    -h|--help) echo "$usage"; exit 0 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
[[ -n $fa && -n $cutlass ]] || { echo "$usage" >&2; exit 2; }
hopper=$fa/hopper
[[ -f $hopper/flash.h && -f $hopper/flash_prepare_scheduler.cu ]] ||
  { echo "build_fa3.sh: $hopper has no FA3 sources (flash.h)" >&2; exit 1; }
[[ -f $cutlass/include/cutlass/cutlass.h ]] ||
  { echo "build_fa3.sh: $cutlass has no include/cutlass/cutlass.h" >&2; exit 1; }
cuda=${CUDA_HOME:-/usr/local/cuda}
nvcc=$cuda/bin/nvcc
[[ -x $nvcc ]] || { echo "build_fa3.sh: no nvcc at $nvcc (set CUDA_HOME)" >&2; exit 1; }
root=$(cd "$(dirname "$0")/.." && pwd)
sources=("$root/cuda/fa3/fwd_varlen_hdim64_bf16_sm90.cu" "$root/cuda/fa3/bwd_varlen_hdim64_bf16_sm90.cu"
         "$hopper/flash_prepare_scheduler.cu")
info=$({ "$nvcc" --version | tail -n 1
  cat "${sources[@]}" "$root"/cuda/fa3/*.h "$hopper"/*.h "$hopper"/*.hpp | sha256sum; })
if [[ -f $out/lib/libpadless_fa3.a && -f $out/BUILD_INFO && $(cat "$out/BUILD_INFO") == "$info" ]]; then
  echo "$out"; exit 0
fi
# hopper/setup.py's flags (and torch's CUDAExtension's), with everything padless does not run
# switched off: its launch templates then instantiate no other variants.
flags=(-O3 -std=c++17 --use_fast_math --expt-relaxed-constexpr -Xcompiler -fPIC
  -gencode arch=compute_90a,code=sm_90a
  -DCUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED -DCUTLASS_ENABLE_GDC_FOR_SM90 -DCUTLASS_DEBUG_TRACE_LEVEL=0
  -DNDEBUG -D__CUDA_NO_HALF_OPERATORS__ -D__CUDA_NO_HALF_CONVERSIONS__
  -D__CUDA_NO_BFLOAT16_CONVERSIONS__ -D__CUDA_NO_HALF2_OPERATORS__
  -DFLASHATTENTION_DISABLE_SPLIT -DFLASHATTENTION_DISABLE_PAGEDKV -DFLASHATTENTION_DISABLE_APPENDKV
  -DFLASHATTENTION_DISABLE_SOFTCAP -DFLASHATTENTION_DISABLE_PACKGQA -DFLASHATTENTION_DISABLE_FP16
  -DFLASHATTENTION_DISABLE_FP8 -DFLASHATTENTION_DISABLE_CLUSTER -DFLASHATTENTION_DISABLE_HDIM96
  -DFLASHATTENTION_DISABLE_HDIM128 -DFLASHATTENTION_DISABLE_HDIM192 -DFLASHATTENTION_DISABLE_HDIM256
  -DFLASHATTENTION_DISABLE_SM8x -DFLASHATTENTION_DISABLE_HDIMDIFF64
  -DFLASHATTENTION_DISABLE_HDIMDIFF192
  -I"$hopper" -I"$cutlass/include" -I"$cutlass/tools/util/include" -I"$cuda/include/cccl")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
compile() {
  local src=$1 obj=$tmp/$(basename "$1" .cu).o
  echo "build_fa3.sh: nvcc $(basename "$src")" >&2
  "$nvcc" "${flags[@]}" -c "$src" -o "$obj" >"$obj.log" 2>&1 || { tail -n 30 "$obj.log" >&2; return 1; }
}
export -f compile
export nvcc tmp
declare -p flags >"$tmp/flags.sh"
printf '%s\n' "${sources[@]}" |
  xargs -P "$jobs" -I{} bash -c "source $tmp/flags.sh; compile {}"
mkdir -p "$tmp/out/lib" "$tmp/out/include"
ar rcs "$tmp/out/lib/libpadless_fa3.a" "$tmp"/*.o
cp "$hopper/flash.h" "$tmp/out/include/"
cp "$fa/LICENSE" "$tmp/out/LICENSE.flash-attention" 2>/dev/null || true
echo "$info" >"$tmp/out/BUILD_INFO"
mkdir -p "$(dirname "$out")"
rm -rf "$out"
mv "$tmp/out" "$out"
echo "$out"
