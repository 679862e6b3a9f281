/*
 * A fake cuSPARSE (generic API) for CPU tests of cuda-safe-libs's sparse module, compiled into
 * the stub driver's shared object and loaded through CUDA_SAFE_LIBCUSPARSE. Handles and
 * descriptors are the stub's own objects (never freed, so one used after its destroy is noted
 * as a misuse); the operations compute on the CPU, in double, on f32 or f64 values, over the
 * driver's memory, which is host memory: SpMV, SpMM, SDDMM, SpGEMM and the dense/sparse
 * conversions. Every range an operation reads or writes is checked against the driver's
 * allocations (a range past one is a misuse, the CPU's GPU fault), every index against its
 * matrix (an index out of range is a misuse: a GPU would read or write outside the operands),
 * the work areas against what the size queries asked for, and the handle's stream and the
 * current context. A matrix preprocessed with a buffer must be used with that buffer after.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_stub.h"
#include "stub.h"

#include "libcusparse_stub.h"

static long live[SP_KINDS];
static long long forced_buffer = -1;

/* Live objects by kind: "handle", "spmat", "dnmat", "dnvec", "spgemm". */
long long sparse_stub_live(const char *kind) {
    static const char *const names[SP_KINDS] = {"handle", "spmat", "dnmat", "dnvec", "spgemm"};
    for (int k = 0; k < SP_KINDS; k++)
        if (strcmp(kind, names[k]) == 0)
            return live[k];
    return -1;
}

/* Makes the size queries answer `bytes` (-1: the default, 256 bytes). */
void sparse_stub_set_buffer_size(long long bytes) { forced_buffer = bytes; }

size_t sp_buffer_size(void) { return forced_buffer >= 0 ? (size_t)forced_buffer : 256; }

static void *make_object(enum sp_kind kind, size_t size);

void *sp_make_spgemm(size_t size) { return make_object(SP_SPGEMM, size); }

static void *make_object(enum sp_kind kind, size_t size) {
    struct sp_object *object = calloc(1, size);
    object->magic = SP_MAGIC;
    object->kind = kind;
    object->alive = 1;
    live[kind]++;
    return object;
}

void *sp_find(const void *object, enum sp_kind kind, const char *api) {
    const struct sp_object *head = object;
    if (head == NULL || head->magic != SP_MAGIC || head->kind != (int)kind || !head->alive) {
        stub_misuse_note("%s: %p is not a live cuSPARSE object of kind %d", api, object, kind);
        return NULL;
    }
    return (void *)object;
}

int sp_destroy(void *object, enum sp_kind kind, const char *api) {
    struct sp_object *head = sp_find(object, kind, api);
    if (head == NULL)
        return SP_INVALID;
    head->alive = 0;
    live[kind]--;
    return SP_OK;
}

int sp_range(const void *ptr, size_t bytes, const char *api) {
    return bytes == 0 || check_range((CUdeviceptr)(uintptr_t)ptr, bytes, 0, api) == CUDA_SUCCESS;
}

size_t sp_value_size(int type) { return type == SP_R64F ? 8 : 4; }

double sp_get(int type, const void *base, int64_t i) {
    return type == SP_R64F ? ((const double *)base)[i] : ((const float *)base)[i];
}

void sp_put(int type, void *base, int64_t i, double value) {
    if (type == SP_R64F)
        ((double *)base)[i] = value;
    else
        ((float *)base)[i] = (float)value;
}

int64_t sp_index(int itype, const void *base, int64_t i) {
    return itype == SP_I64 ? ((const int64_t *)base)[i] : ((const int32_t *)base)[i];
}

static int types_ok(int itype, int vtype, const char *api) {
    if (itype != SP_I32 && itype != SP_I64)
        return 0;
    (void)api;
    return vtype == SP_R32F || vtype == SP_R64F;
}

/* ---- handles ---- */

int cusparseCreate(void **handle) {
    ENTER("cusparseCreate");
    if (need_current("cusparseCreate") != CUDA_SUCCESS)
        return SP_NOT_INITIALIZED;
    *handle = make_object(SP_HANDLE, sizeof(struct sp_handle));
    return SP_OK;
}

int cusparseDestroy(void *handle) {
    ENTER("cusparseDestroy");
    return sp_destroy(handle, SP_HANDLE, "cusparseDestroy");
}

int cusparseSetStream(void *handle, void *stream) {
    ENTER("cusparseSetStream");
    struct sp_handle *h = sp_find(handle, SP_HANDLE, "cusparseSetStream");
    if (h == NULL || stream_context(stream, "cusparseSetStream") == NULL)
        return SP_INVALID;
    h->stream = stream;
    return SP_OK;
}

int cusparseGetVersion(void *handle, int *version) {
    ENTER("cusparseGetVersion");
    if (sp_find(handle, SP_HANDLE, "cusparseGetVersion") == NULL)
        return SP_INVALID;
    *version = 12500;
    return SP_OK;
}

