/*
 * The stub GPU's asynchronous mode (stub_gpu_async): each stream's queue is run by a worker
 * thread of its own, so that work left unordered across streams gives wrong data.
 *
 * By default the stub runs work as it is queued (gpu_submit runs it at once, on the calling
 * thread). stub_gpu_async(1, micros) turns the mode on: work queued from then on (copies,
 * memsets, kernels, graph nodes, the libraries' calls, host functions, event records and
 * waits) goes into its stream's queue, and the stream's worker runs it in order; each copy,
 * memset, kernel or library call first takes `micros` (a sleep: the time the GPU needs), so
 * another stream's work queued after it and not ordered after it may run first. An event's
 * record finishes when its worker reaches it; a stream's wait for an event holds its worker
 * until the record queued before the wait has finished; the synchronizations and queries answer
 * from the workers' progress. The legacy default stream waits for the context's blocking
 * streams and they for it; the per-thread default stream is one queue per context, shared by
 * the threads. stub_gpu_delay queues a pause on one stream (a long kernel): a test makes one
 * stream late with it. A copy with a pageable host side is synchronous, as the driver's is: it
 * waits for its stream, then copies on the calling thread.
 *
 * The checks (handles, ranges) and the race checker's bookkeeping stay on the calling thread,
 * at queue time; the workers touch only the memory the work writes and the state below, under
 * gpu_mutex, never the stub's lock (a synchronization releases that lock while it waits, so
 * other threads can call the driver meanwhile). Work that reads the stub's own state as it runs
 * (a conditional node, the count_down kernel) waits for its stream and runs on the calling
 * thread (gpu_settle, gpu_inline). stub_gpu_async(0, 0) waits until every queue is empty and
 * turns the mode off. Queues are never freed (a stream's worker ends once its stream is
 * destroyed and its queue empty), as the stub frees no object.
 */
#include "cuda_stub.h"

#include <pthread.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* What a queue serves: a created stream (blocking or not), or a default stream. */
enum queue_kind { Q_BLOCKING, Q_NON_BLOCKING, Q_LEGACY, Q_PER_THREAD };

struct gpu_op {
    struct gpu_op *next;
    gpu_work run;
    int timed; /* takes the op time first */
    alignas(max_align_t) unsigned char args[];
};

struct gpu_queue {
    const struct context *context;
    enum queue_kind kind;
    struct gpu_op *head, *tail;
    unsigned long queued, done;
    int closed;
    struct gpu_queue *next; /* every queue, newest first */
};

/* A point of a queue: `done` reaching `at`. */
struct mark {
    struct gpu_queue *queue;
    unsigned long at;
};

static pthread_mutex_t gpu_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gpu_cond = PTHREAD_COND_INITIALIZER;
static struct gpu_queue *queues;
static int async_on;              /* written under both locks; read under either */
static unsigned long op_micros;   /* under gpu_mutex */
__thread int gpu_inline;

static void pause_for(unsigned long micros) {
    struct timespec left = {(time_t)(micros / 1000000), (long)(micros % 1000000) * 1000};
    while (micros > 0 && nanosleep(&left, &left) != 0) {
    }
}

/* A worker: runs its queue's work in order until the queue is closed and empty. */
static void *serve(void *arg) {
    struct gpu_queue *queue = arg;
    pthread_mutex_lock(&gpu_mutex);
    for (;;) {
        while (queue->head == NULL && !queue->closed)
            pthread_cond_wait(&gpu_cond, &gpu_mutex);
        struct gpu_op *op = queue->head;
        if (op == NULL)
            break;
        unsigned long micros = op->timed ? op_micros : 0;
        pthread_mutex_unlock(&gpu_mutex);
        pause_for(micros);
        op->run(op->args);
        pthread_mutex_lock(&gpu_mutex);
        queue->head = op->next;
        if (queue->head == NULL)
            queue->tail = NULL;
        queue->done++;
        pthread_cond_broadcast(&gpu_cond);
        free(op);
    }
    pthread_mutex_unlock(&gpu_mutex);
    return NULL;
}

/* A new queue of `context`, with its worker started (under gpu_mutex). */
static struct gpu_queue *new_queue(const struct context *context, enum queue_kind kind) {
    struct gpu_queue *queue = calloc(1, sizeof *queue);
    if (queue == NULL)
        abort();
    queue->context = context;
    queue->kind = kind;
    queue->next = queues;
    queues = queue;
    pthread_t thread;
    if (pthread_create(&thread, NULL, serve, queue) != 0 || pthread_detach(thread) != 0)
        abort();
    return queue;
}

