/*
 * The fake libcuda's hints for managed memory: prefetches, advice, and the range attributes
 * that report them. The stub keeps the hints per allocation, so a range must lie inside one
 * managed allocation (the crate passes whole buffers); anything else is CUDA_ERROR_INVALID_VALUE
 * with the misuse noted. Both ABIs' entry points are served: under CUDA 12 the plain ones take
 * a device (CU_DEVICE_CPU for the host), the _v2 ones (CUDA 12.2, and the only ones under 13) a
 * CUmemLocation by value; the batched hints (CUDA 13) take arrays of ranges and locations, and a
 * discard fills its ranges with a byte no write of the crate's tests uses. See cuda_stub.h.
 */
#include <stdint.h>
#include <string.h>

#include "cuda_stub.h"

typedef struct {
    int type;
    int id;
} CUmemLocation;

enum {
    ADVISE_SET_READ_MOSTLY = 1,
    ADVISE_UNSET_READ_MOSTLY,
    ADVISE_SET_PREFERRED_LOCATION,
    ADVISE_UNSET_PREFERRED_LOCATION,
    ADVISE_SET_ACCESSED_BY,
    ADVISE_UNSET_ACCESSED_BY,
};

enum {
    RANGE_READ_MOSTLY = 1,
    RANGE_PREFERRED_LOCATION,
    RANGE_ACCESSED_BY,
    RANGE_LAST_PREFETCH_LOCATION,
    RANGE_PREFERRED_LOCATION_TYPE,
    RANGE_PREFERRED_LOCATION_ID,
    RANGE_LAST_PREFETCH_LOCATION_TYPE,
    RANGE_LAST_PREFETCH_LOCATION_ID,
};

/* The managed allocation holding all of `ptr..ptr + bytes`, or NULL (with the misuse noted). */
static struct allocation *managed_range(CUdeviceptr ptr, size_t bytes, const char *api) {
    if (bytes == 0 || check_range(ptr, bytes, 0, api) != CUDA_SUCCESS)
        return NULL;
    struct allocation *a = find_live_allocation(ptr);
    if (a->kind != A_MANAGED) {
        stub_misuse_note("%s: %#llx is not managed memory", api, ptr);
        return NULL;
    }
    return a;
}

/* A location as a place: a device, the host or a host NUMA node (the devices report no NUMA
 * node but 0). */
static int place_of(CUmemLocation location, struct place *place, const char *api) {
    int ok = (location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
              check_device(location.id, api) == CUDA_SUCCESS) ||
             location.type == CU_MEM_LOCATION_TYPE_HOST ||
             (location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA && location.id == 0);
    if (!ok)
        return 0;
    place->type = location.type;
    place->id = location.type == CU_MEM_LOCATION_TYPE_HOST ? 0 : location.id;
    return 1;
}

/* A device argument of the CUDA 12 entry points as a location. */
static CUmemLocation device_location(int device) {
    CUmemLocation location = {CU_MEM_LOCATION_TYPE_DEVICE, device};
    if (device == CU_DEVICE_CPU)
        location.type = CU_MEM_LOCATION_TYPE_HOST;
    return location;
}

/* ---- Prefetches. ---- */

