/*
 * The fake cuDNN's operations on the CPU, in double, on the values libcudnn_exec_stub.c read
 * (each row-major over its tensor's dims): pointwise operations (arithmetic, activations,
 * comparisons, logical operations, generated indices, selects), matmuls over any batch dims
 * with per-batch M, N and K, reductions, transposed views (reshape), Bernoulli draws (a
 * counter-based hash of the seed, the offset and the element: deterministic, not cuDNN's
 * Philox), convolutions over 2 spatial dims; layer norms are in libcudnn_norm_stub.c.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libcudnn_stub.h"

/* The index along `axis` of logical element `flat` of a tensor of `dims`. */
static long long index_along(const struct value *v, long long flat, long long axis) {
    for (long long d = v->rank - 1; d > axis; d--)
        flat /= v->dims[d];
    return flat % v->dims[axis];
}

static double apply(long long mode, double x, double b, double t) {
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
    case 300: return x == b;
    case 301: return x != b;
    case 302: return x > b;
    case 303: return x >= b;
    case 304: return x < b;
    case 305: return x <= b;
    case 400: return x != 0 && b != 0;
    case 401: return x != 0 || b != 0;
    case 402: return x == 0;
    case 601: return t != 0 ? x : b;
    default: return NAN;
    }
}

static int pointwise(struct desc *op, struct value *vals, int nv) {
    struct value *x = dnn_value(vals, nv, op, 751), *b = dnn_value(vals, nv, op, 752),
                 *t = dnn_value(vals, nv, op, 758), *y = dnn_value(vals, nv, op, 753);
    struct desc *pw = dnn_ref(op, 750);
    long long mode = *(unsigned *)dnn_attr(pw, 0)->data;
    if (mode == 501) {
        long long axis = dnn_i64(pw, 9, -1);
        if (axis < 0 || axis >= y->rank)
            return dnn_fail(BAD_PARAM, "a generated index needs an axis of its tensor");
        for (long long i = 0; i < y->count; i++)
            y->data[i] = (double)index_along(y, i, axis);
    } else {
        for (long long i = 0; i < y->count; i++)
            y->data[i] = apply(mode, x->data[dnn_offset(x, i, y, 0)],
                               b ? b->data[dnn_offset(b, i, y, 0)] : 0,
                               t ? t->data[dnn_offset(t, i, y, 0)] : 0);
    }
    y->written = 1;
    return OK;
}

/* The per-batch size an override tensor gives for batch `n`, or `whole` without one. */
static long long limit(const struct value *override, long long n, long long whole) {
    return override == NULL ? whole : (long long)override->data[n % override->count];
}

/* Whether each value of `override` (if any) lies in [0, whole]: cuDNN's kernels take them as
 * loop bounds, unchecked, so a value past it would read and write past the buffers. */
static int in_range(const struct value *override, long long whole) {
    for (long long i = 0; override != NULL && i < override->count; i++)
        if (override->data[i] < 0 || override->data[i] > (double)whole)
            return 0;
    return 1;
}

static int matmul(struct desc *op, struct value *vals, int nv) {
    struct value *a = dnn_value(vals, nv, op, 1520), *b = dnn_value(vals, nv, op, 1521),
                 *c = dnn_value(vals, nv, op, 1522);
    struct value *mo = dnn_value(vals, nv, op, 1525), *no = dnn_value(vals, nv, op, 1526),
                 *ko = dnn_value(vals, nv, op, 1527);
    long long r = c->rank, M = a->dims[r - 2], K = a->dims[r - 1], N = b->dims[r - 1];
    if (!in_range(mo, M) || !in_range(no, N) || !in_range(ko, K))
        return dnn_fail(BAD_PARAM, "a matmul's size override is outside [0, the dim it overrides]");
    for (long long i = 0; i < c->count; i++) {
        long long batch = i / (M * N), m = i / N % M, n = i % N;
        long long ab = 0, bb = 0, rest = batch, first = 0;
        long long as = 1, bs = 1;
        for (long long d = r - 3; d >= 0; d--) {
            long long idx = rest % c->dims[d];
            rest /= c->dims[d];
            if (d == 0)
                first = idx;
            ab += (a->dims[d] == 1 ? 0 : idx) * as;
            bb += (b->dims[d] == 1 ? 0 : idx) * bs;
            as *= a->dims[d];
            bs *= b->dims[d];
        }
        double sum = 0;
        if (m < limit(mo, first, M) && n < limit(no, first, N))
            for (long long k = 0; k < limit(ko, first, K); k++)
                sum += a->data[(ab * M + m) * K + k] * b->data[(bb * K + k) * N + n];
        c->data[i] = sum;
    }
    c->written = 1;
    return OK;
}

