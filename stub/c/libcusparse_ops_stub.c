/*
 * The stub cuSPARSE's operations (see libcusparse_stub.c): SpMV, SpMM and SDDMM with their
 * size queries and preprocessing, the multi-phase SpGEMM, and the dense/sparse conversions,
 * computed on the CPU in double. Each checks its handle, stream and current context, its
 * descriptors, every range and index it touches, and its work area.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_stub.h"
#include "stub.h"

#include "libcusparse_stub.h"

struct spgemm {
    struct sp_object head;
    int estimated;
    int64_t nnz;
    struct sp_entry *product; /* (row, column), the value in `values` */
    double *values;
};

static void put_index(int itype, void *base, int64_t i, int64_t value) {
    if (itype == SP_I64)
        ((int64_t *)base)[i] = value;
    else
        ((int32_t *)base)[i] = (int32_t)value;
}

/* Element (i, j) of op(A) of a dense matrix. */
static double dense(const struct sp_dnmat *m, int op, int64_t i, int64_t j) {
    return op ? sp_get(m->vtype, m->values, sp_at(m, j, i)) : sp_get(m->vtype, m->values,
                                                                     sp_at(m, i, j));
}

static int scalar_type_ok(int vtype, int compute) { return vtype == compute; }

/* ---- SpMV ---- */

static int spmv(const char *api, void *handle, int op, const void *alpha, void *a, void *x,
                const void *beta, void *y, int compute, void *buffer, int query, size_t *size) {
    struct sp_mat *A = sp_find(a, SP_SPMAT, api);
    struct sp_dnvec *X = sp_find(x, SP_DNVEC, api), *Y = sp_find(y, SP_DNVEC, api);
    if (sp_enter(handle, api) == NULL || A == NULL || X == NULL || Y == NULL)
        return SP_INVALID;
    if (A->format == SP_ELL || op > 1)
        return SP_NOT_SUPPORTED;
    int64_t m = op ? A->cols : A->rows, k = op ? A->rows : A->cols;
    if (X->size != k || Y->size != m || X->vtype != A->vtype || Y->vtype != A->vtype ||
        !scalar_type_ok(A->vtype, compute)) {
        stub_misuse_note("%s: op(A) %lld x %lld, x %lld, y %lld", api, (long long)m,
                         (long long)k, (long long)X->size, (long long)Y->size);
        return SP_INVALID;
    }
    if (query) {
        *size = sp_buffer_size();
        return SP_OK;
    }
    if (!sp_buffer_ok(buffer, api) || !sp_prepared_ok(A, buffer, api))
        return SP_INVALID;
    size_t vsz = sp_value_size(A->vtype);
    if (!sp_range(X->values, (size_t)k * vsz, api) || !sp_range(Y->values, (size_t)m * vsz, api))
        return SP_INVALID;
    int64_t count;
    struct sp_entry *e = sp_entries(A, &count, api);
    if (e == NULL)
        return SP_INVALID;
    double al = sp_get(compute, alpha, 0), be = sp_get(compute, beta, 0);
    double *acc = calloc((size_t)m + 1, sizeof *acc);
    for (int64_t n = 0; n < count; n++) {
        int64_t row = op ? e[n].col : e[n].row, col = op ? e[n].row : e[n].col;
        acc[row] += sp_get(A->vtype, A->values, e[n].at) * sp_get(X->vtype, X->values, col);
    }
    for (int64_t i = 0; i < m; i++) {
        double old = be == 0 ? 0 : be * sp_get(Y->vtype, Y->values, i);
        sp_put(Y->vtype, Y->values, i, al * acc[i] + old);
    }
    free(acc);
    free(e);
    return SP_OK;
}

int cusparseSpMV_bufferSize(void *h, int op, const void *alpha, void *a, void *x,
                            const void *beta, void *y, int compute, int alg, size_t *size) {
    ENTER("cusparseSpMV_bufferSize");
    (void)alg;
    return spmv("cusparseSpMV_bufferSize", h, op, alpha, a, x, beta, y, compute, NULL, 1, size);
}

