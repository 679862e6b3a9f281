/*
 * The fake libcuda's CUDA arrays (dense host memory behind an opaque handle) and its 2-D and
 * 3-D copies between linear memory (device or host, with a pitch) and arrays, done at once on
 * the host. Every row a copy touches is checked against its side first: device memory against
 * the live allocation it starts in, host memory against every allocation (a host copy must not
 * reach device memory), an array against its extent; a copy past any of them is a misuse. See
 * cuda_stub.h.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_stub.h"

struct array {
    struct object head;
    struct context *context;
    size_t width_bytes, height, depth; /* height and depth at least 1 */
    unsigned char *memory;
};

/* The CUDA_ARRAY3D_DESCRIPTOR, CUDA_MEMCPY2D and CUDA_MEMCPY3D of both ABIs. */
struct array3d_descriptor {
    size_t width, height, depth;
    int format;
    unsigned channels, flags;
};

struct memcpy2d {
    size_t src_x, src_y;
    int src_type;
    const void *src_host;
    CUdeviceptr src_device;
    struct array *src_array;
    size_t src_pitch;
    size_t dst_x, dst_y;
    int dst_type;
    void *dst_host;
    CUdeviceptr dst_device;
    struct array *dst_array;
    size_t dst_pitch;
    size_t width, height;
};

struct memcpy3d {
    size_t src_x, src_y, src_z, src_lod;
    int src_type;
    const void *src_host;
    CUdeviceptr src_device;
    struct array *src_array;
    void *reserved0;
    size_t src_pitch, src_height;
    size_t dst_x, dst_y, dst_z, dst_lod;
    int dst_type;
    void *dst_host;
    CUdeviceptr dst_device;
    struct array *dst_array;
    void *reserved1;
    size_t dst_pitch, dst_height;
    size_t width, height, depth;
};

enum { MEMORY_HOST = 1, MEMORY_DEVICE = 2, MEMORY_ARRAY = 3 };

/* ---- Arrays. ---- */

/* Bytes per channel of a CU_AD_FORMAT_* the crate uses; 0 for others. */
static size_t format_bytes(int format) {
    switch (format) {
    case 0x01: case 0x08: return 1; /* UNSIGNED_INT8, SIGNED_INT8 */
    case 0x02: case 0x09: case 0x10: return 2; /* UNSIGNED_INT16, SIGNED_INT16, HALF */
    case 0x03: case 0x0a: case 0x20: return 4; /* UNSIGNED_INT32, SIGNED_INT32, FLOAT */
    default: return 0;
    }
}

