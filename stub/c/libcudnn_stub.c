/*
 * A fake cuDNN (the graph/backend API) for CPU tests of cuda-safe-libs's dnn module, compiled
 * into the stub driver's shared object and loaded through CUDA_SAFE_LIBCUDNN. Descriptors keep
 * the attributes set on them; finalizing one checks what cuDNN's would (the attributes its kind
 * needs, finalized descriptors referenced, a convolution's output shape:
 * libcudnn_check_stub.c); the heuristics propose dnn_stub_set_engines() configurations, the
 * first dnn_stub_refuse_engines() of which cannot be finalized into a plan; an execution
 * computes the graph on the CPU in double (libcudnn_exec_stub.c, libcudnn_ops_stub.c:
 * convolutions forward, backward data and backward filter over 2 spatial dims, pointwise
 * operations with masks and selects, matmuls with per-batch sizes, reductions, transposed
 * views, Bernoulli draws, layer norms forward and backward) on the driver's memory, which is
 * host memory; constants passed by value are read from the host; an execution on a capturing
 * stream becomes a host node that runs it at each replay. Every range an execution
 * reads or writes is checked against the driver's allocations, as are the workspace and the
 * handle's stream. Destroyed descriptors and handles are never reused, so a use after destroy
 * is a misuse, as is destroying a handle before an execution plan made with it. It says it is
 * cuDNN 9.14.0 (dnn_stub_set_version changes it).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_stub.h"
#include "stub.h"

#include "libcudnn_stub.h"

static struct desc **descs;
static long desc_count, live_descs;
static struct handle *handles;
static int handle_count;
static long live_handles;
long long dnn_engines = 3, dnn_refused = 0, dnn_work_size = 4096;
static size_t dnn_version = 91400;

long long dnn_stub_live(void) { return live_descs + live_handles; }
void dnn_stub_set_version(long long version) { dnn_version = (size_t)version; }
void dnn_stub_set_engines(long long count) { dnn_engines = count; }
void dnn_stub_refuse_engines(long long count) { dnn_refused = count; }
void dnn_stub_set_work_size(long long bytes) { dnn_work_size = bytes; }

static size_t type_size(int type) {
    switch (type) {
    case AT_BOOLEAN: return 1;
    case AT_HANDLE: case AT_INT64: case AT_DOUBLE: case AT_VOID_PTR: case AT_DESC: return 8;
    default: return 4;
    }
}

static struct desc *find(void *raw, const char *api) {
    for (long i = 0; i < desc_count; i++)
        if (descs[i] == raw && descs[i]->live)
            return descs[i];
    stub_misuse_note("%s: %p is not a live cuDNN backend descriptor", api, raw);
    return NULL;
}

struct handle *dnn_handle(void *raw, const char *api) {
    intptr_t index = (intptr_t)raw;
    if (index < 1 || index > handle_count || !handles[index - 1].live) {
        stub_misuse_note("%s: %p is not a live cuDNN handle", api, raw);
        return NULL;
    }
    return &handles[index - 1];
}

struct attr *dnn_attr(struct desc *d, int name) {
    for (int i = 0; i < d->nattrs; i++)
        if (d->attrs[i].name == name)
            return &d->attrs[i];
    return NULL;
}

long long dnn_i64(struct desc *d, int name, long long otherwise) {
    struct attr *a = dnn_attr(d, name);
    return a != NULL && a->count > 0 && a->type == AT_INT64 ? ((long long *)a->data)[0] : otherwise;
}

long long *dnn_ints(struct desc *d, int name, long long *count) {
    struct attr *a = dnn_attr(d, name);
    *count = a != NULL && a->type == AT_INT64 ? a->count : 0;
    return *count > 0 ? (long long *)a->data : NULL;
}

/* The finalized descriptor attribute `name` refers to, or NULL. */
struct desc *dnn_ref(struct desc *d, int name) {
    struct attr *a = dnn_attr(d, name);
    if (a == NULL || a->type != AT_DESC || a->count < 1)
        return NULL;
    struct desc *target = ((struct desc **)a->data)[0];
    return target->live && target->finalized ? target : NULL;
}

size_t cudnnGetVersion(void) { return dnn_version; }

const char *cudnnGetErrorString(int status) {
    switch (status) {
    case OK: return "CUDNN_STATUS_SUCCESS";
    case BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case NOT_FINALIZED: return "CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED";
    case SHAPE_MISMATCH: return "CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH";
    case NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
    default: return "CUDNN_STATUS_UNKNOWN";
    }
}

static char last_error[256];

void cudnnGetLastErrorString(char *message, size_t max) {
    if (max == 0)
        return;
    strncpy(message, last_error, max - 1);
    message[max - 1] = 0;
    last_error[0] = 0;
}

