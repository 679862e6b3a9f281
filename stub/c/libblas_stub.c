/*
 * A fake cuBLAS, cuBLASLt and cuRAND for CPU tests of cuda-safe's blas and rand modules (cuRAND
 * in libcurand_stub.c),
 * compiled into the stub driver's shared object and loaded through CUDA_SAFE_LIBCUBLAS,
 * CUDA_SAFE_LIBCUBLASLT and CUDA_SAFE_LIBCURAND. The driver's memory is host memory, so the
 * calls compute on the CPU: f32 and f64 (and bf16) GEMMs, GEMV and the vector operations, an
 * f32 cuBLASLt matmul with the bias and ReLU epilogues, and uniform and normal numbers (a GEMM
 * on a capturing stream becomes a host node that computes it at each replay). In the driver's
 * asynchronous mode (cuda_gpu.c) cublasGemmEx is queued as work of its stream; the other calls
 * wait for their stream's work and compute on the calling thread. Every
 * range a call reads or writes is checked against the driver's allocations (a range past one
 * is a misuse, the CPU's GPU fault), as are leading dimensions against their matrices.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_stub.h"
#include "stub.h"

#include "libblas_stub.h"

/* Counted atomically: the tests run handles and plans on several threads. */
static long live_blas, live_lt, live_lt_objects;
long blas_stub_live_generators;
static int refuse_heuristic;

/* Live handles by kind: "cublas", "cublaslt", "lt-descriptor", "curand". */
long long blas_stub_live(const char *kind) {
    if (strcmp(kind, "cublas") == 0)
        return __atomic_load_n(&live_blas, __ATOMIC_SEQ_CST);
    if (strcmp(kind, "cublaslt") == 0)
        return __atomic_load_n(&live_lt, __ATOMIC_SEQ_CST);
    if (strcmp(kind, "lt-descriptor") == 0)
        return __atomic_load_n(&live_lt_objects, __ATOMIC_SEQ_CST);
    if (strcmp(kind, "curand") == 0)
        return blas_stub_live_generators;
    return -1;
}

/* Makes cublasLtMatmulAlgoGetHeuristic find no algorithm (1) or find them (0). */
void blas_stub_refuse_heuristic(int refuse) { refuse_heuristic = refuse; }

size_t element_size(int type) { return type == R_64F ? 8 : type == R_16BF ? 2 : 4; }

static double load(int type, const void *base, size_t index) {
    if (type == R_64F)
        return ((const double *)base)[index];
    if (type == R_16BF) {
        uint32_t bits = (uint32_t)((const uint16_t *)base)[index] << 16;
        float value;
        memcpy(&value, &bits, 4);
        return value;
    }
    return ((const float *)base)[index];
}

