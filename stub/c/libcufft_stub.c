/*
 * A fake cuFFT for CPU tests of cuda-safe-libs's fft module, compiled into the stub driver's
 * shared object and loaded through CUDA_SAFE_LIBCUFFT. A plan keeps its description; an
 * execution computes the DFT the slow way (each dimension directly, in double) on the driver's
 * memory, which is host memory. Every range an execution reads or writes is checked against
 * the driver's allocations (a range past one is a misuse, the CPU's GPU fault), as are the
 * plan's work area (with automatic allocation off, it must be set and still live) and stream.
 * Half precision is converted through f32. Plan handles are never reused, so a destroyed plan
 * used again is a misuse.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_stub.h"
#include "stub.h"

enum {
    FFT_OK = 0,
    INVALID_PLAN = 1,
    ALLOC_FAILED = 2,
    INVALID_VALUE = 4,
    INVALID_SIZE = 8,
    NO_WORKSPACE = 13,
    NOT_SUPPORTED = 16
};
enum { C2C = 41, R2C = 42, C2R = 44, Z2Z = 105, D2Z = 106, Z2D = 108 };
enum { T_R32F = 0, T_R64F = 1, T_R16F = 2, T_C32F = 4, T_C64F = 5, T_C16F = 6 };
enum { K_C2C, K_R2C, K_C2R };

static const double PI = 3.14159265358979323846;

/* One side's layout, in its own elements. */
struct side {
    long long embed[3], stride, dist;
    int given; /* an embedding was passed (else cuFFT's basic layout) */
};

struct plan {
    int live, made, auto_allocate;
    int kind;     /* K_C2C, K_R2C, K_C2R */
    int real;     /* bytes of one real: 2, 4 or 8 */
    int rank;
    long long n[3], batch;
    struct side in, out;
    size_t work_size;
    void *work;
    void *stream;
};

static struct plan *plans;
static int plan_count;
static long live_plans;
static long long forced_work_size = -1;

/* Live plans (fft_stub_live()). */
long long fft_stub_live(void) { return live_plans; }

/* Makes the next plans ask for `bytes` of work area (-1: the default, 8 bytes a point). */
void fft_stub_set_work_size(long long bytes) { forced_work_size = bytes; }

static struct plan *find(int handle, const char *api) {
    if (handle < 1 || handle > plan_count || !plans[handle - 1].live) {
        stub_misuse_note("%s: %d is not a live cuFFT plan", api, handle);
        return NULL;
    }
    return &plans[handle - 1];
}

int cufftCreate(int *handle) {
    ENTER("cufftCreate");
    struct plan *grown = realloc(plans, (size_t)(plan_count + 1) * sizeof *plans);
    if (grown == NULL)
        return ALLOC_FAILED;
    plans = grown;
    memset(&plans[plan_count], 0, sizeof *plans);
    plans[plan_count].live = 1;
    plans[plan_count].auto_allocate = 1;
    *handle = ++plan_count;
    live_plans++;
    return FFT_OK;
}

int cufftDestroy(int handle) {
    ENTER("cufftDestroy");
    struct plan *plan = find(handle, "cufftDestroy");
    if (plan == NULL)
        return INVALID_PLAN;
    /* A work area freed before its plan is destroyed would be a use after free on a GPU whose
     * plan still had work queued. */
    if (plan->work != NULL)
        check_range((CUdeviceptr)(uintptr_t)plan->work, plan->work_size, 0, "cufftDestroy");
    plan->live = 0;
    live_plans--;
    return FFT_OK;
}

int cufftGetVersion(int *version) {
    ENTER("cufftGetVersion");
    *version = 12000;
    return FFT_OK;
}

int cufftSetAutoAllocation(int handle, int allocate) {
    ENTER("cufftSetAutoAllocation");
    struct plan *plan = find(handle, "cufftSetAutoAllocation");
    if (plan == NULL)
        return INVALID_PLAN;
    plan->auto_allocate = allocate;
    return FFT_OK;
}

int cufftSetWorkArea(int handle, void *work) {
    ENTER("cufftSetWorkArea");
    struct plan *plan = find(handle, "cufftSetWorkArea");
    if (plan == NULL)
        return INVALID_PLAN;
    if (plan->work_size > 0 &&
        check_range((CUdeviceptr)(uintptr_t)work, plan->work_size, 0, "cufftSetWorkArea") !=
            CUDA_SUCCESS)
        return INVALID_VALUE;
    plan->work = work;
    return FFT_OK;
}

int cufftSetStream(int handle, void *stream) {
    ENTER("cufftSetStream");
    struct plan *plan = find(handle, "cufftSetStream");
    if (plan == NULL)
        return INVALID_PLAN;
    if (stream_context(stream, "cufftSetStream") == NULL)
        return INVALID_VALUE;
    plan->stream = stream;
    return FFT_OK;
}

