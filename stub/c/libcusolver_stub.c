/*
 * A fake cuSOLVER (dense API) for CPU tests of cuda-safe's solver module, compiled into the stub
 * driver's shared object and loaded through CUDA_SAFE_LIBCUSOLVER. The driver's memory is host
 * memory, so the routines compute on the CPU, in double, on f32 or f64 matrices: LU with partial
 * pivoting, Cholesky, Householder QR and its Q products, the Jacobi eigensolver and one-sided
 * Jacobi SVDs (plain and batched), with LAPACK's info outputs (a zero pivot, a minor that is not
 * positive definite). Every range a routine reads or writes is checked against the driver's
 * allocations (a range past one is a misuse, the CPU's GPU fault), leading dimensions against
 * their matrices, and workspaces against what the size queries asked for.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_stub.h"
#include "libblas_stub.h"
#include "stub.h"

#include "libcusolver_stub.h"

enum { HOST_BYTES = 64 };

static long live_handles, live_params, live_gesvdj;
int solver_forced_info;

/* Live objects by kind: "cusolver" (handles), "params", "gesvdj". */
long long cusolver_stub_live(const char *kind) {
    if (strcmp(kind, "cusolver") == 0)
        return live_handles;
    if (strcmp(kind, "params") == 0)
        return live_params;
    if (strcmp(kind, "gesvdj") == 0)
        return live_gesvdj;
    return -1;
}

/* Makes the next eigensolver or SVD report `info` (its first matrix, for a batch). */
void cusolver_stub_force_info(int info) { solver_forced_info = info; }

double solver_get(int type, const void *base, size_t i) {
    return type == R_64F ? ((const double *)base)[i] : ((const float *)base)[i];
}

int solver_range_ok(const void *ptr, size_t bytes, const char *api) {
    return bytes == 0 || check_range((CUdeviceptr)(uintptr_t)ptr, bytes, 0, api) == CUDA_SUCCESS;
}

int solver_matrix_ok(const void *ptr, long rows, long cols, long ld, int type, const char *api) {
    if (rows < 0 || cols < 0 || ld < (rows > 1 ? rows : 1)) {
        stub_misuse_note("%s: a %ld x %ld matrix with leading dimension %ld", api, rows, cols, ld);
        return 0;
    }
    if (rows == 0 || cols == 0)
        return 1;
    size_t elements = (size_t)ld * (size_t)(cols - 1) + (size_t)rows;
    return solver_range_ok(ptr, elements * element_size(type), api);
}

double *solver_load(const void *a, long m, long n, long ld, int type) {
    double *copy = calloc((size_t)(m * n) + 1, sizeof *copy);
    for (long j = 0; j < n; j++)
        for (long i = 0; i < m; i++)
            copy[i + j * m] = solver_get(type, a, (size_t)(i + j * ld));
    return copy;
}

void solver_store(const double *copy, void *a, long m, long n, long ld, int type) {
    for (long j = 0; j < n; j++)
        for (long i = 0; i < m; i++)
            store(type, a, (size_t)(i + j * ld), copy[i + j * m]);
}

void solver_sizes(long n, int type, int host, size_t *device, size_t *host_bytes) {
    *device = (size_t)(n > 0 ? n : 1) * 64 * element_size(type);
    *host_bytes = host ? HOST_BYTES : 0;
}

int solver_work_ok(void *dev, size_t dev_size, void *host, size_t host_size, long n, int type,
                   int wants_host, const char *api) {
    size_t need_dev, need_host;
    solver_sizes(n, type, wants_host, &need_dev, &need_host);
    if (dev_size < need_dev || host_size < need_host || (need_host && host == NULL)) {
        stub_misuse_note("%s: workspaces of %zu and %zu bytes, asked for %zu and %zu", api,
                         dev_size, host_size, need_dev, need_host);
        return 0;
    }
    if (!solver_range_ok(dev, dev_size, api))
        return 0;
    if (host_size > 0)
        memset(host, 0xa5, host_size);
    return 1;
}

int solver_info(int *info, int value, const char *api) {
    if (!solver_range_ok(info, sizeof *info, api))
        return SV_INVALID;
    *info = value;
    return SV_OK;
}

/* ---- handles ---- */

int cusolverGetVersion(int *version) {
    ENTER("cusolverGetVersion");
    *version = 11700;
    return SV_OK;
}

int cusolverDnCreate(void **handle) {
    ENTER("cusolverDnCreate");
    *handle = calloc(1, sizeof(void *));
    live_handles++;
    return SV_OK;
}

int cusolverDnDestroy(void *handle) {
    ENTER("cusolverDnDestroy");
    free(handle);
    live_handles--;
    return SV_OK;
}

