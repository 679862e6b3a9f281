/*
 * The fake libcuda's executable graphs. An executable owns a copy of its
 * graph, with the graph's user-object references; a launch queues the copy's enabled nodes,
 * in dependency order, as work of the launch stream (kernels as launched, copies, memsets, host
 * functions, events recorded and waited for, child graphs; conditional bodies as the handles'
 * values say, once the work before has run: cuda_gpu.c). An update copies a graph's parameters into the copy and
 * replaces its references with the graph's. See cuda_graph.h; capture is in cuda_capture.c.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_graph.h"

struct gexec {
    struct object head;
    struct graph *graph; /* the copy it runs (owned), holding its references */
    unsigned id;
    unsigned long long flags; /* CUDA_GRAPH_INSTANTIATE_FLAG_* */
};

static unsigned next_exec_id = 1;

/* ---- Running. ---- */

static CUresult conditional_run(const char *api, struct gnode *node, void *stream);

/* Runs one node. */
static CUresult node_run(const char *api, struct gnode *node, void *stream) {
    switch (node->type) {
    case N_KERNEL: {
        const size_t *sizes;
        size_t count = kernel_param_sizes(node->kernel, &sizes);
        void *params[8];
        size_t offset = 0;
        for (size_t i = 0; i < count && i < 8; i++) {
            params[i] = node->args + offset;
            offset += sizes[i];
        }
        return kernel_run(api, node->kernel, params, stream);
    }
    case N_MEMCPY:
        return copy_3d(api, &node->copy, stream);
    case N_MEMSET: {
        const struct memset_params *fill = &node->fill;
        size_t element = fill->element_size, row = fill->width * element;
        if ((element != 1 && element != 2 && element != 4) || fill->height == 0)
            return CUDA_ERROR_INVALID_VALUE;
        size_t span = (fill->height - 1) * fill->pitch + row;
        CHECK(check_range(fill->dst, span, 0, api));
        race_access(race_enqueue(stream, api), fill->dst, span, RACE_WRITE, api);
        gpu_fill(stream, fill->dst, fill->pitch, fill->value, element, fill->width, fill->height);
        return CUDA_SUCCESS;
    }
    case N_HOST:
        race_enqueue(stream, api);
        host_run(stream, node->host.fn, node->host.data);
        return CUDA_SUCCESS;
    case N_EVENT_RECORD:
        if (!valid(node->event, T_EVENT, api))
            return CUDA_ERROR_INVALID_HANDLE;
        node->event->recorded = 1;
        race_record(node->event, stream);
        gpu_record(node->event, stream);
        return CUDA_SUCCESS;
    case N_WAIT_EVENT:
        if (!valid(node->event, T_EVENT, api))
            return CUDA_ERROR_INVALID_HANDLE;
        race_wait(stream, node->event);
        gpu_wait_event(stream, node->event);
        return CUDA_SUCCESS;
    case N_GRAPH:
        return graph_run(api, node->child, stream);
    case N_CONDITIONAL: {
        /* The handle's value is set by the work before: that work runs first, and the node's
         * bodies on this thread, in stream order. */
        gpu_settle(stream);
        gpu_inline++;
        CUresult result = conditional_run(api, node, stream);
        gpu_inline--;
        return result;
    }
    default:
        return CUDA_SUCCESS;
    }
}

/* Runs a conditional node's bodies as its handle's value says. */
static CUresult conditional_run(const char *api, struct gnode *node, void *stream) {
    unsigned value = conditional_value(node->handle);
    if (node->cond_type == COND_WHILE) {
        for (unsigned long rounds = 0; conditional_value(node->handle) != 0; rounds++) {
            if (rounds == 1000000) {
                stub_misuse_note("%s: a while node ran a million times", api);
                return CUDA_ERROR_INVALID_VALUE;
            }
            CHECK(graph_run(api, node->bodies[0], stream));
        }
        return CUDA_SUCCESS;
    }
    if (node->cond_type == COND_IF && value != 0)
        return graph_run(api, node->bodies[0], stream);
    if (node->cond_type == COND_IF && node->body_count == 2)
        return graph_run(api, node->bodies[1], stream);
    if (node->cond_type == COND_SWITCH && value < node->body_count)
        return graph_run(api, node->bodies[value], stream);
    return CUDA_SUCCESS;
}

