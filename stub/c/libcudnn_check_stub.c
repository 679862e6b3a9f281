/*
 * The fake cuDNN's checks at cudnnBackendFinalize (see libcudnn_stub.c): the attributes each
 * kind of descriptor needs, the finalized descriptors it refers to, a convolution's output
 * shape, a constant passed by value being one element, the heuristics' refusals.
 */
#include <stddef.h>
#include <string.h>

#include "libcudnn_stub.h"

/* Whether every attribute of `names` (0-terminated) is set. */
static int has(struct desc *d, const int *names) {
    for (; *names; names++)
        if (dnn_attr(d, *names) == NULL)
            return 0;
    return 1;
}

/* Whether every descriptor attribute of `names` (0-terminated) names a finalized descriptor. */
static int refs(struct desc *d, const int *names) {
    for (; *names; names++)
        if (dnn_ref(d, *names) == NULL)
            return 0;
    return 1;
}

/* Whether each optional descriptor attribute of `names` (0-terminated) that is set names a
 * finalized descriptor. */
static int optional_refs(struct desc *d, const int *names) {
    for (; *names; names++)
        if (dnn_attr(d, *names) != NULL && dnn_ref(d, *names) == NULL)
            return 0;
    return 1;
}

void dnn_conv_parts(struct desc *op, struct desc **x, struct desc **w, struct desc **y,
                    struct desc **conv) {
    int fwd = op->kind == D_CONV_FWD, data = op->kind == D_CONV_BWD_DATA;
    *x = dnn_ref(op, fwd ? 704 : data ? 710 : 716);
    *w = dnn_ref(op, fwd ? 703 : data ? 709 : 715);
    *y = dnn_ref(op, fwd ? 705 : data ? 711 : 717);
    *conv = dnn_ref(op, fwd ? 702 : data ? 708 : 714);
}

/* The forward output shape check of a convolution operation. */
static int check_conv(struct desc *op) {
    struct desc *x, *w, *y, *conv;
    dnn_conv_parts(op, &x, &w, &y, &conv);
    if (x == NULL || w == NULL || y == NULL || conv == NULL)
        return dnn_fail(BAD_PARAM, "a convolution needs its three tensors and its descriptor");
    long long nx, nw, ny, n, np, *xd = dnn_ints(x, 902, &nx), *wd = dnn_ints(w, 902, &nw),
                                 *yd = dnn_ints(y, 902, &ny);
    long long *pre = dnn_ints(conv, 105, &np), *post = dnn_ints(conv, 104, &n),
              *st = dnn_ints(conv, 103, &n), *dil = dnn_ints(conv, 102, &n);
    if (nx != nw || nx != ny || nx != np + 2 || xd[0] != yd[0] || wd[0] != yd[1] ||
        xd[1] % wd[1] != 0)
        return dnn_fail(SHAPE_MISMATCH, "the convolution's tensors do not match");
    for (long long i = 0; i < np; i++) {
        long long reach = dil[i] * (wd[i + 2] - 1) + 1;
        if ((xd[i + 2] + pre[i] + post[i] - reach) / st[i] + 1 != yd[i + 2])
            return dnn_fail(SHAPE_MISMATCH, "the convolution's output shape is not its input's");
    }
    return OK;
}

static int check_tensor(struct desc *d) {
    static const int tensor[] = {901, 902, 903, 906, 0};
    long long n, m;
    if (!has(d, tensor))
        return dnn_fail(BAD_PARAM, "a tensor needs a type, dims, strides and an id");
    long long *dims = dnn_ints(d, 902, &n), *strides = dnn_ints(d, 903, &m);
    if (n < 1 || n > 8 || n != m)
        return dnn_fail(BAD_PARAM, "a tensor has 1 to 8 dims, a stride each");
    for (long long i = 0; i < n; i++)
        if (dims[i] < 1 || strides[i] < 1)
            return dnn_fail(BAD_PARAM, "a tensor's dims and strides are at least 1");
    struct attr *by_value = dnn_attr(d, 908);
    if (by_value != NULL && by_value->data[0])
        for (long long i = 0; i < n; i++)
            if (dims[i] != 1)
                return dnn_fail(BAD_PARAM, "a tensor passed by value is one element");
    return OK;
}

/* Whether `d` has any attribute of `names` (0-terminated). */
static int has_any(struct desc *d, const int *names) {
    for (; *names; names++)
        if (dnn_attr(d, *names) != NULL)
            return 1;
    return 0;
}

/* Whether the matmul descriptor `m` sets a padding value (a double) of 0: what cuDNN's
 * frontend sets when a matmul has size overrides, the rows and columns past them zero. */
static int padded_with_zero(struct desc *m) {
    struct attr *value = dnn_attr(m, 1503);
    double padding = 1;
    if (value != NULL && value->type == AT_DOUBLE && value->count == 1)
        memcpy(&padding, value->data, sizeof padding);
    return padding == 0.0;
}

