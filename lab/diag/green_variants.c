// Diagnostic: the busy green-partitioned probe of driver_floor.c, with one difference at a time
// switched on, to find what makes a program's busy probe slower than the floor's.
//
// usage: green_variants [FLAGS] [BUSY_SAMPLES]
//   FLAGS (letters, "-" for none):
//     c  convert each green context to a CUcontext (cuCtxFromGreenCtx), as cuda-safe does
//     p  probe buffers from the device's default pool (cuMemAllocFromPoolAsync) instead of cuMemAlloc
//     s  the probe's launch and sync with the probe's green context current (cuCtxSetCurrent)
//     k  the saxpy kernel's parameters read (cuKernelGetParamInfo) before its first launch,
//        with the primary context current, as cuda-safe's first launch does
//     m  the default pool's release threshold set to the maximum (with p), as cuda-safe does
//     r  the primary context's two streams made with cuStreamCreateWithPriority(flags, 0)
//     e  before the green probes, the probe's green stream waits once for an event recorded
//        on the primary probe stream, as cuda-safe's Buffer::set_stream orders the buffers
//     a  all of c, p, k, m, r and e: the setup calls cuda-safe's green_isolation makes
//     g  also time each busy probe on the GPU (events around the launch) and read the SM clock
//        (NVML) after it, printing one DETAIL line per sample: wall us, GPU us, SM MHz
//     A  in-process A/B instead: two pairs of green contexts on the same SM groups, one pair
//        converted (cuCtxFromGreenCtx), probes alternating between the pairs (ABBA); prints
//        the median of each
//     B  in-process A/B instead: one pair, probes alternating between cuMemAlloc buffers and
//        pool buffers (ABBA); prints the median of each
//   BUSY_SAMPLES  busy probes per process (default 8, as the floor; per side in A/B)
// Prints the floor's FIG names and every busy sample.
// build: gcc -O2 green_variants.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64/stubs -lcuda -lnvrtc -lm -l:libnvidia-ml.so.1
#include <cuda.h>
#include <nvrtc.h>
#include <nvml.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char* s_ = ""; \
  cuGetErrorName(r_, &s_); fprintf(stderr, "%s:%d %s -> %s\n", __FILE__, __LINE__, #x, s_); exit(1);} } while (0)

static double now_us(void) {
  struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
static int cmpd(const void* a, const void* b) { double x = *(const double*)a, y = *(const double*)b; return x < y ? -1 : x > y; }
static double median(double* v, int n) { qsort(v, n, sizeof(double), cmpd); return v[n / 2]; }

static const char* SRC =
  "extern \"C\" __global__ void saxpy(float a, const float* __restrict__ x,\n"
  "    const float* __restrict__ y, float* out, size_t n) {\n"
  "  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;\n"
  "  if (i < n) out[i] = a * x[i] + y[i];\n"
  "}\n"
  "extern \"C\" __global__ void spin(unsigned long long ns) {\n"
  "  unsigned long long t0; asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t0));\n"
  "  unsigned long long t = t0; while (t - t0 < ns) asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t));\n"
  "}\n";

static CUfunction f_saxpy, f_spin;

static double probe_once(CUstream s, CUdeviceptr x, CUdeviceptr y, CUdeviceptr o) {
  float a = 2.f; size_t n = 1 << 20;
  void* args[] = {&a, &x, &y, &o, &n};
  double t0 = now_us();
  CK(cuLaunchKernel(f_saxpy, (unsigned)((n + 255) / 256), 1, 1, 256, 1, 1, 0, s, args, NULL));
  CK(cuStreamSynchronize(s));
  return now_us() - t0;
}

int main(int argc, char** argv) {
  const char* flags = argc > 1 ? argv[1] : "-";
  int nbusy = argc > 2 ? atoi(argv[2]) : 8;
  if (nbusy < 1 || nbusy > 4096) nbusy = 8;
  int detail = strchr(flags, 'g') != NULL;
  int as_crate = strchr(flags, 'a') != NULL;
  int convert = as_crate || strchr(flags, 'c'), pool = as_crate || strchr(flags, 'p'), current = strchr(flags, 's') != NULL;
  int params = as_crate || strchr(flags, 'k'), threshold = as_crate || strchr(flags, 'm');
  int priority = as_crate || strchr(flags, 'r'), ordered = as_crate || strchr(flags, 'e');
  CUdevice dev; CUcontext primary;
  CK(cuInit(0)); CK(cuDeviceGet(&dev, 0));
  CK(cuDevicePrimaryCtxRetain(&primary, dev)); CK(cuCtxSetCurrent(primary));
  int maj, min, sms;
  CK(cuDeviceGetAttribute(&maj, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  CK(cuDeviceGetAttribute(&min, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
  CK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  char opt[64]; snprintf(opt, sizeof opt, "--gpu-architecture=sm_%d%d", maj, min);
  const char* opts[] = {opt};
  nvrtcProgram p; size_t size;
  if (nvrtcCreateProgram(&p, SRC, "k.cu", 0, NULL, NULL) || nvrtcCompileProgram(p, 1, opts)) { fprintf(stderr, "nvrtc failed\n"); return 1; }
  nvrtcGetCUBINSize(p, &size); char* cubin = malloc(size); nvrtcGetCUBIN(p, cubin); nvrtcDestroyProgram(&p);
  CUlibrary lib; CK(cuLibraryLoadData(&lib, cubin, NULL, NULL, 0, NULL, NULL, 0));
  CUkernel k;
  CK(cuLibraryGetKernel(&k, lib, "saxpy")); f_saxpy = (CUfunction)k;
  if (params) {
    for (size_t i = 0; i < 5; i++) { size_t offset, bytes; CK(cuKernelGetParamInfo(k, i, &offset, &bytes)); }
  }
  CK(cuLibraryGetKernel(&k, lib, "spin")); f_spin = (CUfunction)k;

  CUstream sa, sb;
  if (priority) {
    CK(cuStreamCreateWithPriority(&sa, CU_STREAM_NON_BLOCKING, 0)); CK(cuStreamCreateWithPriority(&sb, CU_STREAM_NON_BLOCKING, 0));
  } else {
    CK(cuStreamCreate(&sa, CU_STREAM_NON_BLOCKING)); CK(cuStreamCreate(&sb, CU_STREAM_NON_BLOCKING));
  }
  unsigned long long spin_ns = 2000000ULL; void* sargs[] = {&spin_ns};
  unsigned spin_blocks = sms * 2 * 25;
  CUdeviceptr px, py, po;
  if (pool) {
    CUmemoryPool mp; CK(cuDeviceGetDefaultMemPool(&mp, dev));
    if (threshold) { cuuint64_t most = ~0ULL; CK(cuMemPoolSetAttribute(mp, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &most)); }
    CK(cuMemAllocFromPoolAsync(&px, 4 << 20, mp, sb)); CK(cuMemAllocFromPoolAsync(&py, 4 << 20, mp, sb));
    CK(cuMemAllocFromPoolAsync(&po, 4 << 20, mp, sb)); CK(cuStreamSynchronize(sb));
  } else {
    CK(cuMemAlloc(&px, 4 << 20)); CK(cuMemAlloc(&py, 4 << 20)); CK(cuMemAlloc(&po, 4 << 20));
  }
  double idle[32], *busy = calloc(nbusy, sizeof(double)), *sorted = calloc(nbusy, sizeof(double));
  for (int i = 0; i < 32; i++) idle[i] = probe_once(sb, px, py, po);
  printf("FIG probe_1M_idle_gpu %.4g us\n", median(idle, 32));
  for (int r = 0; r < 8; r++) {
    CK(cuLaunchKernel(f_spin, spin_blocks, 1, 1, 1024, 1, 1, 0, sa, sargs, NULL));
    double w = now_us(); while (now_us() - w < 3000) {}
    busy[r] = probe_once(sb, px, py, po);
    CK(cuStreamSynchronize(sa));
  }
  printf("FIG probe_1M_busy_shared_gpu %.4g us\n", median(busy, 8));

  CUdevResource all; memset(&all, 0, sizeof all);
  CK(cuDeviceGetDevResource(dev, &all, CU_DEV_RESOURCE_TYPE_SM));
  CUdevResource groups[2], rest; unsigned ng = 2; memset(groups, 0, sizeof groups); memset(&rest, 0, sizeof rest);
  CK(cuDevSmResourceSplitByCount(groups, &ng, &all, &rest, 0, (all.sm.smCount / 2) & ~7u));
  CUgreenCtx g[2]; CUstream gs[2]; CUcontext gc[2] = {NULL, NULL};
  for (unsigned i = 0; i < 2; i++) {
    CUdevResourceDesc desc; CK(cuDevResourceGenerateDesc(&desc, &groups[i], 1));
    CK(cuGreenCtxCreate(&g[i], desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
    if (convert || current) CK(cuCtxFromGreenCtx(&gc[i], g[i]));
    CK(cuGreenCtxStreamCreate(&gs[i], g[i], CU_STREAM_NON_BLOCKING, 0));
  }
  if (ordered) {
    CUevent marker; CK(cuEventCreate(&marker, CU_EVENT_DISABLE_TIMING));
    CK(cuEventRecord(marker, sb)); CK(cuStreamWaitEvent(gs[1], marker, 0));
  }
  if (current) CK(cuCtxSetCurrent(gc[1]));
  nvmlDevice_t nd = NULL; CUevent e0 = NULL, e1 = NULL;
  if (detail) {
    if (nvmlInit_v2() != NVML_SUCCESS || nvmlDeviceGetHandleByIndex_v2(0, &nd) != NVML_SUCCESS) { fprintf(stderr, "nvml failed\n"); return 1; }
    CK(cuEventCreate(&e0, CU_EVENT_DEFAULT)); CK(cuEventCreate(&e1, CU_EVENT_DEFAULT));
  }
  for (int i = 0; i < 32; i++) idle[i] = probe_once(gs[1], px, py, po);
  printf("FIG probe_1M_idle_green_half %.4g us\n", median(idle, 32));
  for (int r = 0; r < nbusy; r++) {
    CK(cuLaunchKernel(f_spin, spin_blocks / 2, 1, 1, 1024, 1, 1, 0, gs[0], sargs, NULL));
    double w = now_us(); while (now_us() - w < 3000) {}
    if (detail) CK(cuEventRecord(e0, gs[1]));
    busy[r] = probe_once(gs[1], px, py, po);
    if (detail) {
      CK(cuEventRecord(e1, gs[1])); CK(cuEventSynchronize(e1));
      float ms = 0; CK(cuEventElapsedTime(&ms, e0, e1));
      unsigned mhz = 0; nvmlDeviceGetClockInfo(nd, NVML_CLOCK_SM, &mhz);
      printf("DETAIL %.1f %.1f %u\n", busy[r], ms * 1e3, mhz);
    }
    CK(cuStreamSynchronize(gs[0]));
  }
  if (strchr(flags, 'A') || strchr(flags, 'B')) {
    int convert_ab = strchr(flags, 'A') != NULL;
    CUgreenCtx h[2]; CUstream hs[2]; CUcontext hc;
    if (convert_ab) {
      for (unsigned i = 0; i < 2; i++) {
        CUdevResourceDesc desc; CK(cuDevResourceGenerateDesc(&desc, &groups[i], 1));
        CK(cuGreenCtxCreate(&h[i], desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
        CK(cuCtxFromGreenCtx(&hc, h[i]));
        CK(cuGreenCtxStreamCreate(&hs[i], h[i], CU_STREAM_NON_BLOCKING, 0));
      }
      for (int i = 0; i < 32; i++) probe_once(hs[1], px, py, po);
    }
    CUdeviceptr qx = px, qy = py, qo = po;
    if (!convert_ab) {
      CUmemoryPool mp; CK(cuDeviceGetDefaultMemPool(&mp, dev));
      CK(cuMemAllocFromPoolAsync(&qx, 4 << 20, mp, gs[1])); CK(cuMemAllocFromPoolAsync(&qy, 4 << 20, mp, gs[1]));
      CK(cuMemAllocFromPoolAsync(&qo, 4 << 20, mp, gs[1])); CK(cuStreamSynchronize(gs[1]));
      for (int i = 0; i < 32; i++) probe_once(gs[1], qx, qy, qo);
    }
    double* side[2] = {calloc(nbusy, sizeof(double)), calloc(nbusy, sizeof(double))};
    for (int r = 0; r < 2 * nbusy; r++) {
      int b = (r % 4 == 1 || r % 4 == 2);
      CUstream fill = convert_ab && b ? hs[0] : gs[0], probe = convert_ab && b ? hs[1] : gs[1];
      CK(cuLaunchKernel(f_spin, spin_blocks / 2, 1, 1, 1024, 1, 1, 0, fill, sargs, NULL));
      double w = now_us(); while (now_us() - w < 3000) {}
      side[b][r / 2] = b && !convert_ab ? probe_once(probe, qx, qy, qo) : probe_once(probe, px, py, po);
      CK(cuStreamSynchronize(fill));
    }
    printf("AB %s first %.2f second %.2f us\n", convert_ab ? "plain/converted" : "cuMemAlloc/pool",
           median(side[0], nbusy), median(side[1], nbusy));
    return 0;
  }
  printf("SAMPLES busy_green");
  for (int r = 0; r < nbusy; r++) printf(" %.1f", busy[r]);
  printf("\n");
  memcpy(sorted, busy, nbusy * sizeof(double));
  printf("FIG probe_1M_busy_green_partitioned %.4g us\n", median(sorted, nbusy));
  return 0;
}
