# FlashAttention-3's varlen kernels (models' AttentionBackend::kVarlenFa3; cuda/kernels'
# fa3_attention.h), from the library that scripts/build_fa3.sh compiles once from FA3's and
# CUTLASS's sources: its kernels take minutes of nvcc each, so padless's own build never compiles
# them, it links them.
#
# PADLESS_FA3_ATTENTION: AUTO (default) builds the backend when the CUDA kernels are built (nvcc
# and a CUDA LibTorch: cuda/kernels builds them for sm90 alone) and PADLESS_FA3_DIR (cache variable,
# or the environment variable of that name) holds lib/libpadless_fa3.a and include/flash.h; ON
# requires all that; OFF never. No default search: a machine (CI's) whose build never asked for
# it compiles nothing more. Without it, kVarlenFa3 runs FA2 (models/fa3_attention.h).
#
# padless_fa3_attention(<target> <source>): <source> (the one file that includes flash.h) gets
# FA3's include folder as a SYSTEM include, <target> links the library and gets
# PADLESS_HAVE_FA3_ATTENTION=1. Sets PADLESS_HAVE_FA3_ATTENTION as a global property (bench/cuda).
set(PADLESS_FA3_ATTENTION AUTO CACHE STRING
    "Build the FlashAttention-3 backend: AUTO (when CUDA kernels, sm90 and PADLESS_FA3_DIR are there), ON or OFF")
set_property(CACHE PADLESS_FA3_ATTENTION PROPERTY STRINGS AUTO ON OFF)
set(PADLESS_FA3_DIR "" CACHE PATH "Folder that scripts/build_fa3.sh wrote (lib/, include/)")

function(padless_fa3_attention target source)
  set_property(GLOBAL PROPERTY PADLESS_HAVE_FA3_ATTENTION OFF)
  if(PADLESS_FA3_ATTENTION STREQUAL "OFF")
    return()
  endif()
  set(_dir "${PADLESS_FA3_DIR}")
  if(NOT _dir)
    set(_dir "$ENV{PADLESS_FA3_DIR}")
  endif()
  set(_why "")
  if(NOT (PADLESS_HAVE_CUDA AND PADLESS_TORCH_HAS_CUDA))
    set(_why "the CUDA kernels are not built (no nvcc or a CPU LibTorch)")
  elseif(NOT _dir)
    set(_why "PADLESS_FA3_DIR is not set (scripts/build_fa3.sh)")
  elseif(NOT EXISTS "${_dir}/lib/libpadless_fa3.a" OR NOT EXISTS "${_dir}/include/flash.h")
    set(_why "${_dir} has no lib/libpadless_fa3.a and include/flash.h (scripts/build_fa3.sh)")
  endif()
  if(_why)
    if(PADLESS_FA3_ATTENTION STREQUAL "ON")
      message(FATAL_ERROR "PADLESS_FA3_ATTENTION=ON but ${_why}")
    endif()
    message(STATUS "padless: FA3 attention OFF: ${_why}")
    return()
  endif()
  set_source_files_properties(${source} PROPERTIES
    COMPILE_OPTIONS "-isystem;${_dir}/include" SKIP_UNITY_BUILD_INCLUSION ON)
  target_compile_definitions(${target} PRIVATE PADLESS_HAVE_FA3_ATTENTION=1)
  # The kernels call the CUDA runtime (launches, function attributes, the TMA encoder's entry
  # point): the libcudart LibTorch loads.
  target_link_libraries(${target} PRIVATE "${_dir}/lib/libpadless_fa3.a")
  if(TARGET torch::cudart)
    target_link_libraries(${target} PRIVATE torch::cudart)
  endif()
  message(STATUS "padless: FA3 attention ON (${_dir})")
  set_property(GLOBAL PROPERTY PADLESS_HAVE_FA3_ATTENTION ON)
endfunction()
