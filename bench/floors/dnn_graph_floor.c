// The floor for cuDNN's graph (backend) API where libs_floor.c has no rows: scaled-dot-product attention
// and a fused matmul, called straight from C on the primary context of GPU 0 with one non-blocking stream:
// the same backend graphs, node for node, as libs/benches/dnn.rs builds through cuda_safe_libs::dnn (the
// fused flash attention pattern of cuDNN's C++ frontend: Q.K^T, scale, a causal mask of generated indices,
// the softmax as max / sub / exp / sum / log / add / div with the statistics, P.V; the backward's chain with
// its two f32 intermediates in the workspace), each made into a plan by the heuristics (mode A, the first
// configuration that finalizes), executed with a fresh variant pack per call as the crate does.
// Build on the GPU machine (bench/floors/build.sh does it): cuDNN's part needs cudnn.h (system, toolkit, or
// PyTorch's nvidia-cudnn wheel) and is compiled with -DHAVE_CUDNN; without it the floor prints SKIP lines:
//   gcc -O2 -std=c11 dnn_graph_floor.c -o dnn_graph_floor -I/usr/local/cuda/include -DHAVE_CUDNN -I"$CUDNN_INC"
//       -L/usr/local/cuda/lib64 -lcuda -lm -l:libcudnn.so.9
// Measures (CUDA events around 10 back-to-back calls, median of 20 after 5):
//   - attention B=4, H=32, S=4096, D=128, causal, bf16 (BHSD), forward with its statistics and backward;
//     TFLOP/s as PyTorch counts them (forward 4 B H S^2 D / 2, backward 2.5 times that); the host time of one
//     call (median of 20 runs of 10 calls, each run synchronized); the plan's making (cold, host time);
//   - a 4096^3 bf16 matmul (f32 compute) with a fused bias add and relu; TFLOP/s count 2 M N K.
// Checks: 4 rows of O and of dQ (batch 0, head 0) against CPU sums in double from the inputs as uploaded,
// within 2e-2 of the row's largest value; 32 outputs of the matmul. A failed call prints `FAIL file:line call
// -> status` and exits 1; a failed check prints `FAIL ...` and exits 1 at the end.
// Prints INFO, check and `FIG name value unit` lines, then DONE:
//   sdpa_cudnn_{fwd,bwd}_{ms,tflops,host_us,plan_cold_ms} matmul_bias_relu_4096_{ms,tflops,plan_cold_ms}
#define _POSIX_C_SOURCE 200809L
#include <cuda.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef HAVE_CUDNN
#include <cudnn.h>
#endif

static const char* FIGS[] = {"sdpa_cudnn_fwd_ms", "sdpa_cudnn_fwd_tflops", "sdpa_cudnn_fwd_host_us",
                             "sdpa_cudnn_fwd_plan_cold_ms", "sdpa_cudnn_bwd_ms", "sdpa_cudnn_bwd_tflops",
                             "sdpa_cudnn_bwd_host_us", "sdpa_cudnn_bwd_plan_cold_ms", "matmul_bias_relu_4096_ms",
                             "matmul_bias_relu_4096_tflops", "matmul_bias_relu_4096_plan_cold_ms"};