int cusparseSpMV(void *h, int op, const void *alpha, void *a, void *x, const void *beta, void *y,
                 int compute, int alg, void *buffer) {
    ENTER("cusparseSpMV");
    (void)alg;
    return spmv("cusparseSpMV", h, op, alpha, a, x, beta, y, compute, buffer, 0, NULL);
}

int cusparseSpMV_preprocess(void *h, int op, const void *alpha, void *a, void *x,
                            const void *beta, void *y, int compute, int alg, void *buffer) {
    const char *api = "cusparseSpMV_preprocess";
    ENTER("cusparseSpMV_preprocess");
    size_t size;
    (void)alg;
    int checked = spmv(api, h, op, alpha, a, x, beta, y, compute, NULL, 1, &size);
    if (checked != SP_OK || !sp_buffer_ok(buffer, api))
        return checked != SP_OK ? checked : SP_INVALID;
    ((struct sp_mat *)a)->prepared = buffer;
    return SP_OK;
}

/* ---- SpMM ---- */

static int spmm(const char *api, void *handle, int op_a, int op_b, const void *alpha, void *a,
                void *b, const void *beta, void *c, int compute, void *buffer, int query,
                size_t *size) {
    struct sp_mat *A = sp_find(a, SP_SPMAT, api);
    struct sp_dnmat *B = sp_find(b, SP_DNMAT, api), *C = sp_find(c, SP_DNMAT, api);
    if (sp_enter(handle, api) == NULL || A == NULL || B == NULL || C == NULL)
        return SP_INVALID;
    if (op_a > 1 || op_b > 1)
        return SP_NOT_SUPPORTED;
    int64_t m = op_a ? A->cols : A->rows, k = op_a ? A->rows : A->cols;
    int64_t kb = op_b ? B->cols : B->rows, n = op_b ? B->rows : B->cols;
    if (k != kb || C->rows != m || C->cols != n || B->vtype != A->vtype ||
        C->vtype != A->vtype || !scalar_type_ok(A->vtype, compute)) {
        stub_misuse_note("%s: op(A) %lld x %lld, op(B) %lld x %lld, C %lld x %lld", api,
                         (long long)m, (long long)k, (long long)kb, (long long)n,
                         (long long)C->rows, (long long)C->cols);
        return SP_INVALID;
    }
    if (query) {
        *size = sp_buffer_size();
        return SP_OK;
    }
    if (!sp_buffer_ok(buffer, api) || !sp_prepared_ok(A, buffer, api) || !sp_dense_ok(B, api) ||
        !sp_dense_ok(C, api))
        return SP_INVALID;
    int64_t count;
    struct sp_entry *e = sp_entries(A, &count, api);
    if (e == NULL)
        return SP_INVALID;
    double al = sp_get(compute, alpha, 0), be = sp_get(compute, beta, 0);
    double *acc = calloc((size_t)(m * n) + 1, sizeof *acc);
    for (int64_t q = 0; q < count; q++) {
        int64_t row = op_a ? e[q].col : e[q].row, mid = op_a ? e[q].row : e[q].col;
        double v = sp_get(A->vtype, A->values, e[q].at);
        for (int64_t j = 0; j < n; j++)
            acc[row * n + j] += v * dense(B, op_b, mid, j);
    }
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            int64_t at = sp_at(C, i, j);
            double old = be == 0 ? 0 : be * sp_get(C->vtype, C->values, at);
            sp_put(C->vtype, C->values, at, al * acc[i * n + j] + old);
        }
    free(acc);
    free(e);
    return SP_OK;
}

int cusparseSpMM_bufferSize(void *h, int op_a, int op_b, const void *alpha, void *a, void *b,
                            const void *beta, void *c, int compute, int alg, size_t *size) {
    ENTER("cusparseSpMM_bufferSize");
    (void)alg;
    return spmm("cusparseSpMM_bufferSize", h, op_a, op_b, alpha, a, b, beta, c, compute, NULL, 1,
                size);
}

