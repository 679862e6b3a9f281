/*
 * The fake libcuda's memory: allocations (host memory, never reused), memory pools, pinned and
 * managed memory, copies and memsets. See cuda_stub.h.
 *
 * A shareable pool's allocations are shared anonymous mappings, so that an import of one
 * (cuda_ipc.c) can map the same pages at another address, as another process would.
 */
#define _GNU_SOURCE /* mremap */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cuda_stub.h"

static struct allocation *allocations; /* every allocation ever made, newest first */
static struct pool default_pools[DEVICE_COUNT] = {
    {.head = {MAGIC, T_POOL, 1, 0}, .is_default = 1, .device = 0},
    {.head = {MAGIC, T_POOL, 1, 0}, .is_default = 1, .device = 1},
};

static struct allocation *find_allocation(CUdeviceptr address, int alive) {
    for (struct allocation *a = allocations; a != NULL; a = a->next) {
        if (a->alive == alive && address >= a->ptr && address - a->ptr < a->size)
            return a;
    }
    return NULL;
}

struct allocation *find_live_allocation(CUdeviceptr address) {
    return find_allocation(address, 1);
}

/* Checks `size` bytes at `address`: inside one live allocation, or (when `host_ok`) outside
 * every allocation ever made (host memory). */
CUresult check_range(CUdeviceptr address, size_t size, int host_ok, const char *api) {
    struct allocation *live = find_allocation(address, 1);
    if (live != NULL) {
        if (live->inaccessible) {
            stub_misuse_note("%s: %#llx is mapped, but no device was granted access", api,
                             address);
            return CUDA_ERROR_ILLEGAL_ADDRESS;
        }
        /* Virtual memory mapped back to back is one range. */
        while (live->kind == A_VMM && size > live->size - (address - live->ptr)) {
            struct allocation *next = find_allocation(live->ptr + live->size, 1);
            if (next == NULL || next->kind != A_VMM || next->inaccessible)
                break;
            size -= live->size - (address - live->ptr);
            address = next->ptr;
            live = next;
        }
        if (size > live->size - (address - live->ptr)) {
            stub_misuse_note("%s: %zu bytes at %#llx run past an allocation of %zu bytes", api,
                             size, address, live->size);
            return CUDA_ERROR_INVALID_VALUE;
        }
        return CUDA_SUCCESS;
    }
    if (find_allocation(address, 0) != NULL) {
        stub_misuse_note("%s: %#llx was freed", api, address);
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    }
    if (!host_ok) {
        stub_misuse_note("%s: %#llx is not device memory", api, address);
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

static void abandon_allocation(CUdeviceptr ptr) {
    struct allocation *a = find_allocation(ptr, 1);
    if (a != NULL && a->ptr == ptr)
        a->abandoned = 1;
}

struct allocation *track(void *memory, size_t size, enum alloc_kind kind, struct pool *pool) {
    struct allocation *a = calloc(1, sizeof *a);
    if (a == NULL)
        abort();
    a->ptr = (CUdeviceptr)(uintptr_t)memory;
    a->size = size;
    a->kind = kind;
    a->pool = pool;
    a->device = pool != NULL ? pool->device : -1;
    a->alive = 1;
    a->next = allocations;
    allocations = a;
    return a;
}

struct allocation *allocate(size_t size, enum alloc_kind kind, struct pool *pool) {
    unsigned char *memory;
    if (pool != NULL && pool->handle_types != 0) {
        memory = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (memory == MAP_FAILED)
            return NULL;
    } else {
        /* 512-byte aligned, as the driver's allocations are (libraries and textures rely on it). */
        void *aligned = NULL;
        if (posix_memalign(&aligned, 512, size == 0 ? 1 : size) != 0)
            return NULL;
        memory = aligned;
    }
    memset(memory, 0xCD, size); /* fresh memory is not zero: fills must write it */
    stub_live_add(K_ALLOC, 1);
    return track(memory, size, kind, pool);
}

struct allocation *map_import(struct allocation *source, struct pool *pool) {
    /* An old size of 0 maps the shared pages once more, at a new address. */
    void *memory = mremap((void *)(uintptr_t)source->ptr, 0, source->size, MREMAP_MAYMOVE);
    if (memory == MAP_FAILED)
        return NULL;
    struct allocation *a = track(memory, source->size, A_POOL, pool);
    a->source = source;
    stub_live_add(K_ALLOC, 1);
    return a;
}

/* Counts the live, not abandoned imports of `source`. */
static size_t live_imports_of(const struct allocation *source) {
    size_t count = 0;
    for (struct allocation *a = allocations; a != NULL; a = a->next)
        count += a->alive && !a->abandoned && a->source == source;
    return count;
}

/* Frees the live allocation starting at `ptr` of `kind` (its memory is kept, never reused). */
static CUresult release(CUdeviceptr ptr, enum alloc_kind kind, const char *api) {
    struct allocation *a = find_allocation(ptr, 1);
    if (a == NULL || a->ptr != ptr || a->kind != kind) {
        stub_misuse_note("%s: %#llx is not a live allocation of this kind", api, ptr);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (live_imports_of(a) != 0)
        stub_misuse_note("%s: %#llx is freed while another process maps it (it must drop its "
                         "import first)",
                         api, ptr);
    a->alive = 0;
    if (a->pool != NULL && a->source == NULL)
        a->pool->used -= a->size;
    stub_live_add(K_ALLOC, -1);
    return CUDA_SUCCESS;
}

/* Counts the live allocations of `pool`. */
static size_t live_allocations_of(const struct pool *pool) {
    size_t count = 0;
    for (struct allocation *a = allocations; a != NULL; a = a->next)
        count += a->alive && !a->abandoned && a->pool == pool;
    return count;
}

/* ---- Memory information. ---- */

CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
    DRIVER("cuMemGetInfo_v2");
    CHECK(need_current("cuMemGetInfo_v2"));
    if (free_bytes == NULL || total == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    size_t used = 0;
    for (struct allocation *a = allocations; a != NULL; a = a->next)
        used += a->alive ? a->size : 0;
    *total = TOTAL_MEMORY;
    *free_bytes = TOTAL_MEMORY - used;
    return CUDA_SUCCESS;
}

/* ---- Memory pools. ---- */

#define POOL_ATTR_RELEASE_THRESHOLD 4
#define POOL_ATTR_RESERVED_MEM_CURRENT 5
#define POOL_ATTR_RESERVED_MEM_HIGH 6
#define POOL_ATTR_USED_MEM_CURRENT 7
#define POOL_ATTR_USED_MEM_HIGH 8

CUresult cuDeviceGetDefaultMemPool(struct pool **pool, CUdevice device) {
    DRIVER("cuDeviceGetDefaultMemPool");
    CHECK(check_device(device, "cuDeviceGetDefaultMemPool"));
    if (pool == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *pool = &default_pools[device];
    return CUDA_SUCCESS;
}

/* Reads the properties' handleTypes (offset 4), location (type at 8, id at 12) and maxSize
 * (offset 24): the same offsets in both ABIs' CUmemPoolProps. */
CUresult cuMemPoolCreate(struct pool **pool, const unsigned char *props) {
    DRIVER("cuMemPoolCreate");
    if (pool == NULL || props == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    int location[2];
    unsigned handle_types;
    memcpy(location, props + 8, sizeof location);
    memcpy(&handle_types, props + 4, sizeof handle_types);
    if (location[0] != 1 /* CU_MEM_LOCATION_TYPE_DEVICE */)
        return CUDA_ERROR_INVALID_VALUE;
    CHECK(check_device(location[1], "cuMemPoolCreate"));
    if ((handle_types & ~CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) != 0)
        return CUDA_ERROR_NOT_SUPPORTED; /* what the device attribute says */
    struct pool *made = make(sizeof *made, T_POOL);
    made->device = location[1];
    made->handle_types = handle_types;
    memcpy(&made->max_size, props + 24, sizeof(size_t));
    stub_live_add(K_POOL, 1);
    *pool = made;
    return CUDA_SUCCESS;
}

CUresult cuMemPoolDestroy(struct pool *pool) {
    DRIVER("cuMemPoolDestroy");
    if (!valid(pool, T_POOL, "cuMemPoolDestroy"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (pool->is_default) {
        stub_misuse_note("cuMemPoolDestroy: the default pool");
        return CUDA_ERROR_INVALID_VALUE;
    }
    size_t outstanding = live_allocations_of(pool);
    if (outstanding != 0)
        stub_misuse_note("cuMemPoolDestroy: %zu allocations of the pool are alive", outstanding);
    pool->head.alive = 0;
    stub_live_add(K_POOL, -1);
    return CUDA_SUCCESS;
}

CUresult cuMemPoolSetAttribute(struct pool *pool, int attribute, void *value) {
    DRIVER("cuMemPoolSetAttribute");
    if (!valid(pool, T_POOL, "cuMemPoolSetAttribute"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (value == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned long long number;
    switch (attribute) {
    case 1: case 2: case 3:
        return CUDA_SUCCESS;
    case POOL_ATTR_RELEASE_THRESHOLD:
        memcpy(&pool->threshold, value, sizeof pool->threshold);
        return CUDA_SUCCESS;
    case POOL_ATTR_RESERVED_MEM_HIGH:
    case POOL_ATTR_USED_MEM_HIGH:
        memcpy(&number, value, sizeof number);
        if (number != 0)
            return CUDA_ERROR_INVALID_VALUE;
        if (attribute == POOL_ATTR_RESERVED_MEM_HIGH)
            pool->reserved_high = pool->reserved;
        else
            pool->used_high = pool->used;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult cuMemPoolGetAttribute(struct pool *pool, int attribute, void *value) {
    DRIVER("cuMemPoolGetAttribute");
    if (!valid(pool, T_POOL, "cuMemPoolGetAttribute"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (value == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned long long number;
    switch (attribute) {
    case 1: case 2: case 3: {
        int yes = 1;
        memcpy(value, &yes, sizeof yes);
        return CUDA_SUCCESS;
    }
    case POOL_ATTR_RELEASE_THRESHOLD: number = pool->threshold; break;
    case POOL_ATTR_RESERVED_MEM_CURRENT: number = pool->reserved; break;
    case POOL_ATTR_RESERVED_MEM_HIGH: number = pool->reserved_high; break;
    case POOL_ATTR_USED_MEM_CURRENT: number = pool->used; break;
    case POOL_ATTR_USED_MEM_HIGH: number = pool->used_high; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    memcpy(value, &number, sizeof number);
    return CUDA_SUCCESS;
}

CUresult cuMemPoolTrimTo(struct pool *pool, size_t keep) {
    DRIVER("cuMemPoolTrimTo");
    if (!valid(pool, T_POOL, "cuMemPoolTrimTo"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (pool->reserved > keep)
        pool->reserved = keep > pool->used ? keep : pool->used;
    return CUDA_SUCCESS;
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *ptr, size_t size, struct pool *pool, void *stream) {
    DRIVER("cuMemAllocFromPoolAsync");
    if (!valid(pool, T_POOL, "cuMemAllocFromPoolAsync") ||
        stream_context(stream, "cuMemAllocFromPoolAsync") == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (ptr == NULL || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (pool->source != NULL) {
        stub_misuse_note("cuMemAllocFromPoolAsync: an imported pool cannot allocate");
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (pool->max_size != 0 && pool->used + size > pool->max_size)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct allocation *made = allocate(size, A_POOL, pool);
    if (made == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pool->used += size;
    if (pool->used > pool->used_high)
        pool->used_high = pool->used;
    if (pool->used > pool->reserved)
        pool->reserved = pool->used;
    if (pool->reserved > pool->reserved_high)
        pool->reserved_high = pool->reserved;
    race_access(race_enqueue(stream, "cuMemAllocFromPoolAsync"), made->ptr, size, RACE_ALLOC,
                "cuMemAllocFromPoolAsync");
    *ptr = made->ptr;
    return CUDA_SUCCESS;
}

CUresult cuMemFreeAsync(CUdeviceptr ptr, void *stream) {
    DRIVER_RELEASE("cuMemFreeAsync", abandon_allocation(ptr));
    if (stream_context(stream, "cuMemFreeAsync") == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    race_access(race_enqueue(stream, "cuMemFreeAsync"), ptr, 1, RACE_FREE, "cuMemFreeAsync");
    return release(ptr, A_POOL, "cuMemFreeAsync");
}

/* ---- Pinned and managed memory. ---- */

CUresult cuMemHostAlloc(void **ptr, size_t size, unsigned flags) {
    DRIVER("cuMemHostAlloc");
    CHECK(need_current("cuMemHostAlloc"));
    if (ptr == NULL || size == 0 || (flags & ~15u) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct allocation *made = allocate(size, A_HOST, NULL);
    if (made == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    race_access(race_host("cuMemHostAlloc"), made->ptr, size, RACE_ALLOC, "cuMemHostAlloc");
    *ptr = (void *)(uintptr_t)made->ptr;
    return CUDA_SUCCESS;
}

CUresult cuMemFreeHost(void *ptr) {
    DRIVER_RELEASE("cuMemFreeHost", abandon_allocation((CUdeviceptr)(uintptr_t)ptr));
    CHECK(need_current("cuMemFreeHost"));
    race_access(race_host("cuMemFreeHost"), (CUdeviceptr)(uintptr_t)ptr, 1, RACE_FREE,
                "cuMemFreeHost");
    return release((CUdeviceptr)(uintptr_t)ptr, A_HOST, "cuMemFreeHost");
}

CUresult cuMemAllocManaged(CUdeviceptr *ptr, size_t size, unsigned flags) {
    DRIVER("cuMemAllocManaged");
    CHECK(need_current("cuMemAllocManaged"));
    if (ptr == NULL || size == 0 || (flags != 1 && flags != 2))
        return CUDA_ERROR_INVALID_VALUE;
    struct allocation *made = allocate(size, A_MANAGED, NULL);
    if (made == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    race_access(race_host("cuMemAllocManaged"), made->ptr, size, RACE_ALLOC,
                "cuMemAllocManaged");
    *ptr = made->ptr;
    return CUDA_SUCCESS;
}

/* Device memory outside any pool (SyncDeviceMemoryResource), freed by cuMemFree_v2. */
CUresult cuMemAlloc_v2(CUdeviceptr *ptr, size_t size) {
    DRIVER("cuMemAlloc_v2");
    CHECK(need_current("cuMemAlloc_v2"));
    if (ptr == NULL || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct allocation *made = allocate(size, A_DEVICE, NULL);
    if (made == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    made->device = current->device;
    race_access(race_host("cuMemAlloc_v2"), made->ptr, size, RACE_ALLOC, "cuMemAlloc_v2");
    *ptr = made->ptr;
    return CUDA_SUCCESS;
}

/* Frees managed memory and the device memory of cuMemAlloc_v2 and cuMemAllocPitch. */
CUresult cuMemFree_v2(CUdeviceptr ptr) {
    DRIVER_RELEASE("cuMemFree_v2", abandon_allocation(ptr));
    CHECK(need_current("cuMemFree_v2"));
    const struct allocation *a = find_allocation(ptr, 1);
    race_access(race_host("cuMemFree_v2"), ptr, 1, RACE_FREE, "cuMemFree_v2");
    return release(ptr, a != NULL && a->kind == A_DEVICE ? A_DEVICE : A_MANAGED, "cuMemFree_v2");
}

/* Rows padded to 512 bytes, as the driver's texture alignment. */
CUresult cuMemAllocPitch_v2(CUdeviceptr *ptr, size_t *pitch, size_t width, size_t height,
                            unsigned element_size) {
    DRIVER("cuMemAllocPitch_v2");
    CHECK(need_current("cuMemAllocPitch_v2"));
    if (ptr == NULL || pitch == NULL || width == 0 || height == 0 ||
        (element_size != 4 && element_size != 8 && element_size != 16))
        return CUDA_ERROR_INVALID_VALUE;
    size_t padded = (width + 511) / 512 * 512;
    struct allocation *made = allocate(padded * height, A_DEVICE, NULL);
    if (made == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    made->device = current->device;
    race_access(race_host("cuMemAllocPitch_v2"), made->ptr, made->size, RACE_ALLOC,
                "cuMemAllocPitch_v2");
    *ptr = made->ptr;
    *pitch = padded;
    return CUDA_SUCCESS;
}

/* ---- Copies and memsets, as work of their streams (cuda_gpu_work.c). ---- */

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, void *stream) {
    DRIVER("cuMemcpyAsync");
    if (stream_context(stream, "cuMemcpyAsync") == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    CHECK(check_range(dst, bytes, 1, "cuMemcpyAsync"));
    CHECK(check_range(src, bytes, 1, "cuMemcpyAsync"));
    /* As the driver (seen on the H200): a copy between virtual memory and the host needs a
     * current context. */
    const struct allocation *to = find_live_allocation(dst), *from = find_live_allocation(src);
    if (current == NULL && ((to != NULL && to->kind == A_VMM && from == NULL) ||
                            (from != NULL && from->kind == A_VMM && to == NULL))) {
        stub_misuse_note("cuMemcpyAsync: a copy between virtual memory and the host with no "
                         "context current");
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (stream_capturing(stream))
        return capture_copy("cuMemcpyAsync", stream, dst, src, bytes);
    unsigned actor = race_enqueue(stream, "cuMemcpyAsync");
    race_access(actor, src, bytes, RACE_READ, "cuMemcpyAsync");
    race_access(actor, dst, bytes, RACE_WRITE, "cuMemcpyAsync");
    gpu_copy(stream, dst, src, bytes);
    return CUDA_SUCCESS;
}

/* Writes `height` rows of `width` words of `word` bytes, `pitch` bytes apart. */
static CUresult memset_2d(const char *api, CUdeviceptr dst, size_t pitch, unsigned value,
                          size_t word, size_t width, size_t height, void *stream) {
    if (stream_context(stream, api) == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (width == 0 || height == 0)
        return CUDA_SUCCESS;
    if (dst % word != 0 || (height > 1 && pitch < width * word))
        return CUDA_ERROR_INVALID_VALUE;
    CHECK(check_range(dst, (height - 1) * pitch + width * word, 0, api));
    if (stream_capturing(stream) && height == 1)
        return capture_memset(api, stream, dst, value, (unsigned)word, width);
    race_access(race_enqueue(stream, api), dst, (height - 1) * pitch + width * word, RACE_WRITE,
                api);
    gpu_fill(stream, dst, pitch, value, word, width, height);
    return CUDA_SUCCESS;
}

CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t count, void *stream) {
    DRIVER("cuMemsetD8Async");
    return memset_2d("cuMemsetD8Async", dst, count, value, 1, count, 1, stream);
}

CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short value, size_t count, void *stream) {
    DRIVER("cuMemsetD16Async");
    return memset_2d("cuMemsetD16Async", dst, count * 2, value, 2, count, 1, stream);
}

CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned value, size_t count, void *stream) {
    DRIVER("cuMemsetD32Async");
    return memset_2d("cuMemsetD32Async", dst, count * 4, value, 4, count, 1, stream);
}

CUresult cuMemsetD2D8Async(CUdeviceptr dst, size_t pitch, unsigned char value, size_t width,
                           size_t height, void *stream) {
    DRIVER("cuMemsetD2D8Async");
    return memset_2d("cuMemsetD2D8Async", dst, pitch, value, 1, width, height, stream);
}

CUresult cuMemsetD2D16Async(CUdeviceptr dst, size_t pitch, unsigned short value, size_t width,
                            size_t height, void *stream) {
    DRIVER("cuMemsetD2D16Async");
    return memset_2d("cuMemsetD2D16Async", dst, pitch, value, 2, width, height, stream);
}

CUresult cuMemsetD2D32Async(CUdeviceptr dst, size_t pitch, unsigned value, size_t width,
                            size_t height, void *stream) {
    DRIVER("cuMemsetD2D32Async");
    return memset_2d("cuMemsetD2D32Async", dst, pitch, value, 4, width, height, stream);
}