int cusolverDnSetStream(void **handle, void *stream) {
    ENTER("cusolverDnSetStream");
    if (stream_context(stream, "cusolverDnSetStream") == NULL)
        return SV_INVALID;
    *handle = stream;
    return SV_OK;
}

int cusolverDnCreateParams(void **params) {
    ENTER("cusolverDnCreateParams");
    *params = calloc(1, 8);
    live_params++;
    return SV_OK;
}

int cusolverDnDestroyParams(void *params) {
    ENTER("cusolverDnDestroyParams");
    free(params);
    live_params--;
    return SV_OK;
}

int cusolverDnCreateGesvdjInfo(void **info) {
    ENTER("cusolverDnCreateGesvdjInfo");
    *info = calloc(1, 8);
    live_gesvdj++;
    return SV_OK;
}

int cusolverDnDestroyGesvdjInfo(void *info) {
    ENTER("cusolverDnDestroyGesvdjInfo");
    free(info);
    live_gesvdj--;
    return SV_OK;
}

/* ---- LU ---- */

int cusolverDnXgetrf_bufferSize(void *h, void *p, int64_t m, int64_t n, int type, const void *a,
                                int64_t lda, int compute, size_t *device, size_t *host) {
    ENTER("cusolverDnXgetrf_bufferSize");
    (void)h; (void)p; (void)a; (void)compute;
    if (lda < (m > 1 ? m : 1))
        return SV_INVALID;
    solver_sizes(n, type, 1, device, host);
    return SV_OK;
}

int cusolverDnXgetrf(void *h, void *p, int64_t m, int64_t n, int type, void *a, int64_t lda,
                     int64_t *ipiv, int compute, void *dev, size_t dev_size, void *host,
                     size_t host_size, int *info) {
    const char *api = "cusolverDnXgetrf";
    ENTER("cusolverDnXgetrf");
    (void)h; (void)p; (void)compute;
    long k = m < n ? m : n;
    if (!solver_matrix_ok(a, m, n, lda, type, api) || !solver_range_ok(ipiv, (size_t)k * 8, api) ||
        !solver_work_ok(dev, dev_size, host, host_size, n, type, 1, api))
        return SV_INVALID;
    double *A = solver_load(a, m, n, lda, type);
    int singular = 0;
    for (long j = 0; j < k; j++) {
        long pivot = j;
        for (long i = j + 1; i < m; i++)
            if (fabs(A[i + j * m]) > fabs(A[pivot + j * m]))
                pivot = i;
        ipiv[j] = pivot + 1;
        if (A[pivot + j * m] == 0) {
            if (!singular)
                singular = (int)j + 1;
            continue;
        }
        for (long c = 0; c < n; c++) {
            double t = A[j + c * m];
            A[j + c * m] = A[pivot + c * m];
            A[pivot + c * m] = t;
        }
        for (long i = j + 1; i < m; i++)
            A[i + j * m] /= A[j + j * m];
        for (long c = j + 1; c < n; c++)
            for (long i = j + 1; i < m; i++)
                A[i + c * m] -= A[i + j * m] * A[j + c * m];
    }
    solver_store(A, a, m, n, lda, type);
    free(A);
    return solver_info(info, singular, api);
}

int cusolverDnXgetrs(void *h, void *p, int trans, int64_t n, int64_t nrhs, int type,
                     const void *a, int64_t lda, const int64_t *ipiv, int type_b, void *b,
                     int64_t ldb, int *info) {
    const char *api = "cusolverDnXgetrs";
    ENTER("cusolverDnXgetrs");
    (void)h; (void)p;
    if (!solver_matrix_ok(a, n, n, lda, type, api) || !solver_matrix_ok(b, n, nrhs, ldb, type_b, api) ||
        !solver_range_ok(ipiv, (size_t)n * 8, api))
        return SV_INVALID;
    double *A = solver_load(a, n, n, lda, type), *B = solver_load(b, n, nrhs, ldb, type_b);
    for (long r = 0; r < nrhs; r++) {
        double *x = B + r * n;
        if (!trans) {
            for (long i = 0; i < n; i++) {
                double t = x[i];
                x[i] = x[ipiv[i] - 1];
                x[ipiv[i] - 1] = t;
            }
            for (long i = 0; i < n; i++)
                for (long k = 0; k < i; k++)
                    x[i] -= A[i + k * n] * x[k];
            for (long i = n - 1; i >= 0; i--) {
                for (long k = i + 1; k < n; k++)
                    x[i] -= A[i + k * n] * x[k];
                x[i] /= A[i + i * n];
            }
        } else {
            for (long i = 0; i < n; i++) {
                for (long k = 0; k < i; k++)
                    x[i] -= A[k + i * n] * x[k];
                x[i] /= A[i + i * n];
            }
            for (long i = n - 1; i >= 0; i--)
                for (long k = i + 1; k < n; k++)
                    x[i] -= A[k + i * n] * x[k];
            for (long i = n - 1; i >= 0; i--) {
                double t = x[i];
                x[i] = x[ipiv[i] - 1];
                x[ipiv[i] - 1] = t;
            }
        }
    }
    solver_store(B, b, n, nrhs, ldb, type_b);
    free(A);
    free(B);
    return solver_info(info, 0, api);
}

