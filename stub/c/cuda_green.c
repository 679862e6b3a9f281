/*
 * The fake libcuda's green contexts: device and context resources, SM splits, descriptors,
 * green contexts and their streams. See cuda_stub.h.
 */
#include <string.h>

#include "cuda_stub.h"

struct green {
    struct object head;
    struct context *context;
};

struct desc {
    struct object head;
    unsigned sm_count;
};

/* ---- Green contexts. ---- */

#define RESOURCE_SIZE 144 /* CUdevResource, in both ABIs */
#define RESOURCE_TYPE_SM 1
#define RESOURCE_TYPE_WORKQUEUE_CONFIG 1000

/* The fields of a CUdevResource the stub writes: the type, and in the union (offset 96) the
 * SM count, then (CUDA 13 only; padding under 12) the minimum partition and alignment. */
static void write_resource(unsigned char *resource, int type, unsigned sm_count) {
    memset(resource, 0, RESOURCE_SIZE);
    memcpy(resource, &type, sizeof type);
    if (type == RESOURCE_TYPE_SM) {
        const unsigned sm[3] = {sm_count, SM_GRANULARITY, SM_GRANULARITY};
        memcpy(resource + 96, sm, sizeof sm);
    } else {
        const unsigned wq[3] = {0, 128, 0}; /* device, concurrency limit, scope */
        memcpy(resource + 96, wq, sizeof wq);
    }
}

static int resource_type(const unsigned char *resource) {
    int type;
    memcpy(&type, resource, sizeof type);
    return type;
}

static unsigned resource_sms(const unsigned char *resource) {
    unsigned count;
    memcpy(&count, resource + 96, sizeof count);
    return count;
}

