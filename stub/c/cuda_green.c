/*
 * The fake libcuda's green contexts: device, context and stream resources, SM splits (by count,
 * and CUDA 13.1's structured groups with their layout), descriptors, workqueue configurations,
 * green contexts, their streams, and context and green-context ids. See cuda_stub.h.
 */
#include <stdint.h>
#include <string.h>

#include "cuda_stub.h"

/* A workqueue configuration: the concurrency limit and sharing scope (CUDA 13.1). */
struct workqueue {
    int set; /* given with the SMs; otherwise the device's is reported */
    unsigned limit, scope;
};

struct green {
    struct object head;
    struct context *context;
    struct workqueue workqueue;
    struct green *next; /* every green context made, newest first */
};

struct desc {
    struct object head;
    unsigned sm_count;
    struct workqueue workqueue;
};

static struct green *greens;

/* ---- Green contexts. ---- */

#define RESOURCE_SIZE 144 /* CUdevResource, in both ABIs */
#define RESOURCE_TYPE_SM 1
#define RESOURCE_TYPE_WORKQUEUE_CONFIG 1000
#define DEVICE_WORKQUEUES 128 /* the device's workqueue concurrency limit */
#define GROUP_BACKFILL 1u     /* CU_DEV_SM_RESOURCE_GROUP_BACKFILL */

/* The fields of a CUdevResource the stub writes: the type, and in the union (offset 96) the
 * SM count, then (CUDA 13 only; padding under 12) the minimum partition, the co-scheduled
 * alignment and the group's flags. */
static void write_sm(unsigned char *resource, unsigned sm_count, unsigned alignment,
                     unsigned flags) {
    const int type = RESOURCE_TYPE_SM;
    memset(resource, 0, RESOURCE_SIZE);
    memcpy(resource, &type, sizeof type);
    const unsigned sm[4] = {sm_count, SM_GRANULARITY, alignment, flags};
    memcpy(resource + 96, sm, sizeof sm);
}

/* A plain SM resource (a device's, a context's, a group of an equal split, a remainder). */
static void write_sms(unsigned char *resource, unsigned sm_count) {
    write_sm(resource, sm_count, SM_GRANULARITY, 0);
}

/* A workqueue configuration resource (CUDA 13.1): device, concurrency limit, scope. */
static void write_workqueue(unsigned char *resource, CUdevice device,
                            const struct workqueue *workqueue) {
    const int type = RESOURCE_TYPE_WORKQUEUE_CONFIG;
    memset(resource, 0, RESOURCE_SIZE);
    memcpy(resource, &type, sizeof type);
    unsigned wq[3] = {(unsigned)device, DEVICE_WORKQUEUES, 0};
    if (workqueue != NULL && workqueue->set) {
        wq[1] = workqueue->limit;
        wq[2] = workqueue->scope;
    }
    memcpy(resource + 96, wq, sizeof wq);
}

