/*
 * A fake libcuda: two sm_90-like devices with 132 SMs each (an NVLink pair: each can access
 * the other), their primary contexts, green contexts, streams, events, memory pools (shareable
 * with "other processes" through file descriptors), pinned and managed memory, pitched memory,
 * CUDA arrays, virtual memory, libraries and kernels, every handle a stub object. Allocations
 * are host memory, so copies and memsets round-trip, and the kernel `twice` (float *x,
 * size_t n) doubles x[0..n) when launched. Both ABIs are served: every entry point cuda-safe
 * calls under CUDA 12 or 13 is exported by the name it resolves (`cuEventElapsedTime` and
 * `cuEventElapsedTime_v2` both), and the structs it fills have one layout in both (the fields
 * written are at the same offsets).
 *
 * A handle the stub did not make, or one already destroyed, a call that needs a current
 * context with none, and a copy or memset past an allocation are misuses (stub_misuse): the
 * real driver would fail or corrupt memory, and the tests assert they never happen. Freed
 * memory is never reused, so a use after free is caught too.
 *
 * A stream, event or allocation whose release fails by injection is abandoned: it stays live
 * in the counts (the caller leaked it), and destroying its context or pool later is no misuse
 * (the real driver reclaims it then).
 *
 * This header is the driver's internal one, shared by its sources: cuda_misc.c (state, checks,
 * initialisation, error strings, checkpoints), cuda_device.c (the devices, contexts, streams,
 * events), cuda_memory.c (allocations, pools, pitched memory, copies, memsets), cuda_managed.c
 * (managed memory's hints), cuda_vmm.c (virtual memory), cuda_copy.c (arrays, 2-D and 3-D
 * copies, mipmapped arrays), cuda_texture.c (texture and surface objects), cuda_peer.c (peer attributes, peer access, pool access, peer copies), cuda_ipc.c
 * (shareable pools, their buffers and IPC events), cuda_code.c (libraries, kernels, launches),
 * cuda_green.c (resources and green contexts), cuda_async.c (host functions, and holding the
 * GPU's progress for the completion tests), cuda_race.c (the ordering race checker: which
 * accesses of an allocation stream order leaves unordered), cuda_gpu.c and cuda_gpu_work.c (the
 * asynchronous mode: each stream's queue run by a worker thread), cuda_graph.c (graphs, their nodes
 * and user objects), cuda_graph_copy.c (copies of graphs: clones, executables' and child
 * graphs; ids; conditional nodes), cuda_graph_exec.c (executable graphs) and cuda_capture.c
 * (stream capture), which share cuda_graph.h. Everything declared here is hidden: the shared object exports the
 * CUDA entry points and the stub_* functions only.
 */
#ifndef CUDA_SAFE_CUDA_STUB_H
#define CUDA_SAFE_CUDA_STUB_H

#include <stddef.h>

#include "stub.h"

#pragma GCC visibility push(hidden)

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_PEER_ACCESS_UNSUPPORTED = 217,
    CUDA_ERROR_FILE_NOT_FOUND = 301,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_ILLEGAL_STATE = 401,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_NOT_READY = 600,
    CUDA_ERROR_ILLEGAL_ADDRESS = 700,
    CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704,
    CUDA_ERROR_PEER_ACCESS_NOT_ENABLED = 705,
    CUDA_ERROR_CONTEXT_IS_DESTROYED = 709,
    CUDA_ERROR_TOO_MANY_PEERS = 711,
    CUDA_ERROR_NOT_SUPPORTED = 801,
    CUDA_ERROR_INVALID_RESOURCE_TYPE = 914,
    CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION = 915,
};

/* ---- The devices: two alike, but for their UUID and PCI address. ---- */

#define DEVICE_COUNT 2
#define SM_COUNT 132
#define SM_GRANULARITY 8 /* sm_90: groups of at least 8 SMs, in multiples of 8 */
#define TOTAL_MEMORY 150754820096ULL
#define SHARED_OPTIN 232448
#define DEVICE_NAME "NVIDIA H200 (cuda-safe stub)"

/* ---- Objects. ---- */

#define MAGIC 0x5C0DA5AFu

