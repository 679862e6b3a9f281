/*
 * Host functions, and the GPU's progress as the completion tests need it.
 *
 * The stub runs work at once, as it is queued (outside the asynchronous mode of cuda_gpu.c, where
 * a stream's worker runs it), so every event has finished as soon as it is recorded and a host
 * function runs inside cuLaunchHostFunc. stub_hold_gpu(1) holds the GPU
 * instead: an event recorded from then on answers CUDA_ERROR_NOT_READY to cuEventQuery, so does
 * cuStreamQuery for a stream given work from then on, and a host function queued from then on
 * waits. stub_hold_gpu(0) releases it: those events finish
 * and the waiting host functions run, in their order, on the releasing thread (as the driver
 * runs them on a thread of its own), outside the stub's lock. A blocking wait while the GPU
 * is held (a stream, context or held event synchronized) is a misuse: on a GPU whose work can
 * only finish once the waiting thread lets it, it would never return.
 */
#include "cuda_stub.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int gpu_held;

#define MAX_HELD 4096

struct held_function {
    void (*function)(void *);
    void *data;
};

static struct held_function held[MAX_HELD];
static size_t held_count;

void note_queued(const void *stream) {
    if (gpu_held && (uintptr_t)stream > 2)
        ((struct stream *)stream)->held_work = 1;
}

void note_wait_while_held(const char *api) {
    if (gpu_held)
        stub_misuse_note("%s while the GPU is held: it would wait forever", api);
}

struct host_call {
    void (*function)(void *);
    void *data;
};

static void run_host(void *args) {
    const struct host_call *call = args;
    call->function(call->data);
}

void host_run(const void *stream, void (*function)(void *), void *data) {
    struct host_call call = {function, data};
    gpu_submit(stream, run_host, &call, sizeof call, 0);
}

CUresult cuLaunchHostFunc(void *stream, void (*function)(void *), void *data) {
    DRIVER("cuLaunchHostFunc");
    if (stream_context(stream, "cuLaunchHostFunc") == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (function == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (stream_capturing(stream))
        return capture_host("cuLaunchHostFunc", stream, function, data);
    race_enqueue(stream, "cuLaunchHostFunc");
    if (!gpu_held) {
        host_run(stream, function, data);
        return CUDA_SUCCESS;
    }
    if (held_count == MAX_HELD) {
        stub_misuse_note("more than %d host functions queued while the GPU is held", MAX_HELD);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    held[held_count].function = function;
    held[held_count].data = data;
    held_count++;
    return CUDA_SUCCESS;
}

/* Holds the GPU's progress (1), or releases it (0): see the top of the file. */
void stub_hold_gpu(int hold) {
    struct held_function *running = NULL;
    size_t count;
    {
        STUB_LOCKED();
        if (hold) {
            gpu_held = 1;
            return;
        }
        gpu_held = 0;
        finish_held_events();
        count = held_count;
        if (count > 0) {
            running = malloc(count * sizeof held[0]);
            if (running == NULL)
                abort();
            memcpy(running, held, count * sizeof held[0]);
        }
        held_count = 0;
    }
    for (size_t i = 0; i < count; i++)
        running[i].function(running[i].data);
    free(running);
}
