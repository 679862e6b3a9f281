/*
 * The fake cuRAND of the stub's cuBLAS, cuBLASLt and cuRAND (libblas_stub.c says what they
 * do): Philox-, XORWOW-, MRG- and Sobol-typed generators that all draw from one 64-bit LCG,
 * uniform, normal (Box-Muller), log-normal, Poisson-shaped and raw bits, every output range
 * checked against the driver's allocations. In the driver's asynchronous mode (cuda_gpu.c) the
 * uniform, normal and log-normal numbers are drawn at the call and written as work of the
 * generator's stream; the others wait for the stream's work and are written at the call.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_stub.h"
#include "libblas_stub.h"
#include "stub.h"

struct generator {
    int type;
    unsigned long long state;
    unsigned dimensions;
    void *stream;
};

enum { LENGTH_NOT_MULTIPLE = 105, QUASI = 200 };

int curandCreateGenerator(struct generator **generator, int type) {
    ENTER("curandCreateGenerator");
    *generator = calloc(1, sizeof **generator);
    (*generator)->type = type;
    (*generator)->dimensions = 1;
    blas_stub_live_generators++;
    return OK;
}

int curandDestroyGenerator(struct generator *generator) {
    ENTER("curandDestroyGenerator");
    free(generator);
    blas_stub_live_generators--;
    return OK;
}

int curandGetVersion(int *version) {
    ENTER("curandGetVersion");
    *version = 10405;
    return OK;
}

int curandSetStream(struct generator *generator, void *stream) {
    ENTER("curandSetStream");
    if (stream_context(stream, "curandSetStream") == NULL)
        return INVALID_VALUE;
    generator->stream = stream;
    return OK;
}

int curandSetPseudoRandomGeneratorSeed(struct generator *generator, unsigned long long seed) {
    ENTER("curandSetPseudoRandomGeneratorSeed");
    generator->state = seed;
    return OK;
}

int curandSetGeneratorOffset(struct generator *generator, unsigned long long offset) {
    ENTER("curandSetGeneratorOffset");
    generator->state += offset;
    return OK;
}

int curandSetQuasiRandomGeneratorDimensions(struct generator *generator, unsigned dimensions) {
    ENTER("curandSetQuasiRandomGeneratorDimensions");
    generator->dimensions = dimensions;
    return OK;
}

int curandSetGeneratorOrdering(struct generator *generator, int ordering) {
    ENTER("curandSetGeneratorOrdering");
    (void)generator; (void)ordering;
    return OK;
}

/* The next uniform number in (0, 1] (a 64-bit LCG). */
static double next(struct generator *generator) {
    generator->state = generator->state * 6364136223846793005ULL + 1442695040888963407ULL;
    return ((double)(generator->state >> 11) + 1.0) / 9007199254740992.0;
}

/* Checks a generation of n numbers of `size` bytes at `out`. */
static int generation_ok(struct generator *generator, const void *out, size_t n, size_t size,
                         int pairs, const char *api) {
    if (!stream_is_current(generator->stream, api))
        return INVALID_VALUE;
    if (generator->type >= QUASI && n % generator->dimensions != 0)
        return LENGTH_NOT_MULTIPLE;
    if (generator->type < QUASI && pairs && n % 2 != 0)
        return LENGTH_NOT_MULTIPLE;
    if (n > 0 && check_range((CUdeviceptr)(uintptr_t)out, n * size, 0, api) != CUDA_SUCCESS)
        return INVALID_VALUE;
    return OK;
}

/* Numbers drawn at the call, written into the output as work of the generator's stream. */
struct drawn {
    void *out, *values;
    size_t bytes;
};

static void write_drawn(void *args) {
    const struct drawn *drawn = args;
    memcpy(drawn->out, drawn->values, drawn->bytes);
    free(drawn->values);
}

static int fill(struct generator *g, void *out, size_t n, int type, int kind, double mean,
                double stddev, const char *api) {
    int status = generation_ok(g, out, n, element_size(type), kind != 0, api);
    if (status != OK)
        return status;
    struct drawn drawn = {out, malloc(n * element_size(type) + 1), n * element_size(type)};
    if (drawn.values == NULL)
        abort();
    for (size_t i = 0; i < n; i++) {
        double value = next(g);
        if (kind != 0)
            value = mean + stddev * sqrt(-2 * log(value)) * cos(6.283185307179586 * next(g));
        if (kind == 2)
            value = exp(value);
        store(type, drawn.values, i, value);
    }
    gpu_submit(g->stream, write_drawn, &drawn, sizeof drawn, 1);
    return OK;
}

int curandGenerateUniform(struct generator *g, float *out, size_t n) {
    ENTER("curandGenerateUniform");
    return fill(g, out, n, R_32F, 0, 0, 0, "curandGenerateUniform");
}

int curandGenerateUniformDouble(struct generator *g, double *out, size_t n) {
    ENTER("curandGenerateUniformDouble");
    return fill(g, out, n, R_64F, 0, 0, 0, "curandGenerateUniformDouble");
}

int curandGenerateNormal(struct generator *g, float *out, size_t n, float mean, float stddev) {
    ENTER("curandGenerateNormal");
    return fill(g, out, n, R_32F, 1, mean, stddev, "curandGenerateNormal");
}

int curandGenerateNormalDouble(struct generator *g, double *out, size_t n, double mean,
                               double stddev) {
    ENTER("curandGenerateNormalDouble");
    return fill(g, out, n, R_64F, 1, mean, stddev, "curandGenerateNormalDouble");
}

int curandGenerateLogNormal(struct generator *g, float *out, size_t n, float mean, float stddev) {
    ENTER("curandGenerateLogNormal");
    return fill(g, out, n, R_32F, 2, mean, stddev, "curandGenerateLogNormal");
}

int curandGenerateLogNormalDouble(struct generator *g, double *out, size_t n, double mean,
                                  double stddev) {
    ENTER("curandGenerateLogNormalDouble");
    return fill(g, out, n, R_64F, 2, mean, stddev, "curandGenerateLogNormalDouble");
}

int curandGenerate(struct generator *g, unsigned *out, size_t n) {
    ENTER("curandGenerate");
    int status = generation_ok(g, out, n, 4, 0, "curandGenerate");
    if (status == OK)
        gpu_settle(g->stream); /* computed now, after the stream's work */
    for (size_t i = 0; status == OK && i < n; i++)
        out[i] = (unsigned)(next(g) * 4294967295.0);
    return status;
}

int curandGenerateLongLong(struct generator *g, unsigned long long *out, size_t n) {
    ENTER("curandGenerateLongLong");
    int status = generation_ok(g, out, n, 8, 0, "curandGenerateLongLong");
    if (status == OK)
        gpu_settle(g->stream); /* computed now, after the stream's work */
    for (size_t i = 0; status == OK && i < n; i++)
        out[i] = g->state = g->state * 6364136223846793005ULL + 1;
    return status;
}

int curandGeneratePoisson(struct generator *g, unsigned *out, size_t n, double lambda) {
    ENTER("curandGeneratePoisson");
    int status = generation_ok(g, out, n, 4, 0, "curandGeneratePoisson");
    if (status == OK)
        gpu_settle(g->stream); /* computed now, after the stream's work */
    for (size_t i = 0; status == OK && i < n; i++)
        out[i] = (unsigned)(lambda * 2 * next(g));
    return status;
}
