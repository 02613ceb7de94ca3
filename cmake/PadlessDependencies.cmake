# Finds LibTorch, Abseil, SentencePiece, utf8proc, nlohmann_json and cpp-httplib (serve/http only).
# Shared by the build and (in part) by padlessConfig.cmake, so that a consumer resolves the same
# libraries we built against.
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

# cpp-httplib (Debian 12: libcpp-httplib-dev, 0.11.4) for `padless serve` (serve/http/). Chosen over
# Boost.Beast because it is small, packaged as a compiled library (no header-only compile cost in
# every file), and gives what the server needs out of the box: HTTP/1.1 keep-alive, a thread pool,
# a payload limit, and a client the tests drive the server with. Found by hand like utf8proc, so
# CMAKE_PREFIX_PATH works where the package is only unpacked. Debian compiles the library with
# OpenSSL, zlib and Brotli support, and those macros change the layout of httplib's classes
# (Request holds an SSL pointer with CPPHTTPLIB_OPENSSL_SUPPORT), so every file that includes
# httplib.h must see the same ones: pkg-config's Cflags when it has them, else Debian's set.
find_path(HTTPLIB_INCLUDE_DIR httplib.h REQUIRED)
find_library(HTTPLIB_LIBRARY NAMES cpp-httplib REQUIRED)
if(NOT TARGET padless_httplib)
  set(_padless_httplib_defs
    CPPHTTPLIB_OPENSSL_SUPPORT CPPHTTPLIB_ZLIB_SUPPORT CPPHTTPLIB_BROTLI_SUPPORT)
  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(PADLESS_HTTPLIB_PC QUIET cpp-httplib)
    if(PADLESS_HTTPLIB_PC_FOUND)
      set(_padless_httplib_defs "")
      foreach(flag IN LISTS PADLESS_HTTPLIB_PC_CFLAGS_OTHER)
        if(flag MATCHES "^-D(.+)")
          list(APPEND _padless_httplib_defs "${CMAKE_MATCH_1}")
        endif()
      endforeach()
    endif()
  endif()
  # The headers those macros pull in (openssl/ssl.h, zlib.h, brotli/decode.h).
  set(_padless_httplib_includes "${HTTPLIB_INCLUDE_DIR}")
  foreach(header IN ITEMS openssl/ssl.h zlib.h brotli/decode.h)
    string(MAKE_C_IDENTIFIER "PADLESS_HTTPLIB_DEP_${header}" var)
    find_path(${var} ${header})
    if(${var})
      list(APPEND _padless_httplib_includes "${${var}}")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES _padless_httplib_includes)
  add_library(padless_httplib INTERFACE IMPORTED)
  set_target_properties(padless_httplib PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${_padless_httplib_includes}"
    INTERFACE_COMPILE_DEFINITIONS "${_padless_httplib_defs}"
    INTERFACE_LINK_LIBRARIES "${HTTPLIB_LIBRARY};Threads::Threads")
  message(STATUS "padless: cpp-httplib ${HTTPLIB_LIBRARY} (${_padless_httplib_defs})")
endif()