/* The queue of the stream `handle` (checked by the caller), made when `make` (under both
 * locks); NULL when it has none. */
static struct gpu_queue *queue_of(const void *handle, int make) {
    if ((uintptr_t)handle > 2) {
        struct stream *stream = (struct stream *)handle;
        if (stream->queue == NULL && make)
            stream->queue = new_queue(stream->context, stream->flags & 1u ? Q_NON_BLOCKING
                                                                          : Q_BLOCKING);
        return stream->queue;
    }
    int per_thread = (uintptr_t)handle == 2;
    struct gpu_queue **slot = per_thread ? &current->per_thread_queue : &current->legacy_queue;
    if (*slot == NULL && make)
        *slot = new_queue(current, per_thread ? Q_PER_THREAD : Q_LEGACY);
    return *slot;
}

static int busy(const struct gpu_queue *queue) { return queue->done < queue->queued; }

static struct gpu_op *new_op(gpu_work run, const void *args, size_t size, int timed) {
    struct gpu_op *op = malloc(sizeof *op + size);
    if (op == NULL)
        abort();
    op->next = NULL;
    op->run = run;
    op->timed = timed;
    memcpy(op->args, args, size);
    return op;
}

static void push(struct gpu_queue *queue, struct gpu_op *op) {
    if (queue->tail != NULL)
        queue->tail->next = op;
    else
        queue->head = op;
    queue->tail = op;
    queue->queued++;
    pthread_cond_broadcast(&gpu_cond);
}

/* The most queues one barrier waits for (the legacy stream's, over busy blocking streams). */
#define MAX_MARKS 64

struct barrier {
    size_t count;
    struct mark marks[MAX_MARKS];
};

/* A barrier's work: waits until every mark is reached. */
static void reach(void *args) {
    const struct barrier *barrier = args;
    pthread_mutex_lock(&gpu_mutex);
    for (size_t i = 0; i < barrier->count; i++) {
        while (barrier->marks[i].queue->done < barrier->marks[i].at)
            pthread_cond_wait(&gpu_cond, &gpu_mutex);
    }
    pthread_mutex_unlock(&gpu_mutex);
}

/* Queues on `queue`, before its next work, a wait for the default stream's implicit order:
 * the legacy stream's work after the blocking streams' work queued so far, theirs after the
 * legacy stream's (under gpu_mutex). */
static void order_legacy(struct gpu_queue *queue) {
    struct barrier barrier = {0};
    for (struct gpu_queue *other = queues; other != NULL && barrier.count < MAX_MARKS;
         other = other->next) {
        if (other == queue || other->context != queue->context || !busy(other))
            continue;
        int blocking = other->kind == Q_BLOCKING || other->kind == Q_PER_THREAD;
        int mine = queue->kind == Q_BLOCKING || queue->kind == Q_PER_THREAD;
        if ((queue->kind == Q_LEGACY && blocking) || (other->kind == Q_LEGACY && mine))
            barrier.marks[barrier.count++] = (struct mark){other, other->queued};
    }
    if (barrier.count > 0)
        push(queue, new_op(reach, &barrier, sizeof barrier, 0));
}

void gpu_submit(const void *stream, gpu_work run, void *args, size_t size, int timed) {
    if (!async_on || gpu_inline) {
        run(args);
        return;
    }
    pthread_mutex_lock(&gpu_mutex);
    struct gpu_queue *queue = queue_of(stream, 1);
    order_legacy(queue);
    push(queue, new_op(run, args, size, timed));
    pthread_mutex_unlock(&gpu_mutex);
}

/* Waits until every mark is reached, with the stub's lock released meanwhile. */
static void await_marks(const struct mark *marks, size_t count) {
    int depth = stub_unlock_all();
    pthread_mutex_lock(&gpu_mutex);
    for (size_t i = 0; i < count; i++) {
        while (marks[i].queue->done < marks[i].at)
            pthread_cond_wait(&gpu_cond, &gpu_mutex);
    }
    pthread_mutex_unlock(&gpu_mutex);
    stub_relock(depth);
}

void gpu_settle(const void *stream) {
    if (gpu_inline)
        return;
    pthread_mutex_lock(&gpu_mutex);
    struct gpu_queue *queue = queue_of(stream, 0);
    struct mark mark = {queue, queue == NULL ? 0 : queue->queued};
    pthread_mutex_unlock(&gpu_mutex);
    if (queue != NULL)
        await_marks(&mark, 1);
}

int gpu_stream_idle(const void *stream) {
    pthread_mutex_lock(&gpu_mutex);
    const struct gpu_queue *queue = queue_of(stream, 0);
    int idle = queue == NULL || !busy(queue);
    pthread_mutex_unlock(&gpu_mutex);
    return idle;
}