CUresult cuArray3DCreate_v2(struct array **array, const struct array3d_descriptor *desc) {
    DRIVER("cuArray3DCreate_v2");
    CHECK(need_current("cuArray3DCreate_v2"));
    if (array == NULL || desc == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    size_t element = format_bytes(desc->format) * desc->channels;
    if (element == 0 || (desc->channels != 1 && desc->channels != 2 && desc->channels != 4) ||
        desc->flags != 0 || desc->width == 0 || (desc->height == 0 && desc->depth != 0))
        return CUDA_ERROR_INVALID_VALUE;
    struct array *made = make(sizeof *made, T_ARRAY);
    made->context = current;
    made->width_bytes = desc->width * element;
    made->height = desc->height == 0 ? 1 : desc->height;
    made->depth = desc->depth == 0 ? 1 : desc->depth;
    made->memory = malloc(made->width_bytes * made->height * made->depth);
    if (made->memory == NULL)
        abort();
    memset(made->memory, 0xCD, made->width_bytes * made->height * made->depth);
    stub_live_add(K_ARRAY, 1);
    *array = made;
    return CUDA_SUCCESS;
}

/* As the driver wants: the array's context current. */
CUresult cuArrayDestroy(struct array *array) {
    DRIVER_RELEASE("cuArrayDestroy", abandon(array, T_ARRAY));
    if (!valid(array, T_ARRAY, "cuArrayDestroy"))
        return CUDA_ERROR_INVALID_HANDLE;
    CHECK(need_current("cuArrayDestroy"));
    array->head.alive = 0;
    free(array->memory);
    array->memory = NULL;
    stub_live_add(K_ARRAY, -1);
    return CUDA_SUCCESS;
}

/* ---- Copies. ---- */

/* One side of a copy, resolved: where row (y, z) starts, and how it was checked. */
struct side {
    unsigned char *base;
    size_t pitch, slice; /* bytes between rows, and between slices */
};

/* Resolves one side of a copy of `width` x `height` x `depth` at (x, y, z), checking every
 * byte it touches. */
static CUresult resolve(const char *api, int type, const void *host, CUdeviceptr device,
                        struct array *array, size_t pitch, size_t rows_per_slice, size_t x,
                        size_t y, size_t z, size_t width, size_t height, size_t depth,
                        struct side *side) {
    if (type == MEMORY_ARRAY) {
        if (!valid(array, T_ARRAY, api))
            return CUDA_ERROR_INVALID_HANDLE;
        if (x + width > array->width_bytes || y + height > array->height ||
            z + depth > array->depth) {
            stub_misuse_note("%s: the copy runs past the array", api);
            return CUDA_ERROR_INVALID_VALUE;
        }
        side->pitch = array->width_bytes;
        side->slice = array->width_bytes * array->height;
        side->base = array->memory + z * side->slice + y * side->pitch + x;
        return CUDA_SUCCESS;
    }
    if (type != MEMORY_HOST && type != MEMORY_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (pitch < x + width) {
        stub_misuse_note("%s: rows of %zu bytes at %zu do not fit a pitch of %zu", api, width, x,
                         pitch);
        return CUDA_ERROR_INVALID_VALUE;
    }
    side->pitch = pitch;
    side->slice = pitch * rows_per_slice;
    CUdeviceptr start = type == MEMORY_HOST ? (CUdeviceptr)(uintptr_t)host : device;
    start += z * side->slice + y * pitch + x;
    size_t span = (depth - 1) * side->slice + (height - 1) * pitch + width;
    CHECK(check_range(start, span, type == MEMORY_HOST, api));
    const struct allocation *a = find_live_allocation(start);
    if (type == MEMORY_HOST && a != NULL && a->kind != A_HOST && a->kind != A_MANAGED) {
        stub_misuse_note("%s: the host side %#llx is device memory", api, start);
        return CUDA_ERROR_INVALID_VALUE;
    }
    side->base = (unsigned char *)(uintptr_t)start;
    return CUDA_SUCCESS;
}

static CUresult copy_3d(const char *api, const struct memcpy3d *p, void *stream) {
    if (stream_context(stream, api) == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (p == NULL || p->src_lod != 0 || p->dst_lod != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (p->width == 0 || p->height == 0 || p->depth == 0)
        return CUDA_SUCCESS;
    if (p->depth > 1 && ((p->src_type != MEMORY_ARRAY && p->src_height < p->src_y + p->height) ||
                         (p->dst_type != MEMORY_ARRAY && p->dst_height < p->dst_y + p->height))) {
        stub_misuse_note("%s: slices of %zu rows do not fit the sides' heights", api, p->height);
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct side src, dst;
    CHECK(resolve(api, p->src_type, p->src_host, p->src_device, p->src_array, p->src_pitch,
                  p->src_height, p->src_x, p->src_y, p->src_z, p->width, p->height, p->depth,
                  &src));
    CHECK(resolve(api, p->dst_type, p->dst_host, p->dst_device, p->dst_array, p->dst_pitch,
                  p->dst_height, p->dst_x, p->dst_y, p->dst_z, p->width, p->height, p->depth,
                  &dst));
    for (size_t z = 0; z < p->depth; z++) {
        for (size_t y = 0; y < p->height; y++)
            memmove(dst.base + z * dst.slice + y * dst.pitch,
                    src.base + z * src.slice + y * src.pitch, p->width);
    }
    return CUDA_SUCCESS;
}

CUresult cuMemcpy3DAsync_v2(const struct memcpy3d *params, void *stream) {
    DRIVER("cuMemcpy3DAsync_v2");
    return copy_3d("cuMemcpy3DAsync_v2", params, stream);
}

/* A 2-D copy is a 3-D copy of one slice. */
CUresult cuMemcpy2DAsync_v2(const struct memcpy2d *params, void *stream) {
    DRIVER("cuMemcpy2DAsync_v2");
    if (params == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct memcpy3d flat = {
        .src_x = params->src_x,
        .src_y = params->src_y,
        .src_type = params->src_type,
        .src_host = params->src_host,
        .src_device = params->src_device,
        .src_array = params->src_array,
        .src_pitch = params->src_pitch,
        .src_height = params->src_y + params->height,
        .dst_x = params->dst_x,
        .dst_y = params->dst_y,
        .dst_type = params->dst_type,
        .dst_host = params->dst_host,
        .dst_device = params->dst_device,
        .dst_array = params->dst_array,
        .dst_pitch = params->dst_pitch,
        .dst_height = params->dst_y + params->height,
        .width = params->width,
        .height = params->height,
        .depth = 1,
    };
    return copy_3d("cuMemcpy2DAsync_v2", &flat, stream);
}
