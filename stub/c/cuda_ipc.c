/*
 * The fake libcuda's sharing between processes: shareable pools exported as POSIX file
 * descriptors and imported from them, their buffers exported as pointer descriptors and
 * imported (a second mapping of the same pages), and IPC event handles. See cuda_stub.h.
 *
 * The tests run in one process, which plays both sides. The driver's rules the crate relies on:
 * - a pool's buffer can be exported only once the pool itself has been exported
 *   (CUDA_ERROR_INVALID_VALUE before, which the crate turns into a clear error);
 * - an exported pool's file descriptor is the caller's to close: each is a real descriptor (a
 *   memfd naming the pool), and those open (VMM chunks' too, cuda_vmm.c) are counted as live
 *   objects (K_FD), so a leaked one is caught;
 * - an imported buffer is unmapped with cuMemFreeAsync, which never frees the exporter's
 *   memory; the exporter freeing a buffer still imported is a misuse;
 * - cuIpcGetEventHandle needs the event's context current (a misuse otherwise, answered
 *   CUDA_ERROR_INVALID_CONTEXT);
 * - an IPC event handle opened in the process that made it is CUDA_ERROR_INVALID_CONTEXT, as
 *   the real driver answers. To open one, a test makes the event while playing another process
 *   (stub_play_other_process), whose handles carry another process id.
 * Not modelled: the real driver's answer to a pool imported in the process that exported it
 * (the stub allows it; the GPU tests import in a child process), and fabric handles (the
 * devices report POSIX descriptors only).
 */
#define _GNU_SOURCE /* memfd_create */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cuda_stub.h"

/* How /proc/self/fd shows an exported descriptor (a memfd named SHARED_FD_PREFIX...). */
#define SHARED_FD_LINK "/memfd:" SHARED_FD_PREFIX

/* What an exported pool's descriptor holds, and the head of a buffer's descriptor and of an
 * event's handle: a tag and the process that made it. */
struct shared_head {
    char tag[8];
    int pid;
};

struct pool_record {
    struct shared_head head;
    struct pool *pool;
};

struct pointer_record {
    struct shared_head head;
    struct pool *pool;
    CUdeviceptr ptr;
};

struct event_record {
    struct shared_head head;
    struct event *event;
};

typedef struct {
    unsigned char reserved[64];
} CUipcEventHandle;

_Static_assert(sizeof(struct pointer_record) <= 64, "a pointer descriptor is 64 bytes");
_Static_assert(sizeof(struct event_record) <= 64, "an event handle is 64 bytes");

static const char POOL_TAG[8] = "s-pool";
static const char POINTER_TAG[8] = "s-ptr";
static const char EVENT_TAG[8] = "s-event";

/* Whether the tests play another process: what this process exports then carries another
 * process id. */
static int playing_other;

void ipc_reset(void) {
    playing_other = 0;
}

/* Makes what is exported from now on look like another process's (on != 0), or this one's. */
void stub_play_other_process(int on) {
    playing_other = on;
}

static struct shared_head head_of(const char tag[8]) {
    struct shared_head head;
    memcpy(head.tag, tag, sizeof head.tag);
    head.pid = playing_other ? -(int)getpid() : (int)getpid();
    return head;
}

static int tagged(const struct shared_head *head, const char tag[8]) {
    return memcmp(head->tag, tag, sizeof head->tag) == 0;
}

/* Whether `object` is a live stub object of `type`, without noting a misuse (a handle from
 * another process may name anything). */
static int alive(const void *object, enum type type) {
    const struct object *head = object;
    return (uintptr_t)object >= 4096 && head->magic == MAGIC && head->type == type &&
           head->alive;
}

long open_pool_fds(void) {
    DIR *fds = opendir("/proc/self/fd");
    if (fds == NULL)
        return -1;
    long count = 0;
    char link[64];
    for (struct dirent *entry = readdir(fds); entry != NULL; entry = readdir(fds)) {
        ssize_t len = readlinkat(dirfd(fds), entry->d_name, link, sizeof link - 1);
        if (len > 0) {
            link[len] = '\0';
            count += strncmp(link, SHARED_FD_LINK, strlen(SHARED_FD_LINK)) == 0;
        }
    }
    closedir(fds);
    return count;
}

int export_fd(const char *what, const void *record, size_t size) {
    char name[64];
    snprintf(name, sizeof name, SHARED_FD_PREFIX "%s", what);
    int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    if (write(fd, record, size) != (ssize_t)size) {
        close(fd);
        return -1;
    }
    return fd;
}

int read_fd_record(int fd, void *record, size_t size) {
    return pread(fd, record, size, 0) == (ssize_t)size ? 0 : -1;
}

/* ---- Pools. ---- */

