/*
 * The copies and fills of the stub GPU, as work of a stream (cuda_gpu.c): queued in the
 * asynchronous mode, done at once otherwise.
 */
#include "cuda_stub.h"

#include <stdint.h>
#include <string.h>

struct copy {
    CUdeviceptr dst, src;
    size_t bytes;
};

static void run_copy(void *args) {
    const struct copy *copy = args;
    memmove((void *)(uintptr_t)copy->dst, (const void *)(uintptr_t)copy->src, copy->bytes);
}

void gpu_copy(const void *stream, CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
    struct copy copy = {dst, src, bytes};
    if (find_live_allocation(dst) == NULL || find_live_allocation(src) == NULL) {
        /* Pageable host memory: the driver copies before it returns, after the stream's work. */
        gpu_settle(stream);
        run_copy(&copy);
        return;
    }
    gpu_submit(stream, run_copy, &copy, sizeof copy, 1);
}

struct fill {
    CUdeviceptr dst;
    size_t pitch, word, width, height;
    unsigned value;
};

static void run_fill(void *args) {
    const struct fill *fill = args;
    for (size_t row = 0; row < fill->height; row++) {
        unsigned char *start = (unsigned char *)(uintptr_t)(fill->dst + row * fill->pitch);
        for (size_t i = 0; i < fill->width; i++)
            memcpy(start + i * fill->word, &fill->value, fill->word); /* little-endian: low bytes */
    }
}

void gpu_fill(const void *stream, CUdeviceptr dst, size_t pitch, unsigned value, size_t word,
              size_t width, size_t height) {
    struct fill fill = {dst, pitch, word, width, height, value};
    gpu_submit(stream, run_fill, &fill, sizeof fill, 1);
}