int dnn_fail(int status, const char *why) {
    strncpy(last_error, why, sizeof last_error - 1);
    return status;
}

int cudnnCreate(void **out) {
    ENTER("cudnnCreate");
    struct handle *grown = realloc(handles, (size_t)(handle_count + 1) * sizeof *handles);
    if (grown == NULL)
        return ALLOC;
    handles = grown;
    handles[handle_count].live = 1;
    handles[handle_count].stream = NULL;
    *out = (void *)(intptr_t)++handle_count;
    live_handles++;
    return OK;
}

int cudnnDestroy(void *raw) {
    ENTER("cudnnDestroy");
    struct handle *h = dnn_handle(raw, "cudnnDestroy");
    if (h == NULL)
        return BAD_PARAM;
    /* A plan runs on its handle (EXECUTION_PLAN_HANDLE, 400): it must be destroyed first. */
    for (long i = 0; i < desc_count; i++) {
        struct desc *d = descs[i];
        struct attr *a = d->live && d->kind == D_PLAN ? dnn_attr(d, 400) : NULL;
        if (a != NULL && a->type == AT_HANDLE && a->count > 0 && ((void **)a->data)[0] == raw)
            stub_misuse_note("cudnnDestroy: the handle %p is destroyed before its plan %p", raw,
                             (void *)d);
    }
    h->live = 0;
    live_handles--;
    return OK;
}

int cudnnSetStream(void *raw, void *stream) {
    ENTER("cudnnSetStream");
    struct handle *h = dnn_handle(raw, "cudnnSetStream");
    if (h == NULL)
        return BAD_PARAM;
    if (stream_context(stream, "cudnnSetStream") == NULL)
        return BAD_PARAM;
    h->stream = stream;
    return OK;
}

int cudnnGetStream(void *raw, void **stream) {
    ENTER("cudnnGetStream");
    struct handle *h = dnn_handle(raw, "cudnnGetStream");
    if (h == NULL)
        return BAD_PARAM;
    *stream = h->stream;
    return OK;
}

int cudnnBackendCreateDescriptor(int kind, void **out) {
    ENTER("cudnnBackendCreateDescriptor");
    struct desc **grown = realloc(descs, (size_t)(desc_count + 1) * sizeof *descs);
    if (grown == NULL)
        return ALLOC;
    descs = grown;
    struct desc *d = calloc(1, sizeof *d);
    if (d == NULL)
        return ALLOC;
    d->kind = kind;
    d->live = 1;
    descs[desc_count++] = d;
    live_descs++;
    *out = d;
    return OK;
}

int cudnnBackendDestroyDescriptor(void *raw) {
    ENTER("cudnnBackendDestroyDescriptor");
    struct desc *d = find(raw, "cudnnBackendDestroyDescriptor");
    if (d == NULL)
        return BAD_PARAM;
    for (int i = 0; i < d->nattrs; i++)
        free(d->attrs[i].data);
    d->nattrs = 0;
    d->live = 0;
    live_descs--;
    return OK;
}

int cudnnBackendSetAttribute(void *raw, int name, int type, long long count, const void *values) {
    ENTER("cudnnBackendSetAttribute");
    struct desc *d = find(raw, "cudnnBackendSetAttribute");
    if (d == NULL)
        return BAD_PARAM;
    if (d->finalized)
        return dnn_fail(BAD_PARAM, "the descriptor is finalized");
    if (count < 0 || (count > 0 && values == NULL))
        return BAD_PARAM;
    if (type == AT_DESC)
        for (long long i = 0; i < count; i++)
            if (find(((void *const *)values)[i], "cudnnBackendSetAttribute") == NULL)
                return BAD_PARAM;
    struct attr *a = dnn_attr(d, name);
    if (a == NULL) {
        if (d->nattrs == MAX_ATTRS)
            return BAD_PARAM;
        a = &d->attrs[d->nattrs++];
    } else {
        free(a->data);
    }
    size_t bytes = type_size(type) * (size_t)count;
    a->name = name;
    a->type = type;
    a->count = count;
    a->data = malloc(bytes ? bytes : 1);
    if (bytes)
        memcpy(a->data, values, bytes);
    return OK;
}

int cudnnBackendFinalize(void *raw) {
    ENTER("cudnnBackendFinalize");
    struct desc *d = find(raw, "cudnnBackendFinalize");
    if (d == NULL)
        return BAD_PARAM;
    if (d->finalized)
        return dnn_fail(BAD_PARAM, "the descriptor is finalized already");
    int status = dnn_stub_check(d);
    if (status == OK)
        d->finalized = 1;
    return status;
}

