/*
 * The stub cuSOLVER's eigensolver and SVDs (libcusolver_stub.c says what the stub does): the
 * symmetric eigensolver by cyclic Jacobi rotations, the SVD (plain and batched) by one-sided
 * Jacobi rotations, in double, on packed copies of the matrices. Small sizes only: the tests'.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_stub.h"
#include "libblas_stub.h"
#include "stub.h"

#include "libcusolver_stub.h"

enum { SWEEPS = 100 };

/* The info a routine reports: its own, unless a test forced one (used once). */
static int reported(int own) {
    int forced = solver_forced_info;
    solver_forced_info = 0;
    return forced != 0 ? forced : own;
}

/* Eigenvalues (ascending, into w) and eigenvectors (columns of v) of the symmetric n x n a. */
static void jacobi_eigen(double *a, long n, double *w, double *v) {
    for (long i = 0; i < n * n; i++)
        v[i] = i % (n + 1) == 0;
    for (int sweep = 0; sweep < SWEEPS; sweep++) {
        double off = 0;
        for (long q = 1; q < n; q++)
            for (long p = 0; p < q; p++)
                off += a[p + q * n] * a[p + q * n];
        if (off < 1e-30)
            break;
        for (long q = 1; q < n; q++) {
            for (long p = 0; p < q; p++) {
                double apq = a[p + q * n];
                if (fabs(apq) < 1e-300)
                    continue;
                double theta = (a[q + q * n] - a[p + p * n]) / (2 * apq);
                double t = copysign(1.0, theta) / (fabs(theta) + sqrt(theta * theta + 1));
                double c = 1 / sqrt(t * t + 1), s = t * c;
                for (long k = 0; k < n; k++) {
                    double kp = a[k + p * n], kq = a[k + q * n];
                    a[k + p * n] = c * kp - s * kq;
                    a[k + q * n] = s * kp + c * kq;
                }
                for (long k = 0; k < n; k++) {
                    double pk = a[p + k * n], qk = a[q + k * n];
                    a[p + k * n] = c * pk - s * qk;
                    a[q + k * n] = s * pk + c * qk;
                    double vp = v[k + p * n], vq = v[k + q * n];
                    v[k + p * n] = c * vp - s * vq;
                    v[k + q * n] = s * vp + c * vq;
                }
            }
        }
    }
    for (long i = 0; i < n; i++)
        w[i] = a[i + i * n];
    for (long i = 0; i < n; i++) { /* selection sort, ascending, vectors with them */
        long best = i;
        for (long j = i + 1; j < n; j++)
            if (w[j] < w[best])
                best = j;
        double t = w[i];
        w[i] = w[best];
        w[best] = t;
        for (long k = 0; k < n; k++) {
            t = v[k + i * n];
            v[k + i * n] = v[k + best * n];
            v[k + best * n] = t;
        }
    }
}

/* Completes the first `have` orthonormal columns of the m x m u to an orthonormal basis. */
static void complete(double *u, long m, long have) {
    for (long e = 0; have < m && e < m; e++) {
        double *x = u + have * m;
        for (long i = 0; i < m; i++)
            x[i] = i == e;
        for (int pass = 0; pass < 2; pass++)
            for (long j = 0; j < have; j++) {
                double d = 0;
                for (long i = 0; i < m; i++)
                    d += u[i + j * m] * x[i];
                for (long i = 0; i < m; i++)
                    x[i] -= d * u[i + j * m];
            }
        double norm = 0;
        for (long i = 0; i < m; i++)
            norm += x[i] * x[i];
        if (norm > 1e-6) {
            for (long i = 0; i < m; i++)
                x[i] /= sqrt(norm);
            have++;
        }
    }
}

