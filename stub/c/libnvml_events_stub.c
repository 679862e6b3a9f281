/*
 * The fake NVML's event sets: create, register the one device for the supported kinds (clock,
 * Xid, power source, performance state), wait with a timeout, free. The tests inject events
 * (stub_nvml_inject_event), which every live set registered for their kind queues in order;
 * a wait sleeps on a condition variable until one is queued or its timeout passes, so a
 * thread that spins on nvmlEventSetWait shows as a count of calls, and one that frees a set
 * another thread waits in is a misuse.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libnvml_stub.h"

/* nvmlEventType*: the kinds the stub's device supports. */
#define SUPPORTED_EVENTS (0x4ull | 0x8ull | 0x10ull | 0x80ull)
#define SET_MAGIC 0x5E7E7E75u
#define FIRST_CAPACITY 16 /* events a set's queue holds before it first grows */

struct queued {
    unsigned long long type, data;
};

struct event_set {
    unsigned magic;
    int alive;
    unsigned long long registered; /* the kinds registered for the device */
    struct queued *queue;          /* [head, len): waiting to be delivered, oldest first */
    size_t head, len, capacity;
    int waiters;                   /* threads inside nvmlEventSetWait on this set */
    struct event_set *next;        /* every set made, newest first */
};

/* nvmlEventData_t: device, type, data, GPU instance, compute instance. */
struct event_data {
    void *device;
    unsigned long long type, data;
    unsigned gpu_instance, compute_instance;
};

static pthread_mutex_t events_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t events_queued = PTHREAD_COND_INITIALIZER;
static struct event_set *sets;
static long long live_sets;
static int waiting; /* threads inside nvmlEventSetWait, all sets */

/* Whether `set` is a live set of the stub's (a misuse is noted otherwise); events_mutex held. */
static int valid_set(const struct event_set *set, const char *api) {
    for (const struct event_set *known = sets; known != NULL; known = known->next) {
        if (known == set && set->magic == SET_MAGIC) {
            if (!set->alive)
                stub_misuse_note("%s: the event set %p was freed", api, (const void *)set);
            return set->alive;
        }
    }
    stub_misuse_note("%s: %p is not an event set", api, (const void *)set);
    return 0;
}

