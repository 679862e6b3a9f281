/*
 * The fake libcuda's graphs: graphs and their nodes (kernel, copy, memset, host, event record
 * and wait, child, empty), their parameters and kernel-node attributes, edges with their data,
 * node removal, user objects. See cuda_graph.h; copies, ids and conditional nodes are in
 * cuda_graph_copy.c, executables in cuda_graph_exec.c, capture in cuda_capture.c.
 *
 * What the crate must check before calling is a misuse here too: a cluster shape that does not
 * divide a node's grid.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_graph.h"

static unsigned next_graph_id = 1;
static unsigned long long next_tools_id = 1;

/* Grows `*items` (of `size` bytes each, `*cap` of them) to hold `need`. */
static void grow(void **items, size_t *cap, size_t need, size_t size) {
    if (need <= *cap)
        return;
    size_t cap2 = *cap == 0 ? 8 : *cap * 2;
    while (cap2 < need)
        cap2 *= 2;
    void *bigger = realloc(*items, cap2 * size);
    if (bigger == NULL)
        abort();
    *items = bigger;
    *cap = cap2;
}

/* ---- User objects. ---- */

void uobj_release(struct uobj *object, unsigned long long count) {
    if (count > object->count) {
        stub_misuse_note("a user object released %llu times with %llu references", count,
                         object->count);
        count = object->count;
    }
    object->count -= count;
    if (object->count == 0 && object->head.alive) {
        object->head.alive = 0;
        stub_live_add(K_USEROBJ, -1);
        object->destroy(object->data);
    }
}

void refs_add(struct refs *refs, struct uobj *object, unsigned count) {
    for (size_t i = 0; i < refs->count; i++) {
        if (refs->items[i].object == object) {
            refs->items[i].count += count;
            return;
        }
    }
    grow((void **)&refs->items, &refs->cap, refs->count + 1, sizeof refs->items[0]);
    refs->items[refs->count].object = object;
    refs->items[refs->count].count = count;
    refs->count++;
}

void refs_release(struct refs *refs) {
    struct refs held = *refs;
    memset(refs, 0, sizeof *refs);
    for (size_t i = 0; i < held.count; i++)
        uobj_release(held.items[i].object, held.items[i].count);
    free(held.items);
}

#define CU_USER_OBJECT_NO_DESTRUCTOR_SYNC 1u
#define CU_GRAPH_USER_OBJECT_MOVE 1u

CUresult cuUserObjectCreate(struct uobj **object, void *data, void (*destroy)(void *),
                            unsigned initial, unsigned flags) {
    DRIVER("cuUserObjectCreate");
    if (object == NULL || destroy == NULL || initial == 0 ||
        flags != CU_USER_OBJECT_NO_DESTRUCTOR_SYNC)
        return CUDA_ERROR_INVALID_VALUE;
    struct uobj *made = make(sizeof *made, T_UOBJ);
    made->data = data;
    made->destroy = destroy;
    made->count = initial;
    stub_live_add(K_USEROBJ, 1);
    *object = made;
    return CUDA_SUCCESS;
}

CUresult cuUserObjectRetain(struct uobj *object, unsigned count) {
    DRIVER("cuUserObjectRetain");
    if (!valid(object, T_UOBJ, "cuUserObjectRetain"))
        return CUDA_ERROR_INVALID_HANDLE;
    object->count += count;
    return CUDA_SUCCESS;
}

CUresult cuUserObjectRelease(struct uobj *object, unsigned count) {
    DRIVER("cuUserObjectRelease");
    if (!valid(object, T_UOBJ, "cuUserObjectRelease"))
        return CUDA_ERROR_INVALID_HANDLE;
    uobj_release(object, count);
    return CUDA_SUCCESS;
}

static int valid_graph(const struct graph *graph, const char *api) {
    return valid(graph, T_GRAPH, api);
}

