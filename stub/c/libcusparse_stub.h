/*
 * What the stub's cuSPARSE (libcusparse_stub.c: handles, descriptors, reading operands) and
 * its operations (libcusparse_ops_stub.c: SpMV, SpMM, SDDMM, SpGEMM, conversions) share.
 */
#ifndef CUDA_SAFE_LIBCUSPARSE_STUB_H
#define CUDA_SAFE_LIBCUSPARSE_STUB_H

#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

/* cusparseStatus_t values the stub answers. */
enum { SP_OK = 0, SP_NOT_INITIALIZED = 1, SP_INVALID = 3, SP_NOT_SUPPORTED = 10 };
/* cudaDataType, cusparseIndexType_t, cusparseFormat_t and cusparseOrder_t values. */
enum { SP_R32F = 0, SP_R64F = 1, SP_I32 = 2, SP_I64 = 3 };
enum { SP_CSR = 1, SP_COO = 3, SP_ELL = 5 };
enum { SP_ORDER_COL = 1, SP_ORDER_ROW = 2 };

enum sp_kind { SP_HANDLE, SP_SPMAT, SP_DNMAT, SP_DNVEC, SP_SPGEMM, SP_KINDS };
enum { SP_MAGIC = 0x5ba25e };

struct sp_object {
    int magic, kind, alive;
};

struct sp_handle {
    struct sp_object head;
    void *stream;
};

struct sp_mat {
    struct sp_object head;
    int format, itype, vtype;
    int64_t rows, cols, nnz, block, ell_cols;
    /* CSR: offsets, columns; COO: rows, columns; blocked ELL: -, block columns. */
    void *p0, *p1, *values;
    /* The buffer an SpMV or SpMM preprocessed it with. */
    void *prepared;
};

struct sp_dnmat {
    struct sp_object head;
    int64_t rows, cols, ld;
    void *values;
    int vtype, order;
};

struct sp_dnvec {
    struct sp_object head;
    int64_t size;
    void *values;
    int vtype;
};

/* One stored element: its row, column and the index of its value. */
struct sp_entry {
    int64_t row, col, at;
};

size_t sp_buffer_size(void);
void *sp_find(const void *object, enum sp_kind kind, const char *api);
/* The handle, checked with its stream and the current context (NULL: a misuse noted). */
struct sp_handle *sp_enter(void *handle, const char *api);
int sp_range(const void *ptr, size_t bytes, const char *api);
size_t sp_value_size(int type);
double sp_get(int type, const void *base, int64_t i);
void sp_put(int type, void *base, int64_t i, double value);
int64_t sp_index(int itype, const void *base, int64_t i);
struct sp_entry *sp_entries(const struct sp_mat *m, int64_t *count, const char *api);
int64_t sp_at(const struct sp_dnmat *m, int64_t i, int64_t j);
int sp_dense_ok(const struct sp_dnmat *m, const char *api);
int sp_buffer_ok(const void *buffer, const char *api);
int sp_prepared_ok(const struct sp_mat *m, const void *buffer, const char *api);
/* Marks a live object destroyed (a misuse when it is not live). */
int sp_destroy(void *object, enum sp_kind kind, const char *api);
/* Makes a live SpGEMM descriptor (counted). */
void *sp_make_spgemm(size_t size);

#pragma GCC visibility pop

#endif
