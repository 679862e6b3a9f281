/*
 * What the stub's cuBLAS/cuBLASLt (libblas_stub.c) and cuRAND (libcurand_stub.c) share: the
 * status codes, the data types they compute in, the element helpers and cuRAND's live count.
 */
#ifndef CUDA_SAFE_LIBBLAS_STUB_H
#define CUDA_SAFE_LIBBLAS_STUB_H

#include <stddef.h>

#pragma GCC visibility push(hidden)

/* Status codes both libraries use (cuBLAS's numbering; cuRAND's success is also 0). */
enum { OK = 0, NOT_INITIALIZED = 1, INVALID_VALUE = 7, NOT_SUPPORTED = 15 };
/* cudaDataType values the stub computes in. */
enum { R_32F = 0, R_64F = 1, R_16BF = 14 };

/* The bytes of one element of `type`. */
size_t element_size(int type);
/* Stores `value` as element `index` of `type` at `base`. */
void store(int type, void *base, size_t index, double value);

/* Live cuRAND generators (blas_stub_live("curand")). */
extern long blas_stub_live_generators;

#pragma GCC visibility pop

#endif