int cusparseSpMM(void *h, int op_a, int op_b, const void *alpha, void *a, void *b,
                 const void *beta, void *c, int compute, int alg, void *buffer) {
    ENTER("cusparseSpMM");
    (void)alg;
    return spmm("cusparseSpMM", h, op_a, op_b, alpha, a, b, beta, c, compute, buffer, 0, NULL);
}

int cusparseSpMM_preprocess(void *h, int op_a, int op_b, const void *alpha, void *a, void *b,
                            const void *beta, void *c, int compute, int alg, void *buffer) {
    const char *api = "cusparseSpMM_preprocess";
    ENTER("cusparseSpMM_preprocess");
    size_t size;
    (void)alg;
    int checked = spmm(api, h, op_a, op_b, alpha, a, b, beta, c, compute, NULL, 1, &size);
    if (checked != SP_OK || !sp_buffer_ok(buffer, api))
        return checked != SP_OK ? checked : SP_INVALID;
    ((struct sp_mat *)a)->prepared = buffer;
    return SP_OK;
}

/* ---- SDDMM ---- */

static int sddmm(const char *api, void *handle, int op_a, int op_b, const void *alpha, void *a,
                 void *b, const void *beta, void *c, int compute, void *buffer, int query,
                 size_t *size) {
    struct sp_dnmat *A = sp_find(a, SP_DNMAT, api), *B = sp_find(b, SP_DNMAT, api);
    struct sp_mat *C = sp_find(c, SP_SPMAT, api);
    if (sp_enter(handle, api) == NULL || A == NULL || B == NULL || C == NULL)
        return SP_INVALID;
    if (C->format != SP_CSR || op_a > 1 || op_b > 1)
        return SP_NOT_SUPPORTED;
    int64_t m = op_a ? A->cols : A->rows, k = op_a ? A->rows : A->cols;
    int64_t kb = op_b ? B->cols : B->rows, n = op_b ? B->rows : B->cols;
    if (k != kb || C->rows != m || C->cols != n || !scalar_type_ok(C->vtype, compute)) {
        stub_misuse_note("%s: shapes that do not match", api);
        return SP_INVALID;
    }
    if (query) {
        *size = sp_buffer_size();
        return SP_OK;
    }
    if (!sp_buffer_ok(buffer, api) || !sp_dense_ok(A, api) || !sp_dense_ok(B, api))
        return SP_INVALID;
    int64_t count;
    struct sp_entry *e = sp_entries(C, &count, api);
    if (e == NULL)
        return SP_INVALID;
    double al = sp_get(compute, alpha, 0), be = sp_get(compute, beta, 0);
    for (int64_t q = 0; q < count; q++) {
        double dot = 0;
        for (int64_t l = 0; l < k; l++)
            dot += dense(A, op_a, e[q].row, l) * dense(B, op_b, l, e[q].col);
        double old = be == 0 ? 0 : be * sp_get(C->vtype, C->values, e[q].at);
        sp_put(C->vtype, C->values, e[q].at, al * dot + old);
    }
    free(e);
    return SP_OK;
}

int cusparseSDDMM_bufferSize(void *h, int op_a, int op_b, const void *alpha, void *a, void *b,
                             const void *beta, void *c, int compute, int alg, size_t *size) {
    ENTER("cusparseSDDMM_bufferSize");
    (void)alg;
    return sddmm("cusparseSDDMM_bufferSize", h, op_a, op_b, alpha, a, b, beta, c, compute, NULL,
                 1, size);
}

int cusparseSDDMM(void *h, int op_a, int op_b, const void *alpha, void *a, void *b,
                  const void *beta, void *c, int compute, int alg, void *buffer) {
    ENTER("cusparseSDDMM");
    (void)alg;
    return sddmm("cusparseSDDMM", h, op_a, op_b, alpha, a, b, beta, c, compute, buffer, 0, NULL);
}

/* ---- SpGEMM ---- */

int cusparseSpGEMM_createDescr(void **descr) {
    ENTER("cusparseSpGEMM_createDescr");
    *descr = sp_make_spgemm(sizeof(struct spgemm));
    return SP_OK;
}