/* A (m x n, m >= n, packed) = U S Vᵀ by one-sided Jacobi: s (n, descending), u (m x m), v (n x n). */
static void jacobi_svd_tall(double *a, long m, long n, double *s, double *u, double *v) {
    for (long i = 0; i < n * n; i++)
        v[i] = i % (n + 1) == 0;
    for (int sweep = 0; sweep < SWEEPS; sweep++) {
        int rotated = 0;
        for (long q = 1; q < n; q++) {
            for (long p = 0; p < q; p++) {
                double al = 0, be = 0, ga = 0;
                for (long i = 0; i < m; i++) {
                    al += a[i + p * m] * a[i + p * m];
                    be += a[i + q * m] * a[i + q * m];
                    ga += a[i + p * m] * a[i + q * m];
                }
                if (fabs(ga) <= 1e-15 * sqrt(al * be) || fabs(ga) < 1e-300)
                    continue;
                rotated = 1;
                double zeta = (be - al) / (2 * ga);
                double t = copysign(1.0, zeta) / (fabs(zeta) + sqrt(1 + zeta * zeta));
                double c = 1 / sqrt(1 + t * t), sn = c * t;
                for (long i = 0; i < m; i++) {
                    double x = a[i + p * m], y = a[i + q * m];
                    a[i + p * m] = c * x - sn * y;
                    a[i + q * m] = sn * x + c * y;
                }
                for (long i = 0; i < n; i++) {
                    double x = v[i + p * n], y = v[i + q * n];
                    v[i + p * n] = c * x - sn * y;
                    v[i + q * n] = sn * x + c * y;
                }
            }
        }
        if (!rotated)
            break;
    }
    long *order = calloc((size_t)n + 1, sizeof *order), have = 0;
    for (long j = 0; j < n; j++) {
        double norm = 0;
        for (long i = 0; i < m; i++)
            norm += a[i + j * m] * a[i + j * m];
        s[j] = sqrt(norm);
        order[j] = j;
    }
    for (long i = 0; i < n; i++) /* descending, by index */
        for (long j = i + 1; j < n; j++)
            if (s[order[j]] > s[order[i]]) {
                long t = order[i];
                order[i] = order[j];
                order[j] = t;
            }
    double *sorted_v = calloc((size_t)(n * n) + 1, sizeof *sorted_v);
    double *sorted_s = calloc((size_t)n + 1, sizeof *sorted_s);
    for (long j = 0; j < n; j++) {
        long from = order[j];
        sorted_s[j] = s[from];
        memcpy(sorted_v + j * n, v + from * n, (size_t)n * sizeof *v);
        if (s[from] > 1e-12 * (s[order[0]] + 1e-300)) {
            for (long i = 0; i < m; i++)
                u[i + have * m] = a[i + from * m] / s[from];
            have++;
        }
    }
    complete(u, m, have);
    memcpy(s, sorted_s, (size_t)n * sizeof *s);
    memcpy(v, sorted_v, (size_t)(n * n) * sizeof *v);
    free(sorted_v);
    free(sorted_s);
    free(order);
}

/* A (m x n, packed) = U S Vᵀ for any shape: s (min(m, n)), u (m x m), v (n x n). */
static void jacobi_svd(const double *a, long m, long n, double *s, double *u, double *v) {
    long big = m > n ? m : n, small = m < n ? m : n;
    double *w = calloc((size_t)(m * n) + 1, sizeof *w);
    double *ub = calloc((size_t)(big * big) + 1, sizeof *ub);
    double *vs = calloc((size_t)(small * small) + 1, sizeof *vs);
    for (long j = 0; j < n; j++)
        for (long i = 0; i < m; i++)
            w[m >= n ? i + j * m : j + i * n] = a[i + j * m];
    jacobi_svd_tall(w, big, small, s, ub, vs);
    /* Tall: U = ub, V = vs. Wide: Aᵀ = ub S vsᵀ, so U = vs and V = ub. */
    memcpy(m >= n ? u : v, ub, (size_t)(big * big) * sizeof *ub);
    memcpy(m >= n ? v : u, vs, (size_t)(small * small) * sizeof *vs);
    free(w);
    free(ub);
    free(vs);
}

