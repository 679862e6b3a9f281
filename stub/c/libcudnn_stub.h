/*
 * The fake cuDNN of libcudnn_stub.c (the API: handles, descriptors, attributes),
 * libcudnn_check_stub.c (what finalizing checks), libcudnn_exec_stub.c (executions: tensors read
 * into doubles, the operations run in order, the results stored back) and libcudnn_ops_stub.c
 * (each operation on the CPU): shared declarations, hidden from the shared object's exports.
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
    D_TENSOR = 17, D_MATMUL = 18, D_OP_MATMUL = 19, D_REDUCTION = 21, D_OP_REDUCTION = 22,
    D_OP_NORM_FWD = 29, D_OP_NORM_BWD = 30, D_OP_RESHAPE = 31, D_RNG = 32, D_OP_RNG = 33
};
enum { AT_HANDLE = 0, AT_BOOLEAN = 2, AT_INT64 = 3, AT_DOUBLE = 5, AT_VOID_PTR = 6, AT_DESC = 15 };
/* cuDNN's data types the stub reads and writes. */
enum {
    T_FLOAT = 0, T_DOUBLE = 1, T_HALF = 2, T_INT32 = 4, T_BFLOAT16 = 9, T_INT64 = 10,
    T_BOOLEAN = 11, T_FP8_E4M3 = 12, T_FP8_E5M2 = 13
};

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

/* One tensor of an execution: its description, its values in double (row-major over its
 * dims), where its memory is (a device pointer, a host pointer for a constant, or none). */
struct value {
    struct desc *desc;
    long long uid, rank, dims[8], strides[8], count;
    int type, is_virtual, by_value, written;
    void *memory;
    double *data;
};

#define HIDDEN __attribute__((visibility("hidden")))

/* The heuristics' configurations, how many of the first are refused, the plans' workspace. */
HIDDEN extern long long dnn_engines, dnn_refused, dnn_work_size;

/* Attribute `name` of `d`, or NULL. */
HIDDEN struct attr *dnn_attr(struct desc *d, int name);
/* The first value of an INT64 attribute, or `otherwise`. */
HIDDEN long long dnn_i64(struct desc *d, int name, long long otherwise);
/* The values of an INT64 attribute and their count (NULL and 0 when unset). */
HIDDEN long long *dnn_ints(struct desc *d, int name, long long *count);
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

/* The value of the tensor descriptor attribute `name` of `op` names, among `vals`, or NULL. */
HIDDEN struct value *dnn_value(struct value *vals, int count, struct desc *op, int name);
/* The memory (memory != 0) or logical offset of logical element `flat` of `v`, its dims where
 * it is 1 broadcast against `like`'s (of the same rank) when `like` is given. */
HIDDEN long long dnn_offset(const struct value *v, long long flat, const struct value *like,
                            int memory);
/* Runs one operation on the values of its tensors. */
HIDDEN int dnn_operate(struct desc *op, struct value *vals, int count);
/* A convolution over 2 spatial dims, forward or backward. */
HIDDEN int dnn_convolve(struct desc *op, struct value *vals, int count);
/* A layer norm forward or backward. */
HIDDEN int dnn_norm(struct desc *op, struct value *vals, int count);
/* A convolution's three tensors (input, filter, output) and its descriptor, by kind. */
HIDDEN void dnn_conv_parts(struct desc *op, struct desc **x, struct desc **w, struct desc **y,
                           struct desc **conv);

#endif
