// Diagnostic: bench/launch_threads_floor.c with the driver reached the way cuda-safe reaches it,
// one difference at a time, to find why a Rust process launches from several threads a few
// per cent slower than the floor while, in one process, the crate's launch matches the raw
// driver call (cuda-safe/benches/launch_threads.rs `crate raw`).
//
// This program is not linked to libcuda: it loads it with dlopen after main starts and calls
// every entry point through a pointer from dlsym, as cuda-safe's loader (libloading) does. Run
// it under LD_PRELOAD=libcuda.so.1 to have the driver loaded at startup instead (dlopen then
// returns the library already loaded), which is how the floor, linked to it, gets it.
//
// usage: launch_threads_variants [FLAGS]
//   FLAGS (letters, "-" for none):
//     g  dlopen with RTLD_NOW | RTLD_GLOBAL instead of RTLD_LAZY | RTLD_LOCAL (libloading's)
//     p  streams made with cuStreamCreateWithPriority(flags, 0), as cuda-safe's were
//     u  each worker clears its current context after creating its stream, as cuda-safe's
//        threads never make one current
// Prints the floor's FIG names (launch_throughput_<T>_threads, medians of 5).
// build: gcc -O2 launch_threads_variants.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64
//        -lnvrtc -ldl -lpthread
#include <cuda.h>
#include <dlfcn.h>
#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { LAUNCHES = 20000, WARMUP = 1000, REPEATS = 5 };