CUresult cuGraphRetainUserObject(struct graph *graph, struct uobj *object, unsigned count,
                                 unsigned flags) {
    DRIVER("cuGraphRetainUserObject");
    if (!valid_graph(graph, "cuGraphRetainUserObject") ||
        !valid(object, T_UOBJ, "cuGraphRetainUserObject"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (count == 0 || (flags & ~CU_GRAPH_USER_OBJECT_MOVE) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if ((flags & CU_GRAPH_USER_OBJECT_MOVE) == 0)
        object->count += count;
    refs_add(&graph->refs, object, count);
    return CUDA_SUCCESS;
}

/* ---- Graphs. ---- */

struct graph *graph_new(int owned) {
    struct graph *graph = make(sizeof *graph, T_GRAPH);
    graph->id = next_graph_id++;
    graph->owned = owned;
    if (!owned)
        stub_live_add(K_GRAPH, 1);
    return graph;
}

static void node_destroy(struct gnode *node) {
    node->head.alive = 0;
    if (node->child != NULL)
        graph_destroy(node->child);
    for (unsigned i = 0; i < node->body_count; i++)
        graph_destroy(node->bodies[i]);
    free(node->deps);
    node->deps = NULL;
}

void graph_destroy(struct graph *graph) {
    for (size_t i = 0; i < graph->count; i++)
        node_destroy(graph->nodes[i]);
    graph->head.alive = 0;
    if (!graph->owned)
        stub_live_add(K_GRAPH, -1);
    refs_release(&graph->refs);
}

CUresult cuGraphCreate(struct graph **graph, unsigned flags) {
    DRIVER("cuGraphCreate");
    if (graph == NULL || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    *graph = graph_new(0);
    return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(struct graph *graph) {
    DRIVER_RELEASE("cuGraphDestroy", abandon(graph, T_GRAPH));
    if (!valid_graph(graph, "cuGraphDestroy"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (graph->owned) {
        stub_misuse_note("cuGraphDestroy: %p belongs to a node", (void *)graph);
        return CUDA_ERROR_INVALID_VALUE;
    }
    graph_destroy(graph);
    return CUDA_SUCCESS;
}

CUresult cuGraphGetNodes(struct graph *graph, struct gnode **nodes, size_t *count) {
    DRIVER("cuGraphGetNodes");
    if (!valid_graph(graph, "cuGraphGetNodes"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (count == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (nodes == NULL) {
        *count = graph->count;
        return CUDA_SUCCESS;
    }
    size_t written = *count < graph->count ? *count : graph->count;
    memcpy(nodes, graph->nodes, written * sizeof nodes[0]);
    *count = written;
    return CUDA_SUCCESS;
}

/* ---- Nodes. ---- */

static int valid_node(const struct gnode *node, const char *api) {
    return valid(node, T_GNODE, api) && valid_graph(node->graph, api);
}

/* `node`, when it is a live node of `type` (a misuse is noted for a dead handle; another type
 * is the driver's CUDA_ERROR_INVALID_VALUE). */
static CUresult node_of(const struct gnode *node, int type, const char *api) {
    if (!valid_node(node, api))
        return CUDA_ERROR_INVALID_HANDLE;
    return node->type == type ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

struct gnode *node_add(struct graph *graph, int type, struct gnode *const *deps,
                       const struct edge_data *data, size_t count, const char *api,
                       CUresult *error) {
    *error = CUDA_ERROR_INVALID_HANDLE;
    if (!valid_graph(graph, api))
        return NULL;
    if (count > 0 && deps == NULL) {
        *error = CUDA_ERROR_INVALID_VALUE;
        return NULL;
    }
    for (size_t i = 0; i < count; i++) {
        if (!valid_node(deps[i], api))
            return NULL;
        if (deps[i]->graph != graph) {
            stub_misuse_note("%s: a dependency of another graph", api);
            return NULL;
        }
    }
    struct gnode *node = make(sizeof *node, T_GNODE);
    node->graph = graph;
    node->type = type;
    node->enabled = 1;
    node->local_id = graph->next_local++;
    node->tools_id = next_tools_id++;
    grow((void **)&node->deps, &node->dep_cap, count, sizeof node->deps[0]);
    for (size_t i = 0; i < count; i++) {
        node->deps[i].from = deps[i];
        if (data != NULL)
            node->deps[i].data = data[i];
    }
    node->dep_count = count;
    grow((void **)&graph->nodes, &graph->cap, graph->count + 1, sizeof graph->nodes[0]);
    graph->nodes[graph->count++] = node;
    *error = CUDA_SUCCESS;
    return node;
}

CUresult cuGraphNodeGetType(struct gnode *node, int *type) {
    DRIVER("cuGraphNodeGetType");
    if (!valid_node(node, "cuGraphNodeGetType"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (type == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *type = node->type;
    return CUDA_SUCCESS;
}

CUresult kernel_node_set(struct gnode *node, const struct kernel_params *params, const char *api) {
    if (params == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_kernel(params->func, api))
        return CUDA_ERROR_INVALID_HANDLE;
    for (int i = 0; i < 3; i++) {
        if (params->grid[i] == 0 || params->block[i] == 0)
            return CUDA_ERROR_INVALID_VALUE;
    }
    const size_t *sizes;
    size_t count = kernel_param_sizes(params->func, &sizes);
    if (count > 0 && params->params == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    size_t offset = 0;
    for (size_t i = 0; i < count; i++) {
        memcpy(node->args + offset, params->params[i], sizes[i]);
        offset += sizes[i];
    }
    node->kernel = params->func;
    memcpy(node->grid, params->grid, sizeof node->grid);
    memcpy(node->block, params->block, sizeof node->block);
    node->shared = params->shared;
    return CUDA_SUCCESS;
}

CUresult cuGraphAddKernelNode_v2(struct gnode **out, struct graph *graph,
                                 struct gnode *const *deps, size_t count,
                                 const struct kernel_params *params) {
    DRIVER("cuGraphAddKernelNode_v2");
    if (out == NULL || params == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_kernel(params->func, "cuGraphAddKernelNode_v2"))
        return CUDA_ERROR_INVALID_HANDLE;
    CUresult error;
    struct gnode *node = node_add(graph, N_KERNEL, deps, NULL, count, "cuGraphAddKernelNode_v2",
                                  &error);
    if (node == NULL)
        return error;
    CUresult set = kernel_node_set(node, params, "cuGraphAddKernelNode_v2");
    if (set != CUDA_SUCCESS) {
        graph->count--;
        node_destroy(node);
        return set;
    }
    *out = node;
    return CUDA_SUCCESS;
}

CUresult cuGraphKernelNodeSetParams_v2(struct gnode *node, const struct kernel_params *params) {
    DRIVER("cuGraphKernelNodeSetParams_v2");
    CHECK(node_of(node, N_KERNEL, "cuGraphKernelNodeSetParams_v2"));
    return kernel_node_set(node, params, "cuGraphKernelNodeSetParams_v2");
}

/* Counted and logged with the attribute's id, so a test sees which were set. */
CUresult cuGraphKernelNodeSetAttribute(struct gnode *node, int id,
                                       const struct attribute_value *value) {
    STUB_LOCKED();
    int injected = stub_enter("cuGraphKernelNodeSetAttribute", id);
    if (injected != 0)
        return injected;
    CHECK(node_of(node, N_KERNEL, "cuGraphKernelNodeSetAttribute"));
    if (value == NULL || id <= 0 || id >= MAX_ATTRIBUTE || id == ATTR_PROGRAMMATIC_EVENT ||
        id == ATTR_PROGRAMMATIC_STREAM_SERIALIZATION)
        return CUDA_ERROR_INVALID_VALUE;
    if (id == ATTR_CLUSTER_DIMENSION) {
        unsigned dims[3];
        memcpy(dims, value->bytes, sizeof dims);
        for (int i = 0; i < 3; i++) {
            if (dims[i] == 0 || node->grid[i] % dims[i] != 0) {
                stub_misuse_note("cuGraphKernelNodeSetAttribute: a cluster of %u x %u x %u "
                                 "does not divide the grid",
                                 dims[0], dims[1], dims[2]);
                return CUDA_ERROR_INVALID_VALUE;
            }
        }
    }
    node->attributes[id] = *value;
    node->attributes_set |= 1u << id;
    return CUDA_SUCCESS;
}

CUresult cuGraphKernelNodeGetAttribute(struct gnode *node, int id,
                                       struct attribute_value *value) {
    DRIVER("cuGraphKernelNodeGetAttribute");
    CHECK(node_of(node, N_KERNEL, "cuGraphKernelNodeGetAttribute"));
    if (value == NULL || id <= 0 || id >= MAX_ATTRIBUTE)
        return CUDA_ERROR_INVALID_VALUE;
    *value = node->attributes[id];
    return CUDA_SUCCESS;
}

CUresult cuGraphAddMemsetNode(struct gnode **out, struct graph *graph, struct gnode *const *deps,
                              size_t count, const struct memset_params *params, void *context) {
    DRIVER("cuGraphAddMemsetNode");
    if (out == NULL || params == NULL || context == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult error;
    struct gnode *node =
        node_add(graph, N_MEMSET, deps, NULL, count, "cuGraphAddMemsetNode", &error);
    if (node == NULL)
        return error;
    node->fill = *params;
    *out = node;
    return CUDA_SUCCESS;
}

CUresult cuGraphMemsetNodeSetParams(struct gnode *node, const struct memset_params *params) {
    DRIVER("cuGraphMemsetNodeSetParams");
    CHECK(node_of(node, N_MEMSET, "cuGraphMemsetNodeSetParams"));
    if (params == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    node->fill = *params;
    return CUDA_SUCCESS;
}

CUresult cuGraphAddMemcpyNode(struct gnode **out, struct graph *graph, struct gnode *const *deps,
                              size_t count, const struct memcpy3d *params, void *context) {
    DRIVER("cuGraphAddMemcpyNode");
    if (out == NULL || params == NULL || context == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult error;
    struct gnode *node =
        node_add(graph, N_MEMCPY, deps, NULL, count, "cuGraphAddMemcpyNode", &error);
    if (node == NULL)
        return error;
    node->copy = *params;
    *out = node;
    return CUDA_SUCCESS;
}

CUresult cuGraphMemcpyNodeSetParams(struct gnode *node, const struct memcpy3d *params) {
    DRIVER("cuGraphMemcpyNodeSetParams");
    CHECK(node_of(node, N_MEMCPY, "cuGraphMemcpyNodeSetParams"));
    if (params == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    node->copy = *params;
    return CUDA_SUCCESS;
}

CUresult cuGraphAddHostNode(struct gnode **out, struct graph *graph, struct gnode *const *deps,
                            size_t count, const struct host_params *params) {
    DRIVER("cuGraphAddHostNode");
    if (out == NULL || params == NULL || params->fn == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult error;
    struct gnode *node = node_add(graph, N_HOST, deps, NULL, count, "cuGraphAddHostNode", &error);
    if (node == NULL)
        return error;
    node->host = *params;
    *out = node;
    return CUDA_SUCCESS;
}

CUresult cuGraphHostNodeSetParams(struct gnode *node, const struct host_params *params) {
    DRIVER("cuGraphHostNodeSetParams");
    CHECK(node_of(node, N_HOST, "cuGraphHostNodeSetParams"));
    if (params == NULL || params->fn == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    node->host = *params;
    return CUDA_SUCCESS;
}

/* An event node of `type` (record or wait) for `event`. */
static CUresult add_event_node(const char *api, int type, struct gnode **out,
                               struct graph *graph, struct gnode *const *deps, size_t count,
                               struct event *event) {
    if (out == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid(event, T_EVENT, api))
        return CUDA_ERROR_INVALID_HANDLE;
    CUresult error;
    struct gnode *node = node_add(graph, type, deps, NULL, count, api, &error);
    if (node == NULL)
        return error;
    node->event = event;
    *out = node;
    return CUDA_SUCCESS;
}

CUresult cuGraphAddEventRecordNode(struct gnode **out, struct graph *graph,
                                   struct gnode *const *deps, size_t count,
                                   struct event *event) {
    DRIVER("cuGraphAddEventRecordNode");
    return add_event_node("cuGraphAddEventRecordNode", N_EVENT_RECORD, out, graph, deps, count,
                          event);
}

CUresult cuGraphAddEventWaitNode(struct gnode **out, struct graph *graph,
                                 struct gnode *const *deps, size_t count, struct event *event) {
    DRIVER("cuGraphAddEventWaitNode");
    return add_event_node("cuGraphAddEventWaitNode", N_WAIT_EVENT, out, graph, deps, count,
                          event);
}

CUresult cuGraphEventRecordNodeSetEvent(struct gnode *node, struct event *event) {
    DRIVER("cuGraphEventRecordNodeSetEvent");
    CHECK(node_of(node, N_EVENT_RECORD, "cuGraphEventRecordNodeSetEvent"));
    if (!valid(event, T_EVENT, "cuGraphEventRecordNodeSetEvent"))
        return CUDA_ERROR_INVALID_HANDLE;
    node->event = event;
    return CUDA_SUCCESS;
}

CUresult cuGraphEventWaitNodeSetEvent(struct gnode *node, struct event *event) {
    DRIVER("cuGraphEventWaitNodeSetEvent");
    CHECK(node_of(node, N_WAIT_EVENT, "cuGraphEventWaitNodeSetEvent"));
    if (!valid(event, T_EVENT, "cuGraphEventWaitNodeSetEvent"))
        return CUDA_ERROR_INVALID_HANDLE;
    node->event = event;
    return CUDA_SUCCESS;
}

CUresult cuGraphAddEmptyNode(struct gnode **out, struct graph *graph, struct gnode *const *deps,
                             size_t count) {
    DRIVER("cuGraphAddEmptyNode");
    if (out == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult error;
    struct gnode *node = node_add(graph, N_EMPTY, deps, NULL, count, "cuGraphAddEmptyNode", &error);
    if (node == NULL)
        return error;
    *out = node;
    return CUDA_SUCCESS;
}

CUresult cuGraphAddChildGraphNode(struct gnode **out, struct graph *graph,
                                  struct gnode *const *deps, size_t count, struct graph *child) {
    DRIVER("cuGraphAddChildGraphNode");
    if (out == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_graph(child, "cuGraphAddChildGraphNode"))
        return CUDA_ERROR_INVALID_HANDLE;
    CUresult error;
    struct gnode *node =
        node_add(graph, N_GRAPH, deps, NULL, count, "cuGraphAddChildGraphNode", &error);
    if (node == NULL)
        return error;
    node->child = graph_copy(child, 1, 0);
    *out = node;
    return CUDA_SUCCESS;
}

/* Adds `count` edges `from[i] -> to[i]` of `graph`, with optional data. */
static CUresult add_edges(const char *api, struct graph *graph, struct gnode *const *from,
                          struct gnode *const *to, const struct edge_data *data, size_t count) {
    if (!valid_graph(graph, api))
        return CUDA_ERROR_INVALID_HANDLE;
    if (count > 0 && (from == NULL || to == NULL))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++) {
        if (!valid_node(from[i], api) || !valid_node(to[i], api))
            return CUDA_ERROR_INVALID_HANDLE;
        if (from[i]->graph != graph || to[i]->graph != graph || from[i] == to[i])
            return CUDA_ERROR_INVALID_VALUE;
        for (size_t e = 0; e < to[i]->dep_count; e++) {
            if (to[i]->deps[e].from == from[i])
                return CUDA_ERROR_INVALID_VALUE; /* the edge exists */
        }
        if (data != NULL && data[i].type != 0 &&
            (from[i]->type != N_KERNEL || to[i]->type != N_KERNEL))
            return CUDA_ERROR_INVALID_VALUE; /* programmatic edges join kernel nodes */
    }
    for (size_t i = 0; i < count; i++) {
        struct gnode *node = to[i];
        grow((void **)&node->deps, &node->dep_cap, node->dep_count + 1, sizeof node->deps[0]);
        node->deps[node->dep_count].from = from[i];
        memset(&node->deps[node->dep_count].data, 0, sizeof(struct edge_data));
        if (data != NULL)
            node->deps[node->dep_count].data = data[i];
        node->dep_count++;
    }
    return CUDA_SUCCESS;
}

CUresult cuGraphAddDependencies(struct graph *graph, struct gnode *const *from,
                                struct gnode *const *to, size_t count) {
    DRIVER("cuGraphAddDependencies");
    return add_edges("cuGraphAddDependencies", graph, from, to, NULL, count);
}

/* Counted and logged with the first edge's type (1: programmatic). */
CUresult cuGraphAddDependencies_v2(struct graph *graph, struct gnode *const *from,
                                   struct gnode *const *to, const struct edge_data *data,
                                   size_t count) {
    STUB_LOCKED();
    int injected = stub_enter("cuGraphAddDependencies_v2",
                              data != NULL && count > 0 ? data[0].type : 0);
    if (injected != 0)
        return injected;
    return add_edges("cuGraphAddDependencies_v2", graph, from, to, data, count);
}

/* As the driver wants: not in a graph under capture ("all operations other than destroy and
 * node removal are permitted" on it). */
CUresult cuGraphDestroyNode(struct gnode *node) {
    DRIVER("cuGraphDestroyNode");
    if (!valid_node(node, "cuGraphDestroyNode"))
        return CUDA_ERROR_INVALID_HANDLE;
    struct graph *graph = node->graph;
    if (graph->capturing) {
        stub_misuse_note("cuGraphDestroyNode: a node of a graph under capture");
        return CUDA_ERROR_INVALID_VALUE;
    }
    size_t kept = 0;
    for (size_t i = 0; i < graph->count; i++) {
        struct gnode *other = graph->nodes[i];
        if (other == node)
            continue;
        size_t edges = 0;
        for (size_t e = 0; e < other->dep_count; e++) {
            if (other->deps[e].from != node)
                other->deps[edges++] = other->deps[e];
        }
        other->dep_count = edges;
        graph->nodes[kept++] = other;
    }
    graph->count = kept;
    node_destroy(node);
    return CUDA_SUCCESS;
}