int cusparseSpGEMM_destroyDescr(void *descr) {
    ENTER("cusparseSpGEMM_destroyDescr");
    struct spgemm *g = sp_find(descr, SP_SPGEMM, "cusparseSpGEMM_destroyDescr");
    if (g == NULL)
        return SP_INVALID;
    free(g->product);
    free(g->values);
    g->product = NULL;
    g->values = NULL;
    return sp_destroy(descr, SP_SPGEMM, "cusparseSpGEMM_destroyDescr");
}

/* Checks an SpGEMM phase's operands; the product's shapes. */
static int spgemm_args(const char *api, void *handle, int op_a, int op_b, void *a, void *b,
                       void *c, int compute, void *descr, struct sp_mat **A, struct sp_mat **B,
                       struct sp_mat **C, struct spgemm **G) {
    *A = sp_find(a, SP_SPMAT, api);
    *B = sp_find(b, SP_SPMAT, api);
    *C = sp_find(c, SP_SPMAT, api);
    *G = sp_find(descr, SP_SPGEMM, api);
    if (sp_enter(handle, api) == NULL || !*A || !*B || !*C || !*G)
        return SP_INVALID;
    if (op_a != 0 || op_b != 0 || (*A)->format != SP_CSR || (*B)->format != SP_CSR)
        return SP_NOT_SUPPORTED;
    if ((*A)->cols != (*B)->rows || (*C)->rows != (*A)->rows || (*C)->cols != (*B)->cols ||
        !scalar_type_ok((*A)->vtype, compute)) {
        stub_misuse_note("%s: shapes that do not match", api);
        return SP_INVALID;
    }
    return SP_OK;
}

int cusparseSpGEMM_workEstimation(void *h, int op_a, int op_b, const void *alpha, void *a,
                                  void *b, const void *beta, void *c, int compute, int alg,
                                  void *descr, size_t *size, void *buffer) {
    const char *api = "cusparseSpGEMM_workEstimation";
    ENTER("cusparseSpGEMM_workEstimation");
    struct sp_mat *A, *B, *C;
    struct spgemm *G;
    (void)alpha, (void)beta, (void)alg;
    int checked = spgemm_args(api, h, op_a, op_b, a, b, c, compute, descr, &A, &B, &C, &G);
    if (checked != SP_OK)
        return checked;
    if (buffer == NULL) {
        *size = sp_buffer_size();
        return SP_OK;
    }
    if (*size < sp_buffer_size() || !sp_range(buffer, *size, api))
        return SP_INVALID;
    G->estimated = 1;
    return SP_OK;
}

int cusparseSpGEMM_compute(void *h, int op_a, int op_b, const void *alpha, void *a, void *b,
                           const void *beta, void *c, int compute, int alg, void *descr,
                           size_t *size, void *buffer) {
    const char *api = "cusparseSpGEMM_compute";
    ENTER("cusparseSpGEMM_compute");
    struct sp_mat *A, *B, *C;
    struct spgemm *G;
    (void)beta, (void)alg;
    int checked = spgemm_args(api, h, op_a, op_b, a, b, c, compute, descr, &A, &B, &C, &G);
    if (checked != SP_OK)
        return checked;
    if (!G->estimated) {
        stub_misuse_note("%s before the work estimation", api);
        return SP_INVALID;
    }
    if (buffer == NULL) {
        *size = sp_buffer_size();
        return SP_OK;
    }
    if (*size < sp_buffer_size() || !sp_range(buffer, *size, api))
        return SP_INVALID;
    int64_t na, nb;
    struct sp_entry *ea = sp_entries(A, &na, api), *eb = sp_entries(B, &nb, api);
    if (ea == NULL || eb == NULL) {
        free(ea);
        free(eb);
        return SP_INVALID;
    }
    int64_t m = A->rows, n = B->cols;
    double *row = calloc((size_t)n + 1, sizeof *row);
    char *hit = calloc((size_t)n + 1, 1);
    free(G->product);
    free(G->values);
    G->product = calloc((size_t)(m * n) + 1, sizeof *G->product);
    G->values = calloc((size_t)(m * n) + 1, sizeof *G->values);
    G->nnz = 0;
    double al = sp_get(compute, alpha, 0);
    for (int64_t i = 0; i < m; i++) {
        memset(row, 0, (size_t)n * sizeof *row);
        memset(hit, 0, (size_t)n);
        for (int64_t p = 0; p < na; p++) {
            if (ea[p].row != i)
                continue;
            for (int64_t q = 0; q < nb; q++)
                if (eb[q].row == ea[p].col) {
                    row[eb[q].col] += sp_get(A->vtype, A->values, ea[p].at) *
                                      sp_get(B->vtype, B->values, eb[q].at);
                    hit[eb[q].col] = 1;
                }
        }
        for (int64_t j = 0; j < n; j++)
            if (hit[j]) {
                G->product[G->nnz] = (struct sp_entry){i, j, G->nnz};
                G->values[G->nnz++] = al * row[j];
            }
    }
    C->nnz = G->nnz;
    free(row);
    free(hit);
    free(ea);
    free(eb);
    return SP_OK;
}

