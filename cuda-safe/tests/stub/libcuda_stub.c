/*
 * A fake libcuda: one sm_90-like device with 132 SMs, its primary context, green contexts,
 * streams, events, memory pools, pinned and managed memory, libraries and kernels, every
 * handle a stub object. Allocations are host memory, so copies and memsets round-trip, and
 * the kernel `twice` (float *x, size_t n) doubles x[0..n) when launched. Both ABIs are served:
 * every entry point cuda-safe calls under CUDA 12 or 13 is exported by the name it resolves
 * (`cuEventElapsedTime` and `cuEventElapsedTime_v2` both), and the structs it fills have one
 * layout in both (the fields written are at the same offsets).
 *
 * A handle the stub did not make, or one already destroyed, a call that needs a current
 * context with none, and a copy or memset past an allocation are misuses (stub_misuse): the
 * real driver would fail or corrupt memory, and the tests assert they never happen. Freed
 * memory is never reused, so a use after free is caught too.
 *
 * A stream, event or allocation whose release fails by injection is abandoned: it stays live
 * in the counts (the caller leaked it), and destroying its context or pool later is no misuse
 * (the real driver reclaims it then).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stub.h"

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_FILE_NOT_FOUND = 301,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_ILLEGAL_STATE = 401,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_ILLEGAL_ADDRESS = 700,
    CUDA_ERROR_CONTEXT_IS_DESTROYED = 709,
    CUDA_ERROR_INVALID_RESOURCE_TYPE = 914,
    CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION = 915,
};

/* ---- The device. ---- */

#define SM_COUNT 132
#define SM_GRANULARITY 8 /* sm_90: groups of at least 8 SMs, in multiples of 8 */
#define TOTAL_MEMORY 150754820096ULL
#define SHARED_OPTIN 232448
#define DEVICE_NAME "NVIDIA H200 (cuda-safe stub)"

static const unsigned char DEVICE_UUID[16] = {0x5a, 0x7e, 0x11, 0x3c, 0x90, 0x0d, 0x4b, 0x6e,
                                              0x8f, 0x21, 0xc4, 0x07, 0xd3, 0x59, 0xaa, 0x02};

/* The UUID's bytes, for the NVML stub (which writes the same GPU's UUID). */
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
    {16, SM_COUNT},    /* MULTIPROCESSOR_COUNT */
    {18, 0},           /* INTEGRATED */
    {31, 1},           /* CONCURRENT_KERNELS */
    {32, 1},           /* ECC_ENABLED */
    {33, 0x19},        /* PCI_BUS_ID */
    {34, 0},           /* PCI_DEVICE_ID */
    {37, 6144},        /* GLOBAL_MEMORY_BUS_WIDTH */
    {38, 52428800},    /* L2_CACHE_SIZE */
    {39, 2048},        /* MAX_THREADS_PER_MULTIPROCESSOR */
    {40, 3},           /* ASYNC_ENGINE_COUNT */
    {41, 1},           /* UNIFIED_ADDRESSING */
    {50, 0},           /* PCI_DOMAIN_ID */
    {75, 9},           /* COMPUTE_CAPABILITY_MAJOR */
    {76, 0},           /* COMPUTE_CAPABILITY_MINOR */
    {78, 1},           /* STREAM_PRIORITIES_SUPPORTED */
    {81, 233472},      /* MAX_SHARED_MEMORY_PER_MULTIPROCESSOR */
    {82, 65536},       /* MAX_REGISTERS_PER_MULTIPROCESSOR */
    {83, 1},           /* MANAGED_MEMORY */
    {89, 1},           /* CONCURRENT_MANAGED_ACCESS */
    {95, 1},           /* COOPERATIVE_LAUNCH */
    {97, SHARED_OPTIN}, /* MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
    {106, 32},         /* MAX_BLOCKS_PER_MULTIPROCESSOR */
    {115, 1},          /* MEMORY_POOLS_SUPPORTED */
    {120, 1},          /* CLUSTER_LAUNCH */
};
#define ATTRIBUTE_LIMIT 162 /* CU_DEVICE_ATTRIBUTE_MAX of the CUDA 13 headers */

/* ---- Objects. ---- */

#define MAGIC 0x5C0DA5AFu

enum type { T_CONTEXT = 1, T_GREEN, T_STREAM, T_EVENT, T_POOL, T_LIBRARY, T_KERNEL, T_DESC };

static const char *const TYPE_NAMES[] = {"?",    "context", "green context", "stream", "event",
                                         "pool", "library", "kernel",        "resource desc"};

struct object {
    unsigned magic;
    enum type type;
    int alive;
    int abandoned;
};

struct context {
    struct object head;
    unsigned sm_count;
};

struct green {
    struct object head;
    struct context *context;
};

struct stream {
    struct object head;
    struct context *context;
    unsigned flags;
    int priority;
};

struct event {
    struct object head;
    struct context *context;
    unsigned flags;
    int recorded;
};

struct pool {
    struct object head;
    int is_default;
    unsigned long long max_size, used, used_high, reserved, reserved_high, threshold;
};

struct kernel_def {
    const char *name;
    size_t param_count;
    size_t param_size[4];
    size_t param_offset[4];
    int doubles; /* launching it doubles x[0..n) of its (float *x, size_t n) */
};

/* The kernels of every library: `twice` (and any lowered name of the NVRTC stub, "_Zstub_..."),
 * and `noop`. */
static const struct kernel_def TWICE = {"twice", 2, {8, 8}, {0, 8}, 1};
static const struct kernel_def NOOP = {"noop", 0, {0}, {0}, 0};

#define MAX_KERNELS 8

struct kernel {
    struct object head;
    struct library *library;
    const struct kernel_def *def;
    char name[128];
    int max_dynamic_shared;
};

