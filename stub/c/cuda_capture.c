/*
 * The fake libcuda's stream capture. A capture records kernel launches only (cuLaunchKernel,
 * cuLaunchKernelEx), each a kernel node after the capture's current dependencies, into a graph
 * of its own or one given (cuStreamBeginCaptureToGraph: a conditional node's body); other work
 * queued on a capturing stream runs at once, as outside a capture (the tests capture launches
 * only). No node may be removed from a graph while it is captured into. See cuda_graph.h.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_graph.h"

/* ---- Stream capture. ---- */

struct capture {
    struct graph *graph;
    unsigned long long id;
    int owns; /* made by cuStreamBeginCapture (else: captured into a graph given) */
    struct gnode **deps;
    size_t count, cap;
};

static unsigned long long next_capture_id = 1;

/* The stub stream behind `handle`, or NULL (a default stream, or no stream: no misuse noted). */
static struct stream *stub_stream(const void *handle) {
    const struct stream *stream = handle;
    if ((uintptr_t)handle < 4096 || stream->head.magic != MAGIC ||
        stream->head.type != T_STREAM || !stream->head.alive)
        return NULL;
    return (struct stream *)stream;
}

int stream_capturing(const void *stream) {
    const struct stream *found = stub_stream(stream);
    return found != NULL && found->capture != NULL;
}

/* Makes `nodes` (`count`) the capture's dependencies. */
static void set_deps(struct capture *capture, struct gnode *const *nodes, size_t count) {
    if (count > capture->cap) {
        free(capture->deps);
        capture->deps = calloc(count, sizeof capture->deps[0]);
        if (capture->deps == NULL)
            abort();
        capture->cap = count;
    }
    if (count > 0)
        memcpy(capture->deps, nodes, count * sizeof nodes[0]);
    capture->count = count;
}

