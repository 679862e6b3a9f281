/*
 * The fake libcuda's graph copies (what executables and clones hold, and child graphs), clones
 * and finding nodes in them, the ids of CUDA 13.1 (graphs, nodes; executables' are in
 * cuda_graph_exec.c), and conditional nodes with their handles. See cuda_graph.h.
 */
#include <stdlib.h>
#include <string.h>

#include "cuda_graph.h"

static unsigned long long next_tools_copy = 1ull << 40;

/* ---- Copies. ---- */

struct graph *graph_copy(const struct graph *graph, int owned, int refs) {
    struct graph *copy = graph_new(owned);
    copy->next_local = graph->next_local;
    copy->cap = graph->count;
    copy->nodes = calloc(graph->count == 0 ? 1 : graph->count, sizeof copy->nodes[0]);
    if (copy->nodes == NULL)
        abort();
    for (size_t i = 0; i < graph->count; i++) {
        const struct gnode *from = graph->nodes[i];
        struct gnode *node = make(sizeof *node, T_GNODE);
        memcpy((char *)node + sizeof node->head, (const char *)from + sizeof from->head,
               sizeof *node - sizeof node->head);
        node->graph = copy;
        node->origin = (struct gnode *)from;
        node->tools_id = next_tools_copy++;
        node->deps = NULL;
        node->dep_cap = 0;
        if (from->child != NULL)
            node->child = graph_copy(from->child, 1, 0);
        for (unsigned b = 0; b < from->body_count; b++)
            node->bodies[b] = graph_copy(from->bodies[b], 1, 0);
        copy->nodes[i] = node;
    }
    copy->count = graph->count;
    /* The edges, between the copies. */
    for (size_t i = 0; i < graph->count; i++) {
        const struct gnode *from = graph->nodes[i];
        struct gnode *node = copy->nodes[i];
        node->deps = calloc(from->dep_count == 0 ? 1 : from->dep_count, sizeof node->deps[0]);
        if (node->deps == NULL)
            abort();
        node->dep_cap = from->dep_count;
        for (size_t e = 0; e < from->dep_count; e++) {
            size_t at = 0;
            while (graph->nodes[at] != from->deps[e].from)
                at++;
            node->deps[e].from = copy->nodes[at];
            node->deps[e].data = from->deps[e].data;
        }
    }
    if (refs) {
        for (size_t i = 0; i < graph->refs.count; i++) {
            graph->refs.items[i].object->count += graph->refs.items[i].count;
            refs_add(&copy->refs, graph->refs.items[i].object, graph->refs.items[i].count);
        }
    }
    return copy;
}

struct gnode *node_in_copy(const struct graph *copy, const struct gnode *origin) {
    for (size_t i = 0; i < copy->count; i++) {
        if (copy->nodes[i]->origin == origin)
            return copy->nodes[i];
    }
    return NULL;
}

