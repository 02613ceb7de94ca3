// Which FP8 GEMM configurations cuBLASLt's heuristic offers an algorithm for on this GPU: per-row
// ("outer vector") against per-tensor and 128-block scales, with a bf16 or an FP8 output, with and
// without the bias / GELU epilogue, in the shape of BERT-base's FFN-in GEMM (4096 tokens). Asked
// once to decide whether the FFN-in GEMM of FP8 inference can write the FFN-out GEMM's FP8 input
// itself under per-token activation scales (bench/serve/README.md, "FP8 weights"); status 0 with
// found 1 means yes. Not part of the build (it needs nvcc); on the GPU machine:
//   nvcc -O1 bench/serve/fp8_output_probe.cc -o /tmp/fp8_output_probe -lcublasLt
//   /tmp/fp8_output_probe
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cstdio>
int main() {
  cublasLtHandle_t h;
  cublasLtCreate(&h);
  printf("cublasLt version %zu\n", cublasLtGetVersion());
  const int n = 3072, k = 768, m = 4096;  // D^T [n, m] = W[n,k] . X^T
  float *sa, *sb, *sd;
  void* bias;
  cudaMalloc(&sa, n * 4);
  cudaMalloc(&sb, m * 4);
  cudaMalloc(&sd, 4);
  cudaMalloc(&bias, n * 2);
  struct Case {
    const char* name;
    int mode;
    cudaDataType_t d;
    cublasLtEpilogue_t epi;
  };
  const Case cases[] = {
      {"outer_vec bf16 D bias", CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F, CUDA_R_16BF,
       CUBLASLT_EPILOGUE_BIAS},
      {"outer_vec bf16 D gelu_bias", CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F, CUDA_R_16BF,
       CUBLASLT_EPILOGUE_GELU_BIAS},
      {"outer_vec fp8 D default", CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F, CUDA_R_8F_E4M3,
       CUBLASLT_EPILOGUE_DEFAULT},
      {"outer_vec fp8 D bias", CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F, CUDA_R_8F_E4M3,
       CUBLASLT_EPILOGUE_BIAS},
      {"outer_vec fp8 D gelu_bias", CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F, CUDA_R_8F_E4M3,
       CUBLASLT_EPILOGUE_GELU_BIAS},
      {"scalar fp8 D gelu_bias", CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F, CUDA_R_8F_E4M3,
       CUBLASLT_EPILOGUE_GELU_BIAS},
      {"scalar bf16 D gelu_bias", CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F, CUDA_R_16BF,
       CUBLASLT_EPILOGUE_GELU_BIAS},
      {"vec128/blk128 bf16 D bias", -1, CUDA_R_16BF, CUBLASLT_EPILOGUE_BIAS},
      {"vec128/blk128 fp8 D gelu_bias", -1, CUDA_R_8F_E4M3, CUBLASLT_EPILOGUE_GELU_BIAS},
  };
  for (const Case& c : cases) {
    cublasLtMatmulDesc_t desc;
    cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    cublasOperation_t t = CUBLAS_OP_T, nn = CUBLAS_OP_N;
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t));
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &nn, sizeof(nn));
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &c.epi, sizeof(c.epi));
    if (c.epi != CUBLASLT_EPILOGUE_DEFAULT) {
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias));
      cudaDataType_t bt = CUDA_R_16BF;
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof(bt));
    }
    int32_t ma = c.mode, mb = c.mode;
    if (c.mode < 0) {
      ma = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
      mb = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    }
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &ma, sizeof(ma));
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mb, sizeof(mb));
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof(sa));
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof(sb));
    if (c.d == CUDA_R_8F_E4M3)
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, &sd, sizeof(sd));
    int8_t fast = 1;
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof(fast));
    cublasLtMatrixLayout_t a, b, cc, d;
    cublasLtMatrixLayoutCreate(&a, CUDA_R_8F_E4M3, k, n, k);
    cublasLtMatrixLayoutCreate(&b, CUDA_R_8F_E4M3, k, m, k);
    cublasLtMatrixLayoutCreate(&cc, c.d == CUDA_R_8F_E4M3 ? CUDA_R_16BF : c.d, n, m, n);
    cublasLtMatrixLayoutCreate(&d, c.d, n, m, n);
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulPreferenceCreate(&pref);
    uint64_t ws = 32 << 20;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                         sizeof(ws));
    cublasLtMatmulHeuristicResult_t r;
    int found = 0;
    cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(h, desc, a, b, cc, d, pref, 1, &r, &found);
    printf("%-32s status %d found %d\n", c.name, (int)s, found);
  }
  return 0;
}
