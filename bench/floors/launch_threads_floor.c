// The floor for launch throughput from several threads: T threads (1, 2, 4, 8), each with its
// own non-blocking stream in the primary context, each launching an empty kernel N times, then
// synchronizing its stream; throughput is all launches over the wall time from the common
// start to the last thread's end. Compare with cuda-safe's benches/launch_threads.rs.
// Build where the CUDA toolkit is:
//   gcc -O2 launch_threads_floor.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64
//       -lcuda -lnvrtc -lpthread -o launch_threads_floor
// Prints `FIG launch_throughput_<T>_threads <launches per second> 1/s` lines (medians of 5).
#include <cuda.h>
#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char* s_; cuGetErrorName(r_, &s_); \
  fprintf(stderr, "%s:%d %s -> %s\n", __FILE__, __LINE__, #x, s_); exit(1);} } while (0)
#define NK(x) do { nvrtcResult r_ = (x); if (r_ != NVRTC_SUCCESS) { \
  fprintf(stderr, "%s:%d %s -> %s\n", __FILE__, __LINE__, #x, nvrtcGetErrorString(r_)); exit(1);} } while (0)

enum { LAUNCHES = 20000, WARMUP = 1000, REPEATS = 5 };

static CUcontext primary;
static CUfunction empty;
static pthread_barrier_t ready;
static double ends[8];

static double now_us(void) {
  struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
static int cmpd(const void* a, const void* b) { double x = *(double*)a, y = *(double*)b; return x < y ? -1 : x > y; }

static void* worker(void* arg) {
  long index = (long)arg;
  CK(cuCtxSetCurrent(primary));
  CUstream s; CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  for (int i = 0; i < WARMUP; i++) CK(cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
  CK(cuStreamSynchronize(s));
  pthread_barrier_wait(&ready);  // everyone warmed up
  pthread_barrier_wait(&ready);  // the clock starts
  for (int i = 0; i < LAUNCHES; i++) CK(cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
  CK(cuStreamSynchronize(s));
  ends[index] = now_us();
  CK(cuStreamDestroy(s));
  return NULL;
}

// Launches per second with `threads` threads.
static double throughput(int threads) {
  pthread_t t[8];
  pthread_barrier_init(&ready, NULL, (unsigned)threads + 1);
  for (long i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, (void*)i);
  pthread_barrier_wait(&ready);
  double start = now_us();
  pthread_barrier_wait(&ready);
  double end = start;
  for (int i = 0; i < threads; i++) { pthread_join(t[i], NULL); if (ends[i] > end) end = ends[i]; }
  pthread_barrier_destroy(&ready);
  return (double)threads * LAUNCHES / ((end - start) / 1e6);
}

int main(void) {
  CK(cuInit(0));
  CUdevice dev; CK(cuDeviceGet(&dev, 0));
  CK(cuDevicePrimaryCtxRetain(&primary, dev)); CK(cuCtxSetCurrent(primary));
  int maj, min; char arch[40];
  CK(cuDeviceGetAttribute(&maj, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  CK(cuDeviceGetAttribute(&min, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
  snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d%d", maj, min);
  const char* src = "extern \"C\" __global__ void empty() {}\n";
  nvrtcProgram p; NK(nvrtcCreateProgram(&p, src, "empty.cu", 0, NULL, NULL));
  const char* opts[] = {arch}; NK(nvrtcCompileProgram(p, 1, opts));
  size_t n; NK(nvrtcGetCUBINSize(p, &n)); char* cubin = malloc(n); NK(nvrtcGetCUBIN(p, cubin));
  CUlibrary lib; CK(cuLibraryLoadData(&lib, cubin, NULL, NULL, 0, NULL, NULL, 0));
  CUkernel k; CK(cuLibraryGetKernel(&k, lib, "empty")); empty = (CUfunction)k;
  for (int threads = 1; threads <= 8; threads *= 2) {
    double rates[REPEATS];
    for (int r = 0; r < REPEATS; r++) rates[r] = throughput(threads);
    qsort(rates, REPEATS, sizeof(double), cmpd);
    printf("FIG launch_throughput_%d_threads %.1f 1/s\n", threads, rates[REPEATS / 2]);
  }
  printf("DONE\n");
  return 0;
}
