/*
 * The fake libcuda's virtual memory management: address ranges reserved (inaccessible host
 * address space, never given back, so an address is never reused), physical chunks (shared
 * pages), chunks mapped into ranges (the same pages at the range's address, so a chunk mapped
 * twice shows the same bytes twice), access per device, and chunks exported as file
 * descriptors and imported from them. See cuda_stub.h.
 *
 * The driver's rules the crate relies on: a mapping lies inside a live reservation, over no
 * other mapping, of a live chunk; its memory is inaccessible until cuMemSetAccess covers it
 * (a copy before is a misuse); a chunk released while mapped lives until unmapped; a range is
 * freed only once nothing is mapped in it (a misuse otherwise). What a failed release
 * abandons (a chunk, a mapping, a range) is reclaimed by the driver: freeing the range around
 * an abandoned mapping is no misuse.
 */
#define _GNU_SOURCE /* mremap */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cuda_stub.h"

/* The allocation granularities (CU_MEM_ALLOC_GRANULARITY_MINIMUM, _RECOMMENDED). */
#define GRANULARITY_MINIMUM (64u << 10)
#define GRANULARITY_RECOMMENDED (128u << 10)

struct chunk {
    struct object head;
    CUdevice device;
    size_t size;
    unsigned char *memory; /* its pages; unmapped once released and unmapped everywhere */
    unsigned handle_types;
    int released;
    int mappings;
};

struct range {
    CUdeviceptr base;
    size_t size;
    int alive;
    int abandoned;
    struct range *next;
};

struct mapping {
    CUdeviceptr address;
    size_t size;
    struct chunk *chunk;
    struct allocation *record; /* for the copies' range checks */
    int alive;
    int abandoned;
    struct mapping *next;
};

static struct range *ranges;     /* every reservation ever made */
static struct mapping *mappings; /* every mapping ever made */

/* The CUmemAllocationProp fields the stub reads (the same layout in both ABIs). */
struct allocation_prop {
    int type;
    unsigned handle_types;
    int location[2];
    void *win32;
    unsigned char alloc_flags[8];
};

static struct range *find_range(CUdeviceptr address, size_t size) {
    for (struct range *r = ranges; r != NULL; r = r->next) {
        if (r->alive && address >= r->base && address - r->base <= r->size &&
            size <= r->size - (address - r->base))
            return r;
    }
    return NULL;
}

static struct mapping *find_mapping(CUdeviceptr address) {
    for (struct mapping *m = mappings; m != NULL; m = m->next) {
        if (m->alive && address >= m->address && address - m->address < m->size)
            return m;
    }
    return NULL;
}

/* Whether a live mapping not abandoned overlaps `address..address + size`. */
static int overlaps(CUdeviceptr address, size_t size) {
    for (struct mapping *m = mappings; m != NULL; m = m->next) {
        if (m->alive && !m->abandoned && m->address < address + size &&
            address < m->address + m->size)
            return 1;
    }
    return 0;
}

/* Checks a CUmemAllocationProp: pinned device memory of one of the devices, shareable as POSIX
 * descriptors at most. */
