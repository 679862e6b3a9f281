/*
 * The fake libcuda's CUDA arrays (dense host memory behind an opaque handle), mipmapped arrays
 * (a chain of such arrays, each level half the last) and its 2-D and
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

struct mipmap;

struct array {
    struct object head;
    struct context *context;
    size_t width_bytes, height, depth; /* height and depth at least 1 */
    unsigned char *memory;
    unsigned flags;        /* CUDA_ARRAY3D_* */
    struct mipmap *parent; /* a level: the mipmapped array that owns it */
    int users;             /* textures and surfaces reading it */
};

#define MAX_LEVELS 16

struct mipmap {
    struct object head;
    unsigned levels;
    struct array *level[MAX_LEVELS];
    int users; /* textures reading it */
};

#define CUDA_ARRAY3D_SURFACE_LDST 2u
#define CUDA_ARRAY3D_TEXTURE_GATHER 8u

/* The CUDA_ARRAY3D_DESCRIPTOR and CUDA_MEMCPY2D of both ABIs (CUDA_MEMCPY3D: cuda_stub.h). */
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

enum { MEMORY_HOST = 1, MEMORY_DEVICE = 2, MEMORY_ARRAY = 3, MEMORY_UNIFIED = 4 };

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

/* Whether `desc` describes an array the stub makes. */
static int valid_descriptor(const struct array3d_descriptor *desc) {
    size_t element = format_bytes(desc->format) * desc->channels;
    return element != 0 && (desc->channels == 1 || desc->channels == 2 || desc->channels == 4) &&
           (desc->flags & ~(CUDA_ARRAY3D_SURFACE_LDST | CUDA_ARRAY3D_TEXTURE_GATHER)) == 0 &&
           desc->width != 0 && (desc->height != 0 || desc->depth == 0);
}

/* A new array of `desc`'s shape, filled with a pattern (not counted: the callers count). */
static struct array *new_array(const struct array3d_descriptor *desc) {
    struct array *made = make(sizeof *made, T_ARRAY);
    made->context = current;
    made->width_bytes = desc->width * format_bytes(desc->format) * desc->channels;
    made->height = desc->height == 0 ? 1 : desc->height;
    made->depth = desc->depth == 0 ? 1 : desc->depth;
    made->flags = desc->flags;
    made->memory = malloc(made->width_bytes * made->height * made->depth);
    if (made->memory == NULL)
        abort();
    memset(made->memory, 0xCD, made->width_bytes * made->height * made->depth);
    return made;
}

static void free_array(struct array *array) {
    gpu_sync_context(NULL); /* no queued copy may write the memory once it is freed */
    array->head.alive = 0;
    free(array->memory);
    array->memory = NULL;
}

CUresult cuArray3DCreate_v2(struct array **array, const struct array3d_descriptor *desc) {
    DRIVER("cuArray3DCreate_v2");
    CHECK(need_current("cuArray3DCreate_v2"));
    if (array == NULL || desc == NULL || !valid_descriptor(desc))
        return CUDA_ERROR_INVALID_VALUE;
    *array = new_array(desc);
    stub_live_add(K_ARRAY, 1);
    return CUDA_SUCCESS;
}

/* ---- Mipmapped arrays. ---- */

