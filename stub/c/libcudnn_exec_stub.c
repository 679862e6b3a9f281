/*
 * The fake cuDNN's executions on the CPU (see libcudnn_stub.c): an operation graph's tensors are
 * read into doubles (by their strides; a constant passed by value from its host pointer), its
 * operations run in order (libcudnn_ops_stub.c), and the tensors with memory that an operation
 * wrote are stored back, rounded to their data type.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_stub.h"
#include "libcudnn_stub.h"
#include "stub.h"

/* The most tensors one execution holds. */
#define MAX_VALUES 512

static int element_size(int type) {
    switch (type) {
    case T_FLOAT: case T_INT32: return 4;
    case T_DOUBLE: case T_INT64: return 8;
    case T_HALF: case T_BFLOAT16: return 2;
    case T_FP8_E4M3: case T_FP8_E5M2: return 1;
    default: return 0;
    }
}

static float from_bits(uint32_t bits) {
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* An 8-bit float of `ebits` exponent bits (bias 2^(ebits-1) - 1) and `mbits` mantissa bits. */
static double fp8_value(uint8_t v, int ebits, int mbits) {
    int bias = (1 << (ebits - 1)) - 1;
    int e = (v >> mbits) & ((1 << ebits) - 1), m = v & ((1 << mbits) - 1);
    double r = e == 0 ? ldexp(m, 1 - bias - mbits) : ldexp(m | (1 << mbits), e - bias - mbits);
    return v & 0x80 ? -r : r;
}

/* The finite 8-bit float nearest `value` (ties to an even code), saturating. */
static uint8_t fp8_code(double value, int ebits, int mbits) {
    int e4m3 = ebits == 4;
    uint8_t best = 0;
    double a = fabs(value), gap = INFINITY;
    for (int code = 0; code < 128; code++) {
        int e = (code >> mbits) & ((1 << ebits) - 1), m = code & ((1 << mbits) - 1);
        if ((e4m3 && e == 15 && m == 7) || (!e4m3 && e == 31))
            continue;
        double d = fabs(fp8_value((uint8_t)code, ebits, mbits) - a);
        if (d < gap || (d == gap && (code & 1) == 0)) {
            gap = d;
            best = (uint8_t)code;
        }
    }
    return (uint8_t)(best | (value < 0 ? 0x80 : 0));
}

static double load(int type, const void *base, long long at) {
    switch (type) {
    case T_FLOAT: return ((const float *)base)[at];
    case T_DOUBLE: return ((const double *)base)[at];
    case T_INT32: return ((const int32_t *)base)[at];
    case T_INT64: return (double)((const int64_t *)base)[at];
    case T_FP8_E4M3: return fp8_value(((const uint8_t *)base)[at], 4, 3);
    case T_FP8_E5M2: return fp8_value(((const uint8_t *)base)[at], 5, 2);
    default: break;
    }
    uint16_t h = ((const uint16_t *)base)[at];
    if (type == T_BFLOAT16)
        return from_bits((uint32_t)h << 16);
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? INFINITY : ldexp(m | 0x400, (int)e - 25);
    return sign ? -v : v;
}

static uint16_t half_bits(double value) {
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
    return sign | bits;
}

static void store(int type, void *base, long long at, double value) {
    switch (type) {
    case T_FLOAT: ((float *)base)[at] = (float)value; break;
    case T_DOUBLE: ((double *)base)[at] = value; break;
    case T_INT32: ((int32_t *)base)[at] = (int32_t)value; break;
    case T_INT64: ((int64_t *)base)[at] = (int64_t)value; break;
    case T_FP8_E4M3: ((uint8_t *)base)[at] = fp8_code(value, 4, 3); break;
    case T_FP8_E5M2: ((uint8_t *)base)[at] = fp8_code(value, 5, 2); break;
    case T_BFLOAT16: {
        float f = (float)value;
        uint32_t bits;
        memcpy(&bits, &f, 4);
        bits += 0x7fff + ((bits >> 16) & 1); /* round to nearest even */
        ((uint16_t *)base)[at] = (uint16_t)(bits >> 16);
        break;
    }
    default: ((uint16_t *)base)[at] = half_bits(value); break;
    }
}

long long dnn_offset(const struct value *v, long long flat, const struct value *like, int memory) {
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

static struct value *value_of(struct value *vals, int count, struct desc *tensor) {
    for (int i = 0; i < count; i++)
        if (vals[i].desc == tensor)
            return &vals[i];
    return NULL;
}

struct value *dnn_value(struct value *vals, int count, struct desc *op, int name) {
    struct desc *tensor = dnn_ref(op, name);
    return tensor != NULL ? value_of(vals, count, tensor) : NULL;
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
        if (*nv == MAX_VALUES)
            return dnn_fail(NOT_SUPPORTED, "the stub runs graphs of up to 512 tensors");
        struct value *v = &vals[(*nv)++];
        memset(v, 0, sizeof *v);
        v->desc = t;
        v->uid = dnn_i64(t, 906, 0);
        v->type = (int)*(unsigned *)dnn_attr(t, 901)->data;
        struct attr *virt = dnn_attr(t, 907), *by_value = dnn_attr(t, 908);
        v->is_virtual = virt != NULL && virt->data[0];
        v->by_value = by_value != NULL && by_value->data[0];
        long long *dims = dnn_ints(t, 902, &v->rank), *strides = dnn_ints(t, 903, &v->rank);
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
    if (!v->by_value && check_range((CUdeviceptr)(uintptr_t)v->memory, (size_t)(span * size), 0,
                                    "cudnnBackendExecute") != CUDA_SUCCESS)
        return BAD_PARAM;
    for (long long i = 0; i < v->count; i++)
        v->data[i] = load(v->type, v->memory, dnn_offset(v, i, NULL, 1));
    return OK;
}

int dnn_stub_run(struct desc *graph, struct desc *pack) {
    struct attr *ops = dnn_attr(graph, 801);
    struct value *vals = calloc(MAX_VALUES, sizeof *vals);
    if (vals == NULL)
        return ALLOC;
    int nv = 0, status = OK;
    for (long long i = 0; i < ops->count && status == OK; i++)
        status = collect(((struct desc **)ops->data)[i], vals, &nv);
    for (int i = 0; i < nv && status == OK; i++)
        if (!vals[i].is_virtual)
            status = bind(&vals[i], pack);
    for (long long i = 0; i < ops->count && status == OK; i++)
        status = dnn_operate(((struct desc **)ops->data)[i], vals, nv);
    for (int i = 0; i < nv; i++) {
        struct value *v = &vals[i];
        if (status == OK && !v->is_virtual && !v->by_value && v->written)
            for (long long e = 0; e < v->count; e++)
                store(v->type, v->memory, dnn_offset(v, e, NULL, 1), v->data[e]);
        free(v->data);
    }
    free(vals);
    return status;
}
