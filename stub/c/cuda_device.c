/*
 * The fake libcuda's devices (two H200s: their attributes, UUIDs and PCI addresses), primary
 * contexts, streams and events. See cuda_stub.h.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_stub.h"

/* Device 1's UUID differs in its last byte. */
static const unsigned char DEVICE_UUID[16] = {0x5a, 0x7e, 0x11, 0x3c, 0x90, 0x0d, 0x4b, 0x6e,
                                              0x8f, 0x21, 0xc4, 0x07, 0xd3, 0x59, 0xaa, 0x02};
/* PCI bus numbers (CU_DEVICE_ATTRIBUTE_PCI_BUS_ID). */
static const int PCI_BUS[DEVICE_COUNT] = {0x19, 0x3b};

/* Device 0's UUID, for the NVML stub (whose one GPU is device 0). */
const unsigned char *stub_device_uuid(void) {
    return DEVICE_UUID;
}

struct attribute {
    int id;
    int value;
};

/* CU_DEVICE_ATTRIBUTE_* values of an H200; every other attribute below ATTRIBUTE_LIMIT is 0. */
static const struct attribute ATTRIBUTES[] = {
    {1, 1024},         /* MAX_THREADS_PER_BLOCK */
    {2, 1024},         /* MAX_BLOCK_DIM_X */
    {3, 1024},         /* MAX_BLOCK_DIM_Y */
    {4, 64},           /* MAX_BLOCK_DIM_Z */
    {5, 2147483647},   /* MAX_GRID_DIM_X */
    {6, 65535},        /* MAX_GRID_DIM_Y */
    {7, 65535},        /* MAX_GRID_DIM_Z */
    {8, 49152},        /* MAX_SHARED_MEMORY_PER_BLOCK */
    {9, 65536},        /* TOTAL_CONSTANT_MEMORY */
    {10, 32},          /* WARP_SIZE */
    {12, 65536},       /* MAX_REGISTERS_PER_BLOCK */
    {14, 512},         /* TEXTURE_ALIGNMENT */
    {16, SM_COUNT},    /* MULTIPROCESSOR_COUNT */
    {18, 0},           /* INTEGRATED */
    {21, 131072},      /* MAXIMUM_TEXTURE1D_WIDTH */
    {22, 131072},      /* MAXIMUM_TEXTURE2D_WIDTH */
    {23, 65536},       /* MAXIMUM_TEXTURE2D_HEIGHT */
    {24, 16384},       /* MAXIMUM_TEXTURE3D_WIDTH */
    {25, 16384},       /* MAXIMUM_TEXTURE3D_HEIGHT */
    {26, 16384},       /* MAXIMUM_TEXTURE3D_DEPTH */
    {31, 1},           /* CONCURRENT_KERNELS */
    {32, 1},           /* ECC_ENABLED */
    {33, 0},           /* PCI_BUS_ID: per device (PCI_BUS) */
    {34, 0},           /* PCI_DEVICE_ID */
    {37, 6144},        /* GLOBAL_MEMORY_BUS_WIDTH */
    {38, 52428800},    /* L2_CACHE_SIZE */
    {39, 2048},        /* MAX_THREADS_PER_MULTIPROCESSOR */
    {40, 3},           /* ASYNC_ENGINE_COUNT */
    {41, 1},           /* UNIFIED_ADDRESSING */
    {45, 32768},       /* MAXIMUM_TEXTURE2D_GATHER_WIDTH */
    {46, 32768},       /* MAXIMUM_TEXTURE2D_GATHER_HEIGHT */
    {50, 0},           /* PCI_DOMAIN_ID */
    {51, 32},          /* TEXTURE_PITCH_ALIGNMENT */
    {55, 32768},       /* MAXIMUM_SURFACE1D_WIDTH */
    {56, 131072},      /* MAXIMUM_SURFACE2D_WIDTH */
    {57, 65536},       /* MAXIMUM_SURFACE2D_HEIGHT */
    {58, 16384},       /* MAXIMUM_SURFACE3D_WIDTH */
    {59, 16384},       /* MAXIMUM_SURFACE3D_HEIGHT */
    {60, 16384},       /* MAXIMUM_SURFACE3D_DEPTH */
    {69, 268435456},   /* MAXIMUM_TEXTURE1D_LINEAR_WIDTH */
    {70, 131072},      /* MAXIMUM_TEXTURE2D_LINEAR_WIDTH */
    {71, 65000},       /* MAXIMUM_TEXTURE2D_LINEAR_HEIGHT */
    {72, 2097120},     /* MAXIMUM_TEXTURE2D_LINEAR_PITCH */
    {73, 32768},       /* MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH */
    {74, 32768},       /* MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT */
    {77, 32768},       /* MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH */
    {75, 9},           /* COMPUTE_CAPABILITY_MAJOR */
    {76, 0},           /* COMPUTE_CAPABILITY_MINOR */
    {78, 1},           /* STREAM_PRIORITIES_SUPPORTED */
    {81, 233472},      /* MAX_SHARED_MEMORY_PER_MULTIPROCESSOR */
    {82, 65536},       /* MAX_REGISTERS_PER_MULTIPROCESSOR */
    {83, 1},           /* MANAGED_MEMORY */
    {89, 1},           /* CONCURRENT_MANAGED_ACCESS */
    {95, 1},           /* COOPERATIVE_LAUNCH */
    {97, SHARED_OPTIN}, /* MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
    {102, 1},          /* VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED */
    {103, 1},          /* HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED (fabric, 128: 0) */
    {106, 32},         /* MAX_BLOCKS_PER_MULTIPROCESSOR */
    {109, 134213632},  /* MAX_ACCESS_POLICY_WINDOW_SIZE */
    {110, 1},          /* GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED */
    {115, 1},          /* MEMORY_POOLS_SUPPORTED */
    {119, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR}, /* MEMPOOL_SUPPORTED_HANDLE_TYPES */
    {120, 1},          /* CLUSTER_LAUNCH */
    {126, 4},          /* MEM_SYNC_DOMAIN_COUNT */
};
#define ATTRIBUTE_LIMIT 162 /* CU_DEVICE_ATTRIBUTE_MAX of the CUDA 13 headers */

