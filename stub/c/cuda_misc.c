/*
 * The fake libcuda's shared state and checks (handles, contexts, the stream a call is queued
 * on), its control functions, initialisation, versions, error strings and checkpoints. See
 * cuda_stub.h.
 */
#include <stdint.h>
#include <stdlib.h>

#include "cuda_stub.h"

static const char *const TYPE_NAMES[] = {
    "?",       "context", "green context", "stream", "event",     "pool",
    "library", "kernel",  "resource desc", "chunk",  "CUDA array", "mipmapped array",
    "texture or surface", "graph", "executable graph", "graph node", "user object"};

int initialised;
static int driver_version = 13010;
__thread struct context *current;
int process_state;

void *make(size_t size, enum type type) {
    struct object *object = calloc(1, size);
    if (object == NULL)
        abort();
    object->magic = MAGIC;
    object->type = type;
    object->alive = 1;
    return object;
}

/* Whether `handle` is a live object of `type` (a misuse is noted otherwise). */
int valid(const void *handle, enum type type, const char *api) {
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
CUresult context_error(struct context *context, const char *api) {
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

CUresult need_current(const char *api) {
    return context_error(current, api);
}

/* Marks the live object `handle` of `type`, whose release failed by injection, abandoned. */
void abandon(void *handle, enum type type) {
    struct object *object = handle;
    if ((uintptr_t)handle >= 4096 && object->magic == MAGIC && object->type == type &&
        object->alive)
        object->abandoned = 1;
}

/* The stream a call is queued on: a stub stream, or the legacy / per-thread default stream of
 * the current context. NULL (with the misuse noted) when unusable. */
struct context *stream_context(const void *handle, const char *api) {
    if ((uintptr_t)handle <= 2) {
        return need_current(api) == CUDA_SUCCESS ? current : NULL;
    }
    if (!valid(handle, T_STREAM, api))
        return NULL;
    const struct stream *stream = handle;
    return context_error(stream->context, api) == CUDA_SUCCESS ? stream->context : NULL;
}

int stream_is_current(const void *handle, const char *api) {
    struct context *context = stream_context(handle, api);
    if (context == NULL)
        return 0;
    if (context != current) {
        stub_misuse_note("%s: its stream's context is not the calling thread's current one", api);
        return 0;
    }
    return 1;
}

void stub_driver_reset(void) {
    process_state = 0;
    ipc_reset();
    race_reset();
    graph_reset();
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
    {217, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", "peer access is not supported between these two devices"},
    {218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain."},
    {301, "CUDA_ERROR_FILE_NOT_FOUND", "file not found"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {401, "CUDA_ERROR_ILLEGAL_STATE", "the operation cannot be performed in the present state"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {600, "CUDA_ERROR_NOT_READY", "device not ready"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {704, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", "peer access is already enabled"},
    {705, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED", "peer access has not been enabled"},
    {709, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed"},
    {711, "CUDA_ERROR_TOO_MANY_PEERS", "peer mapping resources exhausted"},
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