enum type {
    T_CONTEXT = 1,
    T_GREEN,
    T_STREAM,
    T_EVENT,
    T_POOL,
    T_LIBRARY,
    T_KERNEL,
    T_DESC,
    T_CHUNK, /* a VMM physical allocation */
    T_ARRAY,
    T_MIPMAP,
    T_TEXTURE, /* a texture or surface object */
    T_GRAPH,      /* a graph (cuda_graph.c) */
    T_GRAPH_EXEC, /* an executable graph (cuda_graph_exec.c) */
    T_GNODE,      /* a graph node */
    T_UOBJ,       /* a user object */
};

/* The head of every object. The context and the stream are shared by the sources; the other
 * objects are each one file's own (the event, pool, library, kernel, green context and
 * resource descriptor). */
struct object {
    unsigned magic;
    enum type type;
    int alive;
    int abandoned;
};

#define MAX_PEERS 8

struct gpu_queue; /* a stream's queue in the asynchronous mode (cuda_gpu.c) */

struct context {
    struct object head;
    CUdevice device;
    unsigned sm_count;
    struct context *peers[MAX_PEERS]; /* contexts whose memory this one may access */
    struct gpu_queue *legacy_queue, *per_thread_queue; /* its default streams' (cuda_gpu.c) */
};

struct stream {
    struct object head;
    struct context *context;
    unsigned flags;
    int priority;
    unsigned race_slot; /* the race checker's actor (cuda_race.c); 0 until first used */
    struct capture *capture; /* the capture recording the stream's work (cuda_capture.c) */
    int held_work;           /* work queued while the GPU was held (stub_hold_gpu) is pending */
    struct gpu_queue *queue; /* its queue in the asynchronous mode (cuda_gpu.c) */
};

struct vc;          /* a vector clock (cuda_race.c) */
struct race_record; /* an allocation's last accesses (cuda_race.c) */

#define CU_EVENT_DISABLE_TIMING 2u
#define CU_EVENT_INTERPROCESS 4u

struct event {
    struct object head;
    struct context *context;
    unsigned flags;
    int recorded;
    int pending; /* recorded while the GPU was held (stub_hold_gpu): not finished yet */
    struct vc *race;                 /* the clock of its last record (cuda_race.c) */
    const struct event *ipc_source; /* opened from an IPC handle: the event it stands for */
    unsigned long gpu_recorded, gpu_finished; /* records queued and finished (cuda_gpu.c) */
};

#define CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR 1u
#define CU_MEM_ACCESS_FLAGS_PROT_NONE 0u
#define CU_MEM_ACCESS_FLAGS_PROT_READ 1u
#define CU_MEM_ACCESS_FLAGS_PROT_READWRITE 3u

struct pool {
    struct object head;
    int is_default;
    CUdevice device;
    unsigned long long max_size, used, used_high, reserved, reserved_high, threshold;
    unsigned handle_types;            /* CU_MEM_HANDLE_TYPE_* it can be exported as */
    int exported;                     /* exported once: its buffers can be exported */
    struct pool *source;              /* imported: the pool it was imported from */
    unsigned access[DEVICE_COUNT];    /* CU_MEM_ACCESS_FLAGS_* of other devices */
};

/* Pool, pinned and managed memory; cuMemAllocPitch's device memory; a VMM mapping. */
enum alloc_kind { A_POOL, A_HOST, A_MANAGED, A_DEVICE, A_VMM };

/* Where managed memory was advised to live or prefetched to: a CUmemLocationType (0: none)
 * and its id. */
struct place {
    int type;
    int id;
};

#define CU_MEM_LOCATION_TYPE_DEVICE 1
#define CU_MEM_LOCATION_TYPE_HOST 2
#define CU_MEM_LOCATION_TYPE_HOST_NUMA 3

struct allocation {
    CUdeviceptr ptr;
    size_t size;
    enum alloc_kind kind;
    struct pool *pool;
    struct allocation *source; /* imported: the exporter's allocation it maps */
    CUdevice device;           /* whose memory it is; -1 for host and managed memory */
    int inaccessible;          /* a VMM mapping no device was granted access to yet */
    unsigned granted;          /* a VMM mapping: bit d, device d may read and write it */
    int alive;
    int abandoned;
    /* Managed memory's hints (cuda_managed.c). */
    int read_mostly;
    struct place preferred, prefetched;
    unsigned accessed_by; /* bit d: device d; bit DEVICE_COUNT: the host */
    struct race_record *race; /* its last accesses (cuda_race.c) */
    struct allocation *next;
};

/* ---- Shared state (cuda_misc.c). ---- */