/* Records a plan's description (kind, bytes per real, sizes, layouts); sets *work. */
static int make_plan(const char *api, int handle, int rank, const long long *n,
                     const long long *inembed, long long istride, long long idist,
                     const long long *onembed, long long ostride, long long odist, int kind,
                     int real, long long batch, size_t *work) {
    struct plan *plan = find(handle, api);
    if (plan == NULL)
        return INVALID_PLAN;
    if (rank < 1 || rank > 3 || batch < 1)
        return INVALID_VALUE;
    long long points = batch;
    for (int d = 0; d < rank; d++) {
        if (n[d] < 1)
            return INVALID_SIZE;
        if (real == 2 && (n[d] & (n[d] - 1)) != 0)
            return NOT_SUPPORTED;
        points *= n[d];
    }
    if ((inembed != NULL || onembed != NULL) &&
        (inembed == NULL || onembed == NULL || istride < 1 || ostride < 1 || idist < 1 ||
         odist < 1))
        return INVALID_VALUE;
    plan->kind = kind;
    plan->real = real;
    plan->rank = rank;
    plan->batch = batch;
    for (int d = 0; d < rank; d++)
        plan->n[d] = n[d];
    plan->in = (struct side){.stride = istride, .dist = idist, .given = inembed != NULL};
    plan->out = (struct side){.stride = ostride, .dist = odist, .given = onembed != NULL};
    for (int d = 0; d < rank && inembed != NULL; d++) {
        plan->in.embed[d] = inembed[d];
        plan->out.embed[d] = onembed[d];
    }
    plan->work_size = forced_work_size >= 0 ? (size_t)forced_work_size : (size_t)points * 8;
    plan->made = 1;
    *work = plan->work_size;
    return FFT_OK;
}

int cufftMakePlanMany64(int handle, int rank, long long *n, long long *inembed,
                        long long istride, long long idist, long long *onembed,
                        long long ostride, long long odist, int type, long long batch,
                        size_t *work) {
    ENTER("cufftMakePlanMany64");
    int kind, real;
    switch (type) {
    case C2C: kind = K_C2C; real = 4; break;
    case R2C: kind = K_R2C; real = 4; break;
    case C2R: kind = K_C2R; real = 4; break;
    case Z2Z: kind = K_C2C; real = 8; break;
    case D2Z: kind = K_R2C; real = 8; break;
    case Z2D: kind = K_C2R; real = 8; break;
    default: return INVALID_VALUE;
    }
    return make_plan("cufftMakePlanMany64", handle, rank, n, inembed, istride, idist, onembed,
                     ostride, odist, kind, real, batch, work);
}

int cufftXtMakePlanMany(int handle, int rank, long long *n, long long *inembed,
                        long long istride, long long idist, int input, long long *onembed,
                        long long ostride, long long odist, int output, long long batch,
                        size_t *work, int execution) {
    ENTER("cufftXtMakePlanMany");
    int real = execution == T_C16F ? 2 : execution == T_C32F ? 4 : execution == T_C64F ? 8 : 0;
    int complex_type = real == 2 ? T_C16F : real == 4 ? T_C32F : T_C64F;
    int real_type = real == 2 ? T_R16F : real == 4 ? T_R32F : T_R64F;
    int kind;
    if (real == 0)
        return INVALID_VALUE;
    if (input == complex_type && output == complex_type)
        kind = K_C2C;
    else if (input == real_type && output == complex_type)
        kind = K_R2C;
    else if (input == complex_type && output == real_type)
        kind = K_C2R;
    else
        return INVALID_VALUE;
    return make_plan("cufftXtMakePlanMany", handle, rank, n, inembed, istride, idist, onembed,
                     ostride, odist, kind, real, batch, work);
}

/* ---- Executions ---- */

static float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
    float value;
    if (exponent == 0)
        value = ldexpf((float)mantissa, -24);
    else if (exponent == 31)
        value = mantissa ? NAN : INFINITY;
    else
        value = ldexpf((float)(mantissa | 0x400), (int)exponent - 25);
    return sign ? -value : value;
}

static uint16_t float_to_half(float f) {
    uint16_t sign = signbit(f) ? 0x8000 : 0;
    float a = fabsf(f);
    if (isnan(a))
        return sign | 0x7e00;
    if (a >= 65520.0f)
        return sign | 0x7c00;
    if (a < 6.103515625e-05f) /* subnormal: steps of 2^-24 */
        return sign | (uint16_t)lrintf(a * 16777216.0f);
    int exponent;
    float mantissa = frexpf(a, &exponent); /* a = mantissa 2^exponent, mantissa in [0.5, 1) */
    long bits = lrintf(mantissa * 2048.0f);  /* 11 significant bits, rounded to even */
    if (bits == 2048) {
        bits = 1024;
        exponent++;
    }
    return sign | (uint16_t)(((exponent + 14) << 10) + (bits - 1024));
}

