/*
 * What the stub's cuSOLVER (libcusolver_stub.c: handles, LU, Cholesky, QR) and its eigensolver
 * and SVDs (libcusolver_eig_stub.c) share: statuses, range checks, packed double copies of
 * matrices, the workspaces the size queries ask for, the info output.
 */
#ifndef CUDA_SAFE_LIBCUSOLVER_STUB_H
#define CUDA_SAFE_LIBCUSOLVER_STUB_H

#include <stddef.h>

#pragma GCC visibility push(hidden)

enum { SV_OK = 0, SV_INVALID = 3 };

/* The info the next eigensolver or SVD reports instead of its own (0: its own). */
extern int solver_forced_info;

/* Element `i` of `type` at `base`, as a double. */
double solver_get(int type, const void *base, size_t i);
/* Whether `bytes` at `ptr` lie in one live allocation (0 bytes always do). */
int solver_range_ok(const void *ptr, size_t bytes, const char *api);
/* Checks a column-major rows x cols matrix with leading dimension ld at `ptr`. */
int solver_matrix_ok(const void *ptr, long rows, long cols, long ld, int type, const char *api);
/* A packed double copy of a matrix (freed by the caller), and the way back. */
double *solver_load(const void *a, long m, long n, long ld, int type);
void solver_store(const double *copy, void *a, long m, long n, long ld, int type);
/* The workspaces a routine over n columns of `type` asks for (host bytes when `host`). */
void solver_sizes(long n, int type, int host, size_t *device, size_t *host_bytes);
/* Checks the workspaces a routine was given against what its size query asked for. */
int solver_work_ok(void *dev, size_t dev_size, void *host, size_t host_size, long n, int type,
                   int wants_host, const char *api);
/* Writes `value` to the device int at `info`. */
int solver_info(int *info, int value, const char *api);

#pragma GCC visibility pop

#endif