CUresult cuGraphClone(struct graph **clone, struct graph *graph) {
    DRIVER("cuGraphClone");
    if (!valid(graph, T_GRAPH, "cuGraphClone"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (clone == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *clone = graph_copy(graph, 0, 1);
    return CUDA_SUCCESS;
}

CUresult cuGraphNodeFindInClone(struct gnode **found, struct gnode *original,
                                struct graph *clone) {
    DRIVER("cuGraphNodeFindInClone");
    if (!valid(original, T_GNODE, "cuGraphNodeFindInClone") ||
        !valid(clone, T_GRAPH, "cuGraphNodeFindInClone"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (found == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct gnode *copy = node_in_copy(clone, original);
    if (copy == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *found = copy;
    return CUDA_SUCCESS;
}

/* ---- Ids. ---- */

CUresult cuGraphGetId(struct graph *graph, unsigned *id) {
    DRIVER("cuGraphGetId");
    if (!valid(graph, T_GRAPH, "cuGraphGetId"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (id == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *id = graph->id;
    return CUDA_SUCCESS;
}

CUresult cuGraphNodeGetLocalId(struct gnode *node, unsigned *id) {
    DRIVER("cuGraphNodeGetLocalId");
    if (!valid(node, T_GNODE, "cuGraphNodeGetLocalId"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (id == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *id = node->local_id;
    return CUDA_SUCCESS;
}

CUresult cuGraphNodeGetToolsId(struct gnode *node, unsigned long long *id) {
    DRIVER("cuGraphNodeGetToolsId");
    if (!valid(node, T_GNODE, "cuGraphNodeGetToolsId"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (id == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *id = node->tools_id;
    return CUDA_SUCCESS;
}

/* ---- Conditional handles and nodes. ---- */

#define MAX_HANDLES 1024
#define CU_GRAPH_COND_ASSIGN_DEFAULT 1u

struct handle {
    const struct graph *graph;
    int has_default;
    unsigned default_value, value;
};

/* Handle n is handles[n - 1]. */
static struct handle handles[MAX_HANDLES];
static size_t handle_count;

static struct handle *handle_of(unsigned long long handle) {
    if (handle == 0 || handle > handle_count)
        return NULL;
    return &handles[handle - 1];
}

void conditional_set(unsigned long long handle, unsigned value) {
    struct handle *entry = handle_of(handle);
    if (entry == NULL)
        stub_misuse_note("cudaGraphSetConditional: no handle %llu", handle);
    else
        entry->value = value;
}

unsigned conditional_value(unsigned long long handle) {
    struct handle *entry = handle_of(handle);
    return entry == NULL ? 0 : entry->value;
}

void conditional_reset_defaults(void) {
    for (size_t i = 0; i < handle_count; i++) {
        if (handles[i].has_default)
            handles[i].value = handles[i].default_value;
    }
}

CUresult cuGraphConditionalHandleCreate(unsigned long long *handle, struct graph *graph,
                                        void *context, unsigned default_value, unsigned flags) {
    DRIVER("cuGraphConditionalHandleCreate");
    if (!valid(graph, T_GRAPH, "cuGraphConditionalHandleCreate") ||
        !valid(context, T_CONTEXT, "cuGraphConditionalHandleCreate"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (handle == NULL || (flags & ~CU_GRAPH_COND_ASSIGN_DEFAULT) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (handle_count == MAX_HANDLES)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct handle *entry = &handles[handle_count++];
    entry->graph = graph;
    entry->has_default = (flags & CU_GRAPH_COND_ASSIGN_DEFAULT) != 0;
    entry->default_value = default_value;
    entry->value = default_value;
    *handle = handle_count;
    return CUDA_SUCCESS;
}

/* A conditional node described by `params` (the only kind cuGraphAddNode makes here). */
static CUresult add_node(const char *api, struct gnode **out, struct graph *graph,
                         struct gnode *const *deps, const struct edge_data *data, size_t count,
                         struct node_params *params) {
    if (out == NULL || params == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (params->type != N_CONDITIONAL)
        return CUDA_ERROR_NOT_SUPPORTED;
    struct conditional_params *conditional = &params->u.conditional;
    struct handle *entry = handle_of(conditional->handle);
    if (entry == NULL || entry->graph != graph) {
        stub_misuse_note("%s: the conditional handle is not one of the graph's", api);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!valid(conditional->ctx, T_CONTEXT, api))
        return CUDA_ERROR_INVALID_HANDLE;
    unsigned size = conditional->size;
    int type = conditional->type;
    int fits = (type == COND_IF && (size == 1 || size == 2)) || (type == COND_WHILE && size == 1) ||
               (type == COND_SWITCH && size >= 1);
    if (!fits || size > MAX_BODIES)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult error;
    struct gnode *node = node_add(graph, N_CONDITIONAL, deps, data, count, api, &error);
    if (node == NULL)
        return error;
    node->handle = conditional->handle;
    node->cond_type = type;
    node->body_count = size;
    for (unsigned i = 0; i < size; i++)
        node->bodies[i] = graph_new(1);
    conditional->bodies_out = node->bodies;
    *out = node;
    return CUDA_SUCCESS;
}

CUresult cuGraphAddNode(struct gnode **out, struct graph *graph, struct gnode *const *deps,
                        size_t count, struct node_params *params) {
    DRIVER("cuGraphAddNode");
    return add_node("cuGraphAddNode", out, graph, deps, NULL, count, params);
}

CUresult cuGraphAddNode_v2(struct gnode **out, struct graph *graph, struct gnode *const *deps,
                           const struct edge_data *data, size_t count,
                           struct node_params *params) {
    DRIVER("cuGraphAddNode_v2");
    return add_node("cuGraphAddNode_v2", out, graph, deps, data, count, params);
}