static double get_real(int real, const void *base, long long index) {
    if (real == 2)
        return half_to_float(((const uint16_t *)base)[index]);
    if (real == 4)
        return ((const float *)base)[index];
    return ((const double *)base)[index];
}

static void put_real(int real, void *base, long long index, double value) {
    if (real == 2)
        ((uint16_t *)base)[index] = float_to_half((float)value);
    else if (real == 4)
        ((float *)base)[index] = (float)value;
    else
        ((double *)base)[index] = value;
}

/* The sizes of a side's data: the complex side of a real transform has n / 2 + 1 numbers in
 * its innermost dimension. */
static void side_dims(const struct plan *plan, int output, long long dims[3]) {
    int complex_half = (plan->kind == K_R2C && output) || (plan->kind == K_C2R && !output);
    for (int d = 0; d < plan->rank; d++)
        dims[d] = plan->n[d];
    if (complex_half)
        dims[plan->rank - 1] = plan->n[plan->rank - 1] / 2 + 1;
}

/* Whether a side holds reals. */
static int side_is_real(const struct plan *plan, int output) {
    return (plan->kind == K_R2C && !output) || (plan->kind == K_C2R && output);
}

/* A side's effective layout: as given, or cuFFT's basic one (padded on the real side of an
 * in-place real transform). */
static struct side layout(const struct plan *plan, int output, int in_place) {
    struct side side = output ? plan->out : plan->in;
    if (side.given)
        return side;
    long long dims[3];
    side_dims(plan, output, dims);
    if (in_place && side_is_real(plan, output))
        dims[plan->rank - 1] = 2 * (plan->n[plan->rank - 1] / 2 + 1);
    side.stride = 1;
    side.dist = 1;
    for (int d = 0; d < plan->rank; d++) {
        side.embed[d] = dims[d];
        side.dist *= dims[d];
    }
    return side;
}

/* The element (in the side's elements) of point `index` (row-major over `dims`) of transform
 * `b`. */
static long long offset(const struct plan *plan, const struct side *side, const long long *dims,
                        long long b, long long index) {
    long long at = 0, pitch = 1;
    for (int d = plan->rank - 1; d >= 0; d--) {
        at += (index % dims[d]) * pitch;
        index /= dims[d];
        pitch *= side->embed[d];
    }
    return b * side->dist + at * side->stride;
}

/* Checks the elements a side spans at `ptr`. */
static int side_ok(const struct plan *plan, const struct side *side, int output, const void *ptr,
                   const char *api) {
    long long dims[3], last;
    side_dims(plan, output, dims);
    long long count = 1;
    for (int d = 0; d < plan->rank; d++)
        count *= dims[d];
    last = offset(plan, side, dims, plan->batch - 1, count - 1);
    size_t bytes = (size_t)(last + 1) * (size_t)plan->real * (side_is_real(plan, output) ? 1 : 2);
    return check_range((CUdeviceptr)(uintptr_t)ptr, bytes, 0, api) == CUDA_SUCCESS;
}

/* The DFT of `x` (`count` points over the plan's sizes, interleaved re/im) along every
 * dimension, with the exponent's sign `sign`. */
static void dft(const struct plan *plan, double *x, long long count, int sign) {
    long long inner = count;
    for (int d = 0; d < plan->rank; d++) {
        long long n = plan->n[d];
        inner /= n;
        double *line = malloc((size_t)n * 2 * sizeof *line);
        for (long long outer = 0; outer < count / (n * inner); outer++) {
            for (long long i = 0; i < inner; i++) {
                double *base = x + 2 * (outer * n * inner + i);
                for (long long k = 0; k < n; k++) {
                    double re = 0, im = 0;
                    for (long long j = 0; j < n; j++) {
                        double angle = sign * 2 * PI * (double)((j * k) % n) / (double)n;
                        double a = base[2 * j * inner], b = base[2 * j * inner + 1];
                        re += a * cos(angle) - b * sin(angle);
                        im += a * sin(angle) + b * cos(angle);
                    }
                    line[2 * k] = re;
                    line[2 * k + 1] = im;
                }
                for (long long k = 0; k < n; k++) {
                    base[2 * k * inner] = line[2 * k];
                    base[2 * k * inner + 1] = line[2 * k + 1];
                }
            }
        }
        free(line);
    }
}

/* The point of the full spectrum that a C2R input's point `index` (row-major over the full
 * sizes) is, read from the half spectrum: itself, or the conjugate of its mirror. */
