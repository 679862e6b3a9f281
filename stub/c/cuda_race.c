/*
 * The ordering race checker: a happens-before model of stream order over the stub's
 * synchronous GPU, deterministic (no thread, no timing).
 *
 * The stub still runs every operation at once, as it is queued; this file remembers the order
 * the real driver would guarantee and reports any two accesses of one allocation that it does
 * not order, at least one of them a write. The actors are the host (one actor for all host
 * threads: slot 0) and every stream (a stub stream, and per context the legacy default stream
 * and the per-thread default stream, which stands for every thread's), each with a vector
 * clock (a logical clock per actor, growing as streams appear):
 *
 * - each operation queued on a stream (a launch of `twice`, a copy, a memset, a stream-ordered
 *   allocation or free, a host function, an event record) first joins the host's clock into
 *   the stream's (work queued after the host saw something finish starts after it), then
 *   ticks the stream's own entry: the operation is the event (stream, tick);
 * - the legacy default stream's implicit synchronization is modelled exactly: an operation on
 *   the legacy stream of a context joins the clocks of its blocking streams (flags 0, the
 *   per-thread default stream among them), and one on a blocking stream joins the legacy
 *   stream's; non-blocking streams (the crate's default) join neither;
 * - cuEventRecord keeps a copy of the stream's clock in the event; cuStreamWaitEvent joins it
 *   into the waiting stream (an event never recorded orders nothing; an IPC event opened in
 *   "another process" waits for its source's record);
 * - the host joins: a stream's clock at cuStreamSynchronize and at a cuStreamQuery that
 *   answers CUDA_SUCCESS, an event's at cuEventSynchronize and at a cuEventQuery that answers
 *   CUDA_SUCCESS, and every stream of the current context's at cuCtxSynchronize. A host
 *   function learns nothing for the host: it runs on the driver's thread, and the crate's
 *   futures confirm with cuEventQuery;
 * - per allocation (coarse: the whole allocation, an import's accesses counting on the
 *   exported allocation): the last write (or allocation, or free) and the reads since, one per
 *   actor. A write, free or read not ordered after a conflicting earlier access (the earlier
 *   event's tick is above the accessor's clock entry for the earlier actor) is a race. The
 *   host's own accesses are its synchronous calls (cuMemAlloc_v2, cuMemFree_v2, cuMemFreeHost,
 *   cuMemHostAlloc, cuMemAllocManaged), and those a test declares (stub_race_host_access).
 *   cuMemFree_v2 is taken as not synchronizing (conservative: the crate must wait first).
 *
 * Not modelled: CUDA arrays (2-D and 3-D copies check their linear sides only), the stub
 * cuBLAS/cuRAND's accesses, managed memory's host accesses, VMM mappings other than as
 * allocations, graphs (the stub has none). Past MAX_SLOTS streams the checker turns itself off
 * (stub_races_state says so).
 *
 * stub_slow_gpu(1) makes the GPU slow for cuStreamQuery: a stream with work the host has not
 * seen finish answers CUDA_ERROR_NOT_READY, so that the crate's "the old stream has drained"
 * shortcut (Buffer::set_stream) is not taken and its wait is what orders the work.
 *
 * The tests read the races through stub_races (the count since the last stub_races_reset or
 * stub_reset), stub_first_race (the first one's description); the process's total is printed
 * on stderr at exit when not zero, so a race in any test binary is seen.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_stub.h"

#define MAX_SLOTS 4096
#define MAX_READS 8
#define MAX_CONTEXTS 64

struct vc {
    unsigned n;
    unsigned *v;
};

enum slot_kind { S_HOST, S_LEGACY, S_PER_THREAD, S_BLOCKING, S_NON_BLOCKING };

struct slot {
    struct vc clock;
    const void *context;
    enum slot_kind kind;
};

/* One access: who (slot), when (its tick), what (api, a string literal). */
struct access {
    unsigned slot, tick;
    const char *api;
    enum race_access kind;
};

struct race_record {
    struct access write; /* slot 0 tick 0: none */
    struct access reads[MAX_READS];
    unsigned read_count;
};

struct default_streams {
    const void *context;
    unsigned legacy, per_thread;
};

static struct slot *slots;
static unsigned slot_count;
static int saturated;
static struct default_streams defaults[MAX_CONTEXTS];
static unsigned default_count;
static int slow_gpu;
static unsigned long long races, races_total;
static char first_race[512], first_ever[512];

/* ---- Vector clocks. ---- */

static unsigned vc_get(const struct vc *clock, unsigned slot) {
    return slot < clock->n ? clock->v[slot] : 0;
}

static void vc_grow(struct vc *clock, unsigned n) {
    if (n <= clock->n)
        return;
    unsigned *grown = realloc(clock->v, n * sizeof *grown);
    if (grown == NULL)
        abort();
    memset(grown + clock->n, 0, (n - clock->n) * sizeof *grown);
    clock->v = grown;
    clock->n = n;
}