int cusolverDnXsyevd_bufferSize(void *h, void *p, int jobz, int uplo, int64_t n, int type,
                                const void *a, int64_t lda, int type_w, const void *w,
                                int compute, size_t *device, size_t *host) {
    ENTER("cusolverDnXsyevd_bufferSize");
    (void)h; (void)p; (void)jobz; (void)uplo; (void)a; (void)type_w; (void)w; (void)compute;
    if (lda < (n > 1 ? n : 1))
        return SV_INVALID;
    solver_sizes(n, type, 1, device, host);
    return SV_OK;
}

int cusolverDnXsyevd(void *h, void *p, int jobz, int uplo, int64_t n, int type, void *a,
                     int64_t lda, int type_w, void *w, int compute, void *dev, size_t dev_size,
                     void *host, size_t host_size, int *info) {
    const char *api = "cusolverDnXsyevd";
    ENTER("cusolverDnXsyevd");
    (void)h; (void)p; (void)compute;
    if (!solver_matrix_ok(a, n, n, lda, type, api) ||
        !solver_range_ok(w, (size_t)n * element_size(type_w), api) ||
        !solver_work_ok(dev, dev_size, host, host_size, n, type, 1, api))
        return SV_INVALID;
    double *A = solver_load(a, n, n, lda, type);
    for (long j = 0; j < n; j++) /* symmetric, from the `uplo` triangle */
        for (long i = 0; i < j; i++)
            A[uplo ? j + i * n : i + j * n] = A[uplo ? i + j * n : j + i * n];
    double *W = calloc((size_t)n + 1, sizeof *W), *V = calloc((size_t)(n * n) + 1, sizeof *V);
    jacobi_eigen(A, n, W, V);
    for (long i = 0; i < n; i++)
        store(type_w, w, (size_t)i, W[i]);
    if (jobz)
        solver_store(V, a, n, n, lda, type);
    free(A);
    free(W);
    free(V);
    return solver_info(info, reported(0), api);
}

int cusolverDnXgesvd_bufferSize(void *h, void *p, signed char jobu, signed char jobvt,
                                int64_t m, int64_t n, int type, const void *a, int64_t lda,
                                int ts, const void *s, int tu, const void *u, int64_t ldu,
                                int tv, const void *vt, int64_t ldvt, int compute,
                                size_t *device, size_t *host) {
    ENTER("cusolverDnXgesvd_bufferSize");
    (void)h; (void)p; (void)jobu; (void)jobvt; (void)a; (void)ts; (void)s; (void)tu; (void)u;
    (void)ldu; (void)tv; (void)vt; (void)ldvt; (void)compute;
    if (m < n || lda < (m > 1 ? m : 1))
        return SV_INVALID;
    solver_sizes(n, type, 1, device, host);
    return SV_OK;
}

int cusolverDnXgesvd(void *h, void *p, signed char jobu, signed char jobvt, int64_t m, int64_t n,
                     int type, void *a, int64_t lda, int ts, void *s, int tu, void *u,
                     int64_t ldu, int tv, void *vt, int64_t ldvt, int compute, void *dev,
                     size_t dev_size, void *host, size_t host_size, int *info) {
    const char *api = "cusolverDnXgesvd";
    ENTER("cusolverDnXgesvd");
    (void)h; (void)p; (void)compute;
    long ucols = jobu == 'A' ? m : jobu == 'S' ? n : 0, vrows = jobvt == 'N' ? 0 : n;
    if (m < n || !solver_matrix_ok(a, m, n, lda, type, api) ||
        !solver_range_ok(s, (size_t)n * element_size(ts), api) ||
        (ucols && !solver_matrix_ok(u, m, ucols, ldu, tu, api)) ||
        (vrows && !solver_matrix_ok(vt, vrows, n, ldvt, tv, api)) ||
        !solver_work_ok(dev, dev_size, host, host_size, n, type, 1, api))
        return SV_INVALID;
    double *A = solver_load(a, m, n, lda, type), *S = calloc((size_t)n + 1, sizeof *S);
    double *U = calloc((size_t)(m * m) + 1, sizeof *U), *V = calloc((size_t)(n * n) + 1, sizeof *V);
    jacobi_svd(A, m, n, S, U, V);
    for (long i = 0; i < n; i++)
        store(ts, s, (size_t)i, S[i]);
    for (long j = 0; j < ucols; j++)
        for (long i = 0; i < m; i++)
            store(tu, u, (size_t)(i + j * ldu), U[i + j * m]);
    for (long j = 0; j < n && vrows; j++)
        for (long i = 0; i < n; i++)
            store(tv, vt, (size_t)(i + j * ldvt), V[j + i * n]);
    memset(A, 0, (size_t)(m * n) * sizeof *A); /* A is destroyed, as cuSOLVER leaves it */
    solver_store(A, a, m, n, lda, type);
    free(A);
    free(S);
    free(U);
    free(V);
    return solver_info(info, reported(0), api);
}