extern int initialised;
extern __thread struct context *current; /* the calling thread's current context */
extern int process_state;                /* CUprocessState of the checkpoint calls' process */

/* ---- Objects and checks (cuda_misc.c). ---- */

/* A new live object of `type`, zeroed past its head (aborts when out of memory). */
void *make(size_t size, enum type type);

/* Whether `handle` is a live object of `type` (a misuse is noted otherwise). */
int valid(const void *handle, enum type type, const char *api);

/* The error for a context that is not usable (destroyed, or none), with the misuse noted. */
CUresult context_error(struct context *context, const char *api);

/* context_error of the current context. */
CUresult need_current(const char *api);

/* Marks the live object `handle` of `type`, whose release failed by injection, abandoned. */
void abandon(void *handle, enum type type);

/* The stream a call is queued on: a stub stream, or the legacy / per-thread default stream of
 * the current context. NULL (with the misuse noted) when unusable. */
struct context *stream_context(const void *handle, const char *api);
/* Whether the context of the stream `handle` is the calling thread's current one, as a library
 * that launches into the current context needs it (a misuse is noted otherwise). */
int stream_is_current(const void *handle, const char *api);

/* Every entry point but cuInit, cuDriverGetVersion and the error strings: counted, faults
 * injected, and refused before cuInit; the stub's lock is held until the entry point returns
 * (so DRIVER opens the function, once). */
#define DRIVER(name)                                                                           \
    STUB_LOCKED();                                                                             \
    do {                                                                                       \
        ENTER(name);                                                                           \
        if (!initialised) {                                                                    \
            stub_misuse_note("%s before cuInit", name);                                        \
            return CUDA_ERROR_NOT_INITIALIZED;                                                 \
        }                                                                                      \
    } while (0)

/* A release: counted, and a fault injected into it abandons the object (see the top). */
#define DRIVER_RELEASE(name, abandoning)                                                       \
    STUB_LOCKED();                                                                             \
    do {                                                                                       \
        int injected_ = stub_enter(name, 0);                                                   \
        if (injected_ != 0) {                                                                  \
            abandoning;                                                                        \
            return injected_;                                                                  \
        }                                                                                      \
        if (!initialised) {                                                                    \
            stub_misuse_note("%s before cuInit", name);                                        \
            return CUDA_ERROR_NOT_INITIALIZED;                                                 \
        }                                                                                      \
    } while (0)

/* Returns the result of `call` when it is an error. */
#define CHECK(call)                                                                            \
    do {                                                                                       \
        CUresult checked_ = (call);                                                            \
        if (checked_ != CUDA_SUCCESS)                                                          \
            return checked_;                                                                   \
    } while (0)

/* ---- The device, contexts, streams (cuda_device.c). ---- */

/* CU_DEVICE_CPU and CU_DEVICE_INVALID, where a call takes a device. */
#define CU_DEVICE_CPU (-1)
#define CU_DEVICE_INVALID (-2)

/* Checks that `device` is one of the devices (a misuse is noted otherwise). */
CUresult check_device(CUdevice device, const char *api);

/* Counts the live streams and events of `context`, which destroying it would destroy too. */
size_t live_children(const struct context *context);

/* A new stream of `context` (its priority clamped to the device's range). */
struct stream *new_stream(struct context *context, unsigned flags, int priority);

/* A new event of `context`. */
struct event *new_event(struct context *context, unsigned flags);

/* Every event recorded and all stream work queued while the GPU was held has finished
 * (stub_hold_gpu). */
void finish_held_events(void);

/* ---- Host functions and the GPU's progress (cuda_async.c). ---- */

/* Whether the GPU is held: work queued from then on does not finish until it is released. */
extern int gpu_held;

/* Notes that work was queued on `stream` (a handle race_enqueue was given): while the GPU is
 * held, cuStreamQuery answers CUDA_ERROR_NOT_READY for that stream until it is released. */
void note_queued(const void *stream);

/* Runs `function(data)` as work of `stream` (cuda_gpu.c). */
void host_run(const void *stream, void (*function)(void *), void *data);

/* Notes a blocking wait made while the GPU is held (it would never return on a GPU whose work
 * cannot finish until the waiting thread lets it): a misuse. */
void note_wait_while_held(const char *api);

/* ---- The asynchronous mode (cuda_gpu.c, its copies and fills cuda_gpu_work.c). ---- */

/* Work a stream's queue runs, on its arguments (a copy the queue keeps). */
typedef void (*gpu_work)(void *args);