/* ---- Cholesky ---- */

/* Element (i, j), i >= j, of the lower factor, stored in the lower or (transposed) upper
 * triangle of a packed n x n copy. */
#define TRI(A, n, upper, i, j) ((A)[(upper) ? (j) + (i) * (n) : (i) + (j) * (n)])

int cusolverDnXpotrf_bufferSize(void *h, void *p, int uplo, int64_t n, int type, const void *a,
                                int64_t lda, int compute, size_t *device, size_t *host) {
    ENTER("cusolverDnXpotrf_bufferSize");
    (void)h; (void)p; (void)uplo; (void)a; (void)compute;
    if (lda < (n > 1 ? n : 1))
        return SV_INVALID;
    solver_sizes(n, type, 0, device, host);
    return SV_OK;
}

int cusolverDnXpotrf(void *h, void *p, int uplo, int64_t n, int type, void *a, int64_t lda,
                     int compute, void *dev, size_t dev_size, void *host, size_t host_size,
                     int *info) {
    const char *api = "cusolverDnXpotrf";
    ENTER("cusolverDnXpotrf");
    (void)h; (void)p; (void)compute;
    if (!solver_matrix_ok(a, n, n, lda, type, api) ||
        !solver_work_ok(dev, dev_size, host, host_size, n, type, 0, api))
        return SV_INVALID;
    double *A = solver_load(a, n, n, lda, type);
    int minor = 0;
    for (long j = 0; j < n && !minor; j++) {
        double d = TRI(A, n, uplo, j, j);
        for (long k = 0; k < j; k++)
            d -= TRI(A, n, uplo, j, k) * TRI(A, n, uplo, j, k);
        if (!(d > 0)) {
            minor = (int)j + 1;
            break;
        }
        TRI(A, n, uplo, j, j) = sqrt(d);
        for (long i = j + 1; i < n; i++) {
            double s = TRI(A, n, uplo, i, j);
            for (long k = 0; k < j; k++)
                s -= TRI(A, n, uplo, i, k) * TRI(A, n, uplo, j, k);
            TRI(A, n, uplo, i, j) = s / TRI(A, n, uplo, j, j);
        }
    }
    solver_store(A, a, n, n, lda, type);
    free(A);
    return solver_info(info, minor, api);
}

int cusolverDnXpotrs(void *h, void *p, int uplo, int64_t n, int64_t nrhs, int type,
                     const void *a, int64_t lda, int type_b, void *b, int64_t ldb, int *info) {
    const char *api = "cusolverDnXpotrs";
    ENTER("cusolverDnXpotrs");
    (void)h; (void)p;
    if (!solver_matrix_ok(a, n, n, lda, type, api) || !solver_matrix_ok(b, n, nrhs, ldb, type_b, api))
        return SV_INVALID;
    double *A = solver_load(a, n, n, lda, type), *B = solver_load(b, n, nrhs, ldb, type_b);
    for (long r = 0; r < nrhs; r++) {
        double *x = B + r * n;
        for (long i = 0; i < n; i++) {
            for (long k = 0; k < i; k++)
                x[i] -= TRI(A, n, uplo, i, k) * x[k];
            x[i] /= TRI(A, n, uplo, i, i);
        }
        for (long i = n - 1; i >= 0; i--) {
            for (long k = i + 1; k < n; k++)
                x[i] -= TRI(A, n, uplo, k, i) * x[k];
            x[i] /= TRI(A, n, uplo, i, i);
        }
    }
    solver_store(B, b, n, nrhs, ldb, type_b);
    free(A);
    free(B);
    return solver_info(info, 0, api);
}

/* ---- QR ---- */

int cusolverDnXgeqrf_bufferSize(void *h, void *p, int64_t m, int64_t n, int type, const void *a,
                                int64_t lda, int type_tau, const void *tau, int compute,
                                size_t *device, size_t *host) {
    ENTER("cusolverDnXgeqrf_bufferSize");
    (void)h; (void)p; (void)a; (void)type_tau; (void)tau; (void)compute;
    if (lda < (m > 1 ? m : 1))
        return SV_INVALID;
    solver_sizes(n, type, 0, device, host);
    return SV_OK;
}