CUresult graph_run(const char *api, struct graph *graph, void *stream) {
    size_t count = graph->count;
    char *done = calloc(count == 0 ? 1 : count, 1);
    if (done == NULL)
        abort();
    CUresult result = CUDA_SUCCESS;
    for (size_t ran = 0; ran < count && result == CUDA_SUCCESS;) {
        size_t before = ran;
        for (size_t i = 0; i < count && result == CUDA_SUCCESS; i++) {
            struct gnode *node = graph->nodes[i];
            int ready = !done[i];
            for (size_t e = 0; ready && e < node->dep_count; e++) {
                size_t at = 0;
                while (graph->nodes[at] != node->deps[e].from)
                    at++;
                ready = done[at];
            }
            if (!ready)
                continue;
            if (node->enabled)
                result = node_run(api, node, stream);
            done[i] = 1;
            ran++;
        }
        if (ran == before) {
            stub_misuse_note("%s: the graph has a cycle", api);
            result = CUDA_ERROR_INVALID_VALUE;
        }
    }
    free(done);
    return result;
}

/* ---- Executables. ---- */

static int valid_exec(const struct gexec *exec, const char *api) {
    return valid(exec, T_GRAPH_EXEC, api) && valid(exec->graph, T_GRAPH, api);
}

#define CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH 1ull
#define CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD 2ull
#define CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH 4ull

/* CUDA_GRAPH_INSTANTIATE_PARAMS: 32 bytes, the result at offset 24. */
struct instantiate_params {
    unsigned long long flags;
    void *upload_stream;
    struct gnode *error_node;
    int result;
};

/* The CUgraphInstantiateResult the next instantiation fails with; 0: none armed. */
static int refusal;

void graph_reset(void) {
    refusal = 0;
}

/* Makes the next cuGraphInstantiateWithParams fail with CUDA_ERROR_INVALID_VALUE and `result`
 * as its CUgraphInstantiateResult (0 disarms), as the driver refuses a graph it cannot
 * instantiate (for device launch: a host node, nodes of two contexts). */
void stub_refuse_instantiation(int result) {
    STUB_LOCKED();
    refusal = result;
}

/* Counted and logged with the flags given. */
CUresult cuGraphInstantiateWithParams(struct gexec **out, struct graph *graph,
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
    if (out == NULL || params == NULL || !valid(graph, T_GRAPH, api))
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
    struct gexec *exec = make(sizeof *exec, T_GRAPH_EXEC);
    exec->graph = graph_copy(graph, 1, 1);
    exec->id = next_exec_id++;
    exec->flags = flags;
    stub_live_add(K_GRAPH, 1);
    params->result = 0;
    *out = exec;
    return CUDA_SUCCESS;
}

CUresult cuGraphExecDestroy(struct gexec *exec) {
    DRIVER_RELEASE("cuGraphExecDestroy", abandon(exec, T_GRAPH_EXEC));
    if (!valid_exec(exec, "cuGraphExecDestroy"))
        return CUDA_ERROR_INVALID_HANDLE;
    graph_destroy(exec->graph);
    exec->head.alive = 0;
    stub_live_add(K_GRAPH, -1);
    return CUDA_SUCCESS;
}