/* The batched Jacobi SVD of `batch` m x n matrices, lda * n apart. */
static int gesvdj_batched(const char *api, int type, int m, int n, void *a, int lda, void *s,
                          void *u, int ldu, void *v, int ldv, void *work, int lwork, int *info,
                          int batch) {
    long k = m < n ? m : n, el = (long)element_size(type);
    if (m > 32 || n > 32 || batch < 1 || ldu < m || ldv < n ||
        !solver_matrix_ok(a, lda, (long)n * batch, lda, type, api) ||
        !solver_range_ok(s, (size_t)(k * batch * el), api) ||
        !solver_range_ok(u, (size_t)((long)ldu * m * batch * el), api) ||
        !solver_range_ok(v, (size_t)((long)ldv * n * batch * el), api) ||
        !solver_range_ok(info, (size_t)batch * sizeof *info, api))
        return SV_INVALID;
    if (lwork < 64 * n || !solver_range_ok(work, (size_t)(lwork * el), api)) {
        stub_misuse_note("%s: a workspace of %d elements, asked for %d", api, lwork, 64 * n);
        return SV_INVALID;
    }
    double *S = calloc(33, sizeof *S), *U = calloc(33 * 33, sizeof *U);
    double *V = calloc(33 * 33, sizeof *V);
    for (int b = 0; b < batch; b++) {
        char *base = (char *)a + (size_t)((long)b * lda * n * el);
        double *A = solver_load(base, m, n, lda, type);
        jacobi_svd(A, m, n, S, U, V);
        for (long i = 0; i < k; i++)
            store(type, s, (size_t)(b * k + i), S[i]);
        solver_store(U, (char *)u + (size_t)((long)b * ldu * m * el), m, m, ldu, type);
        solver_store(V, (char *)v + (size_t)((long)b * ldv * n * el), n, n, ldv, type);
        info[b] = b == 0 ? reported(0) : 0;
        free(A);
    }
    free(S);
    free(U);
    free(V);
    return SV_OK;
}

#define GESVDJ(T, TYPE, SIZE, CALL)                                                            \
    int SIZE(void *h, int jobz, int m, int n, const T *a, int lda, const T *s, const T *u,      \
             int ldu, const T *v, int ldv, int *lwork, void *params, int batch) {               \
        ENTER(#SIZE);                                                                          \
        (void)h; (void)jobz; (void)m; (void)a; (void)lda; (void)s; (void)u; (void)ldu; (void)v; \
        (void)ldv; (void)params; (void)batch;                                                  \
        *lwork = 64 * n;                                                                       \
        return SV_OK;                                                                          \
    }                                                                                          \
    int CALL(void *h, int jobz, int m, int n, T *a, int lda, T *s, T *u, int ldu, T *v,        \
             int ldv, T *work, int lwork, int *info, void *params, int batch) {                \
        ENTER(#CALL);                                                                          \
        (void)h; (void)jobz; (void)params;                                                     \
        return gesvdj_batched(#CALL, TYPE, m, n, a, lda, s, u, ldu, v, ldv, work, lwork, info, \
                              batch);                                                          \
    }

GESVDJ(float, R_32F, cusolverDnSgesvdjBatched_bufferSize, cusolverDnSgesvdjBatched)
GESVDJ(double, R_64F, cusolverDnDgesvdjBatched_bufferSize, cusolverDnDgesvdjBatched)
