# Lets the CUDA build of LibTorch (what `pip install torch` gives) configure on a machine without a
# CUDA toolkit: a CPU-only box, or a GPU box with only the driver.
#
# Why: Caffe2Config.cmake includes public/cuda.cmake, which looks for nvcc and a toolkit and stops
# configuration ("Your installed Caffe2 version uses CUDA but I cannot find the CUDA libraries")
# when there is none. padless's C++ code needs no nvcc for that: only the CUDA runtime's headers
# and libcudart, and the torch wheel already depends on PyPI's nvidia-* wheels, which carry both
# (site-packages/nvidia/cu13/{include,lib} for CUDA 13; nvidia/cuda_runtime/... for CUDA 12).
# cuda.cmake returns at once when the target torch::cudart exists (its include guard), so we
# define that target from the wheel (plus the crt headers of PyPI's nvidia-cuda-crt wheel) and
# LibTorch accepts the configuration as it is. Our own .cu
# kernels are then off (no nvcc; PADLESS_HAVE_CUDA), and torch's own CUDA kernels still run on a
# GPU at run time.
#
# padless_provide_wheel_cuda_runtime(<torch cmake prefix>) does this only when no toolkit is found
# and the wheel's runtime is there; otherwise it changes nothing. Used by the build and by the
# installed padlessConfig.cmake, so that a consumer configures the same way.
function(padless_provide_wheel_cuda_runtime torch_prefix)
  if(TARGET torch::cudart)
    return()
  endif()
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    return()  # A real toolkit: LibTorch's own cuda.cmake handles it.
  endif()
  # <site-packages>/torch/share/cmake -> <site-packages>
  get_filename_component(_site "${torch_prefix}/../../.." ABSOLUTE)
  file(GLOB _cudart LIST_DIRECTORIES false
       "${_site}/nvidia/cu[0-9]*/lib/libcudart.so.[0-9]*"
       "${_site}/nvidia/cuda_runtime/lib/libcudart.so.[0-9]*")
  if(NOT _cudart)
    return()  # A CPU-only LibTorch needs nothing; a CUDA one fails in cuda.cmake as before.
  endif()
  list(GET _cudart 0 _cudart)
  get_filename_component(_lib_dir "${_cudart}" DIRECTORY)
  get_filename_component(_include_dir "${_lib_dir}/../include" ABSOLUTE)
  if(NOT EXISTS "${_include_dir}/cuda_runtime_api.h")
    return()
  endif()
  # cuda_runtime.h includes crt/host_config.h, and cuda_fp16.h (through ATen/cuda's headers)
  # includes CCCL's nv/target; the runtime wheel has neither. PyPI's small nvidia-cuda-crt and
  # nvidia-cuda-cccl wheels carry them, into the same include folder (scripts/setup.sh installs
  # both).
  foreach(_header crt/host_config.h nv/target)
    if(NOT EXISTS "${_include_dir}/${_header}")
      message(FATAL_ERROR "No CUDA toolkit, and the torch wheel's CUDA runtime in ${_include_dir} "
                          "has no ${_header}. Install the headers with `python3 -m pip install "
                          "nvidia-cuda-crt==<V>.* nvidia-cuda-cccl==<V>.*`, V being the CUDA "
                          "version of torch (scripts/setup.sh does), or install a CUDA toolkit.")
    endif()
  endforeach()
  # Read by dist/: the NCCL backend is left out of this build (the wheel's NCCL is not located by
  # LibTorch's config without a toolkit); Gloo remains.
  set(PADLESS_WHEEL_CUDA_RUNTIME ON PARENT_SCOPE)
  add_library(torch::cudart INTERFACE IMPORTED GLOBAL)
  set_target_properties(torch::cudart PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${_include_dir}"
    INTERFACE_LINK_LIBRARIES "${_cudart}")
  message(STATUS "padless: no CUDA toolkit; LibTorch uses the CUDA runtime of its pip wheel "
                 "(${_lib_dir}); padless's own CUDA kernels are off")
endfunction()