static struct context *primary[DEVICE_COUNT]; /* each device's primary context while retained */
static int primary_retains[DEVICE_COUNT];

/* ---- Devices. ---- */

CUresult check_device(CUdevice device, const char *api) {
    if (device < 0 || device >= DEVICE_COUNT) {
        stub_misuse_note("%s: device %d was not returned by cuDeviceGet", api, device);
        return CUDA_ERROR_INVALID_DEVICE;
    }
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count) {
    DRIVER("cuDeviceGetCount");
    if (count == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *count = DEVICE_COUNT;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
    DRIVER("cuDeviceGet");
    if (device == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (ordinal < 0 || ordinal >= DEVICE_COUNT)
        return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice device) {
    DRIVER("cuDeviceGetName");
    CHECK(check_device(device, "cuDeviceGetName"));
    if (name == NULL || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "%s", DEVICE_NAME);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid_v2(unsigned char *uuid, CUdevice device) {
    DRIVER("cuDeviceGetUuid_v2");
    CHECK(check_device(device, "cuDeviceGetUuid_v2"));
    if (uuid == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(uuid, DEVICE_UUID, 16);
    uuid[15] = (unsigned char)(uuid[15] + device);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char *id, int len, CUdevice device) {
    DRIVER("cuDeviceGetPCIBusId");
    CHECK(check_device(device, "cuDeviceGetPCIBusId"));
    if (id == NULL || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(id, (size_t)len, "0000:%02x:00.0", PCI_BUS[device]);
    return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice device) {
    DRIVER("cuDeviceTotalMem_v2");
    CHECK(check_device(device, "cuDeviceTotalMem_v2"));
    if (bytes == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *bytes = TOTAL_MEMORY;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *value, int attribute, CUdevice device) {
    DRIVER("cuDeviceGetAttribute");
    CHECK(check_device(device, "cuDeviceGetAttribute"));
    if (value == NULL || attribute <= 0 || attribute >= ATTRIBUTE_LIMIT)
        return CUDA_ERROR_INVALID_VALUE;
    *value = 0;
    for (size_t i = 0; i < sizeof ATTRIBUTES / sizeof ATTRIBUTES[0]; i++) {
        if (ATTRIBUTES[i].id == attribute)
            *value = ATTRIBUTES[i].value;
    }
    if (attribute == 33)
        *value = PCI_BUS[device];
    return CUDA_SUCCESS;
}

/* ---- Contexts. ---- */

CUresult cuDevicePrimaryCtxRetain(struct context **context, CUdevice device) {
    DRIVER("cuDevicePrimaryCtxRetain");
    CHECK(check_device(device, "cuDevicePrimaryCtxRetain"));
    if (context == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (primary[device] == NULL) {
        primary[device] = make(sizeof *primary[device], T_CONTEXT);
        primary[device]->device = device;
        primary[device]->sm_count = SM_COUNT;
    }
    primary_retains[device]++;
    stub_live_add(K_CONTEXT, 1);
    *context = primary[device];
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device) {
    DRIVER("cuDevicePrimaryCtxRelease_v2");
    CHECK(check_device(device, "cuDevicePrimaryCtxRelease_v2"));
    if (primary_retains[device] == 0) {
        stub_misuse_note("cuDevicePrimaryCtxRelease_v2: the primary context of device %d is not "
                         "retained",
                         device);
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    primary_retains[device]--;
    stub_live_add(K_CONTEXT, -1);
    if (primary_retains[device] == 0) {
        size_t children = live_children(primary[device]);
        if (children != 0)
            stub_misuse_note("cuDevicePrimaryCtxRelease_v2: the primary context of device %d is "
                             "destroyed with %zu streams or events alive",
                             device, children);
        primary[device]->head.alive = 0;
        primary[device] = NULL; /* the next retain makes a new one; its peers go with it */
    }
    return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(struct context **context) {
    DRIVER("cuCtxGetCurrent");
    if (context == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *context = current;
    return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(struct context *context) {
    CHECK(stub_enter("cuCtxSetCurrent", context == NULL ? 0 : 1));
    if (!initialised) {
        stub_misuse_note("cuCtxSetCurrent before cuInit");
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    if (context != NULL && !valid(context, T_CONTEXT, "cuCtxSetCurrent"))
        return CUDA_ERROR_INVALID_CONTEXT;
    current = context;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *device) {
    DRIVER("cuCtxGetDevice");
    CHECK(need_current("cuCtxGetDevice"));
    if (device == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *device = current->device;
    return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
    DRIVER("cuCtxSynchronize");
    note_wait_while_held("cuCtxSynchronize");
    CHECK(need_current("cuCtxSynchronize"));
    gpu_sync_context(current);
    race_sync_context(current);
    return CUDA_SUCCESS;
}

CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest) {
    DRIVER("cuCtxGetStreamPriorityRange");
    CHECK(need_current("cuCtxGetStreamPriorityRange"));
    if (least != NULL)
        *least = 0;
    if (greatest != NULL)
        *greatest = -5;
    return CUDA_SUCCESS;
}

/* ---- Streams. ---- */

static struct stream **streams;
static size_t stream_count;
static struct event **events;
static size_t event_count;

static void remember(void ***list, size_t *count, void *object) {
    void **grown = realloc(*list, (*count + 1) * sizeof **list);
    if (grown == NULL)
        abort();
    grown[(*count)++] = object;
    *list = grown;
}


size_t live_children(const struct context *context) {
    size_t children = 0;
    for (size_t i = 0; i < stream_count; i++)
        children += streams[i]->head.alive && !streams[i]->head.abandoned &&
                    streams[i]->context == context;
    for (size_t i = 0; i < event_count; i++)
        children += events[i]->head.alive && !events[i]->head.abandoned &&
                    events[i]->context == context;
    return children;
}

struct stream *new_stream(struct context *context, unsigned flags, int priority) {
    struct stream *stream = make(sizeof *stream, T_STREAM);
    stream->context = context;
    stream->flags = flags;
    stream->priority = priority > 0 ? 0 : priority < -5 ? -5 : priority;
    remember((void ***)&streams, &stream_count, stream);
    stub_live_add(K_STREAM, 1);
    return stream;
}

CUresult cuStreamCreateWithPriority(struct stream **stream, unsigned flags, int priority) {
    DRIVER("cuStreamCreateWithPriority");
    CHECK(need_current("cuStreamCreateWithPriority"));
    if (stream == NULL || (flags & ~1u) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    *stream = new_stream(current, flags, priority);
    return CUDA_SUCCESS;
}

/* The raw layer's stream, as C programs and the floors make it: the default priority. */
CUresult cuStreamCreate(struct stream **stream, unsigned flags) {
    DRIVER("cuStreamCreate");
    CHECK(need_current("cuStreamCreate"));
    if (stream == NULL || (flags & ~1u) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    *stream = new_stream(current, flags, 0);
    return CUDA_SUCCESS;
}

CUresult cuStreamDestroy_v2(struct stream *stream) {
    DRIVER_RELEASE("cuStreamDestroy_v2", abandon(stream, T_STREAM));
    if (!valid(stream, T_STREAM, "cuStreamDestroy_v2"))
        return CUDA_ERROR_INVALID_HANDLE;
    CHECK(context_error(stream->context, "cuStreamDestroy_v2"));
    stream->head.alive = 0;
    gpu_close(stream);
    stub_live_add(K_STREAM, -1);
    return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(void *stream) {
    DRIVER("cuStreamSynchronize");
    note_wait_while_held("cuStreamSynchronize");
    if (stream_context(stream, "cuStreamSynchronize") == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    gpu_settle(stream);
    race_sync_stream(stream);
    return CUDA_SUCCESS;
}

CUresult cuStreamQuery(void *stream) {
    DRIVER("cuStreamQuery");
    if (stream_context(stream, "cuStreamQuery") == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    int held = (uintptr_t)stream > 2 && ((struct stream *)stream)->held_work;
    if (held || race_stream_busy(stream) || !gpu_stream_idle(stream))
        return CUDA_ERROR_NOT_READY;
    race_sync_stream(stream);
    return CUDA_SUCCESS;
}

/* The calling thread's capture mode: global (0) at first. */
static __thread int capture_mode;

CUresult cuThreadExchangeStreamCaptureMode(int *mode) {
    DRIVER("cuThreadExchangeStreamCaptureMode");
    if (mode == NULL || *mode < 0 || *mode > 2)
        return CUDA_ERROR_INVALID_VALUE;
    int previous = capture_mode;
    capture_mode = *mode;
    *mode = previous;
    return CUDA_SUCCESS;
}

/* The stub captures nothing: every stream reports CU_STREAM_CAPTURE_STATUS_NONE (0). */
CUresult cuStreamIsCapturing(void *stream, int *status) {
    DRIVER("cuStreamIsCapturing");
    if (stream_context(stream, "cuStreamIsCapturing") == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (status == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *status = stream_capturing(stream);
    return CUDA_SUCCESS;
}

CUresult cuStreamGetPriority(struct stream *stream, int *priority) {
    DRIVER("cuStreamGetPriority");
    if (stream_context(stream, "cuStreamGetPriority") == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (priority == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *priority = (uintptr_t)stream <= 2 ? 0 : stream->priority;
    return CUDA_SUCCESS;
}

CUresult cuStreamGetFlags(struct stream *stream, unsigned *flags) {
    DRIVER("cuStreamGetFlags");
    if (stream_context(stream, "cuStreamGetFlags") == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (flags == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *flags = (uintptr_t)stream <= 2 ? 0 : stream->flags;
    return CUDA_SUCCESS;
}

/* ---- Events. ---- */

struct event *new_event(struct context *context, unsigned flags) {
    struct event *event = make(sizeof *event, T_EVENT);
    event->context = context;
    event->flags = flags;
    remember((void ***)&events, &event_count, event);
    stub_live_add(K_EVENT, 1);
    return event;
}

CUresult cuStreamWaitEvent(void *stream, struct event *event, unsigned flags) {
    DRIVER("cuStreamWaitEvent");
    if (stream_context(stream, "cuStreamWaitEvent") == NULL ||
        !valid(event, T_EVENT, "cuStreamWaitEvent"))
        return CUDA_ERROR_INVALID_HANDLE;
    /* The event may belong to another context than the stream. */
    CHECK(context_error(event->context, "cuStreamWaitEvent"));
    if (flags > 1)
        return CUDA_ERROR_INVALID_VALUE;
    race_wait(stream, event);
    gpu_wait_event(stream, event);
    return CUDA_SUCCESS;
}

CUresult cuEventCreate(struct event **event, unsigned flags) {
    DRIVER("cuEventCreate");
    CHECK(need_current("cuEventCreate"));
    if (event == NULL || (flags & ~7u) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if ((flags & CU_EVENT_INTERPROCESS) && !(flags & CU_EVENT_DISABLE_TIMING))
        return CUDA_ERROR_INVALID_VALUE;
    *event = new_event(current, flags);
    return CUDA_SUCCESS;
}

CUresult cuEventDestroy_v2(struct event *event) {
    DRIVER_RELEASE("cuEventDestroy_v2", abandon(event, T_EVENT));
    if (!valid(event, T_EVENT, "cuEventDestroy_v2"))
        return CUDA_ERROR_INVALID_HANDLE;
    CHECK(context_error(event->context, "cuEventDestroy_v2"));
    event->head.alive = 0;
    race_forget_event(event);
    stub_live_add(K_EVENT, -1);
    return CUDA_SUCCESS;
}

/* As the driver: the event and the stream must belong to the same context. */
CUresult cuEventRecord(struct event *event, void *stream) {
    DRIVER("cuEventRecord");
    struct context *context = stream_context(stream, "cuEventRecord");
    if (context == NULL || !valid(event, T_EVENT, "cuEventRecord"))
        return CUDA_ERROR_INVALID_HANDLE;
    CHECK(context_error(event->context, "cuEventRecord"));
    if (event->context != context)
        return CUDA_ERROR_INVALID_HANDLE;
    event->recorded = 1;
    event->pending = gpu_held;
    race_record(event, stream);
    gpu_record(event, stream);
    return CUDA_SUCCESS;
}

CUresult cuEventSynchronize(struct event *event) {
    DRIVER("cuEventSynchronize");
    if (!valid(event, T_EVENT, "cuEventSynchronize"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (event->pending)
        note_wait_while_held("cuEventSynchronize");
    CHECK(context_error(event->context, "cuEventSynchronize"));
    gpu_sync_event(event);
    race_sync_event(event);
    return CUDA_SUCCESS;
}

CUresult cuEventQuery(struct event *event) {
    DRIVER("cuEventQuery");
    if (!valid(event, T_EVENT, "cuEventQuery"))
        return CUDA_ERROR_INVALID_HANDLE;
    CHECK(context_error(event->context, "cuEventQuery"));
    if (event->pending || !gpu_event_done(event))
        return CUDA_ERROR_NOT_READY;
    race_sync_event(event);
    return CUDA_SUCCESS;
}

/* Every event recorded while the GPU was held has finished. */
void finish_held_events(void) {
    for (size_t i = 0; i < event_count; i++)
        events[i]->pending = 0;
    for (size_t i = 0; i < stream_count; i++)
        streams[i]->held_work = 0;
}

static CUresult elapsed(const char *api, float *ms, struct event *start, struct event *end) {
    if (!valid(start, T_EVENT, api) || !valid(end, T_EVENT, api))
        return CUDA_ERROR_INVALID_HANDLE;
    if (ms == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING || !start->recorded ||
        !end->recorded)
        return CUDA_ERROR_INVALID_HANDLE;
    *ms = 0.25f;
    return CUDA_SUCCESS;
}

/* The CUDA 12 symbol. */
CUresult cuEventElapsedTime(float *ms, struct event *start, struct event *end) {
    DRIVER("cuEventElapsedTime");
    return elapsed("cuEventElapsedTime", ms, start, end);
}

/* The CUDA 13 symbol: same meaning. */
CUresult cuEventElapsedTime_v2(float *ms, struct event *start, struct event *end) {
    DRIVER("cuEventElapsedTime_v2");
    return elapsed("cuEventElapsedTime_v2", ms, start, end);
}
