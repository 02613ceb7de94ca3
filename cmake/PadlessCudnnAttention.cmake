# cuDNN's fused attention (models' AttentionBackend::kVarlenCudnn) through the header-only cuDNN
# frontend (NVIDIA/cudnn-frontend, MIT).
#
# PADLESS_CUDNN_ATTENTION: AUTO (default) builds it when the CUDA kernels are built (nvcc and a CUDA
# LibTorch) and both cudnn.h and cudnn_frontend.h are found; ON requires them; OFF never. Where the
# headers are:
#   - cudnn_frontend.h: only where PADLESS_CUDNN_FRONTEND_DIR (cache variable, or the environment
#     variable of that name) points; scripts/fetch_cudnn_frontend.sh unpacks it from PyPI and prints
#     the folder. No default search: a machine (CI's) whose build never asked for it compiles
#     nothing more, even if some cache on it holds the headers.
#   - cudnn.h: PADLESS_CUDNN_INCLUDE_DIR if given, else the torch wheel's nvidia/cudnn/include (the
#     cuDNN LibTorch loads at run time), else the CUDA toolkit's include folder, else the system's
#     (a container whose torch uses a system cuDNN).
# The library is never linked: the frontend is compiled with NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING
# and takes its entry points from the libcudnn.so.<major> that LibTorch has loaded (like
# cuda/kernels' cuBLASLt), so only the headers matter at build time.
#
# padless_cudnn_attention(<target> <source>...): adds the sources (the only files that include the
# frontend) to <target> when the option resolves on, with the headers as SYSTEM includes of those
# files alone, out of unity batches, and PADLESS_HAVE_CUDNN_ATTENTION=1 on <target>. Sets
# PADLESS_HAVE_CUDNN_ATTENTION in the caller's scope and as a global property (bench/cuda).
set(PADLESS_CUDNN_ATTENTION AUTO CACHE STRING
    "Build the cuDNN fused attention backend: AUTO (when CUDA kernels, cudnn.h and cudnn_frontend.h are there), ON or OFF")
set_property(CACHE PADLESS_CUDNN_ATTENTION PROPERTY STRINGS AUTO ON OFF)
set(PADLESS_CUDNN_FRONTEND_DIR "" CACHE PATH
    "Folder holding cudnn_frontend.h (scripts/fetch_cudnn_frontend.sh prints it)")
set(PADLESS_CUDNN_INCLUDE_DIR "" CACHE PATH
    "Folder holding cudnn.h (default: the torch wheel's nvidia/cudnn/include, then the CUDA toolkit's)")

function(padless_cudnn_attention target)
  set(PADLESS_HAVE_CUDNN_ATTENTION OFF PARENT_SCOPE)
  set_property(GLOBAL PROPERTY PADLESS_HAVE_CUDNN_ATTENTION OFF)
  if(PADLESS_CUDNN_ATTENTION STREQUAL "OFF")
    return()
  endif()
  set(_why "")
  if(NOT (PADLESS_HAVE_CUDA AND PADLESS_TORCH_HAS_CUDA))
    set(_why "the CUDA kernels are not built (no nvcc or a CPU LibTorch)")
  endif()
  if(NOT _why)
    set(_fe_dir "${PADLESS_CUDNN_FRONTEND_DIR}")
    if(NOT _fe_dir)
      set(_fe_dir "$ENV{PADLESS_CUDNN_FRONTEND_DIR}")
    endif()
    if(_fe_dir)
      find_path(_fe_header cudnn_frontend.h PATHS "${_fe_dir}" "${_fe_dir}/include"
        NO_DEFAULT_PATH NO_CACHE)
    endif()
    if(NOT _fe_header)
      set(_why "cudnn_frontend.h not found (set PADLESS_CUDNN_FRONTEND_DIR; scripts/fetch_cudnn_frontend.sh)")
    endif()
  endif()
  if(NOT _why)
    # <site-packages>/torch/share/cmake/Torch -> <site-packages>
    get_filename_component(_site "${PADLESS_TORCH_DIR}/../../../.." ABSOLUTE)
    find_path(_cudnn_header cudnn.h
      PATHS "${PADLESS_CUDNN_INCLUDE_DIR}" "${_site}/nvidia/cudnn/include" /usr/local/cuda/include
            ${CUDAToolkit_INCLUDE_DIRS} /usr/include /usr/include/x86_64-linux-gnu
      NO_DEFAULT_PATH NO_CACHE)
    if(NOT _cudnn_header)
      set(_why "cudnn.h not found (set PADLESS_CUDNN_INCLUDE_DIR)")
    endif()
  endif()
  if(_why)
    if(PADLESS_CUDNN_ATTENTION STREQUAL "ON")
      message(FATAL_ERROR "PADLESS_CUDNN_ATTENTION=ON but ${_why}")
    endif()
    message(STATUS "padless: cuDNN attention OFF: ${_why}")
    return()
  endif()
  target_sources(${target} PRIVATE ${ARGN})
  # -isystem: the frontend's own warnings are not ours. Per file, so the other files' commands
  # (and their precompiled header) stay as they were.
  set_source_files_properties(${ARGN} PROPERTIES
    COMPILE_OPTIONS "-isystem;${_fe_header};-isystem;${_cudnn_header}"
    SKIP_UNITY_BUILD_INCLUSION ON)
  target_compile_definitions(${target} PRIVATE PADLESS_HAVE_CUDNN_ATTENTION=1)
  message(STATUS "padless: cuDNN attention ON (frontend ${_fe_header}, cudnn.h ${_cudnn_header})")
  set(PADLESS_HAVE_CUDNN_ATTENTION ON PARENT_SCOPE)
  set_property(GLOBAL PROPERTY PADLESS_HAVE_CUDNN_ATTENTION ON)  # read by bench/cuda
endfunction()