int cusolverDnXgeqrf(void *h, void *p, int64_t m, int64_t n, int type, void *a, int64_t lda,
                     int type_tau, void *tau, int compute, void *dev, size_t dev_size,
                     void *host, size_t host_size, int *info) {
    const char *api = "cusolverDnXgeqrf";
    ENTER("cusolverDnXgeqrf");
    (void)h; (void)p; (void)compute;
    long k = m < n ? m : n;
    if (!solver_matrix_ok(a, m, n, lda, type, api) ||
        !solver_range_ok(tau, (size_t)k * element_size(type_tau), api) ||
        !solver_work_ok(dev, dev_size, host, host_size, n, type, 0, api))
        return SV_INVALID;
    double *A = solver_load(a, m, n, lda, type);
    for (long j = 0; j < k; j++) {
        double alpha = A[j + j * m], norm = 0, t = 0;
        for (long i = j + 1; i < m; i++)
            norm += A[i + j * m] * A[i + j * m];
        if (norm > 0) {
            double beta = -copysign(sqrt(alpha * alpha + norm), alpha);
            t = (beta - alpha) / beta;
            for (long i = j + 1; i < m; i++)
                A[i + j * m] /= alpha - beta;
            A[j + j * m] = beta;
            for (long c = j + 1; c < n; c++) {
                double w = A[j + c * m];
                for (long i = j + 1; i < m; i++)
                    w += A[i + j * m] * A[i + c * m];
                A[j + c * m] -= t * w;
                for (long i = j + 1; i < m; i++)
                    A[i + c * m] -= t * A[i + j * m] * w;
            }
        }
        store(type_tau, tau, (size_t)j, t);
    }
    solver_store(A, a, m, n, lda, type);
    free(A);
    return solver_info(info, 0, api);
}

/* C = op(Q) C or C op(Q), Q = H_1 ... H_k from the reflectors of a geqrf (rows nq). */
static int ormqr(const char *api, int type, int side, int trans, int m, int n, int k,
                 const void *a, int lda, const void *tau, void *c, int ldc, void *work,
                 int lwork, int *info) {
    int nq = side == 0 ? m : n;
    if (k > nq || !solver_matrix_ok(a, nq, k, lda, type, api) ||
        !solver_matrix_ok(c, m, n, ldc, type, api) ||
        !solver_range_ok(tau, (size_t)k * element_size(type), api))
        return SV_INVALID;
    if (lwork < n * 64 || !solver_range_ok(work, (size_t)lwork * element_size(type), api)) {
        stub_misuse_note("%s: a workspace of %d elements, asked for %d", api, lwork, n * 64);
        return SV_INVALID;
    }
    double *A = solver_load(a, nq, k, lda, type), *C = solver_load(c, m, n, ldc, type);
    /* Q C applies H_k first; Qᵀ C and C Q apply H_1 first; C Qᵀ applies H_k first. */
    int forward = (side == 0) == (trans != 0);
    for (int step = 0; step < k; step++) {
        int r = forward ? step : k - 1 - step;
        double t = solver_get(type, tau, (size_t)r);
        int lines = side == 0 ? n : m;
        for (int line = 0; line < lines; line++) {
            /* The column (left) or row (right) of C the reflector acts on, from index r. */
            double *x = side == 0 ? C + (size_t)line * m : C + line;
            size_t step_x = side == 0 ? 1 : (size_t)m;
            double w = x[r * step_x];
            for (int i = r + 1; i < nq; i++)
                w += A[i + r * nq] * x[i * step_x];
            x[r * step_x] -= t * w;
            for (int i = r + 1; i < nq; i++)
                x[i * step_x] -= t * A[i + r * nq] * w;
        }
    }
    solver_store(C, c, m, n, ldc, type);
    free(A);
    free(C);
    return solver_info(info, 0, api);
}

#define ORMQR(T, TYPE, SIZE, CALL)                                                             \
    int SIZE(void *h, int side, int trans, int m, int n, int k, const T *a, int lda,           \
             const T *tau, const T *c, int ldc, int *lwork) {                                  \
        ENTER(#SIZE);                                                                          \
        (void)h; (void)side; (void)trans; (void)m; (void)k; (void)a; (void)lda; (void)tau;     \
        (void)c; (void)ldc;                                                                    \
        *lwork = n * 64;                                                                       \
        return SV_OK;                                                                          \
    }                                                                                          \
    int CALL(void *h, int side, int trans, int m, int n, int k, const T *a, int lda,           \
             const T *tau, T *c, int ldc, T *work, int lwork, int *info) {                     \
        ENTER(#CALL);                                                                          \
        (void)h;                                                                               \
        return ormqr(#CALL, TYPE, side, trans, m, n, k, a, lda, tau, c, ldc, work, lwork,     \
                     info);                                                                    \
    }

ORMQR(float, R_32F, cusolverDnSormqr_bufferSize, cusolverDnSormqr)
ORMQR(double, R_64F, cusolverDnDormqr_bufferSize, cusolverDnDormqr)
