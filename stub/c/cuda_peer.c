/*
 * The fake libcuda's peer features between its two devices (an NVLink pair: each can access
 * the other): link attributes, peer access between contexts (with the driver's ALREADY_ENABLED
 * and NOT_ENABLED answers), pools' access for other devices, what the current context may
 * access (cuPointerGetAttribute's ACCESS_FLAGS), and copies between devices. See cuda_stub.h.
 */
#include <stdint.h>
#include <string.h>

#include "cuda_stub.h"

/* ---- The topology. ---- */

CUresult cuDeviceCanAccessPeer(int *can, CUdevice device, CUdevice peer) {
    DRIVER("cuDeviceCanAccessPeer");
    CHECK(check_device(device, "cuDeviceCanAccessPeer"));
    CHECK(check_device(peer, "cuDeviceCanAccessPeer"));
    if (can == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *can = device != peer;
    return CUDA_SUCCESS;
}

/* CU_DEVICE_P2P_ATTRIBUTE_*: performance rank (1), access (2), native atomics (3), CUDA array
 * access (4), partial native atomics (5, CUDA 13). A device with itself is INVALID_DEVICE, as
 * the driver answers. */
CUresult cuDeviceGetP2PAttribute(int *value, int attribute, CUdevice device, CUdevice peer) {
    DRIVER("cuDeviceGetP2PAttribute");
    CHECK(check_device(device, "cuDeviceGetP2PAttribute"));
    CHECK(check_device(peer, "cuDeviceGetP2PAttribute"));
    if (value == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (device == peer)
        return CUDA_ERROR_INVALID_DEVICE;
    switch (attribute) {
    case 1: *value = 0; return CUDA_SUCCESS;
    case 2: case 3: case 4: *value = 1; return CUDA_SUCCESS;
    case 5: *value = 0; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
}

/* ---- Peer access between contexts. ---- */

/* The slot of `peer` among the current context's peers, or -1. Peers destroyed since (a
 * primary context released) no longer count: their access went with them. */
static int peer_slot(const struct context *peer) {
    for (int i = 0; i < MAX_PEERS; i++) {
        if (current->peers[i] != NULL && !current->peers[i]->head.alive)
            current->peers[i] = NULL;
        if (current->peers[i] == peer)
            return i;
    }
    return -1;
}

/* Checks the current context and `peer` for a peer-access call: a live context of the other
 * device (the crate refuses a context of the same device before the driver). */
static CUresult check_peer(struct context *peer, const char *api) {
    CHECK(need_current(api));
    if (!valid(peer, T_CONTEXT, api))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (peer->device == current->device) {
        stub_misuse_note("%s: both contexts are on device %d", api, peer->device);
        return CUDA_ERROR_INVALID_DEVICE;
    }
    return CUDA_SUCCESS;
}

CUresult cuCtxEnablePeerAccess(struct context *peer, unsigned flags) {
    DRIVER("cuCtxEnablePeerAccess");
    CHECK(check_peer(peer, "cuCtxEnablePeerAccess"));
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (peer_slot(peer) >= 0)
        return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
    int free_slot = peer_slot(NULL);
    if (free_slot < 0)
        return CUDA_ERROR_TOO_MANY_PEERS;
    current->peers[free_slot] = peer;
    return CUDA_SUCCESS;
}

CUresult cuCtxDisablePeerAccess(struct context *peer) {
    DRIVER("cuCtxDisablePeerAccess");
    CHECK(check_peer(peer, "cuCtxDisablePeerAccess"));
    int slot = peer_slot(peer);
    if (slot < 0)
        return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
    current->peers[slot] = NULL;
    return CUDA_SUCCESS;
}

/* ---- Pools' access for other devices. ---- */

/* A CUmemLocation (type, id) read as the device it names; -1 (with the misuse noted) for
 * anything else. */
static CUdevice location_device(const unsigned char *location, const char *api) {
    int fields[2];
    memcpy(fields, location, sizeof fields);
    if (fields[0] != 1 /* CU_MEM_LOCATION_TYPE_DEVICE */ ||
        check_device(fields[1], api) != CUDA_SUCCESS) {
        stub_misuse_note("%s: the location (%d, %d) is not a device", api, fields[0], fields[1]);
        return -1;
    }
    return fields[1];
}

/* Each CUmemAccessDesc is a location (8 bytes) and its flags (4 bytes). The pool's own device
 * always has read-write access: asking for less is INVALID_VALUE (the crate refuses it before
 * the driver). */
CUresult cuMemPoolSetAccess(struct pool *pool, const unsigned char *map, size_t count) {
    DRIVER("cuMemPoolSetAccess");
    if (!valid(pool, T_POOL, "cuMemPoolSetAccess"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (map == NULL || count == 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++) {
        const unsigned char *desc = map + 12 * i;
        CUdevice device = location_device(desc, "cuMemPoolSetAccess");
        unsigned flags;
        memcpy(&flags, desc + 8, sizeof flags);
        if (device < 0 || (flags != CU_MEM_ACCESS_FLAGS_PROT_NONE &&
                           flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
                           flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE))
            return CUDA_ERROR_INVALID_VALUE;
        if (device == pool->device && flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
            stub_misuse_note("cuMemPoolSetAccess: taking the pool's own device's access");
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    for (size_t i = 0; i < count; i++) {
        const unsigned char *desc = map + 12 * i;
        CUdevice device = location_device(desc, "cuMemPoolSetAccess");
        memcpy(&pool->access[device], desc + 8, sizeof pool->access[device]);
    }
    return CUDA_SUCCESS;
}

CUresult cuMemPoolGetAccess(unsigned *flags, struct pool *pool, const unsigned char *location) {
    DRIVER("cuMemPoolGetAccess");
    if (!valid(pool, T_POOL, "cuMemPoolGetAccess"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (flags == NULL || location == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CUdevice device = location_device(location, "cuMemPoolGetAccess");
    if (device < 0)
        return CUDA_ERROR_INVALID_VALUE;
    *flags = device == pool->device ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE : pool->access[device];
    return CUDA_SUCCESS;
}

/* ---- What the current context may access. ---- */

/* Whether the current context enabled peer access to a live context of `device`. */
static int peer_enabled(CUdevice device) {
    for (int i = 0; i < MAX_PEERS; i++)
        if (current->peers[i] != NULL && current->peers[i]->head.alive &&
            current->peers[i]->device == device)
            return 1;
    return 0;
}

/* The CU_POINTER_ATTRIBUTE_ACCESS_FLAG_* (the CU_MEM_ACCESS_FLAGS_* values) of the current
 * context's device on `a`: host and managed memory are read-write; a pool's memory as the pool
 * grants the device (its own always); a VMM mapping as cuMemSetAccess set it; other device
 * memory (cuMemAlloc, a pool-less cuMemAllocAsync) for its own device, or another whose
 * context enabled peer access to a context of its device. */
static unsigned access_flags(const struct allocation *a) {
    const unsigned rw = CU_MEM_ACCESS_FLAGS_PROT_READWRITE, none = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    CUdevice own = current->device;
    if (a->kind == A_HOST || a->kind == A_MANAGED)
        return rw;
    if (a->kind == A_VMM)
        return a->granted & (1u << own) ? rw : none;
    if (a->device == own)
        return rw;
    if (a->kind == A_POOL && a->pool != NULL)
        return a->pool->access[own];
    return peer_enabled(a->device) ? rw : none;
}

/* Only CU_POINTER_ATTRIBUTE_ACCESS_FLAGS (16), an unsigned; other attributes are
 * INVALID_VALUE, as is an address of no live allocation. */
CUresult cuPointerGetAttribute(void *data, int attribute, CUdeviceptr address) {
    DRIVER("cuPointerGetAttribute");
    CHECK(need_current("cuPointerGetAttribute"));
    if (data == NULL || attribute != 16)
        return CUDA_ERROR_INVALID_VALUE;
    const struct allocation *a = find_live_allocation(address);
    if (a == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned flags = access_flags(a);
    memcpy(data, &flags, sizeof flags);
    return CUDA_SUCCESS;
}

/* ---- Copies between devices, done at once on the host. ---- */

/* Checks one side of a peer copy: `bytes` of device memory at `address`, of the device of
 * `context`. */
static CUresult check_side(CUdeviceptr address, struct context *context, size_t bytes,
                           const char *side) {
    if (!valid(context, T_CONTEXT, "cuMemcpyPeerAsync"))
        return CUDA_ERROR_INVALID_CONTEXT;
    CHECK(context_error(context, "cuMemcpyPeerAsync"));
    CHECK(check_range(address, bytes, 0, "cuMemcpyPeerAsync"));
    const struct allocation *a = find_live_allocation(address);
    if (a->device != context->device) {
        stub_misuse_note("cuMemcpyPeerAsync: the %s %#llx is not memory of device %d", side,
                         address, context->device);
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult cuMemcpyPeerAsync(CUdeviceptr dst, struct context *dst_context, CUdeviceptr src,
                           struct context *src_context, size_t bytes, void *stream) {
    DRIVER("cuMemcpyPeerAsync");
    if (stream_context(stream, "cuMemcpyPeerAsync") == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (bytes == 0)
        return CUDA_SUCCESS;
    CHECK(check_side(dst, dst_context, bytes, "destination"));
    CHECK(check_side(src, src_context, bytes, "source"));
    unsigned actor = race_enqueue(stream, "cuMemcpyPeerAsync");
    race_access(actor, src, bytes, RACE_READ, "cuMemcpyPeerAsync");
    race_access(actor, dst, bytes, RACE_WRITE, "cuMemcpyPeerAsync");
    gpu_copy(stream, dst, src, bytes);
    return CUDA_SUCCESS;
}
