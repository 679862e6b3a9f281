/*
 * The fake libcuda's entry points that cudarc 0.19 calls and cuda-safe does not, for the test of
 * the cudarc bridge (tests/bridges.rs): an allocation from the device's current pool and the
 * typed host copies. See cuda_stub.h.
 */
#include <stdint.h>
#include <string.h>

#include "cuda_stub.h"

CUresult cuMemAllocAsync(CUdeviceptr *ptr, size_t size, void *stream) {
    DRIVER("cuMemAllocAsync");
    struct context *context = stream_context(stream, "cuMemAllocAsync");
    if (context == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (ptr == NULL || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct allocation *made = allocate(size, A_POOL, NULL);
    if (made == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    made->device = context->device;
    race_access(race_enqueue(stream, "cuMemAllocAsync"), made->ptr, size, RACE_ALLOC,
                "cuMemAllocAsync");
    *ptr = made->ptr;
    return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t bytes, void *stream) {
    DRIVER("cuMemcpyHtoDAsync_v2");
    if (stream_context(stream, "cuMemcpyHtoDAsync_v2") == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    CHECK(check_range(dst, bytes, 0, "cuMemcpyHtoDAsync_v2"));
    race_access(race_enqueue(stream, "cuMemcpyHtoDAsync_v2"), dst, bytes, RACE_WRITE,
                "cuMemcpyHtoDAsync_v2");
    memmove((void *)(uintptr_t)dst, src, bytes);
    return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t bytes, void *stream) {
    DRIVER("cuMemcpyDtoHAsync_v2");
    if (stream_context(stream, "cuMemcpyDtoHAsync_v2") == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    CHECK(check_range(src, bytes, 0, "cuMemcpyDtoHAsync_v2"));
    race_access(race_enqueue(stream, "cuMemcpyDtoHAsync_v2"), src, bytes, RACE_READ,
                "cuMemcpyDtoHAsync_v2");
    memmove(dst, (const void *)(uintptr_t)src, bytes);
    return CUDA_SUCCESS;
}