static void vc_join(struct vc *into, const struct vc *from) {
    vc_grow(into, from->n);
    for (unsigned i = 0; i < from->n; i++)
        if (from->v[i] > into->v[i])
            into->v[i] = from->v[i];
}

static void vc_copy(struct vc *into, const struct vc *from) {
    into->n = 0;
    vc_grow(into, from->n);
    if (from->n > 0)
        memcpy(into->v, from->v, from->n * sizeof *from->v);
}

/* ---- Actors. ---- */

/* The actors' table, made on first use with the host in slot 0. */
static void init_slots(void) {
    if (slots != NULL)
        return;
    slots = calloc(MAX_SLOTS, sizeof *slots);
    if (slots == NULL)
        abort();
    slots[0].kind = S_HOST;
    slot_count = 1;
}

static unsigned new_slot(const void *context, enum slot_kind kind) {
    init_slots();
    if (slot_count == MAX_SLOTS) {
        saturated = 1;
        return 0;
    }
    unsigned slot = slot_count++;
    slots[slot].context = context;
    slots[slot].kind = kind;
    return slot;
}

static struct vc *host_clock(void) {
    init_slots();
    return &slots[0].clock;
}

/* The slot of the stream `handle` (a stub stream or a default-stream handle of the current
 * context); 0 when the checker is off or the stream unusable. */
static unsigned slot_of(const void *handle) {
    host_clock();
    if (saturated)
        return 0;
    if ((uintptr_t)handle <= 2) {
        if (current == NULL)
            return 0;
        struct default_streams *d = NULL;
        for (unsigned i = 0; i < default_count; i++)
            if (defaults[i].context == current)
                d = &defaults[i];
        if (d == NULL) {
            if (default_count == MAX_CONTEXTS) {
                saturated = 1;
                return 0;
            }
            d = &defaults[default_count++];
            d->context = current;
            d->legacy = new_slot(current, S_LEGACY);
            d->per_thread = new_slot(current, S_PER_THREAD);
        }
        return (uintptr_t)handle == 2 ? d->per_thread : d->legacy;
    }
    struct stream *stream = (struct stream *)handle;
    if (stream->race_slot == 0)
        stream->race_slot = new_slot(stream->context, stream->flags & 1u ? S_NON_BLOCKING
                                                                          : S_BLOCKING);
    return saturated ? 0 : stream->race_slot;
}

static void describe_actor(char *out, size_t size, unsigned slot) {
    static const char *const KINDS[] = {"the host", "legacy default stream",
                                        "per-thread default stream", "blocking stream",
                                        "stream"};
    if (slot == 0)
        snprintf(out, size, "the host");
    else
        snprintf(out, size, "%s #%u", KINDS[slots[slot].kind], slot);
}

unsigned race_enqueue(const void *stream, const char *api) {
    (void)api;
    note_queued(stream);
    unsigned slot = slot_of(stream);
    if (slot == 0)
        return RACE_OFF;
    struct slot *s = &slots[slot];
    vc_join(&s->clock, host_clock());
    if (s->kind == S_LEGACY) {
        for (unsigned i = 1; i < slot_count; i++)
            if (slots[i].context == s->context &&
                (slots[i].kind == S_BLOCKING || slots[i].kind == S_PER_THREAD))
                vc_join(&s->clock, &slots[i].clock);
    } else if (s->kind == S_BLOCKING || s->kind == S_PER_THREAD) {
        for (unsigned i = 0; i < default_count; i++)
            if (defaults[i].context == s->context)
                vc_join(&s->clock, &slots[defaults[i].legacy].clock);
    }
    vc_grow(&s->clock, slot + 1);
    s->clock.v[slot]++;
    return slot;
}

unsigned race_host(const char *api) {
    (void)api;
    struct vc *host = host_clock();
    if (saturated)
        return RACE_OFF;
    vc_grow(host, 1);
    host->v[0]++;
    return 0;
}

/* ---- Accesses. ---- */

static const char *const ACCESS_NAMES[] = {"reads", "writes", "frees", "allocates"};

static void note_race(const struct access *earlier, const struct access *later,
                      CUdeviceptr ptr) {
    races++;
    races_total++;
    if (races > 1)
        return;
    char a[64], b[64];
    describe_actor(a, sizeof a, earlier->slot);
    describe_actor(b, sizeof b, later->slot);
    snprintf(first_race, sizeof first_race,
             "%s on %s %s the allocation at %#llx, not ordered after %s on %s, which %s it",
             later->api, b, ACCESS_NAMES[later->kind], ptr, earlier->api, a,
             ACCESS_NAMES[earlier->kind]);
    if (races_total == 1)
        memcpy(first_ever, first_race, sizeof first_ever);
}

/* Whether `earlier` happens before the actor whose clock is `clock`. */
static int ordered(const struct access *earlier, unsigned slot, const struct vc *clock) {
    return earlier->slot == slot || earlier->tick <= vc_get(clock, earlier->slot);
}