struct sp_handle *sp_enter(void *handle, const char *api) {
    struct sp_handle *h = sp_find(handle, SP_HANDLE, api);
    if (h == NULL || need_current(api) != CUDA_SUCCESS || stream_context(h->stream, api) == NULL)
        return NULL;
    return h;
}

/* ---- descriptors ---- */

static int make_spmat(void **descr, int format, int64_t rows, int64_t cols, int64_t nnz,
                      void *p0, void *p1, void *values, int itype, int vtype) {
    if (rows < 0 || cols < 0 || nnz < 0 || !types_ok(itype, vtype, "cusparseCreate*"))
        return rows < 0 || cols < 0 || nnz < 0 ? SP_INVALID : SP_NOT_SUPPORTED;
    struct sp_mat *m = make_object(SP_SPMAT, sizeof *m);
    m->format = format;
    m->rows = rows;
    m->cols = cols;
    m->nnz = nnz;
    m->p0 = p0;
    m->p1 = p1;
    m->values = values;
    m->itype = itype;
    m->vtype = vtype;
    *descr = m;
    return SP_OK;
}

int cusparseCreateCsr(void **descr, int64_t rows, int64_t cols, int64_t nnz, void *offsets,
                      void *columns, void *values, int otype, int ctype, int base, int vtype) {
    ENTER("cusparseCreateCsr");
    if (otype != ctype || base != 0)
        return SP_NOT_SUPPORTED;
    return make_spmat(descr, SP_CSR, rows, cols, nnz, offsets, columns, values, otype, vtype);
}

int cusparseCreateCoo(void **descr, int64_t rows, int64_t cols, int64_t nnz, void *row_ind,
                      void *col_ind, void *values, int itype, int base, int vtype) {
    ENTER("cusparseCreateCoo");
    if (base != 0)
        return SP_NOT_SUPPORTED;
    return make_spmat(descr, SP_COO, rows, cols, nnz, row_ind, col_ind, values, itype, vtype);
}

int cusparseCreateBlockedEll(void **descr, int64_t rows, int64_t cols, int64_t block,
                             int64_t ell_cols, void *col_ind, void *values, int itype, int base,
                             int vtype) {
    ENTER("cusparseCreateBlockedEll");
    if (base != 0 || block <= 0 || rows % block || cols % block || ell_cols % block)
        return SP_INVALID;
    int made = make_spmat(descr, SP_ELL, rows, cols, rows * ell_cols, NULL, col_ind, values,
                          itype, vtype);
    if (made == SP_OK) {
        ((struct sp_mat *)*descr)->block = block;
        ((struct sp_mat *)*descr)->ell_cols = ell_cols;
    }
    return made;
}

int cusparseDestroySpMat(void *descr) {
    ENTER("cusparseDestroySpMat");
    return sp_destroy(descr, SP_SPMAT, "cusparseDestroySpMat");
}

int cusparseSpMatGetSize(void *descr, int64_t *rows, int64_t *cols, int64_t *nnz) {
    ENTER("cusparseSpMatGetSize");
    struct sp_mat *m = sp_find(descr, SP_SPMAT, "cusparseSpMatGetSize");
    if (m == NULL)
        return SP_INVALID;
    *rows = m->rows;
    *cols = m->cols;
    *nnz = m->nnz;
    return SP_OK;
}

int cusparseCsrSetPointers(void *descr, void *offsets, void *columns, void *values) {
    ENTER("cusparseCsrSetPointers");
    struct sp_mat *m = sp_find(descr, SP_SPMAT, "cusparseCsrSetPointers");
    if (m == NULL || m->format != SP_CSR)
        return SP_INVALID;
    m->p0 = offsets;
    m->p1 = columns;
    m->values = values;
    return SP_OK;
}

int cusparseCreateDnMat(void **descr, int64_t rows, int64_t cols, int64_t ld, void *values,
                        int vtype, int order) {
    ENTER("cusparseCreateDnMat");
    int64_t inner = order == SP_ORDER_ROW ? cols : rows;
    if (rows < 0 || cols < 0 || ld < (inner > 1 ? inner : 1))
        return SP_INVALID;
    if (!types_ok(SP_I32, vtype, "cusparseCreateDnMat"))
        return SP_NOT_SUPPORTED;
    struct sp_dnmat *m = make_object(SP_DNMAT, sizeof *m);
    m->rows = rows;
    m->cols = cols;
    m->ld = ld;
    m->values = values;
    m->vtype = vtype;
    m->order = order;
    *descr = m;
    return SP_OK;
}

int cusparseDestroyDnMat(void *descr) {
    ENTER("cusparseDestroyDnMat");
    return sp_destroy(descr, SP_DNMAT, "cusparseDestroyDnMat");
}

int cusparseCreateDnVec(void **descr, int64_t size, void *values, int vtype) {
    ENTER("cusparseCreateDnVec");
    if (size < 0)
        return SP_INVALID;
    if (!types_ok(SP_I32, vtype, "cusparseCreateDnVec"))
        return SP_NOT_SUPPORTED;
    struct sp_dnvec *v = make_object(SP_DNVEC, sizeof *v);
    v->size = size;
    v->values = values;
    v->vtype = vtype;
    *descr = v;
    return SP_OK;
}