CUresult cuMipmappedArrayCreate(struct mipmap **mipmap, const struct array3d_descriptor *desc,
                                unsigned levels) {
    DRIVER("cuMipmappedArrayCreate");
    CHECK(need_current("cuMipmappedArrayCreate"));
    if (mipmap == NULL || desc == NULL || !valid_descriptor(desc) || levels == 0 ||
        levels > MAX_LEVELS || (desc->flags & CUDA_ARRAY3D_TEXTURE_GATHER) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    size_t largest = desc->width > desc->height ? desc->width : desc->height;
    largest = largest > desc->depth ? largest : desc->depth;
    if ((largest >> (levels - 1)) == 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct mipmap *made = make(sizeof *made, T_MIPMAP);
    made->levels = levels;
    for (unsigned i = 0; i < levels; i++) {
        struct array3d_descriptor level = *desc;
        level.width = desc->width >> i ? desc->width >> i : 1;
        level.height = desc->height == 0 ? 0 : (desc->height >> i ? desc->height >> i : 1);
        level.depth = desc->depth == 0 ? 0 : (desc->depth >> i ? desc->depth >> i : 1);
        made->level[i] = new_array(&level);
        made->level[i]->parent = made;
    }
    stub_live_add(K_ARRAY, 1);
    *mipmap = made;
    return CUDA_SUCCESS;
}

CUresult cuMipmappedArrayGetLevel(struct array **array, struct mipmap *mipmap, unsigned level) {
    DRIVER("cuMipmappedArrayGetLevel");
    if (!valid(mipmap, T_MIPMAP, "cuMipmappedArrayGetLevel"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (array == NULL || level >= mipmap->levels)
        return CUDA_ERROR_INVALID_VALUE;
    *array = mipmap->level[level];
    return CUDA_SUCCESS;
}

/* As the driver wants: its context current; no texture or surface may still read it. */
CUresult cuMipmappedArrayDestroy(struct mipmap *mipmap) {
    DRIVER_RELEASE("cuMipmappedArrayDestroy", abandon(mipmap, T_MIPMAP));
    if (!valid(mipmap, T_MIPMAP, "cuMipmappedArrayDestroy"))
        return CUDA_ERROR_INVALID_HANDLE;
    CHECK(need_current("cuMipmappedArrayDestroy"));
    int users = mipmap->users;
    for (unsigned i = 0; i < mipmap->levels; i++) {
        users += mipmap->level[i]->users;
        free_array(mipmap->level[i]);
    }
    if (users != 0)
        stub_misuse_note("cuMipmappedArrayDestroy: %d textures or surfaces still read it", users);
    mipmap->head.alive = 0;
    stub_live_add(K_ARRAY, -1);
    return CUDA_SUCCESS;
}

CUresult check_array_resource(const void *handle, int mipmapped, int surface, const char *api) {
    if (!valid(handle, mipmapped ? T_MIPMAP : T_ARRAY, api))
        return CUDA_ERROR_INVALID_HANDLE;
    if (surface && (((const struct array *)handle)->flags & CUDA_ARRAY3D_SURFACE_LDST) == 0)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

void use_array_resource(void *handle, int mipmapped, int delta) {
    if (mipmapped)
        ((struct mipmap *)handle)->users += delta;
    else
        ((struct array *)handle)->users += delta;
}

/* As the driver wants: the array's context current. */
CUresult cuArrayDestroy(struct array *array) {
    DRIVER_RELEASE("cuArrayDestroy", abandon(array, T_ARRAY));
    if (!valid(array, T_ARRAY, "cuArrayDestroy"))
        return CUDA_ERROR_INVALID_HANDLE;
    CHECK(need_current("cuArrayDestroy"));
    if (array->parent != NULL) {
        stub_misuse_note("cuArrayDestroy: %p is a level of a mipmapped array", (void *)array);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (array->users != 0)
        stub_misuse_note("cuArrayDestroy: %d textures or surfaces still read it", array->users);
    free_array(array);
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
    if (type == MEMORY_UNIFIED)
        type = MEMORY_DEVICE; /* device, pinned or managed: inside a live allocation */
    if (pitch == 0 && height == 1 && depth == 1 && y == 0 && z == 0)
        pitch = x + width; /* one row: the driver needs no pitch (a 1-D copy node's) */
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

/* A resolved copy, as its stream's work. */
struct copy_work {
    struct side src, dst;
    size_t width, height, depth;
};

static void run_copy_3d(void *args) {
    const struct copy_work *w = args;
    for (size_t z = 0; z < w->depth; z++) {
        for (size_t y = 0; y < w->height; y++)
            memmove(w->dst.base + z * w->dst.slice + y * w->dst.pitch,
                    w->src.base + z * w->src.slice + y * w->src.pitch, w->width);
    }
}

/* Whether a side of type `type` at `base` is pageable host memory. */
static int pageable(int type, const unsigned char *base) {
    return type == MEMORY_HOST && find_live_allocation((CUdeviceptr)(uintptr_t)base) == NULL;
}

CUresult copy_3d(const char *api, const struct memcpy3d *p, void *stream) {
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
    unsigned actor = race_enqueue(stream, api);
    if (p->src_type != MEMORY_ARRAY)
        race_access(actor, (CUdeviceptr)(uintptr_t)src.base, 1, RACE_READ, api);
    if (p->dst_type != MEMORY_ARRAY)
        race_access(actor, (CUdeviceptr)(uintptr_t)dst.base, 1, RACE_WRITE, api);
    struct copy_work work = {src, dst, p->width, p->height, p->depth};
    if (pageable(p->src_type, src.base) || pageable(p->dst_type, dst.base)) {
        /* As the driver: a copy with pageable host memory is done before the call returns. */
        gpu_settle(stream);
        run_copy_3d(&work);
        return CUDA_SUCCESS;
    }
    gpu_submit(stream, run_copy_3d, &work, sizeof work, 1);
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
