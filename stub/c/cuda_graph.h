/*
 * The fake libcuda's graphs, shared by cuda_graph.c (graphs, nodes, their parameters and
 * attributes, edges, node removal, user objects), cuda_graph_copy.c (copies: clones,
 * executables' and child graphs; ids; conditional handles and nodes), cuda_graph_exec.c
 * (executable graphs: instantiation, launches that run the nodes at once in dependency order,
 * updates), cuda_capture.c (stream capture) and cuda_capture_nodes.c (what a capture records,
 * and re-capture).
 *
 * A graph is a list of node objects in the order they were added; each node lists the edges
 * into it. An executable owns a deep copy of its graph whose nodes name the nodes they copy
 * (`origin`), so that the definition's node handles reach them; a clone is such a copy too.
 * Nodes and graphs are never freed (a destroyed one stays as a dead object), so a use after
 * destruction is a misuse, as for the other handles.
 */
#ifndef CUDA_SAFE_CUDA_GRAPH_H
#define CUDA_SAFE_CUDA_GRAPH_H

#include "cuda_stub.h"

#pragma GCC visibility push(hidden)

enum {
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901,
    CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE = 910,
};

/* CUgraphNodeType. */
enum {
    N_KERNEL = 0,
    N_MEMCPY = 1,
    N_MEMSET = 2,
    N_HOST = 3,
    N_GRAPH = 4,
    N_EMPTY = 5,
    N_WAIT_EVENT = 6,
    N_EVENT_RECORD = 7,
    N_CONDITIONAL = 13,
};

/* CUgraphConditionalNodeType. */
enum { COND_IF = 0, COND_WHILE = 1, COND_SWITCH = 2 };

/* CUlaunchAttributeID values the stub looks at (it keeps every id below MAX_ATTRIBUTE). */
enum {
    ATTR_COOPERATIVE = 2,
    ATTR_CLUSTER_DIMENSION = 4,
    ATTR_PROGRAMMATIC_STREAM_SERIALIZATION = 6,
    ATTR_PROGRAMMATIC_EVENT = 7,
    MAX_ATTRIBUTE = 32,
};

/* CUlaunchAttributeValue and CUlaunchAttribute, the same in both ABIs. */
struct attribute_value {
    unsigned char bytes[64];
};

struct launch_attribute {
    int id;
    int pad;
    struct attribute_value value;
};

/* CUgraphEdgeData. */
struct edge_data {
    unsigned char from_port, to_port, type, reserved[5];
};

/* CUDA_MEMSET_NODE_PARAMS and CUDA_HOST_NODE_PARAMS. */
struct memset_params {
    CUdeviceptr dst;
    size_t pitch;
    unsigned value, element_size;
    size_t width, height;
};

struct host_params {
    void (*fn)(void *);
    void *data;
};

/* CUDA_KERNEL_NODE_PARAMS (the _v2 layout, which both ABIs' calls take). */
struct kernel_params {
    struct kernel *func;
    unsigned grid[3], block[3], shared;
    void **params;
    void **extra;
    void *kern;
    void *ctx;
};

/* CUDA_CONDITIONAL_NODE_PARAMS inside CUgraphNodeParams. */
struct conditional_params {
    unsigned long long handle;
    int type;
    unsigned size;
    struct graph **bodies_out;
    void *ctx;
};

struct node_params {
    int type;
    int reserved0[3];
    union {
        long long reserved1[29];
        struct conditional_params conditional;
    } u;
    long long reserved2;
};

struct edge {
    struct gnode *from;
    struct edge_data data;
};

#define MAX_BODIES 8
#define MAX_ARGS 64

struct gnode {
    struct object head;
    struct graph *graph;
    int type;
    unsigned local_id;
    unsigned long long tools_id;
    struct gnode *origin; /* in a copy (executable or clone): the node copied */
    struct edge *deps;
    size_t dep_count, dep_cap;
    int enabled;
    /* Kernel nodes: the launch, its arguments' bytes, and the attributes set (bit i: id i). */
    struct kernel *kernel;
    unsigned grid[3], block[3], shared;
    unsigned char args[MAX_ARGS];
    unsigned attributes_set;
    struct attribute_value attributes[MAX_ATTRIBUTE];
    struct memcpy3d copy;
    struct memset_params fill;
    struct host_params host;
    struct event *event;
    struct graph *child; /* a child-graph node's own copy of its graph */
    /* Conditional nodes. */
    unsigned long long handle;
    int cond_type;
    unsigned body_count;
    struct graph *bodies[MAX_BODIES];
};