static int reduction(struct desc *op, struct value *vals, int nv) {
    struct value *x = dnn_value(vals, nv, op, 1610), *y = dnn_value(vals, nv, op, 1611);
    long long mode = *(unsigned *)dnn_attr(dnn_ref(op, 1612), 1600)->data;
    double start = mode == 3 ? -INFINITY : mode == 2 ? INFINITY : 0;
    for (long long j = 0; j < y->count; j++)
        y->data[j] = start;
    for (long long i = 0; i < x->count; i++) {
        double *to = &y->data[dnn_offset(y, i, x, 0)], v = x->data[i];
        switch (mode) {
        case 0: case 5: *to += v; break;
        case 2: *to = fmin(*to, v); break;
        case 3: *to = fmax(*to, v); break;
        case 4: *to = fmax(*to, fabs(v)); break;
        default: return dnn_fail(NOT_SUPPORTED, "the stub reduces by add, max, min, amax, avg");
        }
    }
    if (mode == 5)
        for (long long j = 0; j < y->count; j++)
            y->data[j] /= (double)(x->count / y->count);
    y->written = 1;
    return OK;
}

/* `y` is `x`'s memory through `y`'s dims and strides: each element of `y` is the element of
 * `x` at the same memory offset. */
static int reshape(struct desc *op, struct value *vals, int nv) {
    struct value *x = dnn_value(vals, nv, op, 2200), *y = dnn_value(vals, nv, op, 2201);
    long long span = 1;
    for (long long d = 0; d < x->rank; d++)
        span += (x->dims[d] - 1) * x->strides[d];
    double *memory = calloc((size_t)span, sizeof(double));
    if (memory == NULL)
        return ALLOC;
    for (long long i = 0; i < x->count; i++)
        memory[dnn_offset(x, i, NULL, 1)] = x->data[i];
    for (long long j = 0; j < y->count; j++) {
        long long at = dnn_offset(y, j, NULL, 1);
        y->data[j] = at < span ? memory[at] : NAN;
    }
    free(memory);
    y->written = 1;
    return OK;
}

/* A 64-bit mix of `z` (splitmix64's finalizer). */
static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int rng(struct desc *op, struct value *vals, int nv) {
    struct value *y = dnn_value(vals, nv, op, 2310), *seed = dnn_value(vals, nv, op, 2311),
                 *offset = dnn_value(vals, nv, op, 2313);
    struct attr *p = dnn_attr(dnn_ref(op, 2312), 2305);
    if (p == NULL || p->type != AT_DOUBLE)
        return dnn_fail(BAD_PARAM, "a Bernoulli draw needs its probability as a double");
    double keep = *(double *)p->data;
    uint64_t key = mix((uint64_t)(int64_t)seed->data[0] * 0x9e3779b97f4a7c15ull);
    uint64_t start = (uint64_t)(int64_t)offset->data[0];
    for (long long i = 0; i < y->count; i++) {
        double u = (double)(mix(key + start + (uint64_t)i) >> 11) / 9007199254740992.0;
        y->data[i] = u < keep ? 1 : 0;
    }
    y->written = 1;
    return OK;
}

int dnn_convolve(struct desc *op, struct value *vals, int nv) {
    struct desc *xd, *wd, *yd, *conv;
    dnn_conv_parts(op, &xd, &wd, &yd, &conv);
    struct value *x = NULL, *w = NULL, *y = NULL;
    for (int i = 0; i < nv; i++) {
        x = vals[i].desc == xd ? &vals[i] : x;
        w = vals[i].desc == wd ? &vals[i] : w;
        y = vals[i].desc == yd ? &vals[i] : y;
    }
    if (x->rank != 4)
        return dnn_fail(NOT_SUPPORTED, "the stub convolves over 2 spatial dims only");
    long long n_, *pad = dnn_ints(conv, 105, &n_), *st = dnn_ints(conv, 103, &n_),
                  *dil = dnn_ints(conv, 102, &n_);
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

int dnn_operate(struct desc *op, struct value *vals, int nv) {
    switch (op->kind) {
    case D_CONV_FWD: case D_CONV_BWD_DATA: case D_CONV_BWD_FILTER:
        return dnn_convolve(op, vals, nv);
    case D_OP_POINTWISE: return pointwise(op, vals, nv);
    case D_OP_MATMUL: return matmul(op, vals, nv);
    case D_OP_REDUCTION: return reduction(op, vals, nv);
    case D_OP_RESHAPE: return reshape(op, vals, nv);
    case D_OP_RNG: return rng(op, vals, nv);
    case D_OP_NORM_FWD: case D_OP_NORM_BWD: return dnn_norm(op, vals, nv);
    default: return dnn_fail(NOT_SUPPORTED, "the stub does not run this operation");
    }
}