static long long mirror(const struct plan *plan, long long index, int *conjugate) {
    long long k[3] = {0}, half = 0;
    for (int d = plan->rank - 1; d >= 0; d--) {
        k[d] = index % plan->n[d];
        index /= plan->n[d];
    }
    int last = plan->rank - 1;
    *conjugate = k[last] > plan->n[last] / 2;
    for (int d = 0; d < plan->rank; d++) {
        long long kd = *conjugate ? (plan->n[d] - k[d]) % plan->n[d] : k[d];
        long long size = d == last ? plan->n[d] / 2 + 1 : plan->n[d];
        half = half * size + kd;
    }
    return half;
}

static int execute(const char *api, int handle, void *input, void *output, int sign) {
    struct plan *plan = find(handle, api);
    if (plan == NULL)
        return INVALID_PLAN;
    if (!plan->made)
        return INVALID_PLAN;
    if (!plan->auto_allocate && plan->work_size > 0) {
        if (plan->work == NULL)
            return NO_WORKSPACE;
        if (check_range((CUdeviceptr)(uintptr_t)plan->work, plan->work_size, 0, api) !=
            CUDA_SUCCESS)
            return INVALID_VALUE;
    }
    if (stream_context(plan->stream, api) == NULL)
        return INVALID_VALUE;
    int in_place = input == output;
    struct side in = layout(plan, 0, in_place), out = layout(plan, 1, in_place);
    if (!side_ok(plan, &in, 0, input, api) || !side_ok(plan, &out, 1, output, api))
        return INVALID_VALUE;
    long long count = 1, in_dims[3], out_dims[3];
    for (int d = 0; d < plan->rank; d++)
        count *= plan->n[d];
    side_dims(plan, 0, in_dims);
    side_dims(plan, 1, out_dims);
    /* Every transform's input is read before any output is written (in place). */
    double *all = calloc((size_t)(count * plan->batch * 2), sizeof *all);
    if (all == NULL)
        return ALLOC_FAILED;
    int r = plan->real;
    for (long long b = 0; b < plan->batch; b++) {
        double *x = all + 2 * b * count;
        for (long long p = 0; p < count; p++) {
            if (plan->kind == K_R2C) {
                x[2 * p] = get_real(r, input, offset(plan, &in, in_dims, b, p));
            } else if (plan->kind == K_C2C) {
                long long at = 2 * offset(plan, &in, in_dims, b, p);
                x[2 * p] = get_real(r, input, at);
                x[2 * p + 1] = get_real(r, input, at + 1);
            } else {
                int conjugate;
                long long at = 2 * offset(plan, &in, in_dims, b, mirror(plan, p, &conjugate));
                x[2 * p] = get_real(r, input, at);
                x[2 * p + 1] = (conjugate ? -1 : 1) * get_real(r, input, at + 1);
            }
        }
    }
    for (long long b = 0; b < plan->batch; b++) {
        double *x = all + 2 * b * count;
        dft(plan, x, count, plan->kind == K_R2C ? -1 : plan->kind == K_C2R ? 1 : sign);
        long long points = count / plan->n[plan->rank - 1] * out_dims[plan->rank - 1];
        for (long long q = 0; q < points; q++) {
            /* q is row-major over the output's sizes; p the same point over the full ones. */
            long long last = out_dims[plan->rank - 1], n_last = plan->n[plan->rank - 1];
            long long p = q / last * n_last + q % last;
            long long at = offset(plan, &out, out_dims, b, q);
            if (plan->kind == K_C2R) {
                put_real(r, output, at, x[2 * p]);
            } else {
                put_real(r, output, 2 * at, x[2 * p]);
                put_real(r, output, 2 * at + 1, x[2 * p + 1]);
            }
        }
    }
    free(all);
    return FFT_OK;
}

int cufftExecC2C(int plan, void *input, void *output, int direction) {
    ENTER("cufftExecC2C");
    return execute("cufftExecC2C", plan, input, output, direction);
}

int cufftExecZ2Z(int plan, void *input, void *output, int direction) {
    ENTER("cufftExecZ2Z");
    return execute("cufftExecZ2Z", plan, input, output, direction);
}

int cufftExecR2C(int plan, void *input, void *output) {
    ENTER("cufftExecR2C");
    return execute("cufftExecR2C", plan, input, output, -1);
}

int cufftExecD2Z(int plan, void *input, void *output) {
    ENTER("cufftExecD2Z");
    return execute("cufftExecD2Z", plan, input, output, -1);
}

int cufftExecC2R(int plan, void *input, void *output) {
    ENTER("cufftExecC2R");
    return execute("cufftExecC2R", plan, input, output, 1);
}

int cufftExecZ2D(int plan, void *input, void *output) {
    ENTER("cufftExecZ2D");
    return execute("cufftExecZ2D", plan, input, output, 1);
}

int cufftXtExec(int plan, void *input, void *output, int direction) {
    ENTER("cufftXtExec");
    return execute("cufftXtExec", plan, input, output, direction);
}