static CUresult prefetch(const char *api, CUdeviceptr ptr, size_t bytes, CUmemLocation location,
                         void *stream) {
    if (stream_context(stream, api) == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    struct allocation *a = managed_range(ptr, bytes, api);
    struct place place;
    if (a == NULL || !place_of(location, &place, api))
        return CUDA_ERROR_INVALID_VALUE;
    a->prefetched = place;
    return CUDA_SUCCESS;
}

CUresult cuMemPrefetchAsync(CUdeviceptr ptr, size_t bytes, int device, void *stream) {
    DRIVER("cuMemPrefetchAsync");
    return prefetch("cuMemPrefetchAsync", ptr, bytes, device_location(device), stream);
}

CUresult cuMemPrefetchAsync_v2(CUdeviceptr ptr, size_t bytes, CUmemLocation location,
                               unsigned flags, void *stream) {
    DRIVER("cuMemPrefetchAsync_v2");
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    return prefetch("cuMemPrefetchAsync_v2", ptr, bytes, location, stream);
}

/* ---- Batches (CUDA 13). ---- */

/* The byte a discard leaves in memory: what a read of discarded memory finds is indeterminate. */
enum { DISCARDED = 0xd5 };

/* One batched hint: every argument checked before any range changes, so a refused batch
 * leaves all of them as they were. `located` is 0 for a discard. */
static CUresult batch(const char *api, CUdeviceptr *ptrs, size_t *sizes, size_t count,
                      CUmemLocation *locations, size_t *first, size_t located,
                      unsigned long long flags, void *stream, int discard) {
    if (stream_context(stream, api) == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (flags != 0 || count == 0 || ptrs == NULL || sizes == NULL) {
        stub_misuse_note("%s: flags %llu, %zu ranges", api, flags, count);
        return CUDA_ERROR_INVALID_VALUE;
    }
    int prefetches = locations != NULL || located != 0;
    if (prefetches && (locations == NULL || first == NULL || located == 0 || located > count ||
                       first[0] != 0)) {
        stub_misuse_note("%s: %zu locations for %zu ranges", api, located, count);
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct place places[64];
    if (located > sizeof places / sizeof places[0])
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t j = 0; j < located; j++) {
        if ((j > 0 && first[j] <= first[j - 1]) || first[j] >= count ||
            !place_of(locations[j], &places[j], api)) {
            stub_misuse_note("%s: location %zu (first range %zu) is not valid", api, j, first[j]);
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    for (size_t i = 0; i < count; i++) {
        if (managed_range(ptrs[i], sizes[i], api) == NULL)
            return CUDA_ERROR_INVALID_VALUE;
    }
    unsigned actor = race_enqueue(stream, api);
    size_t j = 0;
    for (size_t i = 0; i < count; i++) {
        struct allocation *a = find_live_allocation(ptrs[i]);
        if (discard) {
            race_access(actor, ptrs[i], sizes[i], RACE_WRITE, api);
            memset((void *)(uintptr_t)ptrs[i], DISCARDED, sizes[i]);
        }
        while (j + 1 < located && first[j + 1] <= i)
            j++;
        if (prefetches)
            a->prefetched = places[j];
    }
    return CUDA_SUCCESS;
}

CUresult cuMemPrefetchBatchAsync(CUdeviceptr *ptrs, size_t *sizes, size_t count,
                                 CUmemLocation *locations, size_t *first, size_t located,
                                 unsigned long long flags, void *stream) {
    DRIVER("cuMemPrefetchBatchAsync");
    if (located == 0)
        return CUDA_ERROR_INVALID_VALUE;
    return batch("cuMemPrefetchBatchAsync", ptrs, sizes, count, locations, first, located, flags,
                 stream, 0);
}

CUresult cuMemDiscardBatchAsync(CUdeviceptr *ptrs, size_t *sizes, size_t count,
                                unsigned long long flags, void *stream) {
    DRIVER("cuMemDiscardBatchAsync");
    return batch("cuMemDiscardBatchAsync", ptrs, sizes, count, NULL, NULL, 0, flags, stream, 1);
}

CUresult cuMemDiscardAndPrefetchBatchAsync(CUdeviceptr *ptrs, size_t *sizes, size_t count,
                                           CUmemLocation *locations, size_t *first,
                                           size_t located, unsigned long long flags,
                                           void *stream) {
    DRIVER("cuMemDiscardAndPrefetchBatchAsync");
    if (located == 0)
        return CUDA_ERROR_INVALID_VALUE;
    return batch("cuMemDiscardAndPrefetchBatchAsync", ptrs, sizes, count, locations, first,
                 located, flags, stream, 1);
}

/* ---- Advice. ---- */

/* The bit of `place` among the accessed-by bits (devices, then the host). */
static unsigned accessor_bit(struct place place) {
    return 1u << (place.type == CU_MEM_LOCATION_TYPE_DEVICE ? place.id : DEVICE_COUNT);
}

static CUresult advise(const char *api, CUdeviceptr ptr, size_t bytes, int advice,
                       CUmemLocation location) {
    struct allocation *a = managed_range(ptr, bytes, api);
    if (a == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct place place;
    int located = place_of(location, &place, api);
    switch (advice) {
    case ADVISE_SET_READ_MOSTLY: a->read_mostly = 1; return CUDA_SUCCESS;
    case ADVISE_UNSET_READ_MOSTLY: a->read_mostly = 0; return CUDA_SUCCESS;
    case ADVISE_UNSET_PREFERRED_LOCATION: a->preferred.type = 0; return CUDA_SUCCESS;
    case ADVISE_SET_PREFERRED_LOCATION:
        if (!located)
            return CUDA_ERROR_INVALID_VALUE;
        a->preferred = place;
        return CUDA_SUCCESS;
    case ADVISE_SET_ACCESSED_BY:
    case ADVISE_UNSET_ACCESSED_BY:
        if (!located || place.type == CU_MEM_LOCATION_TYPE_HOST_NUMA)
            return CUDA_ERROR_INVALID_VALUE;
        if (advice == ADVISE_SET_ACCESSED_BY)
            a->accessed_by |= accessor_bit(place);
        else
            a->accessed_by &= ~accessor_bit(place);
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult cuMemAdvise(CUdeviceptr ptr, size_t bytes, int advice, int device) {
    DRIVER("cuMemAdvise");
    return advise("cuMemAdvise", ptr, bytes, advice, device_location(device));
}

CUresult cuMemAdvise_v2(CUdeviceptr ptr, size_t bytes, int advice, CUmemLocation location) {
    DRIVER("cuMemAdvise_v2");
    return advise("cuMemAdvise_v2", ptr, bytes, advice, location);
}

/* ---- Range attributes. ---- */

/* A place as the device id the older attributes report (CU_DEVICE_CPU for the host,
 * CU_DEVICE_INVALID for none). */
static int device_id(struct place place) {
    switch (place.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE: return place.id;
    case 0: return CU_DEVICE_INVALID;
    default: return CU_DEVICE_CPU;
    }
}

CUresult cuMemRangeGetAttribute(void *data, size_t size, int attribute, CUdeviceptr ptr,
                                size_t bytes) {
    DRIVER("cuMemRangeGetAttribute");
    struct allocation *a = managed_range(ptr, bytes, "cuMemRangeGetAttribute");
    if (a == NULL || data == NULL || size < sizeof(int) || size % sizeof(int) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    int value;
    switch (attribute) {
    case RANGE_READ_MOSTLY: value = a->read_mostly; break;
    case RANGE_PREFERRED_LOCATION: value = device_id(a->preferred); break;
    case RANGE_LAST_PREFETCH_LOCATION: value = device_id(a->prefetched); break;
    case RANGE_PREFERRED_LOCATION_TYPE: value = a->preferred.type; break;
    case RANGE_PREFERRED_LOCATION_ID: value = a->preferred.id; break;
    case RANGE_LAST_PREFETCH_LOCATION_TYPE: value = a->prefetched.type; break;
    case RANGE_LAST_PREFETCH_LOCATION_ID: value = a->prefetched.id; break;
    case RANGE_ACCESSED_BY: {
        /* As many ids as fit, then CU_DEVICE_INVALID. */
        int *ids = data;
        size_t slots = size / sizeof(int), filled = 0;
        for (int d = 0; d <= DEVICE_COUNT; d++) {
            if ((a->accessed_by & (1u << d)) && filled < slots)
                ids[filled++] = d == DEVICE_COUNT ? CU_DEVICE_CPU : d;
        }
        while (filled < slots)
            ids[filled++] = CU_DEVICE_INVALID;
        return CUDA_SUCCESS;
    }
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (size != sizeof value)
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(data, &value, sizeof value);
    return CUDA_SUCCESS;
}