int cusparseDestroyDnVec(void *descr) {
    ENTER("cusparseDestroyDnVec");
    return sp_destroy(descr, SP_DNVEC, "cusparseDestroyDnVec");
}

/* ---- reading operands ---- */

/* The stored elements of `m` as (row, column, value) triplets (freed by the caller), every
 * range and index checked; NULL (a misuse noted) when one is wrong. *count gets how many. */
struct sp_entry *sp_entries(const struct sp_mat *m, int64_t *count, const char *api) {
    size_t isz = m->itype == SP_I64 ? 8 : 4, vsz = sp_value_size(m->vtype);
    size_t nnz = (size_t)m->nnz;
    struct sp_entry *out = calloc(nnz + 1, sizeof *out);
    int64_t n = 0;
    if (m->format == SP_CSR) {
        if (!sp_range(m->p0, (size_t)(m->rows + 1) * isz, api) || !sp_range(m->p1, nnz * isz, api) ||
            !sp_range(m->values, nnz * vsz, api))
            goto bad;
        for (int64_t r = 0; r < m->rows; r++) {
            int64_t start = sp_index(m->itype, m->p0, r), end = sp_index(m->itype, m->p0, r + 1);
            if (start < 0 || end < start || end > m->nnz) {
                stub_misuse_note("%s: CSR row %lld spans %lld..%lld of %lld", api, (long long)r,
                                 (long long)start, (long long)end, (long long)m->nnz);
                goto bad;
            }
            for (int64_t e = start; e < end; e++)
                out[n++] = (struct sp_entry){r, sp_index(m->itype, m->p1, e), e};
        }
    } else if (m->format == SP_COO) {
        if (!sp_range(m->p0, nnz * isz, api) || !sp_range(m->p1, nnz * isz, api) ||
            !sp_range(m->values, nnz * vsz, api))
            goto bad;
        for (int64_t e = 0; e < m->nnz; e++)
            out[n++] = (struct sp_entry){sp_index(m->itype, m->p0, e),
                                         sp_index(m->itype, m->p1, e), e};
    } else {
        int64_t b = m->block, per_row = m->ell_cols / b;
        if (!sp_range(m->p1, (size_t)(m->rows / b * per_row) * isz, api) ||
            !sp_range(m->values, nnz * vsz, api))
            goto bad;
        for (int64_t br = 0; br < m->rows / b; br++)
            for (int64_t k = 0; k < per_row; k++) {
                int64_t bc = sp_index(m->itype, m->p1, br * per_row + k);
                if (bc == -1)
                    continue;
                for (int64_t i = 0; i < b; i++)
                    for (int64_t j = 0; j < b; j++)
                        out[n++] = (struct sp_entry){br * b + i, bc * b + j,
                                                     (br * b + i) * m->ell_cols + k * b + j};
            }
    }
    for (int64_t e = 0; e < n; e++)
        if (out[e].row < 0 || out[e].row >= m->rows || out[e].col < 0 || out[e].col >= m->cols) {
            stub_misuse_note("%s: element (%lld, %lld) outside a %lld x %lld matrix", api,
                             (long long)out[e].row, (long long)out[e].col, (long long)m->rows,
                             (long long)m->cols);
            goto bad;
        }
    *count = n;
    return out;
bad:
    free(out);
    return NULL;
}

/* The index of element (i, j) of a dense matrix. */
int64_t sp_at(const struct sp_dnmat *m, int64_t i, int64_t j) {
    return m->order == SP_ORDER_ROW ? i * m->ld + j : i + j * m->ld;
}

int sp_dense_ok(const struct sp_dnmat *m, const char *api) {
    int64_t outer = m->order == SP_ORDER_ROW ? m->rows : m->cols;
    int64_t inner = m->order == SP_ORDER_ROW ? m->cols : m->rows;
    if (outer == 0 || inner == 0)
        return 1;
    return sp_range(m->values, (size_t)((outer - 1) * m->ld + inner) * sp_value_size(m->vtype),
                    api);
}

/* Checks an operation's work area: at least what the size query asked for, in one
 * allocation. */
int sp_buffer_ok(const void *buffer, const char *api) {
    size_t need = sp_buffer_size();
    if (need == 0)
        return 1;
    if (buffer == NULL) {
        stub_misuse_note("%s: no work area, %zu bytes asked for", api, need);
        return 0;
    }
    return sp_range(buffer, need, api);
}

/* Checks that a matrix preprocessed with a buffer is used with it, still allocated. */
int sp_prepared_ok(const struct sp_mat *m, const void *buffer, const char *api) {
    if (m->prepared == NULL)
        return 1;
    if (m->prepared != buffer) {
        stub_misuse_note("%s: a matrix preprocessed with %p is used with %p", api, m->prepared,
                         buffer);
        return 0;
    }
    return sp_range(buffer, sp_buffer_size(), api);
}