nvmlReturn_t nvmlDeviceGetSupportedEventTypes(void *device, unsigned long long *types) {
    NVML("nvmlDeviceGetSupportedEventTypes");
    if (!nvml_stub_valid_device(device, "nvmlDeviceGetSupportedEventTypes") || types == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *types = SUPPORTED_EVENTS;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlEventSetCreate(struct event_set **set) {
    NVML("nvmlEventSetCreate");
    if (set == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct event_set *made = calloc(1, sizeof *made);
    if (made == NULL)
        abort();
    made->magic = SET_MAGIC;
    made->alive = 1;
    pthread_mutex_lock(&events_mutex);
    made->next = sets;
    sets = made;
    live_sets++;
    pthread_mutex_unlock(&events_mutex);
    *set = made;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceRegisterEvents(void *device, unsigned long long types,
                                      struct event_set *set) {
    NVML("nvmlDeviceRegisterEvents");
    if (!nvml_stub_valid_device(device, "nvmlDeviceRegisterEvents"))
        return NVML_ERROR_INVALID_ARGUMENT;
    if ((types & ~SUPPORTED_EVENTS) != 0)
        return NVML_ERROR_NOT_SUPPORTED;
    pthread_mutex_lock(&events_mutex);
    nvmlReturn_t result = NVML_ERROR_INVALID_ARGUMENT;
    if (valid_set(set, "nvmlDeviceRegisterEvents")) {
        set->registered |= types;
        result = NVML_SUCCESS;
    }
    pthread_mutex_unlock(&events_mutex);
    return result;
}

/* The absolute time `milliseconds` from now, on the clock the condition variable uses. */
static struct timespec deadline_after(unsigned milliseconds) {
    struct timespec at;
    clock_gettime(CLOCK_REALTIME, &at);
    at.tv_sec += milliseconds / 1000;
    at.tv_nsec += (long)(milliseconds % 1000) * 1000000L;
    if (at.tv_nsec >= 1000000000L) {
        at.tv_sec++;
        at.tv_nsec -= 1000000000L;
    }
    return at;
}

nvmlReturn_t nvmlEventSetWait_v2(struct event_set *set, struct event_data *data,
                                 unsigned timeout_ms) {
    NVML("nvmlEventSetWait_v2");
    if (data == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&events_mutex);
    if (!valid_set(set, "nvmlEventSetWait_v2")) {
        pthread_mutex_unlock(&events_mutex);
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    struct timespec deadline = deadline_after(timeout_ms);
    set->waiters++;
    waiting++;
    int timed_out = 0;
    while (set->len == set->head && !timed_out)
        timed_out = pthread_cond_timedwait(&events_queued, &events_mutex, &deadline) == ETIMEDOUT;
    set->waiters--;
    waiting--;
    nvmlReturn_t result = NVML_ERROR_TIMEOUT;
    if (set->len != set->head) {
        const struct queued *event = &set->queue[set->head++];
        *data = (struct event_data){nvml_stub_device(), event->type, event->data, UINT_MAX,
                                    UINT_MAX};
        result = NVML_SUCCESS;
    }
    pthread_mutex_unlock(&events_mutex);
    return result;
}

nvmlReturn_t nvmlEventSetFree(struct event_set *set) {
    NVML("nvmlEventSetFree");
    pthread_mutex_lock(&events_mutex);
    nvmlReturn_t result = NVML_ERROR_INVALID_ARGUMENT;
    if (valid_set(set, "nvmlEventSetFree")) {
        if (set->waiters != 0)
            stub_misuse_note("nvmlEventSetFree: %d threads wait in the set", set->waiters);
        set->alive = 0;
        free(set->queue);
        set->queue = NULL;
        set->head = set->len = set->capacity = 0;
        live_sets--;
        result = NVML_SUCCESS;
    }
    pthread_mutex_unlock(&events_mutex);
    return result;
}

/* Appends an event to `set`'s queue (events_mutex held), dropping the delivered ones first. */
static void enqueue(struct event_set *set, unsigned long long type, unsigned long long data) {
    if (set->head == set->len)
        set->head = set->len = 0;
    if (set->len == set->capacity) {
        set->capacity = set->capacity == 0 ? FIRST_CAPACITY : set->capacity * 2;
        set->queue = realloc(set->queue, set->capacity * sizeof *set->queue);
        if (set->queue == NULL)
            abort();
    }
    set->queue[set->len++] = (struct queued){type, data};
}

/* ---- Control functions (exported for the tests). ---- */

/* An event of `type` (one nvmlEventType bit) with `data` on the device: queued by every live
 * set registered for it, and their waiters woken. Returns how many sets queued it. */
int stub_nvml_inject_event(unsigned long long type, unsigned long long data) {
    int queued = 0;
    pthread_mutex_lock(&events_mutex);
    for (struct event_set *set = sets; set != NULL; set = set->next) {
        if (set->alive && (set->registered & type) != 0) {
            enqueue(set, type, data);
            queued++;
        }
    }
    pthread_cond_broadcast(&events_queued);
    pthread_mutex_unlock(&events_mutex);
    return queued;
}

/* Event sets made and not freed. */
long long stub_nvml_event_sets(void) {
    pthread_mutex_lock(&events_mutex);
    long long live = live_sets;
    pthread_mutex_unlock(&events_mutex);
    return live;
}

/* Threads inside nvmlEventSetWait_v2 now. */
int stub_nvml_waiting(void) {
    pthread_mutex_lock(&events_mutex);
    int now = waiting;
    pthread_mutex_unlock(&events_mutex);
    return now;
}
