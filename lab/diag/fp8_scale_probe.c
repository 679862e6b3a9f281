// Which FP8 cublasLtMatmul setups the H200's cuBLASLt accepts: m=n=256, k=512, e4m3 TN, D bf16,
// without scales, and with A/B scale pointers whose B scale sits 4 to 256 bytes after the A
// scale (the A scale at the start of an allocation). Prints one line per case: the status.
//   gcc -O2 fp8_scale_probe.c -I/usr/local/cuda/include -I/usr/local/cuda/include/cccl \
//       -L/usr/local/cuda/lib64 -lcuda -lcublasLt -o fp8_scale_probe
#include <cuda.h>
#include <cublasLt.h>
#include <stdio.h>
#include <string.h>

#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { printf("CUDA error %d at %s\n", r_, #x); return 1; } } while (0)

static cublasLtHandle_t lt;
static CUdeviceptr A, B, D, S, W;
static const size_t WS = 32u << 20;

static const char* run(int scales, int before, size_t b_offset, int m, int n, int k) {
  cublasLtMatmulDesc_t op; cublasLtMatrixLayout_t la, lb, ld; cublasLtMatmulPreference_t pref;
  cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
  cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
  void* sa = (void*)S; void* sb = (void*)(S + b_offset);
  if (scales && before) {
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof sa);
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof sb);
  }
  cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, k, m, k);
  cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, k, n, k);
  cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, m, n, m);
  cublasLtMatmulPreferenceCreate(&pref);
  size_t ws = WS;
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  cublasLtMatmulHeuristicResult_t res; int nres = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, ld, ld, pref, 1, &res, &nres);
  if (st != CUBLAS_STATUS_SUCCESS || nres < 1) return nres < 1 && st == 0 ? "heuristic: none" : cublasGetStatusString(st);
  if (scales && !before) {
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof sa);
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof sb);
  }
  float one = 1.f, zero = 0.f;
  st = cublasLtMatmul(lt, op, &one, (void*)A, la, (void*)B, lb, &zero, (void*)D, ld, (void*)D, ld, &res.algo, (void*)W, WS, 0);
  cuCtxSynchronize();
  return cublasGetStatusString(st);
}

int main(void) {
  CUdevice dev; CUcontext ctx;
  CK(cuInit(0)); CK(cuDeviceGet(&dev, 0)); CK(cuDevicePrimaryCtxRetain(&ctx, dev)); CK(cuCtxSetCurrent(ctx));
  if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) { printf("no cublasLt\n"); return 1; }
  printf("cublasLt version %zu\n", cublasLtGetVersion());
  CK(cuMemAlloc(&A, 8192 * 8192)); CK(cuMemAlloc(&B, 8192 * 8192)); CK(cuMemAlloc(&D, 8192 * 8192 * 2));
  CK(cuMemAlloc(&S, 1024)); CK(cuMemAlloc(&W, WS));
  CK(cuMemsetD8(A, 0x38, 8192 * 8192)); CK(cuMemsetD8(B, 0x38, 8192 * 8192));
  float quarter[256]; for (int i = 0; i < 256; i++) quarter[i] = 0.25f;
  CK(cuMemcpyHtoD(S, quarter, sizeof quarter));
  size_t offsets[] = {4, 8, 16, 32, 64, 128, 256};
  printf("256x256x512 no scales: %s\n", run(0, 0, 0, 256, 256, 512));
  for (int i = 0; i < 7; i++)
    printf("256x256x512 B scale %3zu bytes after A's: %s\n", offsets[i], run(1, 0, offsets[i], 256, 256, 512));
  return 0;
}
