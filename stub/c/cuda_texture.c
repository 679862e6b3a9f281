/*
 * The fake libcuda's texture and surface objects: handles that remember what they read. A
 * texture over an array or mipmapped array counts as one of its users (destroying the array
 * first is a misuse, see cuda_copy.c); one over linear or pitched memory checks that the
 * memory lies in a live allocation. See cuda_stub.h.
 */
#include <stdint.h>

#include "cuda_stub.h"

enum { RESOURCE_ARRAY = 0, RESOURCE_MIPMAP = 1, RESOURCE_LINEAR = 2, RESOURCE_PITCH2D = 3 };

/* CUDA_RESOURCE_DESC of both ABIs: the type, the union (128 bytes, 8-aligned), the flags. */
struct resource_desc {
    int type;
    union {
        struct {
            void *handle;
        } array;
        struct {
            CUdeviceptr ptr;
            int format;
            unsigned channels;
            size_t bytes;
        } linear;
        struct {
            CUdeviceptr ptr;
            int format;
            unsigned channels;
            size_t width, height, pitch;
        } pitch2d;
        int reserved[32];
    } res;
    unsigned flags;
};

struct texture {
    struct object head;
    int surface;
    int type;      /* RESOURCE_* */
    void *resource; /* the array or mipmapped array read, if any */
};

/* Checks what `desc` names, for a texture (`surface` 0) or a surface (1). */
static CUresult check_resource(const struct resource_desc *desc, int surface, const char *api) {
    if (desc == NULL || desc->flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    switch (desc->type) {
    case RESOURCE_ARRAY:
        return check_array_resource(desc->res.array.handle, 0, surface, api);
    case RESOURCE_MIPMAP:
        if (surface)
            return CUDA_ERROR_INVALID_VALUE;
        return check_array_resource(desc->res.array.handle, 1, 0, api);
    case RESOURCE_LINEAR:
        if (surface)
            return CUDA_ERROR_INVALID_VALUE;
        return check_range(desc->res.linear.ptr, desc->res.linear.bytes, 0, api);
    case RESOURCE_PITCH2D:
        if (surface || desc->res.pitch2d.height == 0)
            return CUDA_ERROR_INVALID_VALUE;
        return check_range(desc->res.pitch2d.ptr,
                           desc->res.pitch2d.pitch * desc->res.pitch2d.height, 0, api);
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

static CUresult create(unsigned long long *object, const struct resource_desc *desc,
                       int surface, const char *api) {
    CHECK(need_current(api));
    if (object == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CHECK(check_resource(desc, surface, api));
    struct texture *made = make(sizeof *made, T_TEXTURE);
    made->surface = surface;
    made->type = desc->type;
    if (desc->type == RESOURCE_ARRAY || desc->type == RESOURCE_MIPMAP) {
        made->resource = desc->res.array.handle;
        use_array_resource(made->resource, desc->type == RESOURCE_MIPMAP, 1);
    }
    stub_live_add(K_TEXTURE, 1);
    *object = (unsigned long long)(uintptr_t)made;
    return CUDA_SUCCESS;
}

static CUresult destroy(unsigned long long object, int surface, const char *api) {
    struct texture *texture = (struct texture *)(uintptr_t)object;
    if (!valid(texture, T_TEXTURE, api))
        return CUDA_ERROR_INVALID_HANDLE;
    if (texture->surface != surface) {
        stub_misuse_note("%s: %p is a %s", api, (void *)texture,
                         texture->surface ? "surface" : "texture");
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (texture->resource != NULL)
        use_array_resource(texture->resource, texture->type == RESOURCE_MIPMAP, -1);
    texture->head.alive = 0;
    stub_live_add(K_TEXTURE, -1);
    return CUDA_SUCCESS;
}

CUresult cuTexObjectCreate(unsigned long long *texture, const struct resource_desc *desc,
                           const void *texture_desc, const void *view_desc) {
    DRIVER("cuTexObjectCreate");
    if (texture_desc == NULL || view_desc != NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return create(texture, desc, 0, "cuTexObjectCreate");
}

CUresult cuTexObjectDestroy(unsigned long long texture) {
    DRIVER_RELEASE("cuTexObjectDestroy", abandon((void *)(uintptr_t)texture, T_TEXTURE));
    return destroy(texture, 0, "cuTexObjectDestroy");
}

CUresult cuSurfObjectCreate(unsigned long long *surface, const struct resource_desc *desc) {
    DRIVER("cuSurfObjectCreate");
    return create(surface, desc, 1, "cuSurfObjectCreate");
}

CUresult cuSurfObjectDestroy(unsigned long long surface) {
    DRIVER_RELEASE("cuSurfObjectDestroy", abandon((void *)(uintptr_t)surface, T_TEXTURE));
    return destroy(surface, 1, "cuSurfObjectDestroy");
}
