/*
 * The fake NVML's internal header, shared by libnvml_stub.c (initialisation, the device,
 * getters) and libnvml_events_stub.c (event sets). Everything declared here is hidden.
 */
#ifndef CUDA_SAFE_LIBNVML_STUB_H
#define CUDA_SAFE_LIBNVML_STUB_H

#include "stub.h"

#pragma GCC visibility push(hidden)

typedef int nvmlReturn_t;

enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
};

/* Whether NVML is initialised (a misuse is noted for `api` otherwise). */
int nvml_stub_ready(const char *api);

/* Whether `device` is the stub's one device handle (a misuse is noted otherwise). */
int nvml_stub_valid_device(const void *device, const char *api);

/* The stub's one device handle. */
void *nvml_stub_device(void);

/* Counted, faults injected, refused (as a misuse) while NVML is not initialised. */
#define NVML(name)                                                                             \
    do {                                                                                       \
        ENTER(name);                                                                           \
        if (!nvml_stub_ready(name))                                                            \
            return NVML_ERROR_UNINITIALIZED;                                                   \
    } while (0)

#pragma GCC visibility pop

#endif
