/*
 * The fake cuDNN's layer norms on the CPU (see libcudnn_ops_stub.c): over every dim but the
 * first, forward (training writes the means and inverse standard deviations) and backward
 * (the gradients of the input, the scale and the bias from the saved statistics).
 */
#include <math.h>
#include <stddef.h>

#include "libcudnn_stub.h"

/* The forward: y = (x - mean) * inv * scale + bias per row of `x`. */
static int forward(struct desc *op, struct value *vals, int nv) {
    struct value *x = dnn_value(vals, nv, op, 2002), *scale = dnn_value(vals, nv, op, 2005),
                 *bias = dnn_value(vals, nv, op, 2006), *eps = dnn_value(vals, nv, op, 2007),
                 *y = dnn_value(vals, nv, op, 2013), *mean = dnn_value(vals, nv, op, 2003),
                 *inv = dnn_value(vals, nv, op, 2004);
    long long rows = x->dims[0], width = x->count / rows;
    for (long long r = 0; r < rows; r++) {
        const double *row = x->data + r * width;
        double m = 0, var = 0;
        for (long long j = 0; j < width; j++)
            m += row[j];
        m /= (double)width;
        for (long long j = 0; j < width; j++)
            var += (row[j] - m) * (row[j] - m);
        double iv = 1 / sqrt(var / (double)width + eps->data[0]);
        for (long long j = 0; j < width; j++)
            y->data[r * width + j] = (row[j] - m) * iv * scale->data[j] + bias->data[j];
        if (mean != NULL && inv != NULL) {
            mean->data[r] = m;
            inv->data[r] = iv;
        }
    }
    y->written = 1;
    if (mean != NULL && inv != NULL)
        mean->written = inv->written = 1;
    return OK;
}

/* The backward from the saved statistics. */
static int backward(struct desc *op, struct value *vals, int nv) {
    struct value *x = dnn_value(vals, nv, op, 2101), *mean = dnn_value(vals, nv, op, 2102),
                 *inv = dnn_value(vals, nv, op, 2103), *dy = dnn_value(vals, nv, op, 2104),
                 *scale = dnn_value(vals, nv, op, 2105), *dscale = dnn_value(vals, nv, op, 2107),
                 *dbias = dnn_value(vals, nv, op, 2108), *dx = dnn_value(vals, nv, op, 2109);
    long long rows = x->dims[0], width = x->count / rows;
    for (long long j = 0; j < width; j++)
        dscale->data[j] = dbias->data[j] = 0;
    for (long long r = 0; r < rows; r++) {
        double m = mean->data[r], iv = inv->data[r], mean_g = 0, mean_gx = 0;
        for (long long j = 0; j < width; j++) {
            long long e = r * width + j;
            double xhat = (x->data[e] - m) * iv, g = dy->data[e] * scale->data[j];
            dbias->data[j] += dy->data[e];
            dscale->data[j] += dy->data[e] * xhat;
            mean_g += g;
            mean_gx += g * xhat;
        }
        mean_g /= (double)width;
        mean_gx /= (double)width;
        for (long long j = 0; j < width; j++) {
            long long e = r * width + j;
            double xhat = (x->data[e] - m) * iv, g = dy->data[e] * scale->data[j];
            dx->data[e] = iv * (g - mean_g - xhat * mean_gx);
        }
    }
    dx->written = dscale->written = dbias->written = 1;
    return OK;
}

int dnn_norm(struct desc *op, struct value *vals, int nv) {
    return op->kind == D_OP_NORM_FWD ? forward(op, vals, nv) : backward(op, vals, nv);
}
