/*
 * The fake libcuda's libraries (any code loads), their kernels `twice` and `noop` (and the
 * NVRTC stub's lowered names), the floors' `saxpy` and `spin`, and `count_down` (for graphs'
 * conditional nodes), their attributes, occupancy and launches; a launch on a capturing
 * stream becomes a node of the capture (cuda_graph_exec.c). See cuda_stub.h.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cuda_stub.h"

struct kernel_def {
    const char *name;
    size_t param_count;
    size_t param_size[5];
    size_t param_offset[5];
    int doubles; /* launching it doubles x[0..n) of its (float *x, size_t n) */
    int counts_down; /* (unsigned long long handle, int *n): --*n, sets handle to *n > 0 */
};

#define MAX_KERNELS 8

struct kernel {
    struct object head;
    struct library *library;
    const struct kernel_def *def;
    char name[128];
    int max_dynamic_shared;
};

struct library {
    struct object head;
    struct kernel *kernels[MAX_KERNELS];
    size_t kernel_count;
    unsigned char global[256]; /* the `__device__` variable `counter` */
};

/* The kernels of every library: `twice` (and any lowered name of the NVRTC stub, "_Zstub_..."),
 * and `noop`. */
static const struct kernel_def TWICE = {"twice", 2, {8, 8}, {0, 8}, 1, 0};
static const struct kernel_def NOOP = {"noop", 0, {0}, {0}, 0, 0};
/* The kernels of the C floors' green section (`driver_floor.c`): `saxpy(float a, const float*
 * x, const float* y, float* out, size_t n)` and `spin(unsigned long long ns)`. Their launches
 * do nothing, so that a floor's program, rebuilt in Rust, and the example it stands beside can
 * run against the stub and have their calls compared (CUDA_SAFE_STUB_CALL_LOG). */
static const struct kernel_def SAXPY = {"saxpy", 5, {4, 8, 8, 8, 8}, {0, 8, 16, 24, 32}, 0, 0};
static const struct kernel_def SPIN = {"spin", 1, {8}, {0}, 0, 0};
/* `count_down(unsigned long long handle, int *n)`: decrements *n and sets the conditional
 * handle to whether it is still above 0, as a while loop's body kernel does. */
static const struct kernel_def COUNT_DOWN = {"count_down", 2, {8, 8}, {0, 8}, 0, 1};

/* ---- Libraries and kernels. ---- */

static struct library *new_library(void) {
    struct library *library = make(sizeof *library, T_LIBRARY);
    stub_live_add(K_LIBRARY, 1);
    return library;
}

CUresult cuLibraryLoadData(struct library **library, const void *code, void *jit_options,
                           void *jit_values, unsigned jit_count, void *library_options,
                           void *library_values, unsigned library_count) {
    DRIVER("cuLibraryLoadData");
    (void)jit_options, (void)jit_values, (void)library_options, (void)library_values;
    if (library == NULL || code == NULL || jit_count != 0 || library_count != 0)
        return CUDA_ERROR_INVALID_VALUE;
    *library = new_library();
    return CUDA_SUCCESS;
}

CUresult cuLibraryLoadFromFile(struct library **library, const char *path, void *jit_options,
                               void *jit_values, unsigned jit_count, void *library_options,
                               void *library_values, unsigned library_count) {
    DRIVER("cuLibraryLoadFromFile");
    (void)jit_options, (void)jit_values, (void)library_options, (void)library_values;
    if (library == NULL || path == NULL || jit_count != 0 || library_count != 0)
        return CUDA_ERROR_INVALID_VALUE;
    FILE *file = fopen(path, "rb");
    if (file == NULL)
        return CUDA_ERROR_FILE_NOT_FOUND;
    fclose(file);
    *library = new_library();
    return CUDA_SUCCESS;
}

CUresult cuLibraryUnload(struct library *library) {
    DRIVER("cuLibraryUnload");
    if (!valid(library, T_LIBRARY, "cuLibraryUnload"))
        return CUDA_ERROR_INVALID_HANDLE;
    library->head.alive = 0;
    for (size_t i = 0; i < library->kernel_count; i++)
        library->kernels[i]->head.alive = 0;
    stub_live_add(K_LIBRARY, -1);
    return CUDA_SUCCESS;
}