void gpu_sync_context(const struct context *context) {
    size_t count = 0;
    pthread_mutex_lock(&gpu_mutex);
    for (struct gpu_queue *queue = queues; queue != NULL; queue = queue->next)
        count += context == NULL || queue->context == context;
    struct mark *marks = calloc(count + 1, sizeof *marks);
    if (marks == NULL)
        abort();
    count = 0;
    for (struct gpu_queue *queue = queues; queue != NULL; queue = queue->next) {
        if (context == NULL || queue->context == context)
            marks[count++] = (struct mark){queue, queue->queued};
    }
    pthread_mutex_unlock(&gpu_mutex);
    await_marks(marks, count);
    free(marks);
}

void gpu_close(struct stream *stream) {
    pthread_mutex_lock(&gpu_mutex);
    if (stream->queue != NULL)
        stream->queue->closed = 1;
    pthread_cond_broadcast(&gpu_cond);
    pthread_mutex_unlock(&gpu_mutex);
}

/* ---- Events. ---- */

/* The event `event` stands for (itself, unless opened from an IPC handle). */
static struct event *origin(const struct event *event) {
    while (event->ipc_source != NULL)
        event = event->ipc_source;
    return (struct event *)event;
}

/* An event's record or wait as queued: the record it is, or waits for. */
struct ticket {
    struct event *event;
    unsigned long number;
};

static void finish_record(void *args) {
    const struct ticket *ticket = args;
    pthread_mutex_lock(&gpu_mutex);
    if (ticket->event->gpu_finished < ticket->number)
        ticket->event->gpu_finished = ticket->number;
    pthread_cond_broadcast(&gpu_cond);
    pthread_mutex_unlock(&gpu_mutex);
}

static void await_record(void *args) {
    const struct ticket *ticket = args;
    pthread_mutex_lock(&gpu_mutex);
    while (ticket->event->gpu_finished < ticket->number)
        pthread_cond_wait(&gpu_cond, &gpu_mutex);
    pthread_mutex_unlock(&gpu_mutex);
}

void gpu_record(struct event *event, const void *stream) {
    event = origin(event);
    pthread_mutex_lock(&gpu_mutex);
    struct ticket ticket = {event, ++event->gpu_recorded};
    pthread_mutex_unlock(&gpu_mutex);
    gpu_submit(stream, finish_record, &ticket, sizeof ticket, 0);
}

void gpu_wait_event(const void *stream, struct event *event) {
    event = origin(event);
    pthread_mutex_lock(&gpu_mutex);
    struct ticket ticket = {event, event->gpu_recorded};
    pthread_mutex_unlock(&gpu_mutex);
    if (ticket.number != 0)
        gpu_submit(stream, await_record, &ticket, sizeof ticket, 0);
}

int gpu_event_done(const struct event *event) {
    event = origin(event);
    pthread_mutex_lock(&gpu_mutex);
    int done = event->gpu_finished >= event->gpu_recorded;
    pthread_mutex_unlock(&gpu_mutex);
    return done;
}

void gpu_sync_event(struct event *event) {
    event = origin(event);
    pthread_mutex_lock(&gpu_mutex);
    struct ticket ticket = {event, event->gpu_recorded};
    pthread_mutex_unlock(&gpu_mutex);
    int depth = stub_unlock_all();
    await_record(&ticket);
    stub_relock(depth);
}

/* ---- Control. ---- */

static void pause_run(void *args) {
    unsigned long micros;
    memcpy(&micros, args, sizeof micros);
    pause_for(micros);
}

/* Turns the asynchronous mode on (`on` 1, each copy, memset, kernel and library call taking
 * `micros`), or off (0: after every queue has emptied). */
void stub_gpu_async(int on, unsigned long micros) {
    STUB_LOCKED();
    if (!on)
        gpu_sync_context(NULL);
    pthread_mutex_lock(&gpu_mutex);
    async_on = on != 0;
    op_micros = on ? micros : 0;
    pthread_mutex_unlock(&gpu_mutex);
}

/* Queues a pause of `micros` on `stream` (a long kernel's time) in the asynchronous mode;
 * nothing otherwise. Returns 0, or CUDA_ERROR_INVALID_HANDLE for an unusable stream. */
int stub_gpu_delay(void *stream, unsigned long micros) {
    STUB_LOCKED();
    if (stream_context(stream, "stub_gpu_delay") == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (async_on)
        gpu_submit(stream, pause_run, &micros, sizeof micros, 0);
    return CUDA_SUCCESS;
}