struct library {
    struct object head;
    struct kernel *kernels[MAX_KERNELS];
    size_t kernel_count;
    unsigned char global[256]; /* the `__device__` variable `counter` */
};

struct desc {
    struct object head;
    unsigned sm_count;
};

enum alloc_kind { A_POOL, A_HOST, A_MANAGED };

struct allocation {
    CUdeviceptr ptr;
    size_t size;
    enum alloc_kind kind;
    struct pool *pool;
    int alive;
    int abandoned;
    struct allocation *next;
};

static struct allocation *allocations; /* every allocation ever made, newest first */

static int initialised;
static int driver_version = 13010;
static struct context *primary; /* the primary context while retained */
static int primary_retains;
static __thread struct context *current;
static struct pool default_pool = {{MAGIC, T_POOL, 1, 0}, 1, 0, 0, 0, 0, 0, 0};
static int process_state; /* CUprocessState of the checkpoint calls' process */

static void *make(size_t size, enum type type) {
    struct object *object = calloc(1, size);
    if (object == NULL)
        abort();
    object->magic = MAGIC;
    object->type = type;
    object->alive = 1;
    return object;
}

/* Whether `handle` is a live object of `type` (a misuse is noted otherwise). */
static int valid(const void *handle, enum type type, const char *api) {
    const struct object *object = handle;
    if ((uintptr_t)handle < 4096) {
        stub_misuse_note("%s: a null or special handle %p where a %s was expected", api, handle,
                         TYPE_NAMES[type]);
        return 0;
    }
    if (object->magic != MAGIC || object->type != type) {
        stub_misuse_note("%s: %p is not a %s", api, handle, TYPE_NAMES[type]);
        return 0;
    }
    if (!object->alive) {
        stub_misuse_note("%s: the %s %p was destroyed", api, TYPE_NAMES[type], handle);
        return 0;
    }
    return 1;
}