// The driver's entry points this program calls, looked up with dlsym.
static CUresult (*p_cuInit)(unsigned);
static CUresult (*p_cuGetErrorName)(CUresult, const char**);
static CUresult (*p_cuDeviceGet)(CUdevice*, int);
static CUresult (*p_cuDeviceGetAttribute)(int*, CUdevice_attribute, CUdevice);
static CUresult (*p_cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
static CUresult (*p_cuCtxSetCurrent)(CUcontext);
static CUresult (*p_cuStreamCreate)(CUstream*, unsigned);
static CUresult (*p_cuStreamCreateWithPriority)(CUstream*, unsigned, int);
static CUresult (*p_cuStreamSynchronize)(CUstream);
static CUresult (*p_cuStreamDestroy)(CUstream);
static CUresult (*p_cuLibraryLoadData)(CUlibrary*, const void*, CUjit_option*, void**, unsigned,
                                       CUlibraryOption*, void**, unsigned);
static CUresult (*p_cuLibraryGetKernel)(CUkernel*, CUlibrary, const char*);
static CUresult (*p_cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                    unsigned, unsigned, CUstream, void**, void**);

#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char* s_ = "?"; \
  p_cuGetErrorName(r_, &s_); fprintf(stderr, "%s:%d %s -> %s\n", __FILE__, __LINE__, #x, s_); exit(1);} } while (0)
#define NK(x) do { nvrtcResult r_ = (x); if (r_ != NVRTC_SUCCESS) { \
  fprintf(stderr, "%s:%d %s -> %s\n", __FILE__, __LINE__, #x, nvrtcGetErrorString(r_)); exit(1);} } while (0)

static CUcontext primary;
static CUfunction empty;
static pthread_barrier_t ready;
static double ends[8];
static int with_priority, unbound;

static double now_us(void) {
  struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
static int cmpd(const void* a, const void* b) { double x = *(const double*)a, y = *(const double*)b; return x < y ? -1 : x > y; }

// Looks `name` up in `lib`, or exits saying which is missing.
static void* need(void* lib, const char* name) {
  void* f = dlsym(lib, name);
  if (!f) { fprintf(stderr, "libcuda has no %s\n", name); exit(2); }
  return f;
}

static void load_driver(int global) {
  void* lib = dlopen("libcuda.so.1", global ? RTLD_NOW | RTLD_GLOBAL : RTLD_LAZY | RTLD_LOCAL);
  if (!lib) { fprintf(stderr, "dlopen: %s\n", dlerror()); exit(2); }
  *(void**)&p_cuInit = need(lib, "cuInit");
  *(void**)&p_cuGetErrorName = need(lib, "cuGetErrorName");
  *(void**)&p_cuDeviceGet = need(lib, "cuDeviceGet");
  *(void**)&p_cuDeviceGetAttribute = need(lib, "cuDeviceGetAttribute");
  *(void**)&p_cuDevicePrimaryCtxRetain = need(lib, "cuDevicePrimaryCtxRetain");
  *(void**)&p_cuCtxSetCurrent = need(lib, "cuCtxSetCurrent");
  *(void**)&p_cuStreamCreate = need(lib, "cuStreamCreate");
  *(void**)&p_cuStreamCreateWithPriority = need(lib, "cuStreamCreateWithPriority");
  *(void**)&p_cuStreamSynchronize = need(lib, "cuStreamSynchronize");
  *(void**)&p_cuStreamDestroy = need(lib, "cuStreamDestroy_v2");
  *(void**)&p_cuLibraryLoadData = need(lib, "cuLibraryLoadData");
  *(void**)&p_cuLibraryGetKernel = need(lib, "cuLibraryGetKernel");
  *(void**)&p_cuLaunchKernel = need(lib, "cuLaunchKernel");
}

static void* worker(void* arg) {
  long index = (long)arg;
  CK(p_cuCtxSetCurrent(primary));
  CUstream s;
  if (with_priority) CK(p_cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, 0));
  else CK(p_cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  if (unbound) CK(p_cuCtxSetCurrent(NULL));
  for (int i = 0; i < WARMUP; i++) CK(p_cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
  CK(p_cuStreamSynchronize(s));
  pthread_barrier_wait(&ready);  // everyone warmed up
  pthread_barrier_wait(&ready);  // the clock starts
  for (int i = 0; i < LAUNCHES; i++) CK(p_cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
  CK(p_cuStreamSynchronize(s));
  ends[index] = now_us();
  CK(p_cuStreamDestroy(s));
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

int main(int argc, char** argv) {
  const char* flags = argc > 1 ? argv[1] : "-";
  if (strspn(flags, "-gpu") != strlen(flags)) { fprintf(stderr, "unknown flags %s: g, p, u or -\n", flags); return 2; }
  with_priority = strchr(flags, 'p') != NULL;
  unbound = strchr(flags, 'u') != NULL;
  load_driver(strchr(flags, 'g') != NULL);
  printf("flags %s, libcuda %s at startup\n", flags, getenv("LD_PRELOAD") ? "preloaded" : "not loaded");
  CK(p_cuInit(0));
  CUdevice dev; CK(p_cuDeviceGet(&dev, 0));
  CK(p_cuDevicePrimaryCtxRetain(&primary, dev)); CK(p_cuCtxSetCurrent(primary));
  int maj, min; char arch[40];
  CK(p_cuDeviceGetAttribute(&maj, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  CK(p_cuDeviceGetAttribute(&min, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
  snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d%d", maj, min);
  const char* src = "extern \"C\" __global__ void empty() {}\n";
  nvrtcProgram p; NK(nvrtcCreateProgram(&p, src, "empty.cu", 0, NULL, NULL));
  const char* opts[] = {arch}; NK(nvrtcCompileProgram(p, 1, opts));
  size_t n; NK(nvrtcGetCUBINSize(p, &n)); char* cubin = malloc(n); NK(nvrtcGetCUBIN(p, cubin));
  CUlibrary lib; CK(p_cuLibraryLoadData(&lib, cubin, NULL, NULL, 0, NULL, NULL, 0));
  CUkernel k; CK(p_cuLibraryGetKernel(&k, lib, "empty")); empty = (CUfunction)k;
  for (int threads = 1; threads <= 8; threads *= 2) {
    double rates[REPEATS];
    for (int r = 0; r < REPEATS; r++) rates[r] = throughput(threads);
    qsort(rates, REPEATS, sizeof(double), cmpd);
    printf("FIG launch_throughput_%d_threads %.1f 1/s\n", threads, rates[REPEATS / 2]);
  }
  printf("DONE\n");
  return 0;
}