static CUresult get_resource(unsigned char *resource, int type, unsigned sm_count) {
    if (resource == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (type != RESOURCE_TYPE_SM && type != RESOURCE_TYPE_WORKQUEUE_CONFIG)
        return CUDA_ERROR_INVALID_RESOURCE_TYPE;
    write_resource(resource, type, sm_count);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetDevResource(CUdevice device, unsigned char *resource, int type) {
    DRIVER("cuDeviceGetDevResource");
    CHECK(check_device(device, "cuDeviceGetDevResource"));
    return get_resource(resource, type, SM_COUNT);
}

CUresult cuCtxGetDevResource(struct context *context, unsigned char *resource, int type) {
    DRIVER("cuCtxGetDevResource");
    if (!valid(context, T_CONTEXT, "cuCtxGetDevResource"))
        return CUDA_ERROR_INVALID_CONTEXT;
    return get_resource(resource, type, context->sm_count);
}

CUresult cuDevSmResourceSplitByCount(unsigned char *result, unsigned *groups,
                                     const unsigned char *input, unsigned char *remainder,
                                     unsigned flags, unsigned min_count) {
    DRIVER("cuDevSmResourceSplitByCount");
    if (groups == NULL || input == NULL || flags != 0 || resource_type(input) != RESOURCE_TYPE_SM)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned size = min_count < SM_GRANULARITY ? SM_GRANULARITY : min_count;
    size = (size + SM_GRANULARITY - 1) / SM_GRANULARITY * SM_GRANULARITY;
    unsigned possible = resource_sms(input) / size;
    if (result == NULL) {
        *groups = possible;
        return CUDA_SUCCESS;
    }
    unsigned made = *groups < possible ? *groups : possible;
    for (unsigned i = 0; i < made; i++)
        write_resource(result + i * RESOURCE_SIZE, RESOURCE_TYPE_SM, size);
    if (remainder != NULL)
        write_resource(remainder, RESOURCE_TYPE_SM, resource_sms(input) - made * size);
    *groups = made;
    return CUDA_SUCCESS;
}

/* CUDA 13.1: one group per CU_DEV_SM_RESOURCE_GROUP_PARAMS (64 bytes, smCount first). */
CUresult cuDevSmResourceSplit(unsigned char *result, unsigned groups, const unsigned char *input,
                              unsigned char *remainder, unsigned flags,
                              const unsigned char *params) {
    DRIVER("cuDevSmResourceSplit");
    if (result == NULL || input == NULL || params == NULL || groups == 0 || flags != 0 ||
        resource_type(input) != RESOURCE_TYPE_SM)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned total = 0;
    for (unsigned i = 0; i < groups; i++) {
        unsigned count;
        memcpy(&count, params + 64 * i, sizeof count);
        if (count < SM_GRANULARITY || count % SM_GRANULARITY != 0)
            return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
        total += count;
    }
    if (total > resource_sms(input))
        return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
    for (unsigned i = 0; i < groups; i++) {
        unsigned count;
        memcpy(&count, params + 64 * i, sizeof count);
        write_resource(result + i * RESOURCE_SIZE, RESOURCE_TYPE_SM, count);
    }
    if (remainder != NULL)
        write_resource(remainder, RESOURCE_TYPE_SM, resource_sms(input) - total);
    return CUDA_SUCCESS;
}

CUresult cuDevResourceGenerateDesc(struct desc **desc, unsigned char *resources, unsigned count) {
    DRIVER("cuDevResourceGenerateDesc");
    if (desc == NULL || resources == NULL || count == 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct desc *made = make(sizeof *made, T_DESC);
    for (unsigned i = 0; i < count; i++) {
        const unsigned char *resource = resources + i * RESOURCE_SIZE;
        if (resource_type(resource) == RESOURCE_TYPE_SM)
            made->sm_count = resource_sms(resource);
    }
    if (made->sm_count == 0)
        return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
    *desc = made;
    return CUDA_SUCCESS;
}

CUresult cuGreenCtxCreate(struct green **green, struct desc *desc, CUdevice device,
                          unsigned flags) {
    DRIVER("cuGreenCtxCreate");
    CHECK(check_device(device, "cuGreenCtxCreate"));
    if (!valid(desc, T_DESC, "cuGreenCtxCreate"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (green == NULL || flags != 1) /* CU_GREEN_CTX_DEFAULT_STREAM is required */
        return CUDA_ERROR_INVALID_VALUE;
    struct green *made = make(sizeof *made, T_GREEN);
    made->context = make(sizeof *made->context, T_CONTEXT);
    made->context->device = device;
    made->context->sm_count = desc->sm_count;
    stub_live_add(K_GREEN, 1);
    *green = made;
    return CUDA_SUCCESS;
}

CUresult cuCtxFromGreenCtx(struct context **context, struct green *green) {
    DRIVER("cuCtxFromGreenCtx");
    if (!valid(green, T_GREEN, "cuCtxFromGreenCtx"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (context == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *context = green->context;
    return CUDA_SUCCESS;
}

CUresult cuGreenCtxDestroy(struct green *green) {
    DRIVER("cuGreenCtxDestroy");
    if (!valid(green, T_GREEN, "cuGreenCtxDestroy"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (current == green->context)
        stub_misuse_note("cuGreenCtxDestroy: the green context is current on this thread");
    size_t children = live_children(green->context);
    if (children != 0)
        stub_misuse_note("cuGreenCtxDestroy: %zu streams or events of it are alive", children);
    green->head.alive = 0;
    green->context->head.alive = 0;
    stub_live_add(K_GREEN, -1);
    return CUDA_SUCCESS;
}

CUresult cuGreenCtxStreamCreate(struct stream **stream, struct green *green, unsigned flags,
                                int priority) {
    DRIVER("cuGreenCtxStreamCreate");
    if (!valid(green, T_GREEN, "cuGreenCtxStreamCreate"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (stream == NULL || flags != 1) /* CU_STREAM_NON_BLOCKING is required */
        return CUDA_ERROR_INVALID_VALUE;
    *stream = new_stream(green->context, flags, priority);
    return CUDA_SUCCESS;
}