static CUresult check_prop(const struct allocation_prop *prop, const char *api) {
    if (prop == NULL || prop->type != 1 /* CU_MEM_ALLOCATION_TYPE_PINNED */)
        return CUDA_ERROR_INVALID_VALUE;
    if (prop->location[0] != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_NOT_SUPPORTED; /* the devices report no host NUMA VMM */
    CHECK(check_device(prop->location[1], api));
    if ((prop->handle_types & ~CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) != 0)
        return CUDA_ERROR_NOT_SUPPORTED;
    return CUDA_SUCCESS;
}

/* Frees a chunk's pages once it is released and mapped nowhere. */
static void settle(struct chunk *chunk) {
    if (chunk->released && chunk->mappings == 0 && chunk->memory != NULL) {
        munmap(chunk->memory, chunk->size);
        chunk->memory = NULL;
    }
}

static struct chunk *new_chunk(CUdevice device, size_t size, unsigned handle_types,
                               unsigned char *memory) {
    struct chunk *chunk = make(sizeof *chunk, T_CHUNK);
    chunk->device = device;
    chunk->size = size;
    chunk->memory = memory;
    chunk->handle_types = handle_types;
    stub_live_add(K_CHUNK, 1);
    return chunk;
}

/* A chunk handle (a CUmemGenericAllocationHandle) as the chunk it names, or NULL (with the
 * misuse noted). */
static struct chunk *chunk_of(unsigned long long handle, const char *api) {
    struct chunk *chunk = (struct chunk *)(uintptr_t)handle;
    if (!valid(chunk, T_CHUNK, api))
        return NULL;
    if (chunk->released) {
        stub_misuse_note("%s: the chunk was released", api);
        return NULL;
    }
    return chunk;
}

static void abandon_chunk(unsigned long long handle) {
    abandon((void *)(uintptr_t)handle, T_CHUNK);
}

static void abandon_mapping(CUdeviceptr address) {
    struct mapping *m = find_mapping(address);
    if (m != NULL)
        m->abandoned = 1;
}

static void abandon_range(CUdeviceptr base) {
    for (struct range *r = ranges; r != NULL; r = r->next) {
        if (r->alive && r->base == base)
            r->abandoned = 1;
    }
}

/* ---- Granularity, ranges, chunks. ---- */

CUresult cuMemGetAllocationGranularity(size_t *granularity, const struct allocation_prop *prop,
                                       int flags) {
    DRIVER("cuMemGetAllocationGranularity");
    if (granularity == NULL || (flags != 0 && flags != 1))
        return CUDA_ERROR_INVALID_VALUE;
    CHECK(check_prop(prop, "cuMemGetAllocationGranularity"));
    *granularity = flags == 0 ? GRANULARITY_MINIMUM : GRANULARITY_RECOMMENDED;
    return CUDA_SUCCESS;
}

/* The hint is ignored, as the driver may. */
CUresult cuMemAddressReserve(CUdeviceptr *base, size_t size, size_t alignment,
                             CUdeviceptr hint, unsigned long long flags) {
    DRIVER("cuMemAddressReserve");
    (void)hint;
    if (base == NULL || size == 0 || size % GRANULARITY_MINIMUM != 0 || flags != 0 ||
        (alignment & (alignment - 1)) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    size_t align = alignment > GRANULARITY_MINIMUM ? alignment : GRANULARITY_MINIMUM;
    unsigned char *space = mmap(NULL, size + align, PROT_NONE,
                                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (space == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct range *range = calloc(1, sizeof *range);
    if (range == NULL)
        abort();
    range->base = ((CUdeviceptr)(uintptr_t)space + align - 1) / align * align;
    range->size = size;
    range->alive = 1;
    range->next = ranges;
    ranges = range;
    stub_live_add(K_RANGE, 1);
    *base = range->base;
    return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr base, size_t size) {
    DRIVER_RELEASE("cuMemAddressFree", abandon_range(base));
    struct range *range = find_range(base, size);
    if (range == NULL || range->base != base || range->size != size) {
        stub_misuse_note("cuMemAddressFree: %#llx (%zu bytes) is no live reservation", base,
                         size);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (overlaps(base, size)) {
        stub_misuse_note("cuMemAddressFree: the range is still mapped");
        return CUDA_ERROR_INVALID_VALUE;
    }
    range->alive = 0; /* the address space stays inaccessible, never reused */
    stub_live_add(K_RANGE, -1);
    return CUDA_SUCCESS;
}

CUresult cuMemCreate(unsigned long long *handle, size_t size, const struct allocation_prop *prop,
                     unsigned long long flags) {
    DRIVER("cuMemCreate");
    if (handle == NULL || size == 0 || size % GRANULARITY_MINIMUM != 0 || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    CHECK(check_prop(prop, "cuMemCreate"));
    unsigned char *memory =
        mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    memset(memory, 0xCD, size); /* fresh memory is not zero */
    struct chunk *chunk = new_chunk(prop->location[1], size, prop->handle_types, memory);
    *handle = (unsigned long long)(uintptr_t)chunk;
    return CUDA_SUCCESS;
}

CUresult cuMemRelease(unsigned long long handle) {
    DRIVER_RELEASE("cuMemRelease", abandon_chunk(handle));
    struct chunk *chunk = chunk_of(handle, "cuMemRelease");
    if (chunk == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    chunk->released = 1;
    chunk->head.alive = 0;
    stub_live_add(K_CHUNK, -1);
    settle(chunk);
    return CUDA_SUCCESS;
}

/* ---- Mapping and access. ---- */

CUresult cuMemMap(CUdeviceptr address, size_t size, size_t offset, unsigned long long handle,
                  unsigned long long flags) {
    DRIVER("cuMemMap");
    struct chunk *chunk = chunk_of(handle, "cuMemMap");
    if (chunk == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (size == 0 || size % GRANULARITY_MINIMUM != 0 || offset != 0 || flags != 0 ||
        size > chunk->size)
        return CUDA_ERROR_INVALID_VALUE;
    if (find_range(address, size) == NULL) {
        stub_misuse_note("cuMemMap: %#llx (%zu bytes) is outside every reservation", address,
                         size);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (overlaps(address, size)) {
        stub_misuse_note("cuMemMap: %#llx (%zu bytes) is mapped already", address, size);
        return CUDA_ERROR_INVALID_VALUE;
    }
    void *at = mremap(chunk->memory, 0, size, MREMAP_MAYMOVE | MREMAP_FIXED,
                      (void *)(uintptr_t)address);
    if (at == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct mapping *m = calloc(1, sizeof *m);
    if (m == NULL)
        abort();
    m->address = address;
    m->size = size;
    m->chunk = chunk;
    m->record = track(at, size, A_VMM, NULL);
    m->record->device = chunk->device;
    m->record->inaccessible = 1;
    m->alive = 1;
    m->next = mappings;
    mappings = m;
    chunk->mappings++;
    return CUDA_SUCCESS;
}

CUresult cuMemUnmap(CUdeviceptr address, size_t size) {
    DRIVER_RELEASE("cuMemUnmap", abandon_mapping(address));
    struct mapping *m = find_mapping(address);
    if (m == NULL || m->address != address || m->size != size) {
        stub_misuse_note("cuMemUnmap: %#llx (%zu bytes) is not one mapping", address, size);
        return CUDA_ERROR_INVALID_VALUE;
    }
    mmap((void *)(uintptr_t)address, size, PROT_NONE,
         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    m->alive = 0;
    m->record->alive = 0;
    m->chunk->mappings--;
    settle(m->chunk);
    return CUDA_SUCCESS;
}

/* Each CUmemAccessDesc is a location (8 bytes) and its flags (4 bytes); the range must be
 * mapped throughout. */
CUresult cuMemSetAccess(CUdeviceptr address, size_t size, const unsigned char *descs,
                        size_t count) {
    DRIVER("cuMemSetAccess");
    if (descs == NULL || count == 0 || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++) {
        int location[2];
        unsigned flags;
        memcpy(location, descs + 12 * i, sizeof location);
        memcpy(&flags, descs + 12 * i + 8, sizeof flags);
        if (location[0] != CU_MEM_LOCATION_TYPE_DEVICE ||
            check_device(location[1], "cuMemSetAccess") != CUDA_SUCCESS ||
            (flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
             flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE))
            return CUDA_ERROR_INVALID_VALUE;
    }
    for (CUdeviceptr at = address; at < address + size;) {
        struct mapping *m = find_mapping(at);
        if (m == NULL) {
            stub_misuse_note("cuMemSetAccess: %#llx is not mapped", at);
            return CUDA_ERROR_INVALID_VALUE;
        }
        at = m->address + m->size;
    }
    for (CUdeviceptr at = address; at < address + size;) {
        struct mapping *m = find_mapping(at);
        m->record->inaccessible = 0;
        for (size_t i = 0; i < count; i++) {
            int location[2];
            unsigned flags;
            memcpy(location, descs + 12 * i, sizeof location);
            memcpy(&flags, descs + 12 * i + 8, sizeof flags);
            if (flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
                m->record->granted |= 1u << location[1];
            else
                m->record->granted &= ~(1u << location[1]);
        }
        at = m->address + m->size;
    }
    return CUDA_SUCCESS;
}

/* ---- Sharing chunks. ---- */

struct chunk_record {
    char tag[8];
    struct chunk *chunk;
};

static const char CHUNK_TAG[8] = "s-chunk";

CUresult cuMemExportToShareableHandle(void *handle, unsigned long long chunk_handle, int type,
                                      unsigned long long flags) {
    DRIVER("cuMemExportToShareableHandle");
    struct chunk *chunk = chunk_of(chunk_handle, "cuMemExportToShareableHandle");
    if (chunk == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (handle == NULL || flags != 0 || type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ||
        !(chunk->handle_types & (unsigned)type))
        return CUDA_ERROR_INVALID_VALUE;
    struct chunk_record record;
    memcpy(record.tag, CHUNK_TAG, sizeof record.tag);
    record.chunk = chunk;
    int fd = export_fd("chunk", &record, sizeof record);
    if (fd < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    memcpy(handle, &fd, sizeof fd);
    return CUDA_SUCCESS;
}

/* The descriptor comes as the pointer's value; the import maps the exporter's pages anew, so it
 * outlives the exporter's chunk. */
CUresult cuMemImportFromShareableHandle(unsigned long long *handle, void *os_handle, int type) {
    DRIVER("cuMemImportFromShareableHandle");
    if (handle == NULL || type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_INVALID_VALUE;
    struct chunk_record record;
    if (read_fd_record((int)(intptr_t)os_handle, &record, sizeof record) != 0 ||
        memcmp(record.tag, CHUNK_TAG, sizeof record.tag) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct chunk *source = record.chunk;
    if (source->head.magic != MAGIC || source->head.type != T_CHUNK || source->memory == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned char *memory = mremap(source->memory, 0, source->size, MREMAP_MAYMOVE);
    if (memory == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct chunk *chunk = new_chunk(source->device, source->size, (unsigned)type, memory);
    *handle = (unsigned long long)(uintptr_t)chunk;
    return CUDA_SUCCESS;
}