/* The green context whose CUcontext is `context`, or NULL (a primary context). */
static struct green *green_of(const struct context *context) {
    for (struct green *green = greens; green != NULL; green = green->next) {
        if (green->context == context)
            return green;
    }
    return NULL;
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

/* A context's resource of `type`: its SMs, or its workqueue configuration. */
static CUresult context_resource(const struct context *context, unsigned char *resource,
                                 int type) {
    if (resource == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (type == RESOURCE_TYPE_SM) {
        write_sms(resource, context->sm_count);
        return CUDA_SUCCESS;
    }
    if (type != RESOURCE_TYPE_WORKQUEUE_CONFIG)
        return CUDA_ERROR_INVALID_RESOURCE_TYPE;
    const struct green *green = green_of(context);
    write_workqueue(resource, context->device, green != NULL ? &green->workqueue : NULL);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetDevResource(CUdevice device, unsigned char *resource, int type) {
    DRIVER("cuDeviceGetDevResource");
    CHECK(check_device(device, "cuDeviceGetDevResource"));
    if (resource == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (type == RESOURCE_TYPE_WORKQUEUE_CONFIG) {
        write_workqueue(resource, device, NULL);
        return CUDA_SUCCESS;
    }
    if (type != RESOURCE_TYPE_SM)
        return CUDA_ERROR_INVALID_RESOURCE_TYPE;
    write_sms(resource, SM_COUNT);
    return CUDA_SUCCESS;
}

CUresult cuCtxGetDevResource(struct context *context, unsigned char *resource, int type) {
    DRIVER("cuCtxGetDevResource");
    if (!valid(context, T_CONTEXT, "cuCtxGetDevResource"))
        return CUDA_ERROR_INVALID_CONTEXT;
    return context_resource(context, resource, type);
}

CUresult cuGreenCtxGetDevResource(struct green *green, unsigned char *resource, int type) {
    DRIVER("cuGreenCtxGetDevResource");
    if (!valid(green, T_GREEN, "cuGreenCtxGetDevResource"))
        return CUDA_ERROR_INVALID_HANDLE;
    return context_resource(green->context, resource, type);
}

/* CUDA 13.1: the resources of the context a stream belongs to. */
CUresult cuStreamGetDevResource(const void *stream, unsigned char *resource, int type) {
    DRIVER("cuStreamGetDevResource");
    struct context *context = stream_context(stream, "cuStreamGetDevResource");
    if (context == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    return context_resource(context, resource, type);
}

/* The green context a stream belongs to, or NULL for a stream of a primary context. */
CUresult cuStreamGetGreenCtx(const void *stream, struct green **green) {
    DRIVER("cuStreamGetGreenCtx");
    struct context *context = stream_context(stream, "cuStreamGetGreenCtx");
    if (context == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (green == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *green = green_of(context);
    return CUDA_SUCCESS;
}

/* Ids: unique in the process, never reused (the stub never frees an object's memory). */
CUresult cuCtxGetId(struct context *context, unsigned long long *id) {
    DRIVER("cuCtxGetId");
    if (!valid(context, T_CONTEXT, "cuCtxGetId"))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (id == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *id = (uintptr_t)context;
    return CUDA_SUCCESS;
}

CUresult cuGreenCtxGetId(struct green *green, unsigned long long *id) {
    DRIVER("cuGreenCtxGetId");
    if (!valid(green, T_GREEN, "cuGreenCtxGetId"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (id == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *id = (uintptr_t)green;
    return CUDA_SUCCESS;
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
        write_sms(result + i * RESOURCE_SIZE, size);
    if (remainder != NULL)
        write_sms(remainder, resource_sms(input) - made * size);
    *groups = made;
    return CUDA_SUCCESS;
}

/* One CU_DEV_SM_RESOURCE_GROUP_PARAMS (64 bytes): smCount, coscheduledSmCount,
 * preferredCoscheduledSmCount, flags, then the locality domain and reserved words. */
struct group_params {
    unsigned count, coscheduled, preferred, flags;
};

static struct group_params read_group(const unsigned char *params, unsigned index) {
    struct group_params group;
    memcpy(&group, params + 64 * index, sizeof group);
    return group;
}

/* Whether a group's layout and count are ones the sm_90-like device can make. */
static int group_fits(const struct group_params *group) {
    if ((group->flags & ~GROUP_BACKFILL) != 0)
        return 0; /* the locality-domain flags: no domains here */
    if (group->coscheduled % SM_GRANULARITY != 0)
        return 0;
    unsigned unit = group->coscheduled > SM_GRANULARITY ? group->coscheduled : SM_GRANULARITY;
    if (group->preferred % unit != 0)
        return 0;
    if (group->flags & GROUP_BACKFILL)
        return group->count >= 1;
    return group->count >= unit && group->count % unit == 0;
}

/* CUDA 13.1: one structured group per CU_DEV_SM_RESOURCE_GROUP_PARAMS. */
CUresult cuDevSmResourceSplit(unsigned char *result, unsigned groups, const unsigned char *input,
                              unsigned char *remainder, unsigned flags,
                              const unsigned char *params) {
    DRIVER("cuDevSmResourceSplit");
    if (result == NULL || input == NULL || params == NULL || groups == 0 || flags != 0 ||
        resource_type(input) != RESOURCE_TYPE_SM)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned total = 0;
    for (unsigned i = 0; i < groups; i++) {
        struct group_params group = read_group(params, i);
        if (!group_fits(&group))
            return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
        total += group.count;
    }
    if (total > resource_sms(input))
        return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
    for (unsigned i = 0; i < groups; i++) {
        struct group_params group = read_group(params, i);
        unsigned alignment = group.coscheduled > SM_GRANULARITY ? group.coscheduled
                                                                : SM_GRANULARITY;
        write_sm(result + i * RESOURCE_SIZE, group.count, alignment, group.flags);
    }
    if (remainder != NULL)
        write_sms(remainder, resource_sms(input) - total);
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
        if (resource_type(resource) == RESOURCE_TYPE_WORKQUEUE_CONFIG) {
            unsigned wq[3];
            memcpy(wq, resource + 96, sizeof wq);
            if (wq[1] == 0)
                return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
            made->workqueue = (struct workqueue){1, wq[1], wq[2]};
        }
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
    made->workqueue = desc->workqueue;
    made->next = greens;
    greens = made;
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