int cudnnBackendGetAttribute(void *raw, int name, int type, long long requested, long long *count,
                             void *values) {
    ENTER("cudnnBackendGetAttribute");
    struct desc *d = find(raw, "cudnnBackendGetAttribute");
    if (d == NULL)
        return BAD_PARAM;
    if (!d->finalized)
        return dnn_fail(NOT_FINALIZED, "the descriptor is not finalized");
    if (d->kind == D_HEUR && name == 202 /* ENGINEHEUR_RESULTS */) {
        long long n = requested < dnn_engines ? requested : dnn_engines;
        *count = requested == 0 ? dnn_engines : n;
        for (long long i = 0; i < n; i++) {
            struct desc *cfg = find(((void **)values)[i], "cudnnBackendGetAttribute");
            if (cfg == NULL || cfg->kind != D_ENGINECFG)
                return BAD_PARAM;
            cfg->graph = dnn_ref(d, 201);
            cfg->index = i;
            cfg->finalized = 1;
        }
        return OK;
    }
    if (d->kind == D_PLAN && name == 402 /* EXECUTION_PLAN_WORKSPACE_SIZE */) {
        *count = 1;
        if (requested >= 1)
            *(long long *)values = dnn_work_size;
        return OK;
    }
    struct attr *a = dnn_attr(d, name);
    if (a == NULL || a->type != type)
        return BAD_PARAM;
    long long n = requested < a->count ? requested : a->count;
    *count = requested == 0 ? a->count : n;
    if (n > 0)
        memcpy(values, a->data, type_size(type) * (size_t)n);
    return OK;
}

/* An execution queued on a capturing stream: the plan and a copy of the variant pack's ids and
 * pointers, the arguments of the host node that runs it at each replay (kept with the node,
 * which the stub never frees). */
struct captured_run {
    struct desc *plan;
    struct desc pack;
};

static void replay_run(void *data) {
    struct captured_run *run = data;
    if (!run->plan->live) {
        stub_misuse_note("a captured cuDNN execution replayed after its plan was destroyed");
        return;
    }
    if (dnn_stub_run(dnn_ref(run->plan, 401)->graph, &run->pack) != OK)
        stub_misuse_note("a captured cuDNN execution failed at its replay: %s", last_error);
}

/* Records the execution of `plan` on `pack` as a host node of `stream`'s capture. */
static int capture_run(struct desc *plan, struct desc *pack, void *stream) {
    struct captured_run *kept = calloc(1, sizeof *kept);
    if (kept == NULL)
        return ALLOC;
    kept->plan = plan;
    kept->pack.kind = D_PACK;
    kept->pack.live = kept->pack.finalized = 1;
    for (int name = 1000; name <= 1001; name++) {
        struct attr *from = dnn_attr(pack, name), *to = &kept->pack.attrs[kept->pack.nattrs++];
        size_t bytes = (size_t)from->count * 8;
        *to = *from;
        to->data = malloc(bytes ? bytes : 1);
        if (to->data == NULL)
            return ALLOC;
        memcpy(to->data, from->data, bytes);
    }
    return capture_host("cudnnBackendExecute", stream, replay_run, kept) == CUDA_SUCCESS
               ? OK
               : BAD_PARAM;
}

int cudnnBackendExecute(void *raw, void *plan_raw, void *pack_raw) {
    ENTER("cudnnBackendExecute");
    struct handle *h = dnn_handle(raw, "cudnnBackendExecute");
    struct desc *plan = find(plan_raw, "cudnnBackendExecute");
    struct desc *pack = find(pack_raw, "cudnnBackendExecute");
    if (h == NULL || plan == NULL || pack == NULL)
        return BAD_PARAM;
    if (plan->kind != D_PLAN || pack->kind != D_PACK || !plan->finalized || !pack->finalized)
        return dnn_fail(NOT_FINALIZED, "the plan or variant pack is not finalized");
    if (stream_context(h->stream, "cudnnBackendExecute") == NULL)
        return BAD_PARAM;
    struct attr *ws = dnn_attr(pack, 1003);
    void *workspace = ws != NULL && ws->count > 0 ? ((void **)ws->data)[0] : NULL;
    if (dnn_work_size > 0 &&
        (workspace == NULL || check_range((CUdeviceptr)(uintptr_t)workspace, (size_t)dnn_work_size, 0,
                                          "cudnnBackendExecute") != CUDA_SUCCESS))
        return dnn_fail(BAD_PARAM, "the workspace is missing or too small");
    if (stream_capturing(h->stream))
        return capture_run(plan, pack, h->stream);
    struct desc *cfg = dnn_ref(plan, 401);
    return dnn_stub_run(cfg->graph, pack);
}