#ifndef HAVE_CUDNN
int main(void) {
  for (size_t i = 0; i < sizeof FIGS / sizeof *FIGS; i++) printf("SKIP %s: built without cudnn.h\n", FIGS[i]);
  printf("DONE\n");
  return 0;
}
#else
static void die(const char* fmt, ...) {
  va_list a; va_start(a, fmt);
  printf("FAIL "); vprintf(fmt, a); printf("\n"); fflush(stdout);
  va_end(a); exit(1);
}
#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char* s_ = "?"; cuGetErrorName(r_, &s_); \
  die("%s:%d %s -> %s", __FILE__, __LINE__, #x, s_); } } while (0)
#define DK(x) do { cudnnStatus_t r_ = (x); if (r_ != CUDNN_STATUS_SUCCESS) \
  die("%s:%d %s -> %s", __FILE__, __LINE__, #x, cudnnGetErrorString(r_)); } while (0)
#define DP(d) ((void*)(uintptr_t)(d))
static double now_us(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e6 + t.tv_nsec / 1e3; }
static int cmpd(const void* a, const void* b) { double x = *(const double*)a, y = *(const double*)b; return x < y ? -1 : x > y; }
static double median(double* v, int n) { qsort(v, n, sizeof(double), cmpd); return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2; }
static void fig(const char* n, double v, const char* u) { printf("FIG %s %.4g %s\n", n, v, u); fflush(stdout); }
static uint64_t rng = 1;
// Multiples of 1/64 in [-1, 1), exact in bf16 (the crate's bench draws the same kind from the same LCG).
static float qrand(void) { rng = rng * 6364136223846793005ull + 1442695040888963407ull; return (float)((rng >> 33) % 128) / 64.f - 1.f; }
static uint16_t bf(float f) { uint32_t u; memcpy(&u, &f, 4); return (uint16_t)(u >> 16); }
static double unbf(uint16_t h) { uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4); return f; }
static CUstream s;
static CUevent e0, e1;
static cudnnHandle_t dn;
typedef cudnnBackendDescriptor_t D;

// ---------------------------------------------------------------------------- a graph, as the crate lowers it
enum { BOUND, VIRTUAL, BYVALUE, WORKSPACE };
enum { PW, MM, RED, RESHAPE };
typedef struct { int64_t dims[4], strides[4]; cudnnDataType_t dt; int kind; float value; size_t offset; } T;
typedef struct { int kind, mode; int64_t x, b, t, y, axis; } O;
typedef struct { T t[96]; int nt; O o[64]; int no; D parts[256]; int np; D plan; int64_t ws, scratch; } G;

static D keep(G* g, D d) { g->parts[g->np++] = d; return d; }
static D mk(G* g, cudnnBackendDescriptorType_t k) { D d; DK(cudnnBackendCreateDescriptor(k, &d)); return keep(g, d); }
static void set(D d, cudnnBackendAttributeName_t n, cudnnBackendAttributeType_t t, int64_t c, const void* v) {
  DK(cudnnBackendSetAttribute(d, n, t, c, v));
}
static void setd(D d, cudnnBackendAttributeName_t n, D v) { set(d, n, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v); }
static int64_t tensor(G* g, cudnnDataType_t dt, const int64_t* dims, const int64_t* strides, int kind) {
  T* t = &g->t[g->nt++];
  memcpy(t->dims, dims, sizeof t->dims); memcpy(t->strides, strides, sizeof t->strides);
  t->dt = dt; t->kind = kind;
  return g->nt;
}
static int64_t packed(G* g, cudnnDataType_t dt, const int64_t* dims, int kind) {
  int64_t st[4] = {dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
  return tensor(g, dt, dims, st, kind);
}
static int64_t scalar(G* g, float v) {
  static const int64_t one[4] = {1, 1, 1, 1};
  int64_t u = tensor(g, CUDNN_DATA_FLOAT, one, one, BYVALUE);
  g->t[u - 1].value = v;
  return u;
}
static T* at(G* g, int64_t u) { return &g->t[u - 1]; }
static void op(G* g, int kind, int mode, int64_t x, int64_t b, int64_t t, int64_t y, int64_t axis) {
  g->o[g->no++] = (O){kind, mode, x, b, t, y, axis};
}
// A pointwise result of x's dims: i32 for generated indices, boolean for comparisons and logic, else f32.
static int64_t pw(G* g, cudnnPointwiseMode_t m, int64_t x, int64_t b, int64_t t, int64_t axis) {
  cudnnDataType_t dt = m == CUDNN_POINTWISE_GEN_INDEX ? CUDNN_DATA_INT32
                       : (m >= CUDNN_POINTWISE_CMP_EQ && m <= CUDNN_POINTWISE_LOGICAL_NOT) ? CUDNN_DATA_BOOLEAN
                       : CUDNN_DATA_FLOAT;
  int64_t y = packed(g, dt, at(g, x)->dims, VIRTUAL);
  op(g, PW, m, x, b, t, y, axis);
  return y;
}
static int64_t mm(G* g, int64_t a, int64_t b) {
  int64_t dims[4] = {at(g, a)->dims[0], at(g, a)->dims[1], at(g, a)->dims[2], at(g, b)->dims[3]};
  int64_t c = packed(g, CUDNN_DATA_FLOAT, dims, VIRTUAL);
  op(g, MM, 0, a, b, 0, c, 0);
  return c;
}
static int64_t red(G* g, cudnnReduceTensorOp_t m, int64_t x) {
  int64_t dims[4] = {at(g, x)->dims[0], at(g, x)->dims[1], at(g, x)->dims[2], 1};
  int64_t y = packed(g, CUDNN_DATA_FLOAT, dims, VIRTUAL);
  op(g, RED, m, x, 0, 0, y, 0);
  return y;
}
static int64_t transpose(G* g, int64_t x, cudnnDataType_t dt) {
  T* t = at(g, x);
  int64_t dims[4] = {t->dims[0], t->dims[1], t->dims[3], t->dims[2]}, st[4] = {t->strides[0], t->strides[1], t->strides[3], t->strides[2]};
  int64_t y = tensor(g, dt, dims, st, VIRTUAL);
  op(g, RESHAPE, 0, x, 0, 0, y, 0);
  return y;
}
static void retype(G* g, int64_t u, cudnnDataType_t dt, int kind) { at(g, u)->dt = dt; at(g, u)->kind = kind; }

// Lowers the graph (tensors, operations, the operation graph), asks the heuristics (mode A) and finalizes the
// first configuration that finalizes; places the workspace tensors first, 256-aligned, cuDNN's after them.
static void build(G* g) {
  D td[96], ops[64];
  for (int i = 0; i < g->nt; i++) {
    T* t = &g->t[i];
    int64_t uid = i + 1, align = 16; bool virt = t->kind == VIRTUAL, byv = t->kind == BYVALUE;
    td[i] = mk(g, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    set(td[i], CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &t->dt);
    set(td[i], CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, t->dims);
    set(td[i], CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, t->strides);
    set(td[i], CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    set(td[i], CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
    set(td[i], CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt);
    if (byv) set(td[i], CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &byv);
    DK(cudnnBackendFinalize(td[i]));
    if (t->kind == WORKSPACE) {
      t->offset = (size_t)g->scratch;
      g->scratch += (t->dims[0] * t->strides[0] * 4 + 255) / 256 * 256;
    }
  }
  cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  for (int i = 0; i < g->no; i++) {
    O* o = &g->o[i];
    if (o->kind == PW) {
      D p = mk(g, CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
      cudnnPointwiseMode_t m = o->mode; cudnnDataType_t prec = at(g, o->y)->dt == CUDNN_DATA_INT32 ? CUDNN_DATA_INT32
          : at(g, o->y)->dt == CUDNN_DATA_BOOLEAN ? CUDNN_DATA_BOOLEAN : CUDNN_DATA_FLOAT;
      set(p, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &m);
      set(p, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec);
      if (m == CUDNN_POINTWISE_GEN_INDEX) set(p, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &o->axis);
      DK(cudnnBackendFinalize(p));
      ops[i] = mk(g, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
      setd(ops[i], CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, p);
      setd(ops[i], CUDNN_ATTR_OPERATION_POINTWISE_XDESC, td[o->x - 1]);
      if (o->b) setd(ops[i], CUDNN_ATTR_OPERATION_POINTWISE_BDESC, td[o->b - 1]);
      if (o->t) setd(ops[i], CUDNN_ATTR_OPERATION_POINTWISE_TDESC, td[o->t - 1]);
      setd(ops[i], CUDNN_ATTR_OPERATION_POINTWISE_YDESC, td[o->y - 1]);
    } else if (o->kind == MM) {
      D p = mk(g, CUDNN_BACKEND_MATMUL_DESCRIPTOR);
      set(p, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32);
      DK(cudnnBackendFinalize(p));
      ops[i] = mk(g, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
      setd(ops[i], CUDNN_ATTR_OPERATION_MATMUL_ADESC, td[o->x - 1]);
      setd(ops[i], CUDNN_ATTR_OPERATION_MATMUL_BDESC, td[o->b - 1]);
      setd(ops[i], CUDNN_ATTR_OPERATION_MATMUL_CDESC, td[o->y - 1]);
      setd(ops[i], CUDNN_ATTR_OPERATION_MATMUL_DESC, p);
    } else if (o->kind == RED) {
      D p = mk(g, CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
      cudnnReduceTensorOp_t m = o->mode;
      set(p, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &m);
      set(p, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32);
      DK(cudnnBackendFinalize(p));
      ops[i] = mk(g, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
      setd(ops[i], CUDNN_ATTR_OPERATION_REDUCTION_XDESC, td[o->x - 1]);
      setd(ops[i], CUDNN_ATTR_OPERATION_REDUCTION_YDESC, td[o->y - 1]);
      setd(ops[i], CUDNN_ATTR_OPERATION_REDUCTION_DESC, p);
    } else {
      ops[i] = mk(g, CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
      setd(ops[i], CUDNN_ATTR_OPERATION_RESHAPE_XDESC, td[o->x - 1]);
      setd(ops[i], CUDNN_ATTR_OPERATION_RESHAPE_YDESC, td[o->y - 1]);
    }
    DK(cudnnBackendFinalize(ops[i]));
  }
  D graph = mk(g, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &dn);
  set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, g->no, ops);
  DK(cudnnBackendFinalize(graph));
  D heur = mk(g, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  setd(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
  set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  DK(cudnnBackendFinalize(heur));
  int64_t n = 0;
  DK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n, NULL));
  D cfg[64];
  if (n > 64) n = 64;
  for (int i = 0; i < n; i++) cfg[i] = mk(g, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  DK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, n, &n, cfg));
  for (int i = 0; i < n; i++) {
    D plan = mk(g, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &dn);
    setd(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, cfg[i]);
    if (cudnnBackendFinalize(plan) != CUDNN_STATUS_SUCCESS) continue;
    int64_t got = 0;
    DK(cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &got, &g->ws));
    g->plan = plan;
    printf("INFO engine configuration %d of %d, workspace %lld + %lld bytes\n", i, (int)n, (long long)g->scratch, (long long)g->ws);
    return;
  }
  die("no engine configuration of %lld finalizes", (long long)n);
}

// One execution: the caller's pointers by uid, the constants' host pointers, the workspace tensors at their
// offsets; a fresh variant pack descriptor, as the crate makes one per call.
static CUdeviceptr workspace;
static void run(G* g, CUdeviceptr* ptrs) {
  int64_t uids[96]; void* data[96]; int n = 0;
  for (int i = 0; i < g->nt; i++) {
    T* t = &g->t[i];
    if (t->kind == VIRTUAL) continue;
    uids[n] = i + 1;
    data[n++] = t->kind == BYVALUE ? (void*)&t->value : t->kind == WORKSPACE ? DP(workspace + t->offset) : DP(ptrs[i]);
  }
  void* ws = g->ws ? DP(workspace + g->scratch) : NULL;
  D pack;
  DK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack));
  set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids);
  set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, data);
  set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
  DK(cudnnBackendFinalize(pack));
  DK(cudnnBackendExecute(dn, g->plan, pack));
  DK(cudnnBackendDestroyDescriptor(pack));
}

static G* cur; static CUdeviceptr* cur_ptrs;
static void call(void) { run(cur, cur_ptrs); }
static double time_ms(void) {
  double t[20];
  for (int r = 0; r < 5; r++) call();
  for (int r = 0; r < 20; r++) {
    CK(cuEventRecord(e0, s));
    for (int i = 0; i < 10; i++) call();
    CK(cuEventRecord(e1, s)); CK(cuEventSynchronize(e1));
    float ms; CK(cuEventElapsedTime(&ms, e0, e1)); t[r] = (double)ms / 10;
  }
  return median(t, 20);
}
static double host_us(void) {
  double t[20];
  for (int r = 0; r < 20; r++) {
    CK(cuStreamSynchronize(s));
    double start = now_us();
    for (int i = 0; i < 10; i++) call();
    t[r] = (now_us() - start) / 10;
  }
  CK(cuStreamSynchronize(s));
  return median(t, 20);
}
static double make(G* g) { double start = now_us(); build(g); return (now_us() - start) / 1e3; }
static void grow(G* g, size_t* have) {
  size_t need = (size_t)(g->scratch + g->ws);
  if (need <= *have) return;
  if (workspace) CK(cuMemFree(workspace));
  CK(cuMemAlloc(&workspace, need)); *have = need;
}
static void drop(G* g) { for (int i = g->np - 1; i >= 0; i--) DK(cudnnBackendDestroyDescriptor(g->parts[i])); free(g); }

// ---------------------------------------------------------------------------------------------- attention
enum { B = 4, H = 32, S = 4096, HD = 128 };
static const cudnnDataType_t BF = CUDNN_DATA_BFLOAT16;
static int failures;

// The causal mask on s: keys after their query get the lowest float.
static int64_t causal(G* g, int64_t x) {
  int64_t row = pw(g, CUDNN_POINTWISE_GEN_INDEX, x, 0, 0, 2), col = pw(g, CUDNN_POINTWISE_GEN_INDEX, x, 0, 0, 3);
  int64_t below = pw(g, CUDNN_POINTWISE_CMP_GE, row, col, 0, 0);
  return pw(g, CUDNN_POINTWISE_BINARY_SELECT, x, scalar(g, -3.402823466e38f), below, 0);
}
// Q, Kt (K's memory, its last two dims swapped) and V in BHSD; uids 1, 2, 3.
static void inputs(G* g) {
  int64_t dims[4] = {B, H, S, HD}, st[4] = {(int64_t)H * S * HD, (int64_t)S * HD, HD, 1};
  int64_t kd[4] = {B, H, HD, S}, ks[4] = {st[0], st[1], 1, HD};
  tensor(g, BF, dims, st, BOUND); tensor(g, BF, kd, ks, BOUND);
}

static G* forward_graph(int64_t* o, int64_t* stats) {
  G* g = calloc(1, sizeof *g);
  inputs(g);
  int64_t dims[4] = {B, H, S, HD}, v = packed(g, BF, dims, BOUND);
  int64_t sc = mm(g, 1, 2);
  sc = pw(g, CUDNN_POINTWISE_MUL, sc, scalar(g, 1.f / sqrtf(HD)), 0, 0);
  sc = causal(g, sc);
  int64_t max = red(g, CUDNN_REDUCE_TENSOR_MAX, sc), sub = pw(g, CUDNN_POINTWISE_SUB, sc, max, 0, 0);
  int64_t e = pw(g, CUDNN_POINTWISE_EXP, sub, 0, 0, 0), sum = red(g, CUDNN_REDUCE_TENSOR_ADD, e);
  int64_t lg = pw(g, CUDNN_POINTWISE_LOG, sum, 0, 0, 0);
  *stats = pw(g, CUDNN_POINTWISE_ADD, max, lg, 0, 0);
  int64_t p = pw(g, CUDNN_POINTWISE_DIV, e, sum, 0, 0);
  retype(g, p, BF, VIRTUAL);
  *o = mm(g, p, v);
  retype(g, *stats, CUDNN_DATA_FLOAT, BOUND); retype(g, *o, BF, BOUND);
  return g;
}
// The backward: uids Q 1, Kt 2, Vt 3, O 4, dO 5, stats 6; returns dQ, dK, dV in grads.
static G* backward_graph(int64_t* grads) {
  G* g = calloc(1, sizeof *g);
  inputs(g);
  int64_t dims[4] = {B, H, S, HD}, st[4] = {(int64_t)H * S * HD, (int64_t)S * HD, HD, 1};
  int64_t kd[4] = {B, H, HD, S}, ks[4] = {st[0], st[1], 1, HD}, rows[4] = {B, H, S, 1};
  tensor(g, BF, kd, ks, BOUND);
  int64_t o = packed(g, BF, dims, BOUND), d_o = packed(g, BF, dims, BOUND), stats = packed(g, CUDNN_DATA_FLOAT, rows, BOUND);
  int64_t t = pw(g, CUDNN_POINTWISE_MUL, d_o, o, 0, 0);
  t = red(g, CUDNN_REDUCE_TENSOR_ADD, t);
  int64_t ssum = pw(g, CUDNN_POINTWISE_MUL, t, scalar(g, 1.f), 0, 0);
  retype(g, ssum, CUDNN_DATA_FLOAT, WORKSPACE);
  int64_t scale = scalar(g, 1.f / sqrtf(HD)), sc = mm(g, 1, 2);
  sc = pw(g, CUDNN_POINTWISE_MUL, sc, scale, 0, 0);
  sc = pw(g, CUDNN_POINTWISE_SUB, sc, stats, 0, 0);
  sc = causal(g, sc);
  int64_t e = pw(g, CUDNN_POINTWISE_EXP, sc, 0, 0, 0);
  int64_t pt = transpose(g, e, BF);
  grads[2] = mm(g, pt, d_o);
  int64_t ds = mm(g, d_o, 3);
  ds = pw(g, CUDNN_POINTWISE_SUB, ds, ssum, 0, 0);
  ds = pw(g, CUDNN_POINTWISE_MUL, ds, e, 0, 0);
  ds = pw(g, CUDNN_POINTWISE_MUL, ds, scale, 0, 0);
  grads[1] = mm(g, transpose(g, ds, BF), 1);
  int64_t dq = mm(g, ds, transpose(g, 2, CUDNN_DATA_FLOAT));
  retype(g, dq, CUDNN_DATA_FLOAT, WORKSPACE);
  grads[0] = pw(g, CUDNN_POINTWISE_IDENTITY, dq, 0, 0, 0);
  for (int i = 0; i < 3; i++) retype(g, grads[i], BF, BOUND);
  return g;
}

static uint16_t* upload(CUdeviceptr* d, size_t n) {
  uint16_t* h = malloc(n * 2);
  for (size_t i = 0; i < n; i++) h[i] = bf(qrand());
  CK(cuMemAlloc(d, n * 2)); CK(cuMemcpyHtoD(*d, h, n * 2));
  return h;
}
static void check_rows(const char* what, const double* got, const double* want) {
  double scale = 1e-2, worst = 0;
  for (int e = 0; e < HD; e++) { scale = fmax(scale, fabs(want[e])); worst = fmax(worst, fabs(got[e] - want[e])); }
  if (worst > 2e-2 * scale) { printf("FAIL %s: off by %g (scale %g)\n", what, worst, scale); failures++; }
}
// Row i of batch 0, head 0: the causal softmax weights into p (i + 1 of them).
static void weights(const uint16_t* q, const uint16_t* k, int i, double* p) {
  double max = -INFINITY, sum = 0;
  for (int j = 0; j <= i; j++) {
    double d = 0;
    for (int e = 0; e < HD; e++) d += unbf(q[(size_t)i * HD + e]) * unbf(k[(size_t)j * HD + e]);
    p[j] = d / sqrt(HD); max = fmax(max, p[j]);
  }
  for (int j = 0; j <= i; j++) sum += p[j] = exp(p[j] - max);
  for (int j = 0; j <= i; j++) p[j] /= sum;
}

static void bench_attention(size_t* have) {
  size_t n = (size_t)B * H * S * HD;
  CUdeviceptr q, k, v, d_o, o, st, dq, dk, dv;
  uint16_t *hq = upload(&q, n), *hk = upload(&k, n), *hv = upload(&v, n), *hdo = upload(&d_o, n);
  CK(cuMemAlloc(&o, n * 2)); CK(cuMemAlloc(&dq, n * 2)); CK(cuMemAlloc(&dk, n * 2)); CK(cuMemAlloc(&dv, n * 2));
  CK(cuMemAlloc(&st, (size_t)B * H * S * 4));
  double flops = 4.0 * B * H * (double)S * S * HD / 2;
  int64_t uo, ustats, grads[3];
  G* f = forward_graph(&uo, &ustats);
  fig("sdpa_cudnn_fwd_plan_cold_ms", make(f), "ms");
  grow(f, have);
  CUdeviceptr fp[96] = {q, k, v}; fp[uo - 1] = o; fp[ustats - 1] = st;
  cur = f; cur_ptrs = fp;
  double ms = time_ms();
  fig("sdpa_cudnn_fwd_ms", ms, "ms"); fig("sdpa_cudnn_fwd_tflops", flops / (ms * 1e-3) / 1e12, "TFLOP/s");
  fig("sdpa_cudnn_fwd_host_us", host_us(), "us");
  G* bw = backward_graph(grads);
  fig("sdpa_cudnn_bwd_plan_cold_ms", make(bw), "ms");
  grow(bw, have);
  CUdeviceptr bp[96] = {q, k, v, o, d_o, st}; bp[grads[0] - 1] = dq; bp[grads[1] - 1] = dk; bp[grads[2] - 1] = dv;
  cur = bw; cur_ptrs = bp;
  ms = time_ms();
  fig("sdpa_cudnn_bwd_ms", ms, "ms"); fig("sdpa_cudnn_bwd_tflops", 2.5 * flops / (ms * 1e-3) / 1e12, "TFLOP/s");
  fig("sdpa_cudnn_bwd_host_us", host_us(), "us");
  uint16_t *ho = malloc(n * 2), *hdq = malloc(n * 2);
  CK(cuMemcpyDtoH(ho, o, n * 2)); CK(cuMemcpyDtoH(hdq, dq, n * 2));
  double* p = malloc(S * sizeof(double)), got[HD], want[HD], dqw[HD];
  int rows[4] = {0, S / 16 - 1, S / 2, S - 1};
  for (int r = 0; r < 4; r++) {
    int i = rows[r];
    weights(hq, hk, i, p);
    double rowsum = 0;
    for (int e = 0; e < HD; e++) {
      want[e] = dqw[e] = 0; got[e] = unbf(ho[(size_t)i * HD + e]);
      rowsum += unbf(hdo[(size_t)i * HD + e]) * got[e];
    }
    for (int j = 0; j <= i; j++) {
      double dp = 0;
      for (int e = 0; e < HD; e++) { want[e] += p[j] * unbf(hv[(size_t)j * HD + e]); dp += unbf(hdo[(size_t)i * HD + e]) * unbf(hv[(size_t)j * HD + e]); }
      for (int e = 0; e < HD; e++) dqw[e] += p[j] * (dp - rowsum) / sqrt(HD) * unbf(hk[(size_t)j * HD + e]);
    }
    check_rows("O", got, want);
    for (int e = 0; e < HD; e++) got[e] = unbf(hdq[(size_t)i * HD + e]);
    check_rows("dQ", got, dqw);
  }
  if (!failures) printf("check sdpa_cudnn fwd and bwd, 4 rows ok\n");
  drop(f); drop(bw);
  free(p); free(ho); free(hdq); free(hq); free(hk); free(hv); free(hdo);
  CUdeviceptr all[] = {q, k, v, d_o, o, st, dq, dk, dv};
  for (int i = 0; i < 9; i++) CK(cuMemFree(all[i]));
}

// ----------------------------------------------------------------------------- matmul with bias and relu
static void bench_matmul(size_t* have) {
  enum { M = 4096 };
  G* g = calloc(1, sizeof *g);
  int64_t dims[4] = {1, 1, M, M}, bdims[4] = {1, 1, 1, M};
  int64_t a = packed(g, BF, dims, BOUND), b = packed(g, BF, dims, BOUND), bias = packed(g, BF, bdims, BOUND);
  int64_t c = pw(g, CUDNN_POINTWISE_ADD, mm(g, a, b), bias, 0, 0);
  c = pw(g, CUDNN_POINTWISE_RELU_FWD, c, 0, 0, 0);
  retype(g, c, BF, BOUND);
  fig("matmul_bias_relu_4096_plan_cold_ms", make(g), "ms");
  grow(g, have);
  CUdeviceptr da, db, dbias, dc;
  uint16_t *ha = upload(&da, (size_t)M * M), *hb = upload(&db, (size_t)M * M), *hbias = upload(&dbias, M);
  CK(cuMemAlloc(&dc, (size_t)M * M * 2));
  CUdeviceptr ptrs[96] = {da, db, dbias}; ptrs[c - 1] = dc;
  cur = g; cur_ptrs = ptrs;
  double ms = time_ms();
  fig("matmul_bias_relu_4096_ms", ms, "ms");
  fig("matmul_bias_relu_4096_tflops", 2.0 * M * (double)M * M / (ms * 1e-3) / 1e12, "TFLOP/s");
  uint16_t* hc = malloc((size_t)M * M * 2);
  CK(cuMemcpyDtoH(hc, dc, (size_t)M * M * 2));
  int before = failures;
  for (int t = 0; t < 32; t++) {
    size_t r = (size_t)((qrand() + 1) / 2 * (M - 1)), col = (size_t)((qrand() + 1) / 2 * (M - 1));
    double dot = unbf(hbias[col]);
    for (size_t i = 0; i < M; i++) dot += unbf(ha[r * M + i]) * unbf(hb[i * M + col]);
    double want = fmax(dot, 0), value = unbf(hc[r * M + col]);
    if (fabs(value - want) > 1e-2 * fabs(want) + 1e-1) { printf("FAIL matmul (%zu, %zu): got %g, want %g\n", r, col, value, want); failures++; }
  }
  if (failures == before) printf("check matmul_bias_relu_4096, 32 points ok\n");
  drop(g);
  free(ha); free(hb); free(hbias); free(hc);
  CK(cuMemFree(da)); CK(cuMemFree(db)); CK(cuMemFree(dbias)); CK(cuMemFree(dc));
}

int main(void) {
  CUdevice dev; CUcontext ctx;
  CK(cuInit(0)); CK(cuDeviceGet(&dev, 0)); CK(cuDevicePrimaryCtxRetain(&ctx, dev)); CK(cuCtxSetCurrent(ctx));
  CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CK(cuEventCreate(&e0, CU_EVENT_DEFAULT)); CK(cuEventCreate(&e1, CU_EVENT_DEFAULT));
  DK(cudnnCreate(&dn)); DK(cudnnSetStream(dn, (cudaStream_t)s));
  printf("INFO cudnn_version %zu\n", cudnnGetVersion());
  size_t have = 0;
  bench_attention(&have);
  bench_matmul(&have);
  DK(cudnnDestroy(dn));
  if (workspace) CK(cuMemFree(workspace));
  printf("DONE\n");
  return failures ? 1 : 0;
}
#endif