CUresult cuMemPoolExportToShareableHandle(void *handle, struct pool *pool, int type,
                                          unsigned long long flags) {
    DRIVER("cuMemPoolExportToShareableHandle");
    if (!valid(pool, T_POOL, "cuMemPoolExportToShareableHandle"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (pool->source != NULL) {
        stub_misuse_note("cuMemPoolExportToShareableHandle: an imported pool");
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (handle == NULL || flags != 0 || type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ||
        !(pool->handle_types & (unsigned)type))
        return CUDA_ERROR_INVALID_VALUE;
    struct pool_record record = {head_of(POOL_TAG), pool};
    int fd = export_fd("pool", &record, sizeof record);
    if (fd < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pool->exported = 1;
    memcpy(handle, &fd, sizeof fd);
    return CUDA_SUCCESS;
}

/* The descriptor is passed as the pointer's value; the driver does not take it over. */
CUresult cuMemPoolImportFromShareableHandle(struct pool **pool, void *handle, int type,
                                            unsigned long long flags) {
    DRIVER("cuMemPoolImportFromShareableHandle");
    if (pool == NULL || flags != 0 || type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_INVALID_VALUE;
    struct pool_record record;
    int fd = (int)(intptr_t)handle;
    if (read_fd_record(fd, &record, sizeof record) != 0 || !tagged(&record.head, POOL_TAG) || !alive(record.pool, T_POOL) ||
        !record.pool->exported)
        return CUDA_ERROR_INVALID_VALUE;
    struct pool *made = make(sizeof *made, T_POOL);
    made->device = record.pool->device;
    made->handle_types = (unsigned)type;
    made->source = record.pool;
    stub_live_add(K_POOL, 1);
    *pool = made;
    return CUDA_SUCCESS;
}

/* ---- Buffers of shareable pools. ---- */

CUresult cuMemPoolExportPointer(unsigned char *data, CUdeviceptr ptr) {
    DRIVER("cuMemPoolExportPointer");
    if (data == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CHECK(check_range(ptr, 1, 0, "cuMemPoolExportPointer"));
    struct allocation *a = find_live_allocation(ptr);
    if (a->ptr != ptr || a->kind != A_POOL || a->source != NULL) {
        stub_misuse_note("cuMemPoolExportPointer: %#llx is not the start of a pool allocation",
                         ptr);
        return CUDA_ERROR_INVALID_VALUE;
    }
    /* As the driver: only a buffer of a shareable pool, once the pool is exported. */
    if (a->pool->handle_types == 0 || !a->pool->exported)
        return CUDA_ERROR_INVALID_VALUE;
    struct pointer_record record = {head_of(POINTER_TAG), a->pool, ptr};
    memset(data, 0, 64);
    memcpy(data, &record, sizeof record);
    return CUDA_SUCCESS;
}

CUresult cuMemPoolImportPointer(CUdeviceptr *ptr, struct pool *pool, const unsigned char *data) {
    DRIVER("cuMemPoolImportPointer");
    if (!valid(pool, T_POOL, "cuMemPoolImportPointer"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (ptr == NULL || data == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (pool->source == NULL) {
        stub_misuse_note("cuMemPoolImportPointer: the pool was not imported");
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct pointer_record record;
    memcpy(&record, data, sizeof record);
    if (!tagged(&record.head, POINTER_TAG) || record.pool != pool->source)
        return CUDA_ERROR_INVALID_VALUE;
    struct allocation *source = find_live_allocation(record.ptr);
    if (source == NULL || source->ptr != record.ptr || source->pool != pool->source)
        return CUDA_ERROR_INVALID_VALUE; /* freed by its owner */
    struct allocation *made = map_import(source, pool);
    if (made == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *ptr = made->ptr;
    return CUDA_SUCCESS;
}

/* The allocation holding `ptr`: its base and size (the crate checks an imported buffer's
   claimed size against it). */
CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr ptr) {
    DRIVER("cuMemGetAddressRange_v2");
    struct allocation *a = find_live_allocation(ptr);
    if (a == NULL)
        return CUDA_ERROR_NOT_FOUND;
    if (base != NULL)
        *base = a->ptr;
    if (size != NULL)
        *size = a->size;
    return CUDA_SUCCESS;
}

/* ---- Events. ---- */

CUresult cuIpcGetEventHandle(CUipcEventHandle *handle, struct event *event) {
    DRIVER("cuIpcGetEventHandle");
    if (!valid(event, T_EVENT, "cuIpcGetEventHandle"))
        return CUDA_ERROR_INVALID_HANDLE;
    if (handle == NULL || !(event->flags & CU_EVENT_INTERPROCESS))
        return CUDA_ERROR_INVALID_VALUE;
    CHECK(need_current("cuIpcGetEventHandle"));
    if (current != event->context) {
        stub_misuse_note("cuIpcGetEventHandle: the event's context is not current");
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    struct event_record record = {head_of(EVENT_TAG), event};
    memset(handle, 0, sizeof *handle);
    memcpy(handle->reserved, &record, sizeof record);
    return CUDA_SUCCESS;
}

/* The handle comes by value, as in cuda.h. */
CUresult cuIpcOpenEventHandle(struct event **event, CUipcEventHandle handle) {
    DRIVER("cuIpcOpenEventHandle");
    CHECK(need_current("cuIpcOpenEventHandle"));
    if (event == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct event_record record;
    memcpy(&record, handle.reserved, sizeof record);
    if (!tagged(&record.head, EVENT_TAG))
        return CUDA_ERROR_INVALID_VALUE;
    if (record.head.pid == (int)getpid())
        return CUDA_ERROR_INVALID_CONTEXT; /* opened in the process that made it */
    if (!alive(record.event, T_EVENT))
        return CUDA_ERROR_INVALID_VALUE;
    *event = new_event(current, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING);
    (*event)->ipc_source = record.event;
    return CUDA_SUCCESS;
}