/* Starts capturing `handle` into `graph` (made here when NULL). */
static CUresult begin(const char *api, void *handle, struct graph *graph,
                      struct gnode *const *deps, size_t count) {
    if (stream_context(handle, api) == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    struct stream *stream = stub_stream(handle);
    if (stream == NULL)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (stream->capture != NULL)
        return CUDA_ERROR_ILLEGAL_STATE;
    struct capture *capture = calloc(1, sizeof *capture);
    if (capture == NULL)
        abort();
    capture->owns = graph == NULL;
    capture->graph = graph == NULL ? graph_new(0) : graph;
    capture->graph->capturing++;
    capture->id = next_capture_id++;
    set_deps(capture, deps, count);
    stream->capture = capture;
    return CUDA_SUCCESS;
}

CUresult cuStreamBeginCapture_v2(void *stream, int mode) {
    DRIVER("cuStreamBeginCapture_v2");
    if (mode < 0 || mode > 2)
        return CUDA_ERROR_INVALID_VALUE;
    return begin("cuStreamBeginCapture_v2", stream, NULL, NULL, 0);
}

CUresult cuStreamBeginCaptureToGraph(void *stream, struct graph *graph, struct gnode *const *deps,
                                     const struct edge_data *data, size_t count, int mode) {
    DRIVER("cuStreamBeginCaptureToGraph");
    (void)data;
    if (!valid(graph, T_GRAPH, "cuStreamBeginCaptureToGraph"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (mode < 0 || mode > 2 || (count > 0 && deps == NULL))
        return CUDA_ERROR_INVALID_VALUE;
    return begin("cuStreamBeginCaptureToGraph", stream, graph, deps, count);
}

/* What cuStreamGetCaptureInfo says, through the out-pointers given. */
static CUresult capture_info(const char *api, void *handle, int *status, unsigned long long *id,
                             struct graph **graph, struct gnode *const **deps,
                             const struct edge_data **data, size_t *count) {
    if (stream_context(handle, api) == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (status == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct stream *stream = stub_stream(handle);
    struct capture *capture = stream == NULL ? NULL : stream->capture;
    *status = capture != NULL;
    if (id != NULL)
        *id = capture != NULL ? capture->id : 0;
    if (graph != NULL)
        *graph = capture != NULL ? capture->graph : NULL;
    if (deps != NULL)
        *deps = capture != NULL ? capture->deps : NULL;
    if (data != NULL)
        *data = NULL;
    if (count != NULL)
        *count = capture != NULL ? capture->count : 0;
    return CUDA_SUCCESS;
}

CUresult cuStreamGetCaptureInfo_v2(void *stream, int *status, unsigned long long *id,
                                   struct graph **graph, struct gnode *const **deps,
                                   size_t *count) {
    DRIVER("cuStreamGetCaptureInfo_v2");
    return capture_info("cuStreamGetCaptureInfo_v2", stream, status, id, graph, deps, NULL,
                        count);
}

CUresult cuStreamGetCaptureInfo_v3(void *stream, int *status, unsigned long long *id,
                                   struct graph **graph, struct gnode *const **deps,
                                   const struct edge_data **data, size_t *count) {
    DRIVER("cuStreamGetCaptureInfo_v3");
    return capture_info("cuStreamGetCaptureInfo_v3", stream, status, id, graph, deps, data,
                        count);
}

/* Sets (flags 1) or adds to (0) the capture's dependencies. */
static CUresult update_deps(const char *api, void *handle, struct gnode *const *nodes,
                            size_t count, unsigned flags) {
    struct stream *stream = stub_stream(handle);
    if (stream == NULL || stream->capture == NULL)
        return CUDA_ERROR_ILLEGAL_STATE;
    if (flags > 1 || (count > 0 && nodes == NULL))
        return CUDA_ERROR_INVALID_VALUE;
    struct capture *capture = stream->capture;
    for (size_t i = 0; i < count; i++) {
        if (!valid(nodes[i], T_GNODE, api))
            return CUDA_ERROR_INVALID_HANDLE;
        if (nodes[i]->graph != capture->graph) {
            stub_misuse_note("%s: a node of another graph than the capture's", api);
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    if (flags == 1) {
        set_deps(capture, nodes, count);
        return CUDA_SUCCESS;
    }
    struct gnode **all = calloc(capture->count + count + 1, sizeof all[0]);
    if (all == NULL)
        abort();
    memcpy(all, capture->deps, capture->count * sizeof all[0]);
    memcpy(all + capture->count, nodes, count * sizeof all[0]);
    set_deps(capture, all, capture->count + count);
    free(all);
    return CUDA_SUCCESS;
}

CUresult cuStreamUpdateCaptureDependencies(void *stream, struct gnode *const *nodes,
                                           size_t count, unsigned flags) {
    DRIVER("cuStreamUpdateCaptureDependencies");
    return update_deps("cuStreamUpdateCaptureDependencies", stream, nodes, count, flags);
}

CUresult cuStreamUpdateCaptureDependencies_v2(void *stream, struct gnode *const *nodes,
                                              const struct edge_data *data, size_t count,
                                              unsigned flags) {
    DRIVER("cuStreamUpdateCaptureDependencies_v2");
    (void)data;
    return update_deps("cuStreamUpdateCaptureDependencies_v2", stream, nodes, count, flags);
}

/* A failure (injected too) ends the capture as well, and discards the graph it made, as the
 * driver does when it refuses to end one. */
CUresult cuStreamEndCapture(void *handle, struct graph **graph) {
    STUB_LOCKED();
    int injected = stub_enter("cuStreamEndCapture", 0);
    if (stream_context(handle, "cuStreamEndCapture") == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (graph == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct stream *stream = stub_stream(handle);
    if (stream == NULL || stream->capture == NULL)
        return CUDA_ERROR_ILLEGAL_STATE;
    struct capture *capture = stream->capture;
    stream->capture = NULL;
    capture->graph->capturing--;
    *graph = injected == 0 ? capture->graph : NULL;
    if (injected != 0 && capture->owns)
        graph_destroy(capture->graph);
    free(capture->deps);
    free(capture);
    return injected != 0 ? injected : CUDA_SUCCESS;
}

CUresult capture_launch(const char *api, void *stream, struct kernel *kernel,
                        const unsigned grid[3], const unsigned block[3], unsigned shared,
                        void **params, const void *attributes, unsigned count) {
    struct capture *capture = stub_stream(stream)->capture;
    CUresult error;
    struct gnode *node =
        node_add(capture->graph, N_KERNEL, capture->deps, NULL, capture->count, api, &error);
    if (node == NULL)
        return error;
    struct kernel_params described = {kernel, {grid[0], grid[1], grid[2]},
                                      {block[0], block[1], block[2]}, shared, params,
                                      NULL, NULL, NULL};
    CHECK(kernel_node_set(node, &described, api));
    const struct launch_attribute *list = attributes;
    for (unsigned i = 0; i < count; i++) {
        int id = list[i].id;
        if (id > 0 && id < MAX_ATTRIBUTE && id != ATTR_PROGRAMMATIC_EVENT &&
            id != ATTR_PROGRAMMATIC_STREAM_SERIALIZATION) {
            node->attributes[id] = list[i].value;
            node->attributes_set |= 1u << id;
        }
    }
    set_deps(capture, &node, 1);
    return CUDA_SUCCESS;
}