/* Set while the calling thread runs queued work at once (a conditional node's bodies). */
extern __thread int gpu_inline;

/* Queues `run` on `stream` (a handle stream_context accepted) with a copy of the `size` bytes
 * of `args`, taking the op time first when `timed`; runs it at once, on `args`, outside the
 * asynchronous mode or inline. */
void gpu_submit(const void *stream, gpu_work run, void *args, size_t size, int timed);

/* Waits until everything queued on `stream` so far has run (work that must run on the calling
 * thread then, in stream order); nothing when inline. */
void gpu_settle(const void *stream);

/* Whether everything queued on `stream` has run. */
int gpu_stream_idle(const void *stream);

/* Waits until everything queued on the streams of `context` (of every context: NULL) so far
 * has run. */
void gpu_sync_context(const struct context *context);

/* The destroyed `stream`'s worker ends once its queue is empty. */
void gpu_close(struct stream *stream);

/* Queues `event`'s record, or a wait for its last record, on `stream`. */
void gpu_record(struct event *event, const void *stream);
void gpu_wait_event(const void *stream, struct event *event);

/* Whether `event`'s last record has run; waiting until it has. */
int gpu_event_done(const struct event *event);
void gpu_sync_event(struct event *event);

/* Copies `bytes` from `src` to `dst` as work of `stream`: queued, or, with a side in pageable
 * host memory, on the calling thread after the stream's work, as the driver does. */
void gpu_copy(const void *stream, CUdeviceptr dst, CUdeviceptr src, size_t bytes);

/* Fills `height` rows of `width` words of `word` bytes of `value`, `pitch` bytes apart, at
 * `dst`, as work of `stream`. */
void gpu_fill(const void *stream, CUdeviceptr dst, size_t pitch, unsigned value, size_t word,
              size_t width, size_t height);

/* ---- The ordering race checker (cuda_race.c). ---- */

/* How an operation uses an allocation. */
enum race_access { RACE_READ, RACE_WRITE, RACE_FREE, RACE_ALLOC };

/* An actor that is not tracked (the checker is off, or the stream unusable). */
#define RACE_OFF 0xFFFFFFFFu

/* Enters one operation `api` queued on `stream` (a stub stream or a default-stream handle of
 * the current context) in the stream's order; returns the stream's actor for race_access. */
unsigned race_enqueue(const void *stream, const char *api);

/* Enters one synchronous operation of the host; returns the host's actor. */
unsigned race_host(const char *api);

/* Notes that the operation just entered by `actor` makes an access of `kind` to `bytes` at
 * `ptr` (nothing for memory outside every live allocation); a race is recorded when an earlier
 * conflicting access is not ordered before it. */
void race_access(unsigned actor, CUdeviceptr ptr, size_t bytes, enum race_access kind,
                 const char *api);

/* cuEventRecord: the event keeps the stream's clock. */
void race_record(struct event *event, const void *stream);

/* cuStreamWaitEvent: the stream's later work comes after the event's record. */
void race_wait(const void *stream, const struct event *event);

/* The host has seen everything queued on `stream` (or before `event`'s record, or on every
 * stream of `context`) finish. */
void race_sync_stream(const void *stream);
void race_sync_event(const struct event *event);
void race_sync_context(const struct context *context);

/* Forgets the races counted since the last reset, and makes the GPU prompt again (stub_reset). */
void race_reset(void);

/* Frees what the checker keeps for a destroyed event. */
void race_forget_event(struct event *event);

/* Whether cuStreamQuery must answer CUDA_ERROR_NOT_READY: the GPU is slow (stub_slow_gpu) and
 * `stream` has work the host has not seen finish. */
int race_stream_busy(const void *stream);

/* ---- Allocations (cuda_memory.c). ---- */

/* Checks `size` bytes at `address`: inside one live allocation, or (when `host_ok`) outside
 * every allocation ever made (host memory). */
CUresult check_range(CUdeviceptr address, size_t size, int host_ok, const char *api);

/* The live allocation holding `address`, or NULL. */
struct allocation *find_live_allocation(CUdeviceptr address);

/* A new allocation of `size` bytes of `kind` (from `pool`, if any), filled with a pattern and
 * counted as live; NULL when out of memory. */
struct allocation *allocate(size_t size, enum alloc_kind kind, struct pool *pool);

/* Records `size` bytes at `memory` as an allocation of `kind` (not counted as live: a VMM
 * mapping, whose range and chunk are). */
