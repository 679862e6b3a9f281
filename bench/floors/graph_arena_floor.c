// The floor for graph arenas, captures into existing graphs and whole-graph updates: the same
// work as cuda-safe/benches/graph_arena.rs done straight on the driver API.
// Build where the CUDA toolkit is:
//   gcc -O2 graph_arena_floor.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64
//       -lcuda -lnvrtc -lpthread -o graph_arena_floor
// Measures, on GPU 0:
//   - replay + sync of a chain of 100 tiny kernels (each adds 1 to one int) whose int lives in
//     one virtual memory reservation (the arena's memory: reserve, create, map, set access);
//   - a pass (a 4 MiB temporary filled, 98 adds, the temporary's first value added) captured
//     twice: its temporary from the reservation (no memory node), and from cuMemAllocAsync
//     (an allocation and a free node): replay + sync of each, and the memory each holds (the
//     bytes mapped; the device's graph memory reserved);
//   - the chain captured into an existing graph after a memset node
//     (cuStreamBeginCaptureToGraph), and that graph's instantiation;
//   - a whole-graph update of the chain's executable from a graph captured afresh
//     (cuGraphExecUpdate), alone and with the capture;
// and checks the counters. Prints `FIG name value unit` lines.
#include <cuda.h>
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char* s_; cuGetErrorName(r_, &s_); \
  fprintf(stderr, "%s:%d %s -> %s\n", __FILE__, __LINE__, #x, s_); exit(1);} } while (0)
#define NK(x) do { nvrtcResult r_ = (x); if (r_ != NVRTC_SUCCESS) { \
  fprintf(stderr, "%s:%d %s -> %s\n", __FILE__, __LINE__, #x, nvrtcGetErrorString(r_)); exit(1);} } while (0)

static double now_us(void) {
  struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
static int cmpd(const void* a, const void* b) { double x = *(double*)a, y = *(double*)b; return x < y ? -1 : x > y; }
static double median(double* v, int n) { qsort(v, n, sizeof(double), cmpd); return v[n / 2]; }
static void fig(const char* n, double v, const char* u) { printf("FIG %s %.4g %s\n", n, v, u); fflush(stdout); }

static const char* SRC =
  "extern \"C\" __global__ void add(int* p, int v) { atomicAdd(p, v); }\n"
  "extern \"C\" __global__ void seed(int* t, int n, int v) {\n"
  "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) t[i] = v; }\n"
  "extern \"C\" __global__ void take(int* p, const int* t) { atomicAdd(p, t[0]); }\n";
enum { CHAIN = 100, REPS = 200, BUILDS = 50 };
enum { TEMP_INTS = 1 << 20 }; /* the pass's temporary: 4 MiB */
#define RESERVE (64ull << 20)

static CUfunction add, seed, take;
static CUstream s;

/* The chain: CHAIN adds of 1 on `counter`. */
static void chain(CUdeviceptr counter) {
  int one = 1; void* args[] = {&counter, &one};
  for (int i = 0; i < CHAIN; i++) CK(cuLaunchKernel(add, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
}

/* The pass on `temp`: seed it with 2, CHAIN - 2 adds of 1, then add its first value. */
static void pass(CUdeviceptr counter, CUdeviceptr temp) {
  int n = TEMP_INTS, two = 2, one = 1;
  void* seeded[] = {&temp, &n, &two};
  CK(cuLaunchKernel(seed, TEMP_INTS / 256, 1, 1, 256, 1, 1, 0, s, seeded, NULL));
  void* args[] = {&counter, &one};
  for (int i = 0; i < CHAIN - 2; i++) CK(cuLaunchKernel(add, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
  void* took[] = {&counter, &temp};
  CK(cuLaunchKernel(take, 1, 1, 1, 1, 1, 1, 0, s, took, NULL));
}

/* Median replay + sync of `exec` over REPS, after 10 warm-up replays. */
static double replays(CUgraphExec exec) {
  static double t[REPS];
  for (int r = 0; r < 10; r++) CK(cuGraphLaunch(exec, s));
  CK(cuStreamSynchronize(s));
  for (int r = 0; r < REPS; r++) {
    double a = now_us();
    CK(cuGraphLaunch(exec, s)); CK(cuStreamSynchronize(s));
    t[r] = now_us() - a;
  }
  return median(t, REPS);
}

static CUgraph capture_chain(CUdeviceptr counter) {
  CUgraph g;
  CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  chain(counter);
  CK(cuStreamEndCapture(s, &g));
  return g;
}

int main(void) {
  CK(cuInit(0));
  CUdevice dev; CK(cuDeviceGet(&dev, 0));
  CUcontext ctx; CK(cuDevicePrimaryCtxRetain(&ctx, dev)); CK(cuCtxSetCurrent(ctx));
  int maj, min; char arch[32];
  CK(cuDeviceGetAttribute(&maj, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  CK(cuDeviceGetAttribute(&min, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
  snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d%d", maj, min);
  nvrtcProgram p; NK(nvrtcCreateProgram(&p, SRC, "a.cu", 0, NULL, NULL));
  const char* opts[] = {arch}; NK(nvrtcCompileProgram(p, 1, opts));
  size_t n; NK(nvrtcGetCUBINSize(p, &n)); char* cubin = malloc(n); NK(nvrtcGetCUBIN(p, cubin));
  CUlibrary lib; CK(cuLibraryLoadData(&lib, cubin, NULL, NULL, 0, NULL, NULL, 0));
  CUkernel k;
  CK(cuLibraryGetKernel(&k, lib, "add")); add = (CUfunction)k;
  CK(cuLibraryGetKernel(&k, lib, "seed")); seed = (CUfunction)k;
  CK(cuLibraryGetKernel(&k, lib, "take")); take = (CUfunction)k;
  CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

  // The arena's memory: one reservation, mapped in granularity chunks as far as it is used.
  CUmemAllocationProp prop; memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE; prop.location.id = dev;
  size_t gran; CK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  size_t mapped = ((256 + (size_t)TEMP_INTS * 4 + gran - 1) / gran) * gran;
  CUdeviceptr base; CK(cuMemAddressReserve(&base, RESERVE, 0, 0, 0));
  CUmemGenericAllocationHandle chunk; CK(cuMemCreate(&chunk, mapped, &prop, 0));
  CK(cuMemMap(base, mapped, 0, chunk, 0));
  CUmemAccessDesc access = {{CU_MEM_LOCATION_TYPE_DEVICE, dev}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  CK(cuMemSetAccess(base, mapped, &access, 1));
  CUdeviceptr counter = base, temp = base + 256;
  CK(cuMemsetD32(counter, 0, 1));
  long expected = 0;

  // The chain replayed from the arena's memory.
  CUgraph g = capture_chain(counter);
  CUgraphExec ge; CK(cuGraphInstantiate(&ge, g, 0));
  fig("arena_chain100_graph_launch_plus_sync", replays(ge), "us");
  expected += (long)(10 + REPS) * CHAIN;

  // The pass, its temporary in the arena (no memory node) or from memory nodes.
  CUgraph ga;
  CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  pass(counter, temp);
  CK(cuStreamEndCapture(s, &ga));
  CUgraphExec gea; CK(cuGraphInstantiate(&gea, ga, 0));
  fig("arena_pass_graph_launch_plus_sync", replays(gea), "us");
  expected += (long)(10 + REPS) * CHAIN;
  CUgraph gm;
  CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  CUdeviceptr node_temp; CK(cuMemAllocAsync(&node_temp, (size_t)TEMP_INTS * 4, s));
  pass(counter, node_temp);
  CK(cuMemFreeAsync(node_temp, s));
  CK(cuStreamEndCapture(s, &gm));
  CUgraphExec gem; CK(cuGraphInstantiate(&gem, gm, 0));
  fig("memnodes_pass_graph_launch_plus_sync", replays(gem), "us");
  expected += (long)(10 + REPS) * CHAIN;
  cuuint64_t reserved = 0;
  CK(cuDeviceGetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &reserved));
  fig("arena_pass_bytes", (double)mapped, "B");
  fig("memnodes_pass_bytes", (double)reserved, "B");

  // The chain captured into an existing graph after a memset node, and instantiated.
  static double t[BUILDS], u[BUILDS];
  for (int r = 0; r < BUILDS; r++) {
    CUgraph into; CK(cuGraphCreate(&into, 0));
    CUDA_MEMSET_NODE_PARAMS zero; memset(&zero, 0, sizeof zero);
    zero.dst = temp; zero.elementSize = 4; zero.width = 1; zero.height = 1;
    CUgraphNode memset_node; CK(cuGraphAddMemsetNode(&memset_node, into, NULL, 0, &zero, ctx));
    double a = now_us();
    CK(cuStreamBeginCaptureToGraph(s, into, &memset_node, NULL, 1, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    chain(counter);
    CUgraph same; CK(cuStreamEndCapture(s, &same));
    t[r] = now_us() - a;
    a = now_us();
    CUgraphExec exec; CK(cuGraphInstantiate(&exec, into, 0));
    u[r] = now_us() - a;
    CK(cuGraphExecDestroy(exec)); CK(cuGraphDestroy(into));
  }
  fig("capture_into_chain100", median(t, BUILDS), "us");
  fig("capture_into_chain100_instantiate", median(u, BUILDS), "us");

  // Whole-graph updates of the chain's executable: from a graph captured afresh, alone and
  // with its capture.
  for (int r = 0; r < BUILDS; r++) {
    double a = now_us();
    CUgraph fresh = capture_chain(counter);
    double b = now_us();
    CUgraphExecUpdateResultInfo info;
    CK(cuGraphExecUpdate(ge, fresh, &info));
    double c = now_us();
    t[r] = c - b; u[r] = c - a;
    CK(cuGraphDestroy(fresh));
  }
  fig("chain100_exec_update", median(t, BUILDS), "us");
  fig("chain100_update_from_capture", median(u, BUILDS), "us");
  CK(cuGraphLaunch(ge, s)); CK(cuStreamSynchronize(s));
  expected += CHAIN;

  int got = 0; CK(cuMemcpyDtoH(&got, counter, sizeof got));
  printf("counter %d expected %ld %s\n", got, expected, got == expected ? "OK" : "WRONG");
  CK(cuGraphExecDestroy(gem)); CK(cuGraphDestroy(gm));
  CK(cuGraphExecDestroy(gea)); CK(cuGraphDestroy(ga));
  CK(cuGraphExecDestroy(ge)); CK(cuGraphDestroy(g));
  CK(cuMemUnmap(base, mapped)); CK(cuMemRelease(chunk)); CK(cuMemAddressFree(base, RESERVE));
  printf("DONE\n");
  return got == expected ? 0 : 1;
}