int cusparseSpGEMM_copy(void *h, int op_a, int op_b, const void *alpha, void *a, void *b,
                        const void *beta, void *c, int compute, int alg, void *descr) {
    const char *api = "cusparseSpGEMM_copy";
    ENTER("cusparseSpGEMM_copy");
    struct sp_mat *A, *B, *C;
    struct spgemm *G;
    (void)alpha, (void)beta, (void)alg;
    int checked = spgemm_args(api, h, op_a, op_b, a, b, c, compute, descr, &A, &B, &C, &G);
    if (checked != SP_OK)
        return checked;
    if (G->product == NULL) {
        stub_misuse_note("%s before the compute phase", api);
        return SP_INVALID;
    }
    size_t isz = C->itype == SP_I64 ? 8 : 4;
    if (!sp_range(C->p0, (size_t)(C->rows + 1) * isz, api) ||
        !sp_range(C->p1, (size_t)G->nnz * isz, api) ||
        !sp_range(C->values, (size_t)G->nnz * sp_value_size(C->vtype), api))
        return SP_INVALID;
    int64_t e = 0;
    for (int64_t i = 0; i <= C->rows; i++) {
        while (e < G->nnz && G->product[e].row < i)
            e++;
        put_index(C->itype, C->p0, i, e);
    }
    for (int64_t q = 0; q < G->nnz; q++) {
        put_index(C->itype, C->p1, q, G->product[q].col);
        sp_put(C->vtype, C->values, q, G->values[q]);
    }
    return SP_OK;
}

/* ---- conversions ---- */

static int d2s_args(const char *api, void *handle, void *a, void *b, struct sp_dnmat **A,
                    struct sp_mat **B) {
    *A = sp_find(a, SP_DNMAT, api);
    *B = sp_find(b, SP_SPMAT, api);
    if (sp_enter(handle, api) == NULL || !*A || !*B)
        return SP_INVALID;
    if ((*B)->format != SP_CSR)
        return SP_NOT_SUPPORTED;
    if ((*A)->rows != (*B)->rows || (*A)->cols != (*B)->cols || (*A)->vtype != (*B)->vtype) {
        stub_misuse_note("%s: shapes that do not match", api);
        return SP_INVALID;
    }
    return sp_dense_ok(*A, api) ? SP_OK : SP_INVALID;
}

int cusparseDenseToSparse_bufferSize(void *h, void *a, void *b, int alg, size_t *size) {
    struct sp_dnmat *A;
    struct sp_mat *B;
    ENTER("cusparseDenseToSparse_bufferSize");
    (void)alg;
    int checked = d2s_args("cusparseDenseToSparse_bufferSize", h, a, b, &A, &B);
    if (checked == SP_OK)
        *size = sp_buffer_size();
    return checked;
}