/* The error for a context that is not usable (destroyed, or none), with the misuse noted. */
static CUresult context_error(struct context *context, const char *api) {
    if (context == NULL) {
        stub_misuse_note("%s: no context is current", api);
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    if (!context->head.alive) {
        stub_misuse_note("%s: the context %p was destroyed", api, (void *)context);
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    }
    return CUDA_SUCCESS;
}

static CUresult need_current(const char *api) {
    return context_error(current, api);
}

/* Marks the live object `handle` of `type`, whose release failed by injection, abandoned. */
static void abandon(void *handle, enum type type) {
    struct object *object = handle;
    if ((uintptr_t)handle >= 4096 && object->magic == MAGIC && object->type == type &&
        object->alive)
        object->abandoned = 1;
}

/* Every entry point but cuInit, cuDriverGetVersion and the error strings: counted, faults
 * injected, and refused before cuInit. */
#define DRIVER(name)                                                                           \
    do {                                                                                       \
        ENTER(name);                                                                           \
        if (!initialised) {                                                                    \
            stub_misuse_note("%s before cuInit", name);                                        \
            return CUDA_ERROR_NOT_INITIALIZED;                                                 \
        }                                                                                      \
    } while (0)

/* A release: counted, and a fault injected into it abandons the object (see the top). */
#define DRIVER_RELEASE(name, abandoning)                                                       \
    do {                                                                                       \
        int injected_ = stub_enter(name, 0);                                                   \
        if (injected_ != 0) {                                                                  \
            abandoning;                                                                        \
            return injected_;                                                                  \
        }                                                                                      \
        if (!initialised) {                                                                    \
            stub_misuse_note("%s before cuInit", name);                                        \
            return CUDA_ERROR_NOT_INITIALIZED;                                                 \
        }                                                                                      \
    } while (0)

/* The stream a call is queued on: a stub stream, or the legacy / per-thread default stream of
 * the current context. NULL (with the misuse noted) when unusable. */
static struct context *stream_context(const void *handle, const char *api) {
    if ((uintptr_t)handle <= 2) {
        return need_current(api) == CUDA_SUCCESS ? current : NULL;
    }
    if (!valid(handle, T_STREAM, api))
        return NULL;
    const struct stream *stream = handle;
    return context_error(stream->context, api) == CUDA_SUCCESS ? stream->context : NULL;
}

static struct allocation *find_allocation(CUdeviceptr address, int alive) {
    for (struct allocation *a = allocations; a != NULL; a = a->next) {
        if (a->alive == alive && address >= a->ptr && address - a->ptr < a->size)
            return a;
    }
    return NULL;
}

/* Checks `size` bytes at `address`: inside one live allocation, or (when `host_ok`) outside
 * every allocation ever made (host memory). */
static CUresult check_range(CUdeviceptr address, size_t size, int host_ok, const char *api) {
    struct allocation *live = find_allocation(address, 1);
    if (live != NULL) {
        if (size > live->size - (address - live->ptr)) {
            stub_misuse_note("%s: %zu bytes at %#llx run past an allocation of %zu bytes", api,
                             size, address, live->size);
            return CUDA_ERROR_INVALID_VALUE;
        }
        return CUDA_SUCCESS;
    }
    if (find_allocation(address, 0) != NULL) {
        stub_misuse_note("%s: %#llx was freed", api, address);
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    }
    if (!host_ok) {
        stub_misuse_note("%s: %#llx is not device memory", api, address);
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

static void abandon_allocation(CUdeviceptr ptr) {
    struct allocation *a = find_allocation(ptr, 1);
    if (a != NULL && a->ptr == ptr)
        a->abandoned = 1;
}

static CUdeviceptr allocate(size_t size, enum alloc_kind kind, struct pool *pool) {
    unsigned char *memory = malloc(size);
    if (memory == NULL)
        return 0;
    memset(memory, 0xCD, size); /* fresh memory is not zero: fills must write it */
    struct allocation *a = calloc(1, sizeof *a);
    if (a == NULL)
        abort();
    a->ptr = (CUdeviceptr)(uintptr_t)memory;
    a->size = size;
    a->kind = kind;
    a->pool = pool;
    a->alive = 1;
    a->next = allocations;
    allocations = a;
    stub_live_add(K_ALLOC, 1);
    return a->ptr;
}

/* Frees the live allocation starting at `ptr` of `kind` (its memory is kept, never reused). */
static CUresult release(CUdeviceptr ptr, enum alloc_kind kind, const char *api) {
    struct allocation *a = find_allocation(ptr, 1);
    if (a == NULL || a->ptr != ptr || a->kind != kind) {
        stub_misuse_note("%s: %#llx is not a live allocation of this kind", api, ptr);
        return CUDA_ERROR_INVALID_VALUE;
    }
    a->alive = 0;
    if (a->pool != NULL)
        a->pool->used -= a->size;
    stub_live_add(K_ALLOC, -1);
    return CUDA_SUCCESS;
}

/* Counts the live allocations of `pool`. */
static size_t live_allocations_of(const struct pool *pool) {
    size_t count = 0;
    for (struct allocation *a = allocations; a != NULL; a = a->next)
        count += a->alive && !a->abandoned && a->pool == pool;
    return count;
}

void stub_driver_reset(void) {
    process_state = 0;
}

/* ---- Control functions of the driver (exported for the tests). ---- */

/* Makes no context current on the calling thread, without counting a call. */
void stub_unbind(void) {
    current = NULL;
}

/* Sets the CUDA version cuDriverGetVersion reports (13010, for 13.1, by default). */
void stub_set_driver_version(int version) {
    driver_version = version;
}

/* ---- Initialisation, version, errors. ---- */

CUresult cuInit(unsigned flags) {
    ENTER("cuInit");
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    initialised = 1;
    return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *version) {
    ENTER("cuDriverGetVersion");
    if (version == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *version = driver_version;
    return CUDA_SUCCESS;
}

struct error_text {
    int code;
    const char *name;
    const char *message;
};

static const struct error_text ERRORS[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {34, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {46, "CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA-capable device(s) is/are busy or unavailable"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
    {218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain."},
    {301, "CUDA_ERROR_FILE_NOT_FOUND", "file not found"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {401, "CUDA_ERROR_ILLEGAL_STATE", "the operation cannot be performed in the present state"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {600, "CUDA_ERROR_NOT_READY", "device not ready"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {709, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {800, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {802, "CUDA_ERROR_SYSTEM_NOT_READY", "system not yet initialized"},
    {914, "CUDA_ERROR_INVALID_RESOURCE_TYPE", "invalid resource type"},
    {915, "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION", "invalid resource configuration"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static const struct error_text *error_text(int code) {
    for (size_t i = 0; i < sizeof ERRORS / sizeof ERRORS[0]; i++) {
        if (ERRORS[i].code == code)
            return &ERRORS[i];
    }
    return NULL;
}

/* As the driver: an unknown code is CUDA_ERROR_INVALID_VALUE with the string set to NULL. */
CUresult cuGetErrorName(CUresult error, const char **text) {
    ENTER("cuGetErrorName");
    if (text == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    const struct error_text *known = error_text(error);
    *text = known != NULL ? known->name : NULL;
    return known != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult error, const char **text) {
    ENTER("cuGetErrorString");
    if (text == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    const struct error_text *known = error_text(error);
    *text = known != NULL ? known->message : NULL;
    return known != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- Devices. ---- */

static CUresult check_device(CUdevice device, const char *api) {
    if (device != 0) {
        stub_misuse_note("%s: device %d was not returned by cuDeviceGet", api, device);
        return CUDA_ERROR_INVALID_DEVICE;
    }
    return CUDA_SUCCESS;
}

#define CHECK(call)                                                                            \
    do {                                                                                       \
        CUresult checked_ = (call);                                                            \
        if (checked_ != CUDA_SUCCESS)                                                          \
            return checked_;                                                                   \
    } while (0)

CUresult cuDeviceGetCount(int *count) {
    DRIVER("cuDeviceGetCount");
    if (count == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *count = 1;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
    DRIVER("cuDeviceGet");
    if (device == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (ordinal != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *device = 0;
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
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char *id, int len, CUdevice device) {
    DRIVER("cuDeviceGetPCIBusId");
    CHECK(check_device(device, "cuDeviceGetPCIBusId"));
    if (id == NULL || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(id, (size_t)len, "0000:19:00.0");
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
    return CUDA_SUCCESS;
}

CUresult cuDeviceCanAccessPeer(int *can, CUdevice device, CUdevice peer) {
    DRIVER("cuDeviceCanAccessPeer");
    CHECK(check_device(device, "cuDeviceCanAccessPeer"));
    CHECK(check_device(peer, "cuDeviceCanAccessPeer"));
    if (can == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *can = 0;
    return CUDA_SUCCESS;
}

/* ---- Contexts. ---- */

CUresult cuDevicePrimaryCtxRetain(struct context **context, CUdevice device) {
    DRIVER("cuDevicePrimaryCtxRetain");
    CHECK(check_device(device, "cuDevicePrimaryCtxRetain"));
    if (context == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (primary == NULL) {
        primary = make(sizeof *primary, T_CONTEXT);
        primary->sm_count = SM_COUNT;
    }
    primary_retains++;
    stub_live_add(K_CONTEXT, 1);
    *context = primary;
    return CUDA_SUCCESS;
}

/* Counts the live streams and events of `context`, which destroying it would destroy too. */
static size_t live_children(const struct context *context);

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device) {
    DRIVER("cuDevicePrimaryCtxRelease_v2");
    CHECK(check_device(device, "cuDevicePrimaryCtxRelease_v2"));
    if (primary_retains == 0) {
        stub_misuse_note("cuDevicePrimaryCtxRelease_v2: the primary context is not retained");
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    primary_retains--;
    stub_live_add(K_CONTEXT, -1);
    if (primary_retains == 0) {
        size_t children = live_children(primary);
        if (children != 0)
            stub_misuse_note("cuDevicePrimaryCtxRelease_v2: the primary context is destroyed "
                             "with %zu streams or events alive",
                             children);
        primary->head.alive = 0;
        primary = NULL; /* the next retain makes a new one */
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
    *device = 0;
    return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
    DRIVER("cuCtxSynchronize");
    return need_current("cuCtxSynchronize");
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

CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
    DRIVER("cuMemGetInfo_v2");
    CHECK(need_current("cuMemGetInfo_v2"));
    if (free_bytes == NULL || total == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    size_t used = 0;
    for (struct allocation *a = allocations; a != NULL; a = a->next)
        used += a->alive ? a->size : 0;
    *total = TOTAL_MEMORY;
    *free_bytes = TOTAL_MEMORY - used;
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

static size_t live_children(const struct context *context) {
    size_t children = 0;
    for (size_t i = 0; i < stream_count; i++)
        children += streams[i]->head.alive && !streams[i]->head.abandoned &&
                    streams[i]->context == context;
    for (size_t i = 0; i < event_count; i++)
        children += events[i]->head.alive && !events[i]->head.abandoned &&
                    events[i]->context == context;
    return children;
}

static struct stream *new_stream(struct context *context, unsigned flags, int priority) {
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

CUresult cuStreamDestroy_v2(struct stream *stream) {
    DRIVER_RELEASE("cuStreamDestroy_v2", abandon(stream, T_STREAM));
    if (!valid(stream, T_STREAM, "cuStreamDestroy_v2"))
        return CUDA_ERROR_INVALID_HANDLE;
    CHECK(context_error(stream->context, "cuStreamDestroy_v2"));
    stream->head.alive = 0;
    stub_live_add(K_STREAM, -1);
    return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(void *stream) {
    DRIVER("cuStreamSynchronize");
    return stream_context(stream, "cuStreamSynchronize") != NULL ? CUDA_SUCCESS
                                                                  : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuStreamQuery(void *stream) {
    DRIVER("cuStreamQuery");
    return stream_context(stream, "cuStreamQuery") != NULL ? CUDA_SUCCESS
                                                            : CUDA_ERROR_INVALID_HANDLE;
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

#define CU_EVENT_DISABLE_TIMING 2u
#define CU_EVENT_INTERPROCESS 4u

CUresult cuStreamWaitEvent(void *stream, struct event *event, unsigned flags) {
    DRIVER("cuStreamWaitEvent");
    if (stream_context(stream, "cuStreamWaitEvent") == NULL ||
        !valid(event, T_EVENT, "cuStreamWaitEvent"))
        return CUDA_ERROR_INVALID_HANDLE;
    /* The event may belong to another context than the stream. */
    CHECK(context_error(event->context, "cuStreamWaitEvent"));
    return flags <= 1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuEventCreate(struct event **event, unsigned flags) {
    DRIVER("cuEventCreate");
    CHECK(need_current("cuEventCreate"));
    if (event == NULL || (flags & ~7u) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if ((flags & CU_EVENT_INTERPROCESS) && !(flags & CU_EVENT_DISABLE_TIMING))
        return CUDA_ERROR_INVALID_VALUE;
    struct event *made = make(sizeof *made, T_EVENT);
    made->context = current;
    made->flags = flags;
    remember((void ***)&events, &event_count, made);
    stub_live_add(K_EVENT, 1);
    *event = made;
    return CUDA_SUCCESS;
}

CUresult cuEventDestroy_v2(struct event *event) {
    DRIVER_RELEASE("cuEventDestroy_v2", abandon(event, T_EVENT));
    if (!valid(event, T_EVENT, "cuEventDestroy_v2"))
        return CUDA_ERROR_INVALID_HANDLE;
    CHECK(context_error(event->context, "cuEventDestroy_v2"));
    event->head.alive = 0;
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
    return CUDA_SUCCESS;
}

CUresult cuEventSynchronize(struct event *event) {
    DRIVER("cuEventSynchronize");
    if (!valid(event, T_EVENT, "cuEventSynchronize"))
        return CUDA_ERROR_INVALID_HANDLE;
    return context_error(event->context, "cuEventSynchronize");
}

CUresult cuEventQuery(struct event *event) {
    DRIVER("cuEventQuery");
    if (!valid(event, T_EVENT, "cuEventQuery"))
        return CUDA_ERROR_INVALID_HANDLE;
    return context_error(event->context, "cuEventQuery");
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

CUresult cuIpcGetEventHandle(unsigned char *handle, struct event *event) {
    DRIVER("cuIpcGetEventHandle");
    if (!valid(event, T_EVENT, "cuIpcGetEventHandle"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (handle == NULL || !(event->flags & CU_EVENT_INTERPROCESS))
        return CUDA_ERROR_INVALID_VALUE;
    memset(handle, 0, 64);
    memcpy(handle, &event, sizeof event);
    return CUDA_SUCCESS;
}

/* ---- Memory pools. ---- */

#define POOL_ATTR_RELEASE_THRESHOLD 4
#define POOL_ATTR_RESERVED_MEM_CURRENT 5
#define POOL_ATTR_RESERVED_MEM_HIGH 6
#define POOL_ATTR_USED_MEM_CURRENT 7
#define POOL_ATTR_USED_MEM_HIGH 8

CUresult cuDeviceGetDefaultMemPool(struct pool **pool, CUdevice device) {
    DRIVER("cuDeviceGetDefaultMemPool");
    CHECK(check_device(device, "cuDeviceGetDefaultMemPool"));
    if (pool == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *pool = &default_pool;
    return CUDA_SUCCESS;
}

/* Reads the properties' maxSize (offset 24 in both ABIs' CUmemPoolProps). */
CUresult cuMemPoolCreate(struct pool **pool, const unsigned char *props) {
    DRIVER("cuMemPoolCreate");
    if (pool == NULL || props == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct pool *made = make(sizeof *made, T_POOL);
    memcpy(&made->max_size, props + 24, sizeof(size_t));
    stub_live_add(K_POOL, 1);
    *pool = made;
    return CUDA_SUCCESS;
}

CUresult cuMemPoolDestroy(struct pool *pool) {
    DRIVER("cuMemPoolDestroy");
    if (!valid(pool, T_POOL, "cuMemPoolDestroy"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (pool->is_default) {
        stub_misuse_note("cuMemPoolDestroy: the default pool");
        return CUDA_ERROR_INVALID_VALUE;
    }
    size_t outstanding = live_allocations_of(pool);
    if (outstanding != 0)
        stub_misuse_note("cuMemPoolDestroy: %zu allocations of the pool are alive", outstanding);
    pool->head.alive = 0;
    stub_live_add(K_POOL, -1);
    return CUDA_SUCCESS;
}

CUresult cuMemPoolSetAttribute(struct pool *pool, int attribute, void *value) {
    DRIVER("cuMemPoolSetAttribute");
    if (!valid(pool, T_POOL, "cuMemPoolSetAttribute"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (value == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned long long number;
    switch (attribute) {
    case 1: case 2: case 3:
        return CUDA_SUCCESS;
    case POOL_ATTR_RELEASE_THRESHOLD:
        memcpy(&pool->threshold, value, sizeof pool->threshold);
        return CUDA_SUCCESS;
    case POOL_ATTR_RESERVED_MEM_HIGH:
    case POOL_ATTR_USED_MEM_HIGH:
        memcpy(&number, value, sizeof number);
        if (number != 0)
            return CUDA_ERROR_INVALID_VALUE;
        if (attribute == POOL_ATTR_RESERVED_MEM_HIGH)
            pool->reserved_high = pool->reserved;
        else
            pool->used_high = pool->used;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult cuMemPoolGetAttribute(struct pool *pool, int attribute, void *value) {
    DRIVER("cuMemPoolGetAttribute");
    if (!valid(pool, T_POOL, "cuMemPoolGetAttribute"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (value == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned long long number;
    switch (attribute) {
    case 1: case 2: case 3: {
        int yes = 1;
        memcpy(value, &yes, sizeof yes);
        return CUDA_SUCCESS;
    }
    case POOL_ATTR_RELEASE_THRESHOLD: number = pool->threshold; break;
    case POOL_ATTR_RESERVED_MEM_CURRENT: number = pool->reserved; break;
    case POOL_ATTR_RESERVED_MEM_HIGH: number = pool->reserved_high; break;
    case POOL_ATTR_USED_MEM_CURRENT: number = pool->used; break;
    case POOL_ATTR_USED_MEM_HIGH: number = pool->used_high; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    memcpy(value, &number, sizeof number);
    return CUDA_SUCCESS;
}

CUresult cuMemPoolTrimTo(struct pool *pool, size_t keep) {
    DRIVER("cuMemPoolTrimTo");
    if (!valid(pool, T_POOL, "cuMemPoolTrimTo"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (pool->reserved > keep)
        pool->reserved = keep > pool->used ? keep : pool->used;
    return CUDA_SUCCESS;
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *ptr, size_t size, struct pool *pool, void *stream) {
    DRIVER("cuMemAllocFromPoolAsync");
    if (!valid(pool, T_POOL, "cuMemAllocFromPoolAsync") ||
        stream_context(stream, "cuMemAllocFromPoolAsync") == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (ptr == NULL || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (pool->max_size != 0 && pool->used + size > pool->max_size)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUdeviceptr made = allocate(size, A_POOL, pool);
    if (made == 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pool->used += size;
    if (pool->used > pool->used_high)
        pool->used_high = pool->used;
    if (pool->used > pool->reserved)
        pool->reserved = pool->used;
    if (pool->reserved > pool->reserved_high)
        pool->reserved_high = pool->reserved;
    *ptr = made;
    return CUDA_SUCCESS;
}

CUresult cuMemFreeAsync(CUdeviceptr ptr, void *stream) {
    DRIVER_RELEASE("cuMemFreeAsync", abandon_allocation(ptr));
    if (stream_context(stream, "cuMemFreeAsync") == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    return release(ptr, A_POOL, "cuMemFreeAsync");
}

/* ---- Pinned and managed memory. ---- */

CUresult cuMemHostAlloc(void **ptr, size_t size, unsigned flags) {
    DRIVER("cuMemHostAlloc");
    CHECK(need_current("cuMemHostAlloc"));
    if (ptr == NULL || size == 0 || (flags & ~15u) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    CUdeviceptr made = allocate(size, A_HOST, NULL);
    if (made == 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *ptr = (void *)(uintptr_t)made;
    return CUDA_SUCCESS;
}

CUresult cuMemFreeHost(void *ptr) {
    DRIVER_RELEASE("cuMemFreeHost", abandon_allocation((CUdeviceptr)(uintptr_t)ptr));
    CHECK(need_current("cuMemFreeHost"));
    return release((CUdeviceptr)(uintptr_t)ptr, A_HOST, "cuMemFreeHost");
}

CUresult cuMemAllocManaged(CUdeviceptr *ptr, size_t size, unsigned flags) {
    DRIVER("cuMemAllocManaged");
    CHECK(need_current("cuMemAllocManaged"));
    if (ptr == NULL || size == 0 || (flags != 1 && flags != 2))
        return CUDA_ERROR_INVALID_VALUE;
    CUdeviceptr made = allocate(size, A_MANAGED, NULL);
    if (made == 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *ptr = made;
    return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr ptr) {
    DRIVER_RELEASE("cuMemFree_v2", abandon_allocation(ptr));
    CHECK(need_current("cuMemFree_v2"));
    return release(ptr, A_MANAGED, "cuMemFree_v2");
}

/* ---- Copies and memsets, done at once on the host. ---- */

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, void *stream) {
    DRIVER("cuMemcpyAsync");
    if (stream_context(stream, "cuMemcpyAsync") == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    CHECK(check_range(dst, bytes, 1, "cuMemcpyAsync"));
    CHECK(check_range(src, bytes, 1, "cuMemcpyAsync"));
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes);
    return CUDA_SUCCESS;
}

/* Writes `height` rows of `width` words of `word` bytes, `pitch` bytes apart. */
static CUresult memset_2d(const char *api, CUdeviceptr dst, size_t pitch, unsigned value,
                          size_t word, size_t width, size_t height, void *stream) {
    if (stream_context(stream, api) == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (width == 0 || height == 0)
        return CUDA_SUCCESS;
    if (dst % word != 0 || (height > 1 && pitch < width * word))
        return CUDA_ERROR_INVALID_VALUE;
    CHECK(check_range(dst, (height - 1) * pitch + width * word, 0, api));
    for (size_t row = 0; row < height; row++) {
        unsigned char *start = (unsigned char *)(uintptr_t)(dst + row * pitch);
        for (size_t i = 0; i < width; i++)
            memcpy(start + i * word, &value, word); /* little-endian: the low bytes */
    }
    return CUDA_SUCCESS;
}

CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t count, void *stream) {
    DRIVER("cuMemsetD8Async");
    return memset_2d("cuMemsetD8Async", dst, count, value, 1, count, 1, stream);
}

CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short value, size_t count, void *stream) {
    DRIVER("cuMemsetD16Async");
    return memset_2d("cuMemsetD16Async", dst, count * 2, value, 2, count, 1, stream);
}

CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned value, size_t count, void *stream) {
    DRIVER("cuMemsetD32Async");
    return memset_2d("cuMemsetD32Async", dst, count * 4, value, 4, count, 1, stream);
}

CUresult cuMemsetD2D8Async(CUdeviceptr dst, size_t pitch, unsigned char value, size_t width,
                           size_t height, void *stream) {
    DRIVER("cuMemsetD2D8Async");
    return memset_2d("cuMemsetD2D8Async", dst, pitch, value, 1, width, height, stream);
}

CUresult cuMemsetD2D16Async(CUdeviceptr dst, size_t pitch, unsigned short value, size_t width,
                            size_t height, void *stream) {
    DRIVER("cuMemsetD2D16Async");
    return memset_2d("cuMemsetD2D16Async", dst, pitch, value, 2, width, height, stream);
}

CUresult cuMemsetD2D32Async(CUdeviceptr dst, size_t pitch, unsigned value, size_t width,
                            size_t height, void *stream) {
    DRIVER("cuMemsetD2D32Async");
    return memset_2d("cuMemsetD2D32Async", dst, pitch, value, 4, width, height, stream);
}

/* ---- Libraries and kernels. ---- */

static struct library *new_library(void) {
    struct library *library = make(sizeof *library, T_LIBRARY);
    stub_live_add(K_LIBRARY, 1);
    return library;
}

CUresult cuLibraryLoadData(struct library **library, const void *code, void *jit_options,
                           void *jit_values, unsigned jit_count, void *library_options,
                           void *library_values, unsigned library_count) {
    DRIVER("cuLibraryLoadData");
    (void)jit_options, (void)jit_values, (void)library_options, (void)library_values;
    if (library == NULL || code == NULL || jit_count != 0 || library_count != 0)
        return CUDA_ERROR_INVALID_VALUE;
    *library = new_library();
    return CUDA_SUCCESS;
}

CUresult cuLibraryLoadFromFile(struct library **library, const char *path, void *jit_options,
                               void *jit_values, unsigned jit_count, void *library_options,
                               void *library_values, unsigned library_count) {
    DRIVER("cuLibraryLoadFromFile");
    (void)jit_options, (void)jit_values, (void)library_options, (void)library_values;
    if (library == NULL || path == NULL || jit_count != 0 || library_count != 0)
        return CUDA_ERROR_INVALID_VALUE;
    FILE *file = fopen(path, "rb");
    if (file == NULL)
        return CUDA_ERROR_FILE_NOT_FOUND;
    fclose(file);
    *library = new_library();
    return CUDA_SUCCESS;
}

CUresult cuLibraryUnload(struct library *library) {
    DRIVER("cuLibraryUnload");
    if (!valid(library, T_LIBRARY, "cuLibraryUnload"))
        return CUDA_ERROR_INVALID_HANDLE;
    library->head.alive = 0;
    for (size_t i = 0; i < library->kernel_count; i++)
        library->kernels[i]->head.alive = 0;
    stub_live_add(K_LIBRARY, -1);
    return CUDA_SUCCESS;
}

/* The library's kernel called `name` (the same handle each time), or NULL for none. */
static struct kernel *kernel_named(struct library *library, const char *name) {
    const struct kernel_def *def = NULL;
    if (strcmp(name, "twice") == 0 || strncmp(name, "_Zstub_", 7) == 0)
        def = &TWICE;
    else if (strcmp(name, "noop") == 0)
        def = &NOOP;
    if (def == NULL || strlen(name) >= sizeof library->kernels[0]->name)
        return NULL;
    for (size_t i = 0; i < library->kernel_count; i++) {
        if (strcmp(library->kernels[i]->name, name) == 0)
            return library->kernels[i];
    }
    if (library->kernel_count == MAX_KERNELS)
        return NULL;
    struct kernel *kernel = make(sizeof *kernel, T_KERNEL);
    kernel->library = library;
    kernel->def = def;
    strcpy(kernel->name, name);
    kernel->max_dynamic_shared = 49152;
    library->kernels[library->kernel_count++] = kernel;
    return kernel;
}

CUresult cuLibraryGetKernel(struct kernel **kernel, struct library *library, const char *name) {
    DRIVER("cuLibraryGetKernel");
    if (!valid(library, T_LIBRARY, "cuLibraryGetKernel"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (kernel == NULL || name == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct kernel *found = kernel_named(library, name);
    if (found == NULL)
        return CUDA_ERROR_NOT_FOUND;
    *kernel = found;
    return CUDA_SUCCESS;
}

CUresult cuLibraryGetKernelCount(unsigned *count, struct library *library) {
    DRIVER("cuLibraryGetKernelCount");
    if (!valid(library, T_LIBRARY, "cuLibraryGetKernelCount"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (count == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *count = 2;
    return CUDA_SUCCESS;
}

CUresult cuLibraryEnumerateKernels(struct kernel **kernels, unsigned count,
                                   struct library *library) {
    DRIVER("cuLibraryEnumerateKernels");
    if (!valid(library, T_LIBRARY, "cuLibraryEnumerateKernels"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (kernels == NULL || count == 0)
        return CUDA_ERROR_INVALID_VALUE;
    const char *names[2] = {"twice", "noop"};
    for (unsigned i = 0; i < count && i < 2; i++)
        kernels[i] = kernel_named(library, names[i]);
    return CUDA_SUCCESS;
}

CUresult cuLibraryGetGlobal(CUdeviceptr *address, size_t *bytes, struct library *library,
                            const char *name) {
    DRIVER("cuLibraryGetGlobal");
    CHECK(need_current("cuLibraryGetGlobal"));
    if (!valid(library, T_LIBRARY, "cuLibraryGetGlobal"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (address == NULL || bytes == NULL || name == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (strcmp(name, "counter") != 0)
        return CUDA_ERROR_NOT_FOUND;
    *address = (CUdeviceptr)(uintptr_t)library->global;
    *bytes = sizeof library->global;
    return CUDA_SUCCESS;
}

static int valid_kernel(const struct kernel *kernel, const char *api) {
    if (!valid(kernel, T_KERNEL, api))
        return 0;
    if (!kernel->library->head.alive) {
        stub_misuse_note("%s: the kernel's library was unloaded", api);
        return 0;
    }
    return 1;
}

CUresult cuKernelGetName(const char **name, struct kernel *kernel) {
    DRIVER("cuKernelGetName");
    if (!valid_kernel(kernel, "cuKernelGetName"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (name == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *name = kernel->name;
    return CUDA_SUCCESS;
}

/* Needs a current context, which cuda-safe may deliberately lack (Kernel::params): no misuse. */
CUresult cuKernelGetParamInfo(struct kernel *kernel, size_t index, size_t *offset, size_t *size) {
    DRIVER("cuKernelGetParamInfo");
    if (!valid_kernel(kernel, "cuKernelGetParamInfo"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (current == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (offset == NULL || size == NULL || index >= kernel->def->param_count)
        return CUDA_ERROR_INVALID_VALUE;
    *offset = kernel->def->param_offset[index];
    *size = kernel->def->param_size[index];
    return CUDA_SUCCESS;
}

#define FUNC_ATTR_MAX_DYNAMIC_SHARED 8
#define FUNC_ATTR_PREFERRED_CARVEOUT 9
#define FUNC_ATTR_NON_PORTABLE_CLUSTER 14

CUresult cuKernelGetAttribute(int *value, int attribute, struct kernel *kernel,
                              CUdevice device) {
    DRIVER("cuKernelGetAttribute");
    if (!valid_kernel(kernel, "cuKernelGetAttribute"))
        return CUDA_ERROR_INVALID_HANDLE;
    CHECK(check_device(device, "cuKernelGetAttribute"));
    if (value == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    switch (attribute) {
    case 0: *value = 1024; break;                       /* MAX_THREADS_PER_BLOCK */
    case 1: case 2: case 3: *value = 0; break;          /* SHARED, CONST, LOCAL sizes */
    case 4: *value = 16; break;                         /* NUM_REGS */
    case 5: case 6: *value = 90; break;                 /* PTX_VERSION, BINARY_VERSION */
    case 7: *value = 0; break;                          /* CACHE_MODE_CA */
    case FUNC_ATTR_MAX_DYNAMIC_SHARED: *value = kernel->max_dynamic_shared; break;
    case FUNC_ATTR_PREFERRED_CARVEOUT: *value = -1; break;
    default:
        if (attribute < 0 || attribute >= 18)
            return CUDA_ERROR_INVALID_VALUE;
        *value = 0;
    }
    return CUDA_SUCCESS;
}

CUresult cuKernelSetAttribute(int attribute, int value, struct kernel *kernel, CUdevice device) {
    DRIVER("cuKernelSetAttribute");
    if (!valid_kernel(kernel, "cuKernelSetAttribute"))
        return CUDA_ERROR_INVALID_HANDLE;
    CHECK(check_device(device, "cuKernelSetAttribute"));
    switch (attribute) {
    case FUNC_ATTR_MAX_DYNAMIC_SHARED:
        if (value < 0 || value > SHARED_OPTIN)
            return CUDA_ERROR_INVALID_VALUE;
        kernel->max_dynamic_shared = value;
        return CUDA_SUCCESS;
    case FUNC_ATTR_PREFERRED_CARVEOUT:
        return value >= -1 && value <= 100 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case FUNC_ATTR_NON_PORTABLE_CLUSTER:
        return value == 0 || value == 1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

/* The function of a kernel in the current context: the kernel handle itself. */
CUresult cuKernelGetFunction(struct kernel **function, struct kernel *kernel) {
    DRIVER("cuKernelGetFunction");
    CHECK(need_current("cuKernelGetFunction"));
    if (!valid_kernel(kernel, "cuKernelGetFunction"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (function == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *function = kernel;
    return CUDA_SUCCESS;
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, struct kernel *function,
                                                     int block_size, size_t dynamic_shared) {
    DRIVER("cuOccupancyMaxActiveBlocksPerMultiprocessor");
    CHECK(need_current("cuOccupancyMaxActiveBlocksPerMultiprocessor"));
    if (!valid_kernel(function, "cuOccupancyMaxActiveBlocksPerMultiprocessor"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (blocks == NULL || block_size <= 0 || block_size > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    int fit = 2048 / block_size;
    if (fit > 32)
        fit = 32;
    if (dynamic_shared > 0 && (size_t)fit > 233472 / dynamic_shared)
        fit = (int)(233472 / dynamic_shared);
    *blocks = fit;
    return CUDA_SUCCESS;
}

CUresult cuOccupancyMaxPotentialBlockSize(int *grid, int *block, struct kernel *function,
                                          void *block_to_shared, size_t dynamic_shared,
                                          int limit) {
    DRIVER("cuOccupancyMaxPotentialBlockSize");
    CHECK(need_current("cuOccupancyMaxPotentialBlockSize"));
    if (!valid_kernel(function, "cuOccupancyMaxPotentialBlockSize"))
        return CUDA_ERROR_INVALID_HANDLE;
    (void)block_to_shared, (void)dynamic_shared;
    if (grid == NULL || block == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *block = limit > 0 && limit < 1024 ? limit : 1024;
    *grid = SM_COUNT * (2048 / *block);
    return CUDA_SUCCESS;
}

/* CUlaunchConfig, the same in both ABIs (56 bytes). */
struct launch_config {
    unsigned grid[3];
    unsigned block[3];
    unsigned shared;
    void *stream;
    void *attributes;
    unsigned attribute_count;
};

/* One launch, whichever entry point it came through (`api`, for misuse reports). */
static CUresult launch(const char *api, const struct launch_config *config,
                       struct kernel *function, void **params, void **extra) {
    if (stream_context(config->stream, api) == NULL || !valid_kernel(function, api))
        return CUDA_ERROR_INVALID_HANDLE;
    const unsigned block_limit[3] = {1024, 1024, 64};
    unsigned long long threads = 1;
    for (int i = 0; i < 3; i++) {
        if (config->grid[i] == 0 || config->block[i] == 0 || config->block[i] > block_limit[i])
            return CUDA_ERROR_INVALID_VALUE;
        threads *= config->block[i];
    }
    if (threads > 1024 || config->shared > (unsigned)function->max_dynamic_shared)
        return CUDA_ERROR_INVALID_VALUE;
    if (function->def->param_count > 0 && params == NULL && extra == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (function->def->doubles && params != NULL) {
        CUdeviceptr x;
        size_t n;
        memcpy(&x, params[0], sizeof x);
        memcpy(&n, params[1], sizeof n);
        if (n > 0)
            CHECK(check_range(x, n * sizeof(float), 0, api));
        float *values = (float *)(uintptr_t)x;
        for (size_t i = 0; i < n; i++)
            values[i] *= 2.0f;
    }
    return CUDA_SUCCESS;
}

CUresult cuLaunchKernelEx(const struct launch_config *config, struct kernel *function,
                          void **params, void **extra) {
    DRIVER("cuLaunchKernelEx");
    if (config == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return launch("cuLaunchKernelEx", config, function, params, extra);
}

CUresult cuLaunchKernel(struct kernel *function, unsigned grid_x, unsigned grid_y,
                        unsigned grid_z, unsigned block_x, unsigned block_y, unsigned block_z,
                        unsigned shared, void *stream, void **params, void **extra) {
    DRIVER("cuLaunchKernel");
    const struct launch_config config = {
        {grid_x, grid_y, grid_z}, {block_x, block_y, block_z}, shared, stream, NULL, 0};
    return launch("cuLaunchKernel", &config, function, params, extra);
}

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

/* ---- Checkpoints: one process, RUNNING -> LOCKED -> CHECKPOINTED -> LOCKED -> RUNNING. ---- */

enum { RUNNING = 0, LOCKED = 1, CHECKPOINTED = 2 };

static CUresult transition(int pid, const void *args, int from, int to) {
    if (pid <= 0 || args == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (process_state != from)
        return CUDA_ERROR_ILLEGAL_STATE;
    process_state = to;
    return CUDA_SUCCESS;
}

CUresult cuCheckpointProcessGetState(int pid, int *state) {
    DRIVER("cuCheckpointProcessGetState");
    if (pid <= 0 || state == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *state = process_state;
    return CUDA_SUCCESS;
}

CUresult cuCheckpointProcessGetRestoreThreadId(int pid, int *tid) {
    DRIVER("cuCheckpointProcessGetRestoreThreadId");
    if (pid <= 0 || tid == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *tid = pid + 1;
    return CUDA_SUCCESS;
}

CUresult cuCheckpointProcessLock(int pid, void *args) {
    DRIVER("cuCheckpointProcessLock");
    return transition(pid, args, RUNNING, LOCKED);
}

CUresult cuCheckpointProcessCheckpoint(int pid, void *args) {
    DRIVER("cuCheckpointProcessCheckpoint");
    return transition(pid, args, LOCKED, CHECKPOINTED);
}

CUresult cuCheckpointProcessRestore(int pid, void *args) {
    DRIVER("cuCheckpointProcessRestore");
    return transition(pid, args, CHECKPOINTED, LOCKED);
}

CUresult cuCheckpointProcessUnlock(int pid, void *args) {
    DRIVER("cuCheckpointProcessUnlock");
    return transition(pid, args, LOCKED, RUNNING);
}
