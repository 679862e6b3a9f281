// The C floor of the runtime-core benchmark (cuda-safe/benches/runtime.rs): the same loops,
// straight on the CUDA driver API. Prints `FIG name value unit` lines with the same names.
// Build: gcc -O2 bench/floors/runtime_floor.c -I/usr/local/cuda/include -lcuda -o runtime_floor
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char* s_ = "?"; \
  cuGetErrorName(r_, &s_); fprintf(stderr, "%s:%d %s -> %s\n", __FILE__, __LINE__, #x, s_); \
  exit(1); } } while (0)

static double now_us(void) {
  struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
static int cmpd(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b; return x < y ? -1 : x > y;
}
static double median(double* v, int n) { qsort(v, n, sizeof(double), cmpd); return v[n / 2]; }
static void fig(const char* n, double v, const char* u) { printf("FIG %s %.4g %s\n", n, v, u); fflush(stdout); }

int main(void) {
  CUdevice dev; CUcontext ctx; CUstream s; CUmemoryPool pool;
  CK(cuInit(0)); CK(cuDeviceGet(&dev, 0));
  CK(cuDevicePrimaryCtxRetain(&ctx, dev)); CK(cuCtxSetCurrent(ctx));
  CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CK(cuDeviceGetDefaultMemPool(&pool, dev));
  cuuint64_t keep = ~0ULL;
  CK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep));
  static double t[20000];

  for (int i = 0; i < 1000; i++) { CUdeviceptr p; CK(cuMemAllocFromPoolAsync(&p, 1 << 20, pool, s)); CK(cuMemFreeAsync(p, s)); }
  for (int i = 0; i < 5000; i++) {
    double a = now_us();
    CUdeviceptr p; CK(cuMemAllocFromPoolAsync(&p, 1 << 20, pool, s)); CK(cuMemFreeAsync(p, s));
    t[i] = now_us() - a;
  }
  fig("pool_alloc_free_1MiB", median(t, 5000), "us");
  CK(cuStreamSynchronize(s));

  CUevent e; CK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
  for (int i = 0; i < 1000; i++) CK(cuEventRecord(e, s));
  CK(cuStreamSynchronize(s));
  double a = now_us();
  for (int i = 0; i < 20000; i++) CK(cuEventRecord(e, s));
  fig("event_record", (now_us() - a) / 20000, "us");
  CK(cuStreamSynchronize(s));

  CUdeviceptr word; CK(cuMemAlloc(&word, 4));
  for (int i = 0; i < 5000; i++) {
    double b = now_us();
    CK(cuMemsetD32Async(word, 0, 1, s)); CK(cuStreamSynchronize(s));
    t[i] = now_us() - b;
  }
  fig("memset_4B_plus_sync", median(t, 5000), "us");

  size_t nb = 400000000;
  void* pin; CK(cuMemHostAlloc(&pin, nb, CU_MEMHOSTALLOC_PORTABLE)); memset(pin, 0x5a, nb);
  CUdeviceptr d; CK(cuMemAlloc(&d, nb));
  CUevent e0, e1; CK(cuEventCreate(&e0, 0)); CK(cuEventCreate(&e1, 0));
  double gbs[7];
  for (int i = 0; i < 7; i++) {
    CK(cuEventRecord(e0, s)); CK(cuMemcpyAsync(d, (CUdeviceptr)pin, nb, s));
    CK(cuEventRecord(e1, s)); CK(cuEventSynchronize(e1));
    float ms; CK(cuEventElapsedTime(&ms, e0, e1)); gbs[i] = nb / (ms * 1e6);
  }
  fig("h2d_pinned_400MB", median(gbs, 7), "GB/s");
  printf("DONE\n");
  return 0;
}