struct allocation *track(void *memory, size_t size, enum alloc_kind kind, struct pool *pool);

/* A new allocation of `size` bytes from `pool` that maps the memory of `source` (an import),
 * or NULL when the mapping fails. */
struct allocation *map_import(struct allocation *source, struct pool *pool);

/* ---- Kernels (cuda_code.c). ---- */

struct kernel;

/* Whether `kernel` is a live kernel of a loaded library (a misuse is noted otherwise). */
int valid_kernel(const struct kernel *kernel, const char *api);

/* The sizes of `kernel`'s parameters (through `sizes`) and their count. */
size_t kernel_param_sizes(const struct kernel *kernel, const size_t **sizes);

/* Runs `kernel` on `params` as a launch on `stream` does (`twice` doubles its floats,
 * `count_down` counts down and sets its conditional handle). */
CUresult kernel_run(const char *api, const struct kernel *kernel, void **params, void *stream);

/* ---- Graphs and capture (cuda_graph*.c). ---- */

/* Whether `stream` (a stub stream or a default-stream handle) is capturing. */
int stream_capturing(const void *stream);

/* Records a launch on the capturing `stream` as a kernel node of its capture, with the launch
 * attributes (`attributes`: `count` CUlaunchAttribute) that a node keeps. */
CUresult capture_launch(const char *api, void *stream, struct kernel *kernel,
                        const unsigned grid[3], const unsigned block[3], unsigned shared,
                        void **params, const void *attributes, unsigned count);

/* Records a 1-D copy, a 1-D memset of `count` `element`-byte words and a host function on the
 * capturing `stream` as nodes of its capture (cuda_capture_nodes.c). */
CUresult capture_copy(const char *api, void *stream, CUdeviceptr dst, CUdeviceptr src,
                      size_t bytes);
CUresult capture_memset(const char *api, void *stream, CUdeviceptr dst, unsigned value,
                        unsigned element, size_t count);
CUresult capture_host(const char *api, void *stream, void (*function)(void *), void *data);

/* Sets the value of the conditional handle `handle` (a kernel's cudaGraphSetConditional). */
void conditional_set(unsigned long long handle, unsigned value);

/* Forgets an instantiation refusal armed and not used (stub_refuse_instantiation). */
void graph_reset(void);

/* ---- Copies (cuda_copy.c). ---- */

struct array;

/* CUDA_MEMCPY3D, the same in both ABIs. */
struct memcpy3d {
    size_t src_x, src_y, src_z, src_lod;
    int src_type;
    const void *src_host;
    CUdeviceptr src_device;
    struct array *src_array;
    void *reserved0;
    size_t src_pitch, src_height;
    size_t dst_x, dst_y, dst_z, dst_lod;
    int dst_type;
    void *dst_host;
    CUdeviceptr dst_device;
    struct array *dst_array;
    void *reserved1;
    size_t dst_pitch, dst_height;
    size_t width, height, depth;
};

/* Does the copy `p` at once, as queued on `stream` (checking both sides first). */
CUresult copy_3d(const char *api, const struct memcpy3d *p, void *stream);

/* ---- Arrays as texture and surface resources (cuda_copy.c). ---- */

/* Checks that `handle` is a live array (`mipmapped` 0) or mipmapped array (1); a surface
 * needs an array made with CUDA_ARRAY3D_SURFACE_LDST (`surface` 1). */
CUresult check_array_resource(const void *handle, int mipmapped, int surface, const char *api);

/* Adds `delta` to the textures and surfaces reading the array or mipmapped array `handle`
 * (destroying it while one does is a misuse). */
void use_array_resource(void *handle, int mipmapped, int delta);

/* ---- Shareable pools (cuda_ipc.c). ---- */

/* Forgets the state of the last case (the process the tests play). */
void ipc_reset(void);

/* The prefix of the memfd names of exported handles (pools, VMM chunks), whose descriptors
 * open in the process are counted (K_FD). */
#define SHARED_FD_PREFIX "cuda-safe-stub-"

/* A new memfd named SHARED_FD_PREFIX `what`, holding `size` bytes of `record`; -1 on failure. */
int export_fd(const char *what, const void *record, size_t size);

/* Reads `size` bytes of the record an exported descriptor holds; 0 on success. */
int read_fd_record(int fd, void *record, size_t size);

#pragma GCC visibility pop

#endif
