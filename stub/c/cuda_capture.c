/*
 * The fake libcuda's stream capture: beginning one into a graph of its own or one given
 * (cuStreamBeginCaptureToGraph, after dependencies with their edge data: a conditional node's
 * body, or a capture into an existing graph), its status, dependencies and end. What a
 * capturing stream records (launches, 1-D copies and memsets, host functions; a re-capture's
 * walk over its graph) is in cuda_capture_nodes.c; other work queued on a capturing stream
 * runs at once, as outside a capture. No node may be removed from a graph while it is
 * captured into. See cuda_graph.h.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_graph.h"

/* ---- Stream capture. ---- */

static unsigned long long next_capture_id = 1;

/* The stub stream behind `handle`, or NULL (a default stream, or no stream: no misuse noted). */
struct stream *stub_stream(const void *handle) {
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

/* Makes `nodes` (`count`) the capture's dependencies, with the edge data `data` (NULL: default
 * edges) for the next node. */
void set_deps(struct capture *capture, struct gnode *const *nodes,
              const struct edge_data *data, size_t count) {
    if (count > capture->cap) {
        free(capture->deps);
        free(capture->data);
        capture->deps = calloc(count, sizeof capture->deps[0]);
        capture->data = calloc(count, sizeof capture->data[0]);
        if (capture->deps == NULL || capture->data == NULL)
            abort();
        capture->cap = count;
    }
    if (count > 0)
        memcpy(capture->deps, nodes, count * sizeof nodes[0]);
    capture->has_data = data != NULL && count > 0;
    if (capture->has_data)
        memcpy(capture->data, data, count * sizeof data[0]);
    capture->count = count;
}

/* Whether `handle` may begin a capture. */
static CUresult begin_checks(const char *api, void *handle) {
    if (stream_context(handle, api) == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    struct stream *stream = stub_stream(handle);
    if (stream == NULL)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (stream->capture != NULL)
        return CUDA_ERROR_ILLEGAL_STATE;
    return CUDA_SUCCESS;
}

/* Starts capturing `handle` into `graph` (made here when NULL), after `deps` with edge data
 * `data`; NULL when the stream cannot capture, with `*error` set. */
struct capture *capture_begin(const char *api, void *handle, struct graph *graph,
                              struct gnode *const *deps, const struct edge_data *data,
                              size_t count, CUresult *error) {
    *error = begin_checks(api, handle);
    if (*error != CUDA_SUCCESS)
        return NULL;
    struct stream *stream = stub_stream(handle);
    struct capture *capture = calloc(1, sizeof *capture);
    if (capture == NULL)
        abort();
    capture->owns = graph == NULL;
    capture->graph = graph == NULL ? graph_new(0) : graph;
    capture->graph->capturing++;
    capture->id = next_capture_id++;
    set_deps(capture, deps, data, count);
    stream->capture = capture;
    return capture;
}

CUresult cuStreamBeginCapture_v2(void *stream, int mode) {
    DRIVER("cuStreamBeginCapture_v2");
    if (mode < 0 || mode > 2)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult error;
    capture_begin("cuStreamBeginCapture_v2", stream, NULL, NULL, NULL, 0, &error);
    return error;
}

/* Counted and logged with the first dependency's edge type (1: programmatic). */
CUresult cuStreamBeginCaptureToGraph(void *stream, struct graph *graph, struct gnode *const *deps,
                                     const struct edge_data *data, size_t count, int mode) {
    STUB_LOCKED();
    int injected = stub_enter("cuStreamBeginCaptureToGraph",
                              data != NULL && count > 0 ? data[0].type : 0);
    if (injected != 0)
        return injected;
    if (!initialised) {
        stub_misuse_note("cuStreamBeginCaptureToGraph before cuInit");
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    if (!valid(graph, T_GRAPH, "cuStreamBeginCaptureToGraph"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (mode < 0 || mode > 2 || (count > 0 && deps == NULL))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++) {
        if (!valid(deps[i], T_GNODE, "cuStreamBeginCaptureToGraph"))
            return CUDA_ERROR_INVALID_HANDLE;
        if (deps[i]->graph != graph) {
            stub_misuse_note("cuStreamBeginCaptureToGraph: a dependency of another graph");
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    CUresult error;
    capture_begin("cuStreamBeginCaptureToGraph", stream, graph, deps, data, count, &error);
    return error;
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
    *status = capture == NULL ? 0 : capture->invalidated ? 2 : 1;
    if (id != NULL)
        *id = capture != NULL ? capture->id : 0;
    if (graph != NULL)
        *graph = capture != NULL ? capture->graph : NULL;
    if (deps != NULL)
        *deps = capture != NULL ? capture->deps : NULL;
    if (data != NULL)
        *data = capture != NULL && capture->has_data ? capture->data : NULL;
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
        set_deps(capture, nodes, NULL, count);
        return CUDA_SUCCESS;
    }
    struct gnode **all = calloc(capture->count + count + 1, sizeof all[0]);
    if (all == NULL)
        abort();
    memcpy(all, capture->deps, capture->count * sizeof all[0]);
    memcpy(all + capture->count, nodes, count * sizeof all[0]);
    set_deps(capture, all, NULL, capture->count + count);
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
    CUresult failed = injected != 0 ? injected : recapture_end(capture);
    if (failed == CUDA_SUCCESS && capture->invalidated)
        failed = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    *graph = failed == CUDA_SUCCESS ? capture->graph : NULL;
    if (failed != CUDA_SUCCESS && capture->owns)
        graph_destroy(capture->graph);
    free(capture->deps);
    free(capture->data);
    free(capture);
    return failed;
}
