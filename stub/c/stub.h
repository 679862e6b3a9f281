/*
 * A fake CUDA driver, NVRTC and NVML for CPU tests of cuda-safe: shared declarations.
 *
 * The three libraries are compiled into one shared object, loaded through CUDA_SAFE_LIBCUDA,
 * CUDA_SAFE_LIBNVRTC and CUDA_SAFE_LIBNVML at once, so one set of control functions (stub_*)
 * sees every call. No CUDA header is used: handles are pointers to the stub's own objects,
 * results are ints with the header's values. Calls from several threads are serialized by one
 * lock (STUB_LOCKED).
 */
#ifndef CUDA_SAFE_STUB_H
#define CUDA_SAFE_STUB_H

#include <stddef.h>

/* Kinds of objects whose live count the tests read (stub_live). */
enum kind {
    K_CONTEXT, /* primary-context retains */
    K_GREEN,   /* green contexts */
    K_STREAM,
    K_EVENT,
    K_POOL,    /* created pools (not the default pool) */
    K_ALLOC,   /* pool, pinned and managed allocations */
    K_LIBRARY,
    K_PROGRAM, /* NVRTC programs */
    K_NVML,    /* NVML initialisations */
    K_RANGE,   /* VMM address reservations */
    K_CHUNK,   /* VMM physical allocations (made or imported) */
    K_ARRAY,   /* CUDA arrays and mipmapped arrays (not their levels) */
    K_TEXTURE, /* texture and surface objects */
    K_GRAPH,   /* graphs (made, cloned or captured; not the bodies nodes own) and executables */
    K_USEROBJ, /* user objects */
    K_FD,      /* open file descriptors of exported pools and chunks (counted when read) */
    K_COUNT
};

/* The stub's one lock, recursive: every driver entry point holds it for its whole call, and
 * the bookkeeping below takes it too, so a test may call the driver from several threads (the
 * completion reactor's thread and the test's). STUB_LOCKED() holds it until the end of the
 * enclosing block. */
int stub_lock(void);
void stub_unlock(int *held);
#define STUB_LOCKED()                                                                          \
    __attribute__((cleanup(stub_unlock), unused)) int stub_locked_ = stub_lock()

/* Releases the stub's lock as often as this thread holds it (for a blocking wait, so that other
 * threads can call the driver meanwhile) and returns how often that was, for stub_relock. */
int stub_unlock_all(void);
void stub_relock(int depth);

/* Counts and logs a call of `name` (with `arg`, for calls whose argument tells the tests
 * something), and returns the code of an armed fault it triggers, or 0. */
int stub_enter(const char *name, long arg);

/* Records a misuse of the API (a dead or foreign handle, a call needing a context with none
 * current, a range past an allocation): a bug of the caller, which the tests assert never
 * happens. */
void stub_misuse_note(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* Adds `delta` to the live count of `kind`. */
void stub_live_add(enum kind kind, long delta);

/* Counts the call, returning the injected code when a fault fires. */
#define ENTER(name)                                                                            \
    do {                                                                                       \
        int injected_ = stub_enter(name, 0);                                                   \
        if (injected_ != 0)                                                                    \
            return injected_;                                                                  \
    } while (0)

/* Resets the driver's own state between cases (the checkpoint state machine, the process the
 * tests play). */
void stub_driver_reset(void);

/* The file descriptors of exported pools and VMM chunks open in this process now (K_FD). */
__attribute__((visibility("hidden"))) long open_pool_fds(void);

#endif