/* The operations' checks: every tensor they name finalized. */
static int check_operation(struct desc *d) {
    static const int pointwise[] = {750, 751, 753, 0}, pointwise_opt[] = {752, 758, 0},
                     matmul[] = {1520, 1521, 1522, 1523, 0}, matmul_opt[] = {1525, 1526, 1527, 0},
                     reduction[] = {1610, 1611, 1612, 0}, reshape[] = {2200, 2201, 0},
                     rng[] = {2310, 2311, 2312, 2313, 0},
                     norm_fwd[] = {2002, 2005, 2006, 2007, 2013, 0}, norm_fwd_opt[] = {2003, 2004, 0},
                     norm_bwd[] = {2101, 2102, 2103, 2104, 2105, 2107, 2108, 2109, 0};
    switch (d->kind) {
    case D_OP_POINTWISE:
        if (!refs(d, pointwise) || !optional_refs(d, pointwise_opt))
            return dnn_fail(BAD_PARAM, "a pointwise operation needs finalized descriptors");
        return OK;
    case D_OP_MATMUL:
        if (!refs(d, matmul) || !optional_refs(d, matmul_opt))
            return dnn_fail(BAD_PARAM, "a matmul needs finalized descriptors");
        return !has_any(d, matmul_opt) || padded_with_zero(dnn_ref(d, 1523))
                   ? OK
                   : dnn_fail(BAD_PARAM, "a matmul with size overrides needs a padding value of 0");
    case D_OP_REDUCTION:
        return refs(d, reduction) ? OK : dnn_fail(BAD_PARAM, "a reduction needs its descriptors");
    case D_OP_RESHAPE:
        return refs(d, reshape) ? OK : dnn_fail(BAD_PARAM, "a reshape needs its two tensors");
    case D_OP_RNG:
        return refs(d, rng) ? OK
                            : dnn_fail(BAD_PARAM, "a random number generator needs its tensors");
    case D_OP_NORM_FWD:
        if (!refs(d, norm_fwd) || !optional_refs(d, norm_fwd_opt) || dnn_attr(d, 2000) == NULL ||
            dnn_attr(d, 2001) == NULL)
            return dnn_fail(BAD_PARAM, "a norm forward needs a mode, a phase and its tensors");
        if (*(unsigned *)dnn_attr(d, 2001)->data == 1 && !refs(d, norm_fwd_opt))
            return dnn_fail(BAD_PARAM, "a training norm forward writes its statistics");
        return OK;
    case D_OP_NORM_BWD:
        return refs(d, norm_bwd) && dnn_attr(d, 2100) != NULL
                   ? OK
                   : dnn_fail(BAD_PARAM, "a norm backward needs a mode and its tensors");
    default:
        return OK;
    }
}

int dnn_stub_check(struct desc *d) {
    static const int conv[] = {100, 101, 106, 0}, heur[] = {201, 0}, plan[] = {401, 0},
                     pack[] = {1000, 1001, 0}, rng[] = {2300, 2305, 0};
    long long n;
    switch (d->kind) {
    case D_TENSOR:
        return check_tensor(d);
    case D_CONV: {
        if (!has(d, conv))
            return dnn_fail(BAD_PARAM, "a convolution needs a compute type, mode and dims");
        long long spatial = dnn_i64(d, 106, 0);
        for (int name = 102; name <= 105; name++)
            if (dnn_ints(d, name, &n) == NULL || n != spatial)
                return dnn_fail(BAD_PARAM, "a convolution needs one value per spatial dim");
        return OK;
    }
    case D_RNG:
        return has(d, rng) ? OK : dnn_fail(BAD_PARAM, "a Bernoulli generator needs a probability");
    case D_CONV_FWD: case D_CONV_BWD_DATA: case D_CONV_BWD_FILTER:
        return check_conv(d);
    case D_GRAPH: {
        struct attr *ops = dnn_attr(d, 801), *handle = dnn_attr(d, 800);
        if (ops == NULL || ops->count < 1 || handle == NULL ||
            dnn_handle(*(void **)handle->data, "cudnnBackendFinalize") == NULL)
            return dnn_fail(BAD_PARAM, "an operation graph needs its handle and operations");
        for (long long i = 0; i < ops->count; i++)
            if (!((struct desc **)ops->data)[i]->finalized)
                return dnn_fail(NOT_FINALIZED, "an operation of the graph is not finalized");
        return OK;
    }
    case D_HEUR:
        return refs(d, heur) && dnn_attr(d, 200) != NULL
                   ? OK
                   : dnn_fail(BAD_PARAM, "the heuristics need a finalized graph and a mode");
    case D_PLAN: {
        struct attr *handle = dnn_attr(d, 400);
        if (!refs(d, plan) || handle == NULL ||
            dnn_handle(*(void **)handle->data, "cudnnBackendFinalize") == NULL)
            return dnn_fail(BAD_PARAM, "a plan needs a handle and an engine configuration");
        if (dnn_ref(d, 401)->index < dnn_refused)
            return dnn_fail(NOT_SUPPORTED, "this engine cannot run the graph (the stub's refusal)");
        return OK;
    }
    case D_PACK:
        if (!has(d, pack) || dnn_attr(d, 1000)->count != dnn_attr(d, 1001)->count)
            return dnn_fail(BAD_PARAM, "a variant pack needs one pointer per id");
        return OK;
    default:
        return check_operation(d);
    }
}
