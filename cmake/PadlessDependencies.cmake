# Finds LibTorch, Abseil, SentencePiece, utf8proc and nlohmann_json. Shared by the build and (in part) by
# padlessConfig.cmake, so that a consumer resolves the same libraries we built against.
find_package(Threads REQUIRED)

# Torch otherwise adds nvcc flags for a dozen architectures to every .cu file; sm_90 is our target.
if(NOT DEFINED TORCH_CUDA_ARCH_LIST AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  set(TORCH_CUDA_ARCH_LIST "9.0" CACHE STRING "CUDA architectures for torch's nvcc flags")
endif()

include(PadlessTorchCudaRuntime)
# LibTorch: a user's CMAKE_PREFIX_PATH / Torch_DIR wins; otherwise ask python3's torch package.
if(Torch_DIR)  # given by the user, or cached by an earlier configure
  padless_provide_wheel_cuda_runtime("${Torch_DIR}/..")
endif()
find_package(Torch CONFIG QUIET)
if(NOT Torch_FOUND)
  find_package(Python3 COMPONENTS Interpreter REQUIRED)
  execute_process(
    COMMAND ${Python3_EXECUTABLE} -c "import torch; print(torch.utils.cmake_prefix_path)"
    OUTPUT_VARIABLE PADLESS_TORCH_PREFIX OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE _padless_torch_rc ERROR_QUIET)
  if(NOT _padless_torch_rc EQUAL 0)
    message(FATAL_ERROR "LibTorch not found. Run `python3 -m pip install torch==2.11.0` or pass "
                        "-DCMAKE_PREFIX_PATH=/path/to/libtorch")
  endif()
  list(APPEND CMAKE_PREFIX_PATH ${PADLESS_TORCH_PREFIX})
  padless_provide_wheel_cuda_runtime("${PADLESS_TORCH_PREFIX}")
  find_package(Torch CONFIG REQUIRED)
endif()
get_filename_component(PADLESS_TORCH_DIR "${Torch_DIR}" ABSOLUTE)
message(STATUS "padless: LibTorch ${Torch_VERSION} from ${PADLESS_TORCH_DIR}")
# torch's imported targets carry its flags; keep only what we need and mark its headers SYSTEM.
set(PADLESS_TORCH_HAS_CUDA OFF)
if(TARGET torch_cuda OR TARGET c10_cuda)
  set(PADLESS_TORCH_HAS_CUDA ON)
endif()

find_package(absl CONFIG REQUIRED)
find_package(nlohmann_json 3 CONFIG REQUIRED)

# SentencePiece ships no CMake config in Debian: find it by hand so CMAKE_PREFIX_PATH works.
find_path(SENTENCEPIECE_INCLUDE_DIR sentencepiece_processor.h REQUIRED)
find_library(SENTENCEPIECE_LIBRARY NAMES sentencepiece REQUIRED)
find_library(SENTENCEPIECE_TRAIN_LIBRARY NAMES sentencepiece_train REQUIRED)
if(NOT TARGET padless_sentencepiece)
  add_library(padless_sentencepiece INTERFACE IMPORTED)
  set_target_properties(padless_sentencepiece PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${SENTENCEPIECE_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "${SENTENCEPIECE_TRAIN_LIBRARY};${SENTENCEPIECE_LIBRARY}")
endif()

# utf8proc (Unicode normalization, case mapping and categories for the WordPiece tokenizer): found
# by hand like SentencePiece, so CMAKE_PREFIX_PATH works where the Debian package is only unpacked
# (the GPU machine's /opt/gpudeps/usr, whose pkg-config file would point at /usr).
find_path(UTF8PROC_INCLUDE_DIR utf8proc.h REQUIRED)
find_library(UTF8PROC_LIBRARY NAMES utf8proc REQUIRED)
if(NOT TARGET padless_utf8proc)
  add_library(padless_utf8proc INTERFACE IMPORTED)
  set_target_properties(padless_utf8proc PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${UTF8PROC_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "${UTF8PROC_LIBRARY}")
endif()