/* A counted reference to a user object. */
struct uref {
    struct uobj *object;
    unsigned count;
};

struct refs {
    struct uref *items;
    size_t count, cap;
};

struct uobj {
    struct object head;
    void *data;
    void (*destroy)(void *);
    unsigned long long count;
};

struct graph {
    struct object head;
    struct gnode **nodes;
    size_t count, cap;
    unsigned id, next_local;
    int owned; /* a node's child or body graph: not counted, destroyed with its node */
    int capturing; /* captured into now: no node may be removed (cuda_capture.c) */
    struct refs refs;
};

/* A stream's capture (cuda_capture.c). A re-capture (cuda_capture_nodes.c) walks the graph's
 * nodes in creation order instead of adding new ones, and reports changed parameters through
 * its callback. */
typedef CUresult (*recapture_callback)(void *data, struct gnode *node, const void *original,
                                       const void *recaptured, int status);

struct capture {
    struct graph *graph;
    unsigned long long id;
    int owns; /* made by cuStreamBeginCapture (else: captured into a graph given) */
    int invalidated; /* an operation was refused: ending the capture fails */
    struct gnode **deps;
    struct edge_data *data; /* the edges from `deps` to the next node, when `has_data` */
    int has_data;
    size_t count, cap;
    int recapture; /* cuStreamBeginRecaptureToGraph: `next` is the next node to record over */
    size_t next;
    recapture_callback callback;
    void *callback_data;
};

/* The stub stream behind `handle`, or NULL (a default stream, or not a live stub stream). */
struct stream *stub_stream(const void *handle);

/* Starts capturing `handle` into `graph` (a new one when NULL); NULL with `*error` set when
 * the stream cannot capture. */
struct capture *capture_begin(const char *api, void *handle, struct graph *graph,
                              struct gnode *const *deps, const struct edge_data *data,
                              size_t count, CUresult *error);

/* Makes `nodes` the capture's dependencies (`data`: their edges to the next node, or NULL). */
void set_deps(struct capture *capture, struct gnode *const *nodes,
              const struct edge_data *data, size_t count);

/* At a capture's end: a re-capture that recorded fewer nodes than its graph has fails. */
CUresult recapture_end(struct capture *capture);

/* A new graph (counted as live unless `owned`). */
struct graph *graph_new(int owned);

/* Destroys `graph`: its nodes, the graphs they own, its user-object references. */
void graph_destroy(struct graph *graph);

/* A deep copy of `graph` whose nodes name the nodes they copy; with `refs`, it holds the
 * same user-object references. */
struct graph *graph_copy(const struct graph *graph, int owned, int refs);

/* The node of `copy` that copies `origin`, or NULL. */
struct gnode *node_in_copy(const struct graph *copy, const struct gnode *origin);

/* A new node of `type` in `graph`, after `count` dependencies (nodes of the same graph) with
 * optional edge data; NULL with `*error` set when a dependency is not usable. */
struct gnode *node_add(struct graph *graph, int type, struct gnode *const *deps,
                       const struct edge_data *data, size_t count, const char *api,
                       CUresult *error);

/* Copies a kernel node's description into `node` (its arguments' values included). */
CUresult kernel_node_set(struct gnode *node, const struct kernel_params *params, const char *api);

/* Adds `count` references to `object` to `refs`; drops them (running the destructor when the
 * last reference goes). */
void refs_add(struct refs *refs, struct uobj *object, unsigned count);
void refs_release(struct refs *refs);
void uobj_release(struct uobj *object, unsigned long long count);

/* Runs `graph`'s enabled nodes in dependency order, as queued on `stream`. */
CUresult graph_run(const char *api, struct graph *graph, void *stream);

/* The current value of the conditional handle `handle`, and resetting those with a default at
 * the start of a launch. */
unsigned conditional_value(unsigned long long handle);
void conditional_reset_defaults(void);

#pragma GCC visibility pop

#endif
