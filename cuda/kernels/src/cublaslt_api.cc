#include "cublaslt_api.h"

#include <c10/util/Exception.h>
#include <dlfcn.h>

#include <string>

namespace padless::cuda::internal {
namespace {

// cublasGetStatusName lives in libcublas, which we do not link; the status values are stable.
const char* StatusName(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "unknown cublasStatus_t";
}

template <typename Fn>
void LoadSymbol(void* lib, const char* name, Fn& fn) {
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
  TORCH_CHECK(fn != nullptr, "cuBLASLt: ", name, " not found in the loaded libcublasLt");
}

LtApi LoadLtApi() {
  // The soname of the major version our header describes; RTLD_NOLOAD returns the copy already
  // in the process (a NEEDED library of libtorch_cuda) and never loads another.
  const std::string soname = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
  void* lib = dlopen(soname.c_str(), RTLD_NOW | RTLD_NOLOAD);
  TORCH_CHECK(lib != nullptr, "cuBLASLt: ", soname,
              " is not loaded in this process (LibTorch's CUDA library should have loaded it)");
  LtApi api{};
  LoadSymbol(lib, "cublasLtMatmulDescCreate", api.MatmulDescCreate);
  LoadSymbol(lib, "cublasLtMatmulDescDestroy", api.MatmulDescDestroy);
  LoadSymbol(lib, "cublasLtMatmulDescSetAttribute", api.MatmulDescSetAttribute);
  LoadSymbol(lib, "cublasLtMatrixLayoutCreate", api.MatrixLayoutCreate);
  LoadSymbol(lib, "cublasLtMatrixLayoutDestroy", api.MatrixLayoutDestroy);
  LoadSymbol(lib, "cublasLtMatmulPreferenceCreate", api.MatmulPreferenceCreate);
  LoadSymbol(lib, "cublasLtMatmulPreferenceDestroy", api.MatmulPreferenceDestroy);
  LoadSymbol(lib, "cublasLtMatmulPreferenceSetAttribute", api.MatmulPreferenceSetAttribute);
  LoadSymbol(lib, "cublasLtMatmulAlgoGetHeuristic", api.MatmulAlgoGetHeuristic);
  LoadSymbol(lib, "cublasLtMatmul", api.Matmul);
  return api;  // `lib` stays open for the life of the process
}

template <typename T>
void SetAttr(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const T& value,
             const char* op) {
  CheckLt(Lt().MatmulDescSetAttribute(desc, attr, &value, sizeof(value)), op,
          "cublasLtMatmulDescSetAttribute");
}

}  // namespace

void CheckLt(cublasStatus_t s, const char* op, const char* call) {
  TORCH_CHECK(s == CUBLAS_STATUS_SUCCESS, op, ": ", call, " failed: ", StatusName(s), " (",
              static_cast<int>(s), ")");
}

const LtApi& Lt() {
  static const LtApi api = LoadLtApi();  // thread-safe; a failure throws again on the next call
  return api;
}

Layout MakeLayout(cudaDataType_t dtype, uint64_t rows, uint64_t cols, const char* op) {
  cublasLtMatrixLayout_t raw = nullptr;
  CheckLt(Lt().MatrixLayoutCreate(&raw, dtype, rows, cols, static_cast<int64_t>(rows)), op,
          "cublasLtMatrixLayoutCreate");
  return Layout(raw);
}

MatmulDesc MakeDesc(const GemmSpec& g) {
  cublasLtMatmulDesc_t raw = nullptr;
  // fp32 accumulation and fp32 alpha / beta, as torch's own bf16 / fp16 GEMMs.
  CheckLt(Lt().MatmulDescCreate(&raw, CUBLAS_COMPUTE_32F, CUDA_R_32F), g.op,
          "cublasLtMatmulDescCreate");
  MatmulDesc desc(raw);
  SetAttr(raw, CUBLASLT_MATMUL_DESC_TRANSA, g.trans_a, g.op);
  SetAttr(raw, CUBLASLT_MATMUL_DESC_TRANSB, g.trans_b, g.op);
  SetAttr(raw, CUBLASLT_MATMUL_DESC_EPILOGUE, g.epilogue, g.op);
  if (g.bias != nullptr) SetAttr(raw, CUBLASLT_MATMUL_DESC_BIAS_POINTER, g.bias, g.op);
  if (g.Fp8()) {
    SetAttr(raw, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, g.a_scale, g.op);
    SetAttr(raw, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, g.b_scale, g.op);
    SetAttr(raw, CUBLASLT_MATMUL_DESC_FAST_ACCUM, static_cast<int8_t>(g.fast_accum), g.op);
    // With FP8 inputs neither the bias's nor the aux output's type is implied by D's: both are
    // in C's 16-bit type.
    if (g.bias != nullptr) SetAttr(raw, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, g.CType(), g.op);
    if (g.aux != nullptr)
      SetAttr(raw, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, g.CType(), g.op);
    if (g.d_scale != nullptr) SetAttr(raw, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, g.d_scale, g.op);
    if (g.amax_d != nullptr) SetAttr(raw, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, g.amax_d, g.op);
  }
  if (g.aux != nullptr) {
    SetAttr(raw, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, g.aux, g.op);
    // The aux matrix has D's shape and layout; cuBLASLt wants its ld divisible by 8 (checked by
    // the callers through the multiple-of-8 feature dimensions).
    SetAttr(raw, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, static_cast<int64_t>(g.d_rows), g.op);
  }
  return desc;
}

uint32_t Alignment(const void* p) {
  const auto addr = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 1;
  while (a < 256 && addr % (2 * a) == 0) a *= 2;
  return a;
}

Preference MakePreference(const GemmSpec& g, size_t workspace_bytes) {
  cublasLtMatmulPreference_t raw = nullptr;
  CheckLt(Lt().MatmulPreferenceCreate(&raw), g.op, "cublasLtMatmulPreferenceCreate");
  Preference pref(raw);
  const auto set = [&](cublasLtMatmulPreferenceAttributes_t attr, auto value) {
    CheckLt(Lt().MatmulPreferenceSetAttribute(raw, attr, &value, sizeof(value)), g.op,
            "cublasLtMatmulPreferenceSetAttribute");
  };
  set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, static_cast<uint64_t>(workspace_bytes));
  set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, Alignment(g.a.ptr));
  set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, Alignment(g.b.ptr));
  set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, Alignment(g.d));
  set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, Alignment(g.d));
  return pref;
}

}  // namespace padless::cuda::internal