/* The library's kernel called `name` (the same handle each time), or NULL for none. */
static struct kernel *kernel_named(struct library *library, const char *name) {
    const struct kernel_def *def = NULL;
    if (strcmp(name, "twice") == 0 || strncmp(name, "_Zstub_", 7) == 0)
        def = &TWICE;
    else if (strcmp(name, "noop") == 0)
        def = &NOOP;
    else if (strcmp(name, "saxpy") == 0)
        def = &SAXPY;
    else if (strcmp(name, "spin") == 0)
        def = &SPIN;
    else if (strcmp(name, "count_down") == 0)
        def = &COUNT_DOWN;
    if (def == NULL || strlen(name) >= sizeof library->kernels[0]->name)
        return NULL;
    for (size_t i = 0; i < library->kernel_count; i++) {
        if (strcmp(library->kernels[i]->name, name) == 0)
            return library->kernels[i];
    }
    if (library->kernel_count == MAX_KERNELS)
        return NULL;
    struct kernel *kernel = make(sizeof *kernel, T_KERNEL);
    kernel->library = library;
    kernel->def = def;
    strcpy(kernel->name, name);
    kernel->max_dynamic_shared = 49152;
    library->kernels[library->kernel_count++] = kernel;
    return kernel;
}

CUresult cuLibraryGetKernel(struct kernel **kernel, struct library *library, const char *name) {
    DRIVER("cuLibraryGetKernel");
    if (!valid(library, T_LIBRARY, "cuLibraryGetKernel"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (kernel == NULL || name == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct kernel *found = kernel_named(library, name);
    if (found == NULL)
        return CUDA_ERROR_NOT_FOUND;
    *kernel = found;
    return CUDA_SUCCESS;
}

CUresult cuLibraryGetKernelCount(unsigned *count, struct library *library) {
    DRIVER("cuLibraryGetKernelCount");
    if (!valid(library, T_LIBRARY, "cuLibraryGetKernelCount"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (count == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *count = 2;
    return CUDA_SUCCESS;
}

CUresult cuLibraryEnumerateKernels(struct kernel **kernels, unsigned count,
                                   struct library *library) {
    DRIVER("cuLibraryEnumerateKernels");
    if (!valid(library, T_LIBRARY, "cuLibraryEnumerateKernels"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (kernels == NULL || count == 0)
        return CUDA_ERROR_INVALID_VALUE;
    const char *names[2] = {"twice", "noop"};
    for (unsigned i = 0; i < count && i < 2; i++)
        kernels[i] = kernel_named(library, names[i]);
    return CUDA_SUCCESS;
}

CUresult cuLibraryGetGlobal(CUdeviceptr *address, size_t *bytes, struct library *library,
                            const char *name) {
    DRIVER("cuLibraryGetGlobal");
    CHECK(need_current("cuLibraryGetGlobal"));
    if (!valid(library, T_LIBRARY, "cuLibraryGetGlobal"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (address == NULL || bytes == NULL || name == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (strcmp(name, "counter") != 0)
        return CUDA_ERROR_NOT_FOUND;
    *address = (CUdeviceptr)(uintptr_t)library->global;
    *bytes = sizeof library->global;
    return CUDA_SUCCESS;
}

int valid_kernel(const struct kernel *kernel, const char *api) {
    if (!valid(kernel, T_KERNEL, api))
        return 0;
    if (!kernel->library->head.alive) {
        stub_misuse_note("%s: the kernel's library was unloaded", api);
        return 0;
    }
    return 1;
}

CUresult cuKernelGetName(const char **name, struct kernel *kernel) {
    DRIVER("cuKernelGetName");
    if (!valid_kernel(kernel, "cuKernelGetName"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (name == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *name = kernel->name;
    return CUDA_SUCCESS;
}

/* Needs a current context, which cuda-safe may deliberately lack (Kernel::params): no misuse. */
CUresult cuKernelGetParamInfo(struct kernel *kernel, size_t index, size_t *offset, size_t *size) {
    DRIVER("cuKernelGetParamInfo");
    if (!valid_kernel(kernel, "cuKernelGetParamInfo"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (current == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (offset == NULL || size == NULL || index >= kernel->def->param_count)
        return CUDA_ERROR_INVALID_VALUE;
    *offset = kernel->def->param_offset[index];
    *size = kernel->def->param_size[index];
    return CUDA_SUCCESS;
}

#define FUNC_ATTR_MAX_DYNAMIC_SHARED 8
#define FUNC_ATTR_PREFERRED_CARVEOUT 9
#define FUNC_ATTR_NON_PORTABLE_CLUSTER 14

CUresult cuKernelGetAttribute(int *value, int attribute, struct kernel *kernel,
                              CUdevice device) {
    DRIVER("cuKernelGetAttribute");
    if (!valid_kernel(kernel, "cuKernelGetAttribute"))
        return CUDA_ERROR_INVALID_HANDLE;
    CHECK(check_device(device, "cuKernelGetAttribute"));
    if (value == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    switch (attribute) {
    case 0: *value = 1024; break;                       /* MAX_THREADS_PER_BLOCK */
    case 1: case 2: case 3: *value = 0; break;          /* SHARED, CONST, LOCAL sizes */
    case 4: *value = 16; break;                         /* NUM_REGS */
    case 5: case 6: *value = 90; break;                 /* PTX_VERSION, BINARY_VERSION */
    case 7: *value = 0; break;                          /* CACHE_MODE_CA */
    case FUNC_ATTR_MAX_DYNAMIC_SHARED: *value = kernel->max_dynamic_shared; break;
    case FUNC_ATTR_PREFERRED_CARVEOUT: *value = -1; break;
    default:
        if (attribute < 0 || attribute >= 18)
            return CUDA_ERROR_INVALID_VALUE;
        *value = 0;
    }
    return CUDA_SUCCESS;
}

CUresult cuKernelSetAttribute(int attribute, int value, struct kernel *kernel, CUdevice device) {
    DRIVER("cuKernelSetAttribute");
    if (!valid_kernel(kernel, "cuKernelSetAttribute"))
        return CUDA_ERROR_INVALID_HANDLE;
    CHECK(check_device(device, "cuKernelSetAttribute"));
    switch (attribute) {
    case FUNC_ATTR_MAX_DYNAMIC_SHARED:
        if (value < 0 || value > SHARED_OPTIN)
            return CUDA_ERROR_INVALID_VALUE;
        kernel->max_dynamic_shared = value;
        return CUDA_SUCCESS;
    case FUNC_ATTR_PREFERRED_CARVEOUT:
        return value >= -1 && value <= 100 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case FUNC_ATTR_NON_PORTABLE_CLUSTER:
        return value == 0 || value == 1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

/* The function of a kernel in the current context: the kernel handle itself. */
CUresult cuKernelGetFunction(struct kernel **function, struct kernel *kernel) {
    DRIVER("cuKernelGetFunction");
    CHECK(need_current("cuKernelGetFunction"));
    if (!valid_kernel(kernel, "cuKernelGetFunction"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (function == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *function = kernel;
    return CUDA_SUCCESS;
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, struct kernel *function,
                                                     int block_size, size_t dynamic_shared) {
    DRIVER("cuOccupancyMaxActiveBlocksPerMultiprocessor");
    CHECK(need_current("cuOccupancyMaxActiveBlocksPerMultiprocessor"));
    if (!valid_kernel(function, "cuOccupancyMaxActiveBlocksPerMultiprocessor"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (blocks == NULL || block_size <= 0 || block_size > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    int fit = 2048 / block_size;
    if (fit > 32)
        fit = 32;
    if (dynamic_shared > 0 && (size_t)fit > 233472 / dynamic_shared)
        fit = (int)(233472 / dynamic_shared);
    *blocks = fit;
    return CUDA_SUCCESS;
}

CUresult cuOccupancyMaxPotentialBlockSize(int *grid, int *block, struct kernel *function,
                                          void *block_to_shared, size_t dynamic_shared,
                                          int limit) {
    DRIVER("cuOccupancyMaxPotentialBlockSize");
    CHECK(need_current("cuOccupancyMaxPotentialBlockSize"));
    if (!valid_kernel(function, "cuOccupancyMaxPotentialBlockSize"))
        return CUDA_ERROR_INVALID_HANDLE;
    (void)block_to_shared, (void)dynamic_shared;
    if (grid == NULL || block == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *block = limit > 0 && limit < 1024 ? limit : 1024;
    *grid = SM_COUNT * (2048 / *block);
    return CUDA_SUCCESS;
}

/* CUlaunchConfig, the same in both ABIs (56 bytes). */
struct launch_config {
    unsigned grid[3];
    unsigned block[3];
    unsigned shared;
    void *stream;
    void *attributes;
    unsigned attribute_count;
};

size_t kernel_param_sizes(const struct kernel *kernel, const size_t **sizes) {
    *sizes = kernel->def->param_size;
    return kernel->def->param_count;
}

/* `twice`'s work: doubles `n` floats at `x`. */
struct twice {
    float *x;
    size_t n;
};

static void run_twice(void *args) {
    const struct twice *twice = args;
    for (size_t i = 0; i < twice->n; i++)
        twice->x[i] *= 2.0f;
}

CUresult kernel_run(const char *api, const struct kernel *kernel, void **params, void *stream) {
    const struct kernel_def *def = kernel->def;
    if (def->doubles && params != NULL) {
        CUdeviceptr x;
        size_t n;
        memcpy(&x, params[0], sizeof x);
        memcpy(&n, params[1], sizeof n);
        if (n > 0)
            CHECK(check_range(x, n * sizeof(float), 0, api));
        race_access(race_enqueue(stream, api), x, n * sizeof(float), RACE_WRITE, api);
        struct twice twice = {(float *)(uintptr_t)x, n};
        gpu_submit(stream, run_twice, &twice, sizeof twice, 1);
    } else if (def->counts_down && params != NULL) {
        unsigned long long handle;
        CUdeviceptr counter;
        memcpy(&handle, params[0], sizeof handle);
        memcpy(&counter, params[1], sizeof counter);
        CHECK(check_range(counter, sizeof(int), 0, api));
        race_access(race_enqueue(stream, api), counter, sizeof(int), RACE_WRITE, api);
        gpu_settle(stream); /* it sets the stub's own state: on this thread, in stream order */
        int *n = (int *)(uintptr_t)counter;
        *n -= 1;
        conditional_set(handle, *n > 0);
    } else {
        race_enqueue(stream, api);
    }
    return CUDA_SUCCESS;
}

/* One launch, whichever entry point it came through (`api`, for misuse reports). */
static CUresult launch(const char *api, const struct launch_config *config,
                       struct kernel *function, void **params, void **extra) {
    if (stream_context(config->stream, api) == NULL || !valid_kernel(function, api))
        return CUDA_ERROR_INVALID_HANDLE;
    const unsigned block_limit[3] = {1024, 1024, 64};
    unsigned long long threads = 1;
    for (int i = 0; i < 3; i++) {
        if (config->grid[i] == 0 || config->block[i] == 0 || config->block[i] > block_limit[i])
            return CUDA_ERROR_INVALID_VALUE;
        threads *= config->block[i];
    }
    if (threads > 1024 || config->shared > (unsigned)function->max_dynamic_shared)
        return CUDA_ERROR_INVALID_VALUE;
    if (function->def->param_count > 0 && params == NULL && extra == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (stream_capturing(config->stream))
        return capture_launch(api, config->stream, function, config->grid, config->block,
                              config->shared, params, config->attributes,
                              config->attribute_count);
    return kernel_run(api, function, params, config->stream);
}

CUresult cuLaunchKernelEx(const struct launch_config *config, struct kernel *function,
                          void **params, void **extra) {
    DRIVER("cuLaunchKernelEx");
    if (config == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return launch("cuLaunchKernelEx", config, function, params, extra);
}

CUresult cuLaunchKernel(struct kernel *function, unsigned grid_x, unsigned grid_y,
                        unsigned grid_z, unsigned block_x, unsigned block_y, unsigned block_z,
                        unsigned shared, void *stream, void **params, void **extra) {
    DRIVER("cuLaunchKernel");
    const struct launch_config config = {
        {grid_x, grid_y, grid_z}, {block_x, block_y, block_z}, shared, stream, NULL, 0};
    return launch("cuLaunchKernel", &config, function, params, extra);
}