void store(int type, void *base, size_t index, double value) {
    if (type == R_64F) {
        ((double *)base)[index] = value;
    } else if (type == R_16BF) {
        float single = (float)value;
        uint32_t bits;
        memcpy(&bits, &single, 4);
        ((uint16_t *)base)[index] = (uint16_t)((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
    } else {
        ((float *)base)[index] = (float)value;
    }
}

/* Checks a column-major rows x cols matrix with leading dimension ld at `ptr`. */
static int matrix_ok(const void *ptr, long rows, long cols, long ld, int type, const char *api) {
    if (rows < 0 || cols < 0 || ld < (rows > 1 ? rows : 1)) {
        stub_misuse_note("%s: a %ld x %ld matrix with leading dimension %ld", api, rows, cols, ld);
        return 0;
    }
    if (rows == 0 || cols == 0)
        return 1;
    size_t bytes = ((size_t)ld * (size_t)(cols - 1) + (size_t)rows) * element_size(type);
    return check_range((CUdeviceptr)(uintptr_t)ptr, bytes, 0, api) == CUDA_SUCCESS;
}

/* Checks a vector of n elements inc apart at `ptr`. */
static int vector_ok(const void *ptr, long n, long inc, int type, const char *api) {
    if (n <= 0)
        return 1;
    if (inc <= 0) {
        stub_misuse_note("%s: increment %ld", api, inc);
        return 0;
    }
    size_t bytes = ((size_t)inc * (size_t)(n - 1) + 1) * element_size(type);
    return check_range((CUdeviceptr)(uintptr_t)ptr, bytes, 0, api) == CUDA_SUCCESS;
}

/* ---- cuBLAS ---- */

struct blas {
    void *stream;
    int pointer_mode;
};

int cublasCreate_v2(struct blas **handle) {
    ENTER("cublasCreate_v2");
    *handle = calloc(1, sizeof **handle);
    __atomic_add_fetch(&live_blas, 1, __ATOMIC_SEQ_CST);
    return OK;
}

int cublasDestroy_v2(struct blas *handle) {
    ENTER("cublasDestroy_v2");
    free(handle);
    __atomic_sub_fetch(&live_blas, 1, __ATOMIC_SEQ_CST);
    return OK;
}

int cublasSetStream_v2(struct blas *handle, void *stream) {
    ENTER("cublasSetStream_v2");
    if (stream_context(stream, "cublasSetStream_v2") == NULL)
        return INVALID_VALUE;
    handle->stream = stream;
    return OK;
}

int cublasSetWorkspace_v2(struct blas *handle, void *workspace, size_t size) {
    ENTER("cublasSetWorkspace_v2");
    (void)handle;
    if (size > 0 && check_range((CUdeviceptr)(uintptr_t)workspace, size, 0,
                                "cublasSetWorkspace_v2") != CUDA_SUCCESS)
        return INVALID_VALUE;
    return OK;
}

int cublasSetPointerMode_v2(struct blas *handle, int mode) {
    ENTER("cublasSetPointerMode_v2");
    handle->pointer_mode = mode;
    return OK;
}

int cublasGetVersion_v2(struct blas *handle, int *version) {
    ENTER("cublasGetVersion_v2");
    (void)handle;
    *version = 130100;
    return OK;
}

const char *cublasGetStatusName(int status) {
    switch (status) {
    case OK: return "CUBLAS_STATUS_SUCCESS";
    case INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "CUBLAS_STATUS_STUB";
    }
}

const char *cublasGetStatusString(int status) {
    return status == NOT_SUPPORTED ? "the functionality requested is not supported" : "stub";
}

/* C = alpha op(A) op(B) + beta C, column-major, on the CPU, unchecked. */
static void gemm_compute(int transa, int transb, long m, long n, long k, double alpha,
                         const void *a, int at, long lda, const void *b, int bt, long ldb,
                         double beta, void *c, int ct, long ldc) {
    for (long j = 0; j < n; j++) {
        for (long i = 0; i < m; i++) {
            double sum = 0;
            for (long p = 0; p < k; p++) {
                double x = load(at, a, transa ? (size_t)(i * lda + p) : (size_t)(p * lda + i));
                double y = load(bt, b, transb ? (size_t)(p * ldb + j) : (size_t)(j * ldb + p));
                sum += x * y;
            }
            size_t at_c = (size_t)(j * ldc + i);
            double old = beta == 0 ? 0 : load(ct, c, at_c);
            store(ct, c, at_c, alpha * sum + beta * old);
        }
    }
}

/* gemm_compute, its ranges checked first. */
static int gemm(const char *api, int transa, int transb, long m, long n, long k, double alpha,
                const void *a, int at, long lda, const void *b, int bt, long ldb, double beta,
                void *c, int ct, long ldc) {
    if (!matrix_ok(a, transa ? k : m, transa ? m : k, lda, at, api) ||
        !matrix_ok(b, transb ? n : k, transb ? k : n, ldb, bt, api) ||
        !matrix_ok(c, m, n, ldc, ct, api))
        return INVALID_VALUE;
    gemm_compute(transa, transb, m, n, k, alpha, a, at, lda, b, bt, ldb, beta, c, ct, ldc);
    return OK;
}

/* A GEMM queued on a capturing stream: the arguments of the host node that computes it at each
 * replay (kept with the node, which the stub never frees). */
struct captured_gemm {
    int ta, tb, at, bt, ct;
    long m, n, k, lda, ldb, ldc;
    double alpha, beta;
    const void *a, *b;
    void *c;
};

static void replay_gemm(void *data) {
    const struct captured_gemm *g = data;
    gemm("cublasGemmEx", g->ta, g->tb, g->m, g->n, g->k, g->alpha, g->a, g->at, g->lda, g->b,
         g->bt, g->ldb, g->beta, g->c, g->ct, g->ldc);
}

/* Checks the ranges of `*call`. */
static int gemm_ok(const struct captured_gemm *call) {
    static const char api[] = "cublasGemmEx";
    return matrix_ok(call->a, call->ta ? call->k : call->m, call->ta ? call->m : call->k,
                     call->lda, call->at, api) &&
           matrix_ok(call->b, call->tb ? call->n : call->k, call->tb ? call->k : call->n,
                   call->ldb, call->bt, api) &&
           matrix_ok(call->c, call->m, call->n, call->ldc, call->ct, api);
}

/* A queued GEMM's work: computes it (checked when queued). */
static void run_gemm(void *data) {
    const struct captured_gemm *g = data;
    gemm_compute(g->ta, g->tb, g->m, g->n, g->k, g->alpha, g->a, g->at, g->lda, g->b, g->bt,
                 g->ldb, g->beta, g->c, g->ct, g->ldc);
}

/* Queues `*call` (its ranges checked now) as work of `stream`, which computes it when the
 * stream's worker reaches it (cuda_gpu.c). */
static int queue_gemm(struct captured_gemm *call, void *stream) {
    if (!gemm_ok(call))
        return INVALID_VALUE;
    gpu_submit(stream, run_gemm, call, sizeof *call, 1);
    return OK;
}

/* Records `*call` (its ranges checked now) as a host node of `stream`'s capture. */
static int capture_gemm(const struct captured_gemm *call, void *stream) {
    static const char api[] = "cublasGemmEx";
    if (!gemm_ok(call))
        return INVALID_VALUE;
    struct captured_gemm *kept = malloc(sizeof *kept);
    if (kept == NULL)
        abort();
    *kept = *call;
    return capture_host(api, stream, replay_gemm, kept) == CUDA_SUCCESS ? OK : INVALID_VALUE;
}

/* The scalars a call reads as `type` (f64 scalars for f64, f32 otherwise). */
static double scalar(const void *ptr, int type) {
    return type == R_64F ? *(const double *)ptr : *(const float *)ptr;
}

int cublasGemmEx(struct blas *h, int ta, int tb, int m, int n, int k, const void *alpha,
                 const void *a, int at, int lda, const void *b, int bt, int ldb, const void *beta,
                 void *c, int ct, int ldc, int compute, int algo) {
    ENTER("cublasGemmEx");
    if (!stream_is_current(h->stream, "cublasGemmEx"))
        return INVALID_VALUE;
    (void)compute; (void)algo;
    int scale = ct == R_64F ? R_64F : R_32F;
    struct captured_gemm call = {ta, tb, at, bt, ct, m, n, k, lda, ldb, ldc,
                                 scalar(alpha, scale), scalar(beta, scale), a, b, c};
    if (stream_capturing(h->stream))
        return capture_gemm(&call, h->stream);
    return queue_gemm(&call, h->stream);
}

int cublasGemmStridedBatchedEx(struct blas *h, int ta, int tb, int m, int n, int k,
                               const void *alpha, const void *a, int at, int lda, long long sa,
                               const void *b, int bt, int ldb, long long sb, const void *beta,
                               void *c, int ct, int ldc, long long sc, int count, int compute,
                               int algo) {
    ENTER("cublasGemmStridedBatchedEx");
    if (!stream_is_current(h->stream, "cublasGemmStridedBatchedEx"))
        return INVALID_VALUE;
    gpu_settle(h->stream); /* computed now, after the stream's work */
    (void)h; (void)compute; (void)algo;
    int scale = ct == R_64F ? R_64F : R_32F;
    for (int i = 0; i < count; i++) {
        int status = gemm("cublasGemmStridedBatchedEx", ta, tb, m, n, k, scalar(alpha, scale),
                          (const char *)a + (size_t)(i * sa) * element_size(at), at, lda,
                          (const char *)b + (size_t)(i * sb) * element_size(bt), bt, ldb,
                          scalar(beta, scale), (char *)c + (size_t)(i * sc) * element_size(ct),
                          ct, ldc);
        if (status != OK)
            return status;
    }
    return OK;
}

int cublasGemmBatchedEx(struct blas *h, int ta, int tb, int m, int n, int k, const void *alpha,
                        const void *const *a, int at, int lda, const void *const *b, int bt,
                        int ldb, const void *beta, void *const *c, int ct, int ldc, int count,
                        int compute, int algo) {
    ENTER("cublasGemmBatchedEx");
    if (!stream_is_current(h->stream, "cublasGemmBatchedEx"))
        return INVALID_VALUE;
    gpu_settle(h->stream); /* computed now, after the stream's work */
    (void)h; (void)compute; (void)algo;
    size_t table = (size_t)count * sizeof(void *);
    if (check_range((CUdeviceptr)(uintptr_t)a, table, 0, "cublasGemmBatchedEx") ||
        check_range((CUdeviceptr)(uintptr_t)b, table, 0, "cublasGemmBatchedEx") ||
        check_range((CUdeviceptr)(uintptr_t)c, table, 0, "cublasGemmBatchedEx"))
        return INVALID_VALUE;
    int scale = ct == R_64F ? R_64F : R_32F;
    for (int i = 0; i < count; i++) {
        int status = gemm("cublasGemmBatchedEx", ta, tb, m, n, k, scalar(alpha, scale), a[i], at,
                          lda, b[i], bt, ldb, scalar(beta, scale), c[i], ct, ldc);
        if (status != OK)
            return status;
    }
    return OK;
}

static int gemv(const char *api, int type, int trans, int m, int n, const void *alpha,
                const void *a, int lda, const void *x, int incx, const void *beta, void *y,
                int incy) {
    long xs = trans ? m : n, ys = trans ? n : m;
    if (!matrix_ok(a, m, n, lda, type, api) || !vector_ok(x, xs, incx, type, api) ||
        !vector_ok(y, ys, incy, type, api))
        return INVALID_VALUE;
    double al = scalar(alpha, type), be = scalar(beta, type);
    for (long i = 0; i < ys; i++) {
        double sum = 0;
        for (long p = 0; p < xs; p++)
            sum += load(type, a, trans ? (size_t)(i * lda + p) : (size_t)(p * lda + i)) *
                   load(type, x, (size_t)(p * incx));
        double old = be == 0 ? 0 : load(type, y, (size_t)(i * incy));
        store(type, y, (size_t)(i * incy), al * sum + be * old);
    }
    return OK;
}

int cublasSgemv_v2(struct blas *h, int trans, int m, int n, const float *alpha, const float *a,
                   int lda, const float *x, int incx, const float *beta, float *y, int incy) {
    ENTER("cublasSgemv_v2");
    if (!stream_is_current(h->stream, "cublasSgemv_v2"))
        return INVALID_VALUE;
    gpu_settle(h->stream); /* computed now, after the stream's work */
    (void)h;
    return gemv("cublasSgemv_v2", R_32F, trans, m, n, alpha, a, lda, x, incx, beta, y, incy);
}

int cublasDgemv_v2(struct blas *h, int trans, int m, int n, const double *alpha,
                   const double *a, int lda, const double *x, int incx, const double *beta,
                   double *y, int incy) {
    ENTER("cublasDgemv_v2");
    if (!stream_is_current(h->stream, "cublasDgemv_v2"))
        return INVALID_VALUE;
    gpu_settle(h->stream); /* computed now, after the stream's work */
    (void)h;
    return gemv("cublasDgemv_v2", R_64F, trans, m, n, alpha, a, lda, x, incx, beta, y, incy);
}

int cublasAxpyEx(struct blas *h, int n, const void *alpha, int alpha_type, const void *x, int xt,
                 int incx, void *y, int yt, int incy, int exec) {
    ENTER("cublasAxpyEx");
    if (!stream_is_current(h->stream, "cublasAxpyEx"))
        return INVALID_VALUE;
    gpu_settle(h->stream); /* computed now, after the stream's work */
    (void)h; (void)exec;
    if (!vector_ok(x, n, incx, xt, "cublasAxpyEx") || !vector_ok(y, n, incy, yt, "cublasAxpyEx"))
        return INVALID_VALUE;
    double al = scalar(alpha, alpha_type);
    for (long i = 0; i < n; i++)
        store(yt, y, (size_t)(i * incy),
              al * load(xt, x, (size_t)(i * incx)) + load(yt, y, (size_t)(i * incy)));
    return OK;
}

int cublasScalEx(struct blas *h, int n, const void *alpha, int alpha_type, void *x, int xt,
                 int incx, int exec) {
    ENTER("cublasScalEx");
    if (!stream_is_current(h->stream, "cublasScalEx"))
        return INVALID_VALUE;
    gpu_settle(h->stream); /* computed now, after the stream's work */
    (void)h; (void)exec;
    if (!vector_ok(x, n, incx, xt, "cublasScalEx"))
        return INVALID_VALUE;
    double al = scalar(alpha, alpha_type);
    for (long i = 0; i < n; i++)
        store(xt, x, (size_t)(i * incx), al * load(xt, x, (size_t)(i * incx)));
    return OK;
}

int cublasDotEx(struct blas *h, int n, const void *x, int xt, int incx, const void *y, int yt,
                int incy, void *result, int rt, int exec) {
    ENTER("cublasDotEx");
    if (!stream_is_current(h->stream, "cublasDotEx"))
        return INVALID_VALUE;
    gpu_settle(h->stream); /* computed now, after the stream's work */
    (void)h; (void)exec;
    if (!vector_ok(x, n, incx, xt, "cublasDotEx") || !vector_ok(y, n, incy, yt, "cublasDotEx"))
        return INVALID_VALUE;
    double sum = 0;
    for (long i = 0; i < n; i++)
        sum += load(xt, x, (size_t)(i * incx)) * load(yt, y, (size_t)(i * incy));
    store(rt, result, 0, sum);
    return OK;
}

int cublasNrm2Ex(struct blas *h, int n, const void *x, int xt, int incx, void *result, int rt,
                 int exec) {
    ENTER("cublasNrm2Ex");
    if (!stream_is_current(h->stream, "cublasNrm2Ex"))
        return INVALID_VALUE;
    gpu_settle(h->stream); /* computed now, after the stream's work */
    (void)h; (void)exec;
    if (!vector_ok(x, n, incx, xt, "cublasNrm2Ex"))
        return INVALID_VALUE;
    double sum = 0;
    for (long i = 0; i < n; i++)
        sum += pow(load(xt, x, (size_t)(i * incx)), 2);
    store(rt, result, 0, sqrt(sum));
    return OK;
}

/* ---- cuBLASLt ---- */

struct lt_desc {
    int transa, transb, epilogue;
    void *bias;
};

struct lt_layout {
    int type;
    unsigned long long rows, cols;
    long long ld;
    int batch;
    long long stride;
};

struct heuristic {
    uint64_t algo[8];
    size_t workspace;
    int state;
    float waves;
    int reserved[4];
};

int cublasLtCreate(void **handle) {
    ENTER("cublasLtCreate");
    *handle = calloc(1, 8);
    __atomic_add_fetch(&live_lt, 1, __ATOMIC_SEQ_CST);
    return OK;
}

int cublasLtDestroy(void *handle) {
    ENTER("cublasLtDestroy");
    free(handle);
    __atomic_sub_fetch(&live_lt, 1, __ATOMIC_SEQ_CST);
    return OK;
}

size_t cublasLtGetVersion(void) { return 130100; }

int cublasLtMatmulDescCreate(struct lt_desc **desc, int compute, int scale) {
    ENTER("cublasLtMatmulDescCreate");
    (void)compute; (void)scale;
    *desc = calloc(1, sizeof **desc);
    (*desc)->epilogue = 1;
    __atomic_add_fetch(&live_lt_objects, 1, __ATOMIC_SEQ_CST);
    return OK;
}

int cublasLtMatmulDescDestroy(struct lt_desc *desc) {
    ENTER("cublasLtMatmulDescDestroy");
    free(desc);
    __atomic_sub_fetch(&live_lt_objects, 1, __ATOMIC_SEQ_CST);
    return OK;
}

int cublasLtMatmulDescSetAttribute(struct lt_desc *desc, int attribute, const void *value,
                                   size_t size) {
    ENTER("cublasLtMatmulDescSetAttribute");
    if (attribute == 3 && size == 4)
        desc->transa = *(const int *)value;
    else if (attribute == 4 && size == 4)
        desc->transb = *(const int *)value;
    else if (attribute == 7 && size == 4)
        desc->epilogue = *(const int *)value;
    else if (attribute == 8 && size == sizeof(void *))
        memcpy(&desc->bias, value, sizeof(void *));
    return OK;
}

int cublasLtMatrixLayoutCreate(struct lt_layout **layout, int type, unsigned long long rows,
                               unsigned long long cols, long long ld) {
    ENTER("cublasLtMatrixLayoutCreate");
    *layout = calloc(1, sizeof **layout);
    **layout = (struct lt_layout){type, rows, cols, ld, 1, 0};
    __atomic_add_fetch(&live_lt_objects, 1, __ATOMIC_SEQ_CST);
    return OK;
}

int cublasLtMatrixLayoutDestroy(struct lt_layout *layout) {
    ENTER("cublasLtMatrixLayoutDestroy");
    free(layout);
    __atomic_sub_fetch(&live_lt_objects, 1, __ATOMIC_SEQ_CST);
    return OK;
}

int cublasLtMatrixLayoutSetAttribute(struct lt_layout *layout, int attribute, const void *value,
                                     size_t size) {
    ENTER("cublasLtMatrixLayoutSetAttribute");
    if (attribute == 5 && size == 4)
        layout->batch = *(const int *)value;
    else if (attribute == 6 && size == 8)
        layout->stride = *(const long long *)value;
    return OK;
}

int cublasLtMatmulPreferenceCreate(void **preference) {
    ENTER("cublasLtMatmulPreferenceCreate");
    *preference = calloc(1, 8);
    __atomic_add_fetch(&live_lt_objects, 1, __ATOMIC_SEQ_CST);
    return OK;
}

int cublasLtMatmulPreferenceDestroy(void *preference) {
    ENTER("cublasLtMatmulPreferenceDestroy");
    free(preference);
    __atomic_sub_fetch(&live_lt_objects, 1, __ATOMIC_SEQ_CST);
    return OK;
}

int cublasLtMatmulPreferenceSetAttribute(void *preference, int attribute, const void *value,
                                         size_t size) {
    ENTER("cublasLtMatmulPreferenceSetAttribute");
    (void)preference; (void)attribute; (void)value; (void)size;
    return OK;
}

int cublasLtMatmulAlgoGetHeuristic(void *handle, struct lt_desc *desc, struct lt_layout *a,
                                   struct lt_layout *b, struct lt_layout *c, struct lt_layout *d,
                                   void *preference, int requested, struct heuristic *results,
                                   int *found) {
    ENTER("cublasLtMatmulAlgoGetHeuristic");
    (void)handle; (void)desc; (void)a; (void)b; (void)c; (void)d; (void)preference;
    if (requested < 1)
        return INVALID_VALUE;
    *found = refuse_heuristic ? 0 : 1;
    memset(results, 0, sizeof *results);
    results->workspace = 4096;
    results->waves = 1.0f;
    return refuse_heuristic ? NOT_SUPPORTED : OK;
}

int cublasLtMatmul(void *handle, struct lt_desc *desc, const void *alpha, const void *a,
                   struct lt_layout *la, const void *b, struct lt_layout *lb, const void *beta,
                   const void *c, struct lt_layout *lc, void *d, struct lt_layout *ld,
                   const void *algo, void *workspace, size_t workspace_size, void *stream) {
    ENTER("cublasLtMatmul");
    (void)handle; (void)algo; (void)c; (void)lc;
    if (!stream_is_current(stream, "cublasLtMatmul"))
        return INVALID_VALUE;
    gpu_settle(stream); /* computed now, after the stream's work */
    if (workspace_size > 0 && check_range((CUdeviceptr)(uintptr_t)workspace, workspace_size, 0,
                                          "cublasLtMatmul") != CUDA_SUCCESS)
        return INVALID_VALUE;
    long m = (long)ld->rows, n = (long)ld->cols, k = desc->transa ? (long)la->rows : (long)la->cols;
    for (int batch = 0; batch < ld->batch; batch++) {
        const char *pa = (const char *)a + (size_t)(batch * la->stride) * element_size(la->type);
        const char *pb = (const char *)b + (size_t)(batch * lb->stride) * element_size(lb->type);
        char *pd = (char *)d + (size_t)(batch * ld->stride) * element_size(ld->type);
        int status = gemm("cublasLtMatmul", desc->transa, desc->transb, m, n, k,
                          *(const float *)alpha, pa, la->type, la->ld, pb, lb->type, lb->ld,
                          *(const float *)beta, pd, ld->type, ld->ld);
        if (status != OK)
            return status;
        int bias = (desc->epilogue & 4) != 0, relu = (desc->epilogue & 2) != 0;
        if (bias && !vector_ok(desc->bias, m, 1, ld->type, "cublasLtMatmul"))
            return INVALID_VALUE;
        for (long j = 0; j < n && (bias || relu); j++) {
            for (long i = 0; i < m; i++) {
                size_t at = (size_t)(j * ld->ld + i);
                double value = load(ld->type, pd, at) + (bias ? load(ld->type, desc->bias, i) : 0);
                store(ld->type, pd, at, relu && value < 0 ? 0 : value);
            }
        }
    }
    return OK;
}
