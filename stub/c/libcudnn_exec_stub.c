/*
 * The fake cuDNN's checks at cudnnBackendFinalize and its executions on the CPU (see
 * libcudnn_stub.c): an operation graph's tensors are read from the driver's memory into
 * doubles (by their strides), its operations run in order, and the tensors with memory that an
 * operation wrote are stored back, rounded to their data type.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_stub.h"
#include "libcudnn_stub.h"
#include "stub.h"

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

static long long *ints(struct desc *d, int name, long long *count) {
    struct attr *a = dnn_attr(d, name);
    *count = a != NULL && a->type == AT_INT64 ? a->count : 0;
    return a != NULL ? (long long *)a->data : NULL;
}

/* A convolution's three tensors (input, filter, output) and its descriptor, by operation kind. */
static void conv_parts(struct desc *op, struct desc **x, struct desc **w, struct desc **y,
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
    conv_parts(op, &x, &w, &y, &conv);
    if (x == NULL || w == NULL || y == NULL || conv == NULL)
        return dnn_fail(BAD_PARAM, "a convolution needs its three tensors and its descriptor");
    long long nx, nw, ny, n, np, *xd = ints(x, 902, &nx), *wd = ints(w, 902, &nw),
                                 *yd = ints(y, 902, &ny);
    long long *pre = ints(conv, 105, &np), *post = ints(conv, 104, &n), *st = ints(conv, 103, &n),
              *dil = ints(conv, 102, &n);
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

int dnn_stub_check(struct desc *d) {
    static const int tensor[] = {901, 902, 903, 906, 0}, conv[] = {100, 101, 106, 0},
                     pointwise[] = {750, 751, 753, 0}, matmul[] = {1520, 1521, 1522, 1523, 0},
                     reduction[] = {1610, 1611, 1612, 0}, heur[] = {201, 0}, plan[] = {401, 0},
                     pack[] = {1000, 1001, 0};
    long long n, m;
    switch (d->kind) {
    case D_TENSOR: {
        if (!has(d, tensor))
            return dnn_fail(BAD_PARAM, "a tensor needs a type, dims, strides and an id");
        long long *dims = ints(d, 902, &n), *strides = ints(d, 903, &m);
        if (n < 1 || n > 8 || n != m)
            return dnn_fail(BAD_PARAM, "a tensor has 1 to 8 dims, a stride each");
        for (long long i = 0; i < n; i++)
            if (dims[i] < 1 || strides[i] < 1)
                return dnn_fail(BAD_PARAM, "a tensor's dims and strides are at least 1");
        return OK;
    }
    case D_CONV: {
        if (!has(d, conv))
            return dnn_fail(BAD_PARAM, "a convolution needs a compute type, mode and dims");
        long long spatial = dnn_i64(d, 106, 0);
        for (int name = 102; name <= 105; name++)
            if (ints(d, name, &n) == NULL || n != spatial)
                return dnn_fail(BAD_PARAM, "a convolution needs one value per spatial dim");
        return OK;
    }
    case D_CONV_FWD: case D_CONV_BWD_DATA: case D_CONV_BWD_FILTER:
        return check_conv(d);
    case D_OP_POINTWISE:
        if (!refs(d, pointwise) || (dnn_attr(d, 752) != NULL && dnn_ref(d, 752) == NULL))
            return dnn_fail(BAD_PARAM, "a pointwise operation needs finalized descriptors");
        return OK;
    case D_OP_MATMUL:
        return refs(d, matmul) ? OK : dnn_fail(BAD_PARAM, "a matmul needs finalized descriptors");
    case D_OP_REDUCTION:
        return refs(d, reduction) ? OK : dnn_fail(BAD_PARAM, "a reduction needs its descriptors");
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
        return OK;
    }
}

/* ---- Executions ---- */

struct value {
    struct desc *desc;
    long long uid, rank, dims[8], strides[8], count;
    int type, is_virtual, written;
    void *memory;
    double *data;
};

static int element_size(int type) {
    switch (type) {
    case 0: return 4;
    case 1: return 8;
    case 2: case 9: return 2;
    default: return 0;
    }
}

static float from_bits(uint32_t bits) {
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static double load(int type, const void *base, long long at) {
    if (type == 0)
        return ((const float *)base)[at];
    if (type == 1)
        return ((const double *)base)[at];
    uint16_t h = ((const uint16_t *)base)[at];
    if (type == 9)
        return from_bits((uint32_t)h << 16);
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? INFINITY : ldexp(m | 0x400, (int)e - 25);
    return sign ? -v : v;
}

static void store(int type, void *base, long long at, double value) {
    if (type == 0) {
        ((float *)base)[at] = (float)value;
    } else if (type == 1) {
        ((double *)base)[at] = value;
    } else if (type == 9) {
        float f = (float)value;
        uint32_t bits;
        memcpy(&bits, &f, 4);
        bits += 0x7fff + ((bits >> 16) & 1); /* round to nearest even */
        ((uint16_t *)base)[at] = (uint16_t)(bits >> 16);
    } else {
        float a = fabsf((float)value);
        uint16_t sign = value < 0 ? 0x8000 : 0, bits;
        if (a >= 65520.0f) {
            bits = 0x7c00;
        } else if (a < 6.103515625e-05f) {
            bits = (uint16_t)lrintf(a * 16777216.0f);
        } else {
            int e;
            long mant = lrintf(frexpf(a, &e) * 2048.0f);
            if (mant == 2048) {
                mant = 1024;
                e++;
            }
            bits = (uint16_t)(((e + 14) << 10) + (mant - 1024));
        }
        ((uint16_t *)base)[at] = sign | bits;
    }
}

/* The memory offset of logical element `flat` of `v` (row-major over its dims), with the dims
 * where `v` is 1 broadcast when `like` (of the same rank) is given. */
static long long offset(const struct value *v, long long flat, const struct value *like,
                        int memory) {
    const long long *dims = like != NULL ? like->dims : v->dims;
    long long at = 0, logical = 0, scale = 1;
    for (long long d = v->rank - 1; d >= 0; d--) {
        long long i = flat % dims[d];
        flat /= dims[d];
        if (v->dims[d] == 1)
            i = 0;
        at += i * v->strides[d];
        logical += i * scale;
        scale *= v->dims[d];
    }
    return memory ? at : logical;
}

static struct value *value_of(struct value *values, int count, struct desc *tensor) {
    for (int i = 0; i < count; i++)
        if (values[i].desc == tensor)
            return &values[i];
    return NULL;
}

static double pointwise(long long mode, double x, double b) {
    switch (mode) {
    case 0: return x + b;
    case 1: return x * b;
    case 2: return fmin(x, b);
    case 3: return fmax(x, b);
    case 4: return sqrt(x);
    case 6: return x / b;
    case 9: return x - b;
    case 13: return exp(x);
    case 15: return log(x);
    case 16: return -x;
    case 17: return 1 / sqrt(x);
    case 21: return x;
    case 100: return x > 0 ? x : 0;
    case 101: return tanh(x);
    case 102: return 1 / (1 + exp(-x));
    case 104: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    case 106: return x / (1 + exp(-x));
    default: return NAN;
    }
}

/* A convolution over 2 spatial dims, forward or backward, accumulated into its output. */
static int convolve(struct desc *op, struct value *vals, int nv) {
    struct desc *xd, *wd, *yd, *conv;
    conv_parts(op, &xd, &wd, &yd, &conv);
    struct value *x = value_of(vals, nv, xd), *w = value_of(vals, nv, wd), *y = value_of(vals, nv, yd);
    if (x->rank != 4)
        return dnn_fail(NOT_SUPPORTED, "the stub convolves over 2 spatial dims only");
    long long n_, *pad = ints(conv, 105, &n_), *st = ints(conv, 103, &n_), *dil = ints(conv, 102, &n_);
    long long C = x->dims[1], H = x->dims[2], W = x->dims[3], K = w->dims[0], Cg = w->dims[1];
    long long R = w->dims[2], S = w->dims[3], P = y->dims[2], Q = y->dims[3], per = K / (C / Cg);
    struct value *out = op->kind == D_CONV_FWD ? y : op->kind == D_CONV_BWD_DATA ? x : w;
    memset(out->data, 0, (size_t)out->count * sizeof(double));
    for (long long n = 0; n < x->dims[0]; n++)
        for (long long k = 0; k < K; k++)
            for (long long p = 0; p < P; p++)
                for (long long q = 0; q < Q; q++)
                    for (long long c = 0; c < Cg; c++)
                        for (long long r = 0; r < R; r++)
                            for (long long s = 0; s < S; s++) {
                                long long h = p * st[0] - pad[0] + r * dil[0];
                                long long ww = q * st[1] - pad[1] + s * dil[1];
                                if (h < 0 || h >= H || ww < 0 || ww >= W)
                                    continue;
                                long long xi = ((n * C + k / per * Cg + c) * H + h) * W + ww;
                                long long wi = ((k * Cg + c) * R + r) * S + s;
                                long long yi = ((n * K + k) * P + p) * Q + q;
                                if (out == y)
                                    y->data[yi] += x->data[xi] * w->data[wi];
                                else if (out == x)
                                    x->data[xi] += y->data[yi] * w->data[wi];
                                else
                                    w->data[wi] += x->data[xi] * y->data[yi];
                            }
    out->written = 1;
    return OK;
}

static int operate(struct desc *op, struct value *vals, int nv) {
    if (op->kind == D_CONV_FWD || op->kind == D_CONV_BWD_DATA || op->kind == D_CONV_BWD_FILTER)
        return convolve(op, vals, nv);
    if (op->kind == D_OP_POINTWISE) {
        struct value *x = value_of(vals, nv, dnn_ref(op, 751)), *y = value_of(vals, nv, dnn_ref(op, 753));
        struct value *b = dnn_attr(op, 752) ? value_of(vals, nv, dnn_ref(op, 752)) : NULL;
        long long mode = *(unsigned *)dnn_attr(dnn_ref(op, 750), 0)->data;
        for (long long i = 0; i < y->count; i++)
            y->data[i] = pointwise(mode, x->data[offset(x, i, y, 0)],
                                   b ? b->data[offset(b, i, y, 0)] : 0);
        y->written = 1;
        return OK;
    }
    if (op->kind == D_OP_MATMUL) {
        struct value *a = value_of(vals, nv, dnn_ref(op, 1520)), *b = value_of(vals, nv, dnn_ref(op, 1521));
        struct value *c = value_of(vals, nv, dnn_ref(op, 1522));
        long long M = a->dims[1], K = a->dims[2], N = b->dims[2];
        for (long long i = 0; i < c->count; i++) {
            long long batch = i / (M * N), m = i / N % M, n = i % N, ab = a->dims[0] == 1 ? 0 : batch;
            long long bb = b->dims[0] == 1 ? 0 : batch;
            double sum = 0;
            for (long long k = 0; k < K; k++)
                sum += a->data[(ab * M + m) * K + k] * b->data[(bb * K + k) * N + n];
            c->data[i] = sum;
        }
        c->written = 1;
        return OK;
    }
    return dnn_fail(NOT_SUPPORTED, "the stub runs convolutions, pointwise operations and matmuls");
}

/* Collects the tensors `op` names into `vals`. */
static int collect(struct desc *op, struct value *vals, int *nv) {
    for (int i = 0; i < op->nattrs; i++) {
        struct attr *a = &op->attrs[i];
        if (a->type != AT_DESC)
            continue;
        struct desc *t = ((struct desc **)a->data)[0];
        if (t->kind != D_TENSOR || value_of(vals, *nv, t) != NULL)
            continue;
        if (*nv == 64)
            return dnn_fail(NOT_SUPPORTED, "the stub runs graphs of up to 64 tensors");
        struct value *v = &vals[(*nv)++];
        memset(v, 0, sizeof *v);
        v->desc = t;
        v->uid = dnn_i64(t, 906, 0);
        v->type = (int)*(unsigned *)dnn_attr(t, 901)->data;
        struct attr *virt = dnn_attr(t, 907);
        v->is_virtual = virt != NULL && virt->data[0];
        long long *dims = ints(t, 902, &v->rank), *strides = ints(t, 903, &v->rank);
        v->count = 1;
        for (long long d = 0; d < v->rank; d++) {
            v->dims[d] = dims[d];
            v->strides[d] = strides[d];
            v->count *= dims[d];
        }
        v->data = calloc((size_t)v->count, sizeof(double));
        if (v->data == NULL)
            return ALLOC;
    }
    return OK;
}

static int bind(struct value *v, struct desc *pack) {
    struct attr *uids = dnn_attr(pack, 1000), *ptrs = dnn_attr(pack, 1001);
    for (long long i = 0; i < uids->count; i++)
        if (((long long *)uids->data)[i] == v->uid)
            v->memory = ((void **)ptrs->data)[i];
    int size = element_size(v->type);
    if (v->memory == NULL || size == 0)
        return dnn_fail(BAD_PARAM, "a tensor with memory is not in the variant pack");
    long long span = 1;
    for (long long d = 0; d < v->rank; d++)
        span += (v->dims[d] - 1) * v->strides[d];
    if (check_range((CUdeviceptr)(uintptr_t)v->memory, (size_t)(span * size), 0,
                    "cudnnBackendExecute") != CUDA_SUCCESS)
        return BAD_PARAM;
    for (long long i = 0; i < v->count; i++)
        v->data[i] = load(v->type, v->memory, offset(v, i, NULL, 1));
    return OK;
}

int dnn_stub_run(struct desc *graph, struct desc *pack) {
    struct attr *ops = dnn_attr(graph, 801);
    struct value vals[64];
    int nv = 0, status = OK;
    for (long long i = 0; i < ops->count && status == OK; i++)
        status = collect(((struct desc **)ops->data)[i], vals, &nv);
    for (int i = 0; i < nv && status == OK; i++)
        if (!vals[i].is_virtual)
            status = bind(&vals[i], pack);
    for (long long i = 0; i < ops->count && status == OK; i++)
        status = operate(((struct desc **)ops->data)[i], vals, nv);
    for (int i = 0; i < nv; i++) {
        struct value *v = &vals[i];
        if (status == OK && !v->is_virtual && v->written)
            for (long long e = 0; e < v->count; e++)
                store(v->type, v->memory, offset(v, e, NULL, 1), v->data[e]);
        free(v->data);
    }
    return status;
}