CUresult cuGraphLaunch(struct gexec *exec, void *stream) {
    DRIVER("cuGraphLaunch");
    if (!valid_exec(exec, "cuGraphLaunch") || stream_context(stream, "cuGraphLaunch") == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    race_enqueue(stream, "cuGraphLaunch");
    conditional_reset_defaults();
    return graph_run("cuGraphLaunch", exec->graph, stream);
}

CUresult cuGraphUpload(struct gexec *exec, void *stream) {
    DRIVER("cuGraphUpload");
    if (!valid_exec(exec, "cuGraphUpload") || stream_context(stream, "cuGraphUpload") == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    race_enqueue(stream, "cuGraphUpload");
    return CUDA_SUCCESS;
}

CUresult cuGraphExecGetId(struct gexec *exec, unsigned *id) {
    DRIVER("cuGraphExecGetId");
    if (!valid_exec(exec, "cuGraphExecGetId"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (id == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *id = exec->id;
    return CUDA_SUCCESS;
}

/* The executable's copy of the definition's `node`, of `type` (-1: any), or NULL with
 * `*error` set. */
static struct gnode *exec_node(struct gexec *exec, struct gnode *node, int type,
                               const char *api, CUresult *error) {
    *error = CUDA_ERROR_INVALID_HANDLE;
    if (!valid_exec(exec, api) || !valid(node, T_GNODE, api))
        return NULL;
    struct gnode *copy = node_in_copy(exec->graph, node);
    *error = CUDA_ERROR_INVALID_VALUE;
    if (copy == NULL) {
        stub_misuse_note("%s: the node is not one of the executable's graph", api);
        return NULL;
    }
    if (type >= 0 && copy->type != type)
        return NULL;
    *error = CUDA_SUCCESS;
    return copy;
}

CUresult cuGraphExecKernelNodeSetParams_v2(struct gexec *exec, struct gnode *node,
                                           const struct kernel_params *params) {
    DRIVER("cuGraphExecKernelNodeSetParams_v2");
    CUresult error;
    struct gnode *copy =
        exec_node(exec, node, N_KERNEL, "cuGraphExecKernelNodeSetParams_v2", &error);
    if (copy == NULL)
        return error;
    return kernel_node_set(copy, params, "cuGraphExecKernelNodeSetParams_v2");
}

CUresult cuGraphExecMemcpyNodeSetParams(struct gexec *exec, struct gnode *node,
                                        const struct memcpy3d *params, void *context) {
    DRIVER("cuGraphExecMemcpyNodeSetParams");
    CUresult error;
    struct gnode *copy = exec_node(exec, node, N_MEMCPY, "cuGraphExecMemcpyNodeSetParams", &error);
    if (copy == NULL)
        return error;
    if (params == NULL || context == NULL || params->src_type != copy->copy.src_type ||
        params->dst_type != copy->copy.dst_type)
        return CUDA_ERROR_INVALID_VALUE; /* the driver keeps the memory types */
    copy->copy = *params;
    return CUDA_SUCCESS;
}

CUresult cuGraphExecMemsetNodeSetParams(struct gexec *exec, struct gnode *node,
                                        const struct memset_params *params, void *context) {
    DRIVER("cuGraphExecMemsetNodeSetParams");
    CUresult error;
    struct gnode *copy = exec_node(exec, node, N_MEMSET, "cuGraphExecMemsetNodeSetParams", &error);
    if (copy == NULL)
        return error;
    if (params == NULL || context == NULL || params->height != 1)
        return CUDA_ERROR_INVALID_VALUE; /* only 1-D memsets change */
    copy->fill = *params;
    return CUDA_SUCCESS;
}

CUresult cuGraphExecHostNodeSetParams(struct gexec *exec, struct gnode *node,
                                      const struct host_params *params) {
    DRIVER("cuGraphExecHostNodeSetParams");
    CUresult error;
    struct gnode *copy = exec_node(exec, node, N_HOST, "cuGraphExecHostNodeSetParams", &error);
    if (copy == NULL)
        return error;
    if (params == NULL || params->fn == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    copy->host = *params;
    return CUDA_SUCCESS;
}

/* An event node's event in the executable. */
static CUresult exec_event(const char *api, int type, struct gexec *exec, struct gnode *node,
                           struct event *event) {
    CUresult error;
    struct gnode *copy = exec_node(exec, node, type, api, &error);
    if (copy == NULL)
        return error;
    if (!valid(event, T_EVENT, api))
        return CUDA_ERROR_INVALID_HANDLE;
    copy->event = event;
    return CUDA_SUCCESS;
}

CUresult cuGraphExecEventRecordNodeSetEvent(struct gexec *exec, struct gnode *node,
                                            struct event *event) {
    DRIVER("cuGraphExecEventRecordNodeSetEvent");
    return exec_event("cuGraphExecEventRecordNodeSetEvent", N_EVENT_RECORD, exec, node, event);
}

CUresult cuGraphExecEventWaitNodeSetEvent(struct gexec *exec, struct gnode *node,
                                          struct event *event) {
    DRIVER("cuGraphExecEventWaitNodeSetEvent");
    return exec_event("cuGraphExecEventWaitNodeSetEvent", N_WAIT_EVENT, exec, node, event);
}

CUresult cuGraphNodeSetEnabled(struct gexec *exec, struct gnode *node, unsigned enabled) {
    DRIVER("cuGraphNodeSetEnabled");
    CUresult error;
    struct gnode *copy = exec_node(exec, node, -1, "cuGraphNodeSetEnabled", &error);
    if (copy == NULL)
        return error;
    if (copy->type != N_KERNEL && copy->type != N_MEMCPY && copy->type != N_MEMSET)
        return CUDA_ERROR_INVALID_VALUE;
    copy->enabled = enabled != 0;
    return CUDA_SUCCESS;
}

CUresult cuGraphNodeGetEnabled(struct gexec *exec, struct gnode *node, unsigned *enabled) {
    DRIVER("cuGraphNodeGetEnabled");
    CUresult error;
    struct gnode *copy = exec_node(exec, node, -1, "cuGraphNodeGetEnabled", &error);
    if (copy == NULL)
        return error;
    if (enabled == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *enabled = (unsigned)copy->enabled;
    return CUDA_SUCCESS;
}

/* CUgraphExecUpdateResultInfo. */
struct update_info {
    int result;
    struct gnode *error_node, *error_from;
};

enum { UPDATE_ERROR_TOPOLOGY_CHANGED = 2, UPDATE_ERROR_NODE_TYPE_CHANGED = 3 };

CUresult cuGraphExecUpdate_v2(struct gexec *exec, struct graph *graph, struct update_info *info) {
    DRIVER("cuGraphExecUpdate_v2");
    CHECK(need_current("cuGraphExecUpdate_v2"));
    if (!valid_exec(exec, "cuGraphExecUpdate_v2") ||
        !valid(graph, T_GRAPH, "cuGraphExecUpdate_v2"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (info == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    memset(info, 0, sizeof *info);
    struct graph *target = exec->graph;
    if (target->count != graph->count) {
        info->result = UPDATE_ERROR_TOPOLOGY_CHANGED;
        return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
    }
    for (size_t i = 0; i < graph->count; i++) {
        if (target->nodes[i]->dep_count != graph->nodes[i]->dep_count) {
            info->result = UPDATE_ERROR_TOPOLOGY_CHANGED;
            return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
        }
        if (target->nodes[i]->type != graph->nodes[i]->type) {
            info->result = UPDATE_ERROR_NODE_TYPE_CHANGED;
            info->error_node = graph->nodes[i];
            return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
        }
    }
    for (size_t i = 0; i < graph->count; i++) {
        struct gnode *to = target->nodes[i];
        const struct gnode *from = graph->nodes[i];
        to->kernel = from->kernel;
        memcpy(to->grid, from->grid, sizeof to->grid);
        memcpy(to->block, from->block, sizeof to->block);
        to->shared = from->shared;
        memcpy(to->args, from->args, sizeof to->args);
        to->copy = from->copy;
        to->fill = from->fill;
        to->host = from->host;
        to->event = from->event;
    }
    /* The graph's references replace the executable's (the new ones first, so that an object
     * both hold never reaches 0). */
    struct refs old = target->refs;
    memset(&target->refs, 0, sizeof target->refs);
    for (size_t i = 0; i < graph->refs.count; i++) {
        graph->refs.items[i].object->count += graph->refs.items[i].count;
        refs_add(&target->refs, graph->refs.items[i].object, graph->refs.items[i].count);
    }
    refs_release(&old);
    return CUDA_SUCCESS;
}
