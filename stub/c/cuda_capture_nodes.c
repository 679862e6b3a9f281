/*
 * The fake libcuda's captured work: a kernel launch, a 1-D copy (cuMemcpyAsync), a 1-D memset
 * (cuMemsetD8/16/32Async) and a host function queued on a capturing stream each become a node
 * of the capture's graph after its current dependencies (with the edge data a capture into a
 * graph began with), and the stream's one dependency. Under a re-capture
 * (cuStreamBeginRecaptureToGraph) the same work walks the graph's nodes in creation order: a
 * node of another type, or another number of dependencies, fails the re-capture at once; a
 * node whose parameters changed is reported to the callback (eligible for an executable's
 * update, or not when a kernel node's kernel changed) and takes the new parameters. See
 * cuda_graph.h.
 */
#include <stdint.h>
#include <string.h>

#include "cuda_graph.h"

enum { CUDA_ERROR_GRAPH_RECAPTURE_FAILURE = 918 };
/* CUgraphRecaptureStatus. */
enum { RECAPTURE_ELIGIBLE = 0, RECAPTURE_INELIGIBLE = 1 };
/* CUmemorytype: unified addressing names device and host memory alike. */
enum { MEMORYTYPE_UNIFIED = 4 };

/* What a node held before a re-capture changed it. */
struct before {
    struct kernel *kernel;
    unsigned grid[3], block[3], shared;
    unsigned char args[MAX_ARGS];
    struct memcpy3d copy;
    struct memset_params fill;
    struct host_params host;
};

static void remember(const struct gnode *node, struct before *before) {
    before->kernel = node->kernel;
    memcpy(before->grid, node->grid, sizeof before->grid);
    memcpy(before->block, node->block, sizeof before->block);
    before->shared = node->shared;
    memcpy(before->args, node->args, sizeof before->args);
    before->copy = node->copy;
    before->fill = node->fill;
    before->host = node->host;
}

static int same(const struct gnode *node, const struct before *before) {
    return before->kernel == node->kernel && memcmp(before->grid, node->grid, 12) == 0 &&
           memcmp(before->block, node->block, 12) == 0 && before->shared == node->shared &&
           memcmp(before->args, node->args, sizeof before->args) == 0 &&
           memcmp(&before->copy, &node->copy, sizeof before->copy) == 0 &&
           memcmp(&before->fill, &node->fill, sizeof before->fill) == 0 &&
           memcmp(&before->host, &node->host, sizeof before->host) == 0;
}

/* The node the capturing `stream`'s next work of `type` becomes: a new one, or under a
 * re-capture the graph's next one (`*before` then holds its parameters); NULL with `*error`
 * set when refused. */
static struct gnode *next_node(const char *api, void *stream, int type, struct before *before,
                               CUresult *error) {
    struct capture *capture = stub_stream(stream)->capture;
    if (capture->invalidated) {
        *error = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        return NULL;
    }
    if (!capture->recapture)
        return node_add(capture->graph, type, capture->deps,
                        capture->has_data ? capture->data : NULL, capture->count, api, error);
    struct graph *graph = capture->graph;
    struct gnode *node = capture->next < graph->count ? graph->nodes[capture->next] : NULL;
    if (node == NULL || node->type != type || node->dep_count != capture->count) {
        capture->invalidated = 1;
        *error = CUDA_ERROR_GRAPH_RECAPTURE_FAILURE;
        return NULL;
    }
    capture->next++;
    remember(node, before);
    *error = CUDA_SUCCESS;
    return node;
}

/* After the node's parameters were written: reports a change to a re-capture's callback, and
 * makes the node the stream's one dependency. */
static CUresult recorded(void *stream, struct gnode *node, const struct before *before) {
    struct capture *capture = stub_stream(stream)->capture;
    if (capture->recapture && !same(node, before)) {
        int status = before->kernel != node->kernel ? RECAPTURE_INELIGIBLE : RECAPTURE_ELIGIBLE;
        struct node_params params;
        memset(&params, 0, sizeof params);
        params.type = node->type;
        if (capture->callback(capture->callback_data, node, &params, &params, status) != 0) {
            capture->invalidated = 1;
            return CUDA_ERROR_GRAPH_RECAPTURE_FAILURE;
        }
    }
    set_deps(capture, &node, NULL, 1);
    return CUDA_SUCCESS;
}

CUresult capture_launch(const char *api, void *stream, struct kernel *kernel,
                        const unsigned grid[3], const unsigned block[3], unsigned shared,
                        void **params, const void *attributes, unsigned count) {
    CUresult error;
    struct before before;
    struct gnode *node = next_node(api, stream, N_KERNEL, &before, &error);
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
    return recorded(stream, node, &before);
}

CUresult capture_copy(const char *api, void *stream, CUdeviceptr dst, CUdeviceptr src,
                      size_t bytes) {
    CUresult error;
    struct before before;
    struct gnode *node = next_node(api, stream, N_MEMCPY, &before, &error);
    if (node == NULL)
        return error;
    memset(&node->copy, 0, sizeof node->copy);
    node->copy.src_type = MEMORYTYPE_UNIFIED;
    node->copy.src_device = src;
    node->copy.dst_type = MEMORYTYPE_UNIFIED;
    node->copy.dst_device = dst;
    node->copy.width = bytes;
    node->copy.height = 1;
    node->copy.depth = 1;
    return recorded(stream, node, &before);
}

CUresult capture_memset(const char *api, void *stream, CUdeviceptr dst, unsigned value,
                        unsigned element, size_t count) {
    CUresult error;
    struct before before;
    struct gnode *node = next_node(api, stream, N_MEMSET, &before, &error);
    if (node == NULL)
        return error;
    struct memset_params fill = {dst, count * element, value, element, count, 1};
    node->fill = fill;
    return recorded(stream, node, &before);
}

CUresult capture_host(const char *api, void *stream, void (*function)(void *), void *data) {
    CUresult error;
    struct before before;
    struct gnode *node = next_node(api, stream, N_HOST, &before, &error);
    if (node == NULL)
        return error;
    node->host.fn = function;
    node->host.data = data;
    return recorded(stream, node, &before);
}

CUresult recapture_end(struct capture *capture) {
    if (capture->recapture && !capture->invalidated && capture->next != capture->graph->count)
        return CUDA_ERROR_GRAPH_RECAPTURE_FAILURE;
    return CUDA_SUCCESS;
}

/* As the driver: the graph's user objects are released first; the capture then records over
 * the graph's nodes, from its first, after no dependency. */
CUresult cuStreamBeginRecaptureToGraph(void *stream, int mode, struct graph *graph,
                                       recapture_callback callback, void *data) {
    static const char api[] = "cuStreamBeginRecaptureToGraph";
    DRIVER(api);
    if (!valid(graph, T_GRAPH, api))
        return CUDA_ERROR_INVALID_HANDLE;
    if (mode < 0 || mode > 2 || callback == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult error;
    struct capture *capture = capture_begin(api, stream, graph, NULL, NULL, 0, &error);
    if (capture == NULL)
        return error;
    refs_release(&graph->refs);
    capture->recapture = 1;
    capture->callback = callback;
    capture->callback_data = data;
    return CUDA_SUCCESS;
}
