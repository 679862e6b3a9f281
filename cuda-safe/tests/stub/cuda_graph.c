/*
 * The fake libcuda's graphs: a graph and an executable graph are objects without nodes (the
 * crate's node building runs on a GPU, tests/tests/graph), enough for instantiation's options
 * and errors. cuGraphInstantiateWithParams logs the flags it was given as its call's argument;
 * stub_refuse_instantiation makes the next one fail with a CUgraphInstantiateResult, as the
 * driver refuses a graph it cannot instantiate (for device launch: a host node, nodes of two
 * contexts). See cuda_stub.h.
 */
#include "cuda_stub.h"

#define CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH 1ull
#define CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD 2ull
#define CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH 4ull
#define CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY 8ull

/* CUDA_GRAPH_INSTANTIATE_PARAMS: 32 bytes, the result at offset 24. */
struct instantiate_params {
    unsigned long long flags;
    void *upload_stream;
    void *error_node;
    int result;
};

struct graph {
    struct object head;
};

struct graph_exec {
    struct object head;
    unsigned long long flags;
};

/* The CUgraphInstantiateResult the next instantiation fails with; 0: none armed. */
static int refusal;

void graph_reset(void) {
    refusal = 0;
}

/* Makes the next cuGraphInstantiateWithParams fail with CUDA_ERROR_INVALID_VALUE and `result`
 * as its CUgraphInstantiateResult (0 disarms). */
void stub_refuse_instantiation(int result) {
    STUB_LOCKED();
    refusal = result;
}

CUresult cuGraphCreate(struct graph **graph, unsigned flags) {
    DRIVER("cuGraphCreate");
    if (graph == NULL || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    *graph = make(sizeof **graph, T_GRAPH);
    stub_live_add(K_GRAPH, 1);
    return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(struct graph *graph) {
    DRIVER_RELEASE("cuGraphDestroy", abandon(graph, T_GRAPH));
    if (!valid(graph, T_GRAPH, "cuGraphDestroy"))
        return CUDA_ERROR_INVALID_VALUE;
    graph->head.alive = 0;
    stub_live_add(K_GRAPH, -1);
    return CUDA_SUCCESS;
}

CUresult cuGraphInstantiateWithParams(struct graph_exec **exec, struct graph *graph,
                                      struct instantiate_params *params) {
    static const char api[] = "cuGraphInstantiateWithParams";
    STUB_LOCKED();
    int injected = stub_enter(api, params == NULL ? -1 : (long)params->flags);
    if (injected != 0)
        return injected;
    if (!initialised) {
        stub_misuse_note("%s before cuInit", api);
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    CHECK(need_current(api));
    if (exec == NULL || params == NULL || !valid(graph, T_GRAPH, api))
        return CUDA_ERROR_INVALID_VALUE;
    unsigned long long flags = params->flags;
    if ((flags & ~15ull) != 0 ||
        ((flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) && params->upload_stream == NULL))
        return CUDA_ERROR_INVALID_VALUE;
    if ((flags & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH) &&
        (flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)) {
        stub_misuse_note("%s: device launch with auto-free on launch (documented as refused)",
                         api);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (refusal != 0) {
        params->result = refusal;
        params->error_node = NULL;
        refusal = 0;
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct graph_exec *made = make(sizeof *made, T_GRAPH_EXEC);
    made->flags = flags;
    stub_live_add(K_GRAPH, 1);
    params->result = 0;
    *exec = made;
    return CUDA_SUCCESS;
}

CUresult cuGraphExecDestroy(struct graph_exec *exec) {
    DRIVER_RELEASE("cuGraphExecDestroy", abandon(exec, T_GRAPH_EXEC));
    if (!valid(exec, T_GRAPH_EXEC, "cuGraphExecDestroy"))
        return CUDA_ERROR_INVALID_VALUE;
    exec->head.alive = 0;
    stub_live_add(K_GRAPH, -1);
    return CUDA_SUCCESS;
}

/* An upload or a launch: nothing runs (the graphs have no nodes). */
static CUresult queue(struct graph_exec *exec, void *stream, const char *api) {
    if (stream_context(stream, api) == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!valid(exec, T_GRAPH_EXEC, api))
        return CUDA_ERROR_INVALID_VALUE;
    race_enqueue(stream, api);
    return CUDA_SUCCESS;
}

CUresult cuGraphUpload(struct graph_exec *exec, void *stream) {
    DRIVER("cuGraphUpload");
    return queue(exec, stream, "cuGraphUpload");
}

CUresult cuGraphLaunch(struct graph_exec *exec, void *stream) {
    DRIVER("cuGraphLaunch");
    return queue(exec, stream, "cuGraphLaunch");
}
