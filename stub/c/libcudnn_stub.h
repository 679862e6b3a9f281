/*
 * The fake cuDNN of libcudnn_stub.c (the API: handles, descriptors, attributes) and
 * libcudnn_exec_stub.c (what finalizing checks, and executions on the CPU): shared declarations,
 * hidden from the shared object's exports.
 */
#ifndef CUDA_SAFE_LIBCUDNN_STUB_H
#define CUDA_SAFE_LIBCUDNN_STUB_H

enum {
    OK = 0,
    BAD_PARAM = 2000,
    NOT_FINALIZED = 2004,
    SHAPE_MISMATCH = 2008,
    NOT_SUPPORTED = 3000,
    ALLOC = 4003
};
enum {
    D_POINTWISE = 0, D_CONV = 1, D_ENGINECFG = 3, D_HEUR = 4, D_PLAN = 5, D_CONV_FWD = 10,
    D_CONV_BWD_FILTER = 11, D_CONV_BWD_DATA = 12, D_OP_POINTWISE = 13, D_GRAPH = 15, D_PACK = 16,
    D_TENSOR = 17, D_MATMUL = 18, D_OP_MATMUL = 19, D_REDUCTION = 21, D_OP_REDUCTION = 22
};
enum { AT_HANDLE = 0, AT_BOOLEAN = 2, AT_INT64 = 3, AT_DOUBLE = 5, AT_VOID_PTR = 6, AT_DESC = 15 };

#define MAX_ATTRS 16

struct attr {
    int name, type;
    long long count;
    unsigned char *data;
};

struct desc {
    int kind, live, finalized;
    int nattrs;
    struct attr attrs[MAX_ATTRS];
    struct desc *graph; /* an engine config's operation graph */
    long long index;    /* an engine config's place in its heuristics' list */
};

struct handle {
    int live;
    void *stream;
};

#define HIDDEN __attribute__((visibility("hidden")))

/* The heuristics' configurations, how many of the first are refused, the plans' workspace. */
HIDDEN extern long long dnn_engines, dnn_refused, dnn_work_size;

/* Attribute `name` of `d`, or NULL. */
HIDDEN struct attr *dnn_attr(struct desc *d, int name);
/* The first value of an INT64 attribute, or `otherwise`. */
HIDDEN long long dnn_i64(struct desc *d, int name, long long otherwise);
/* The live, finalized descriptor a descriptor attribute names first, or NULL. */
HIDDEN struct desc *dnn_ref(struct desc *d, int name);
/* The live handle `raw` is, or NULL (a misuse noted). */
HIDDEN struct handle *dnn_handle(void *raw, const char *api);
/* Keeps `why` for cudnnGetLastErrorString and returns `status`. */
HIDDEN int dnn_fail(int status, const char *why);
/* What cudnnBackendFinalize checks of `d`. */
HIDDEN int dnn_stub_check(struct desc *d);
/* Runs the operation graph `graph` on the variant pack `pack`. */
HIDDEN int dnn_stub_run(struct desc *graph, struct desc *pack);

#endif