int cusparseDenseToSparse_analysis(void *h, void *a, void *b, int alg, void *buffer) {
    const char *api = "cusparseDenseToSparse_analysis";
    struct sp_dnmat *A;
    struct sp_mat *B;
    ENTER("cusparseDenseToSparse_analysis");
    (void)alg;
    int checked = d2s_args(api, h, a, b, &A, &B);
    if (checked != SP_OK)
        return checked;
    size_t isz = B->itype == SP_I64 ? 8 : 4;
    if (!sp_buffer_ok(buffer, api) || !sp_range(B->p0, (size_t)(B->rows + 1) * isz, api))
        return SP_INVALID;
    int64_t nnz = 0;
    put_index(B->itype, B->p0, 0, 0);
    for (int64_t i = 0; i < A->rows; i++) {
        for (int64_t j = 0; j < A->cols; j++)
            nnz += dense(A, 0, i, j) != 0;
        put_index(B->itype, B->p0, i + 1, nnz);
    }
    B->nnz = nnz;
    return SP_OK;
}

int cusparseDenseToSparse_convert(void *h, void *a, void *b, int alg, void *buffer) {
    const char *api = "cusparseDenseToSparse_convert";
    struct sp_dnmat *A;
    struct sp_mat *B;
    ENTER("cusparseDenseToSparse_convert");
    (void)alg;
    int checked = d2s_args(api, h, a, b, &A, &B);
    if (checked != SP_OK)
        return checked;
    size_t isz = B->itype == SP_I64 ? 8 : 4;
    if (!sp_buffer_ok(buffer, api) || !sp_range(B->p1, (size_t)B->nnz * isz, api) ||
        !sp_range(B->values, (size_t)B->nnz * sp_value_size(B->vtype), api))
        return SP_INVALID;
    int64_t e = 0;
    for (int64_t i = 0; i < A->rows; i++)
        for (int64_t j = 0; j < A->cols; j++) {
            double v = dense(A, 0, i, j);
            if (v == 0)
                continue;
            if (e >= B->nnz) {
                stub_misuse_note("%s: more elements than the analysis counted", api);
                return SP_INVALID;
            }
            put_index(B->itype, B->p1, e, j);
            sp_put(B->vtype, B->values, e++, v);
        }
    return SP_OK;
}

static int s2d(const char *api, void *handle, void *a, void *b, void *buffer, int query,
               size_t *size) {
    struct sp_mat *A = sp_find(a, SP_SPMAT, api);
    struct sp_dnmat *B = sp_find(b, SP_DNMAT, api);
    if (sp_enter(handle, api) == NULL || A == NULL || B == NULL)
        return SP_INVALID;
    if (A->format == SP_ELL)
        return SP_NOT_SUPPORTED;
    if (A->rows != B->rows || A->cols != B->cols || A->vtype != B->vtype) {
        stub_misuse_note("%s: shapes that do not match", api);
        return SP_INVALID;
    }
    if (query) {
        *size = sp_buffer_size();
        return SP_OK;
    }
    if (!sp_buffer_ok(buffer, api) || !sp_dense_ok(B, api))
        return SP_INVALID;
    int64_t count;
    struct sp_entry *e = sp_entries(A, &count, api);
    if (e == NULL)
        return SP_INVALID;
    for (int64_t i = 0; i < B->rows; i++)
        for (int64_t j = 0; j < B->cols; j++)
            sp_put(B->vtype, B->values, sp_at(B, i, j), 0);
    for (int64_t q = 0; q < count; q++) {
        int64_t at = sp_at(B, e[q].row, e[q].col);
        sp_put(B->vtype, B->values, at,
               sp_get(B->vtype, B->values, at) + sp_get(A->vtype, A->values, e[q].at));
    }
    free(e);
    return SP_OK;
}

int cusparseSparseToDense_bufferSize(void *h, void *a, void *b, int alg, size_t *size) {
    ENTER("cusparseSparseToDense_bufferSize");
    (void)alg;
    return s2d("cusparseSparseToDense_bufferSize", h, a, b, NULL, 1, size);
}

int cusparseSparseToDense(void *h, void *a, void *b, int alg, void *buffer) {
    ENTER("cusparseSparseToDense");
    (void)alg;
    return s2d("cusparseSparseToDense", h, a, b, buffer, 0, NULL);
}