void race_access(unsigned slot, CUdeviceptr ptr, size_t bytes, enum race_access kind,
                 const char *api) {
    if (slot == RACE_OFF || saturated || bytes == 0)
        return;
    struct allocation *a = find_live_allocation(ptr);
    if (a == NULL)
        return; /* pageable host memory: not tracked */
    if (a->source != NULL && kind == RACE_FREE)
        kind = RACE_READ; /* freeing an import unmaps it: the exporter's memory stays */
    while (a->source != NULL)
        a = a->source;
    if (a->race == NULL) {
        a->race = calloc(1, sizeof *a->race);
        if (a->race == NULL)
            abort();
    }
    struct race_record *r = a->race;
    const struct vc *clock = &slots[slot].clock;
    struct access now = {slot, vc_get(clock, slot), api, kind};
    if (r->write.api != NULL && !ordered(&r->write, slot, clock))
        note_race(&r->write, &now, a->ptr);
    if (kind == RACE_READ) {
        for (unsigned i = 0; i < r->read_count; i++) {
            if (r->reads[i].slot == slot) {
                r->reads[i] = now;
                return;
            }
        }
        if (r->read_count < MAX_READS)
            r->reads[r->read_count++] = now;
        else
            r->reads[MAX_READS - 1] = now; /* the oldest kept are checked; rare */
        return;
    }
    for (unsigned i = 0; i < r->read_count; i++)
        if (!ordered(&r->reads[i], slot, clock))
            note_race(&r->reads[i], &now, a->ptr);
    r->write = now;
    r->read_count = 0;
}

/* ---- Events and synchronization. ---- */

void race_record(struct event *event, const void *stream) {
    unsigned slot = race_enqueue(stream, "cuEventRecord");
    if (slot == RACE_OFF)
        return;
    if (event->race == NULL) {
        event->race = calloc(1, sizeof *event->race);
        if (event->race == NULL)
            abort();
    }
    vc_copy(event->race, &slots[slot].clock);
}

void race_wait(const void *stream, const struct event *event) {
    while (event->ipc_source != NULL)
        event = event->ipc_source;
    unsigned slot = slot_of(stream);
    if (slot == 0 || event->race == NULL)
        return;
    vc_join(&slots[slot].clock, event->race);
}

void race_sync_stream(const void *stream) {
    unsigned slot = slot_of(stream);
    if (slot != 0)
        vc_join(host_clock(), &slots[slot].clock);
}

void race_sync_event(const struct event *event) {
    while (event->ipc_source != NULL)
        event = event->ipc_source;
    if (!saturated && event->race != NULL)
        vc_join(host_clock(), event->race);
}

void race_sync_context(const struct context *context) {
    host_clock();
    for (unsigned i = 1; i < slot_count; i++)
        if (slots[i].context == context)
            vc_join(host_clock(), &slots[i].clock);
}

void race_forget_event(struct event *event) {
    if (event->race != NULL) {
        free(event->race->v);
        free(event->race);
        event->race = NULL;
    }
}

int race_stream_busy(const void *stream) {
    if (!slow_gpu)
        return 0;
    unsigned slot = slot_of(stream);
    return slot != 0 && vc_get(&slots[slot].clock, slot) > vc_get(host_clock(), slot);
}

void race_reset(void) {
    races = 0;
    first_race[0] = '\0';
    slow_gpu = 0;
}

/* ---- Control functions (exported for the tests). ---- */

/* Races since the last reset (stub_races_reset or stub_reset). */
unsigned long long stub_races(void) {
    STUB_LOCKED();
    return races;
}

/* The first race's description since the last reset ("" when none). */
const char *stub_first_race(void) {
    STUB_LOCKED();
    return first_race;
}

/* Forgets the races counted so far (not the order the checker knows); makes the GPU prompt. */
void stub_races_reset(void) {
    STUB_LOCKED();
    race_reset();
}

/* 1 while the checker runs, 0 once it has turned itself off (too many streams). */
int stub_races_state(void) {
    STUB_LOCKED();
    return !saturated;
}

/* Makes the GPU slow (1) for cuStreamQuery, or prompt again (0): see the top. */
void stub_slow_gpu(int on) {
    STUB_LOCKED();
    slow_gpu = on;
}

/* Declares that the host reads (0) or writes (1) `bytes` at `ptr` now: how a test tells the
 * checker about its own accesses of host-accessible memory. */
void stub_race_host_access(unsigned long long ptr, size_t bytes, int write) {
    STUB_LOCKED();
    unsigned slot = race_host("the test");
    race_access(slot, ptr, bytes, write ? RACE_WRITE : RACE_READ,
                write ? "a host write" : "a host read");
}

__attribute__((destructor)) static void report_races(void) {
    if (saturated)
        fprintf(stderr, "stub: the race checker turned itself off past %d streams\n", MAX_SLOTS);
    if (races_total == 0)
        return;
    fprintf(stderr, "stub: %llu ordering races in this process; the first: %s\n", races_total,
            first_ever);
}
