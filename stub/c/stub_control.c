/*
 * The stub's bookkeeping and the control functions the tests call: call counts and the call
 * log, injected faults, live-object counts and misuse reports.
 */
#define _GNU_SOURCE /* PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stub.h"

#define MAX_NAMES 512
#define MAX_FAULTS 8
#define MAX_LOG 4096

struct counter {
    const char *name;
    unsigned long calls;
};

struct fault {
    char name[64];
    int code;
    int remaining; /* calls of `name` until it fires; 0 when not armed */
};

struct log_entry {
    const char *name;
    long arg;
};

static struct counter counters[MAX_NAMES];
static size_t counter_count;
static struct fault faults[MAX_FAULTS];
static struct log_entry call_log[MAX_LOG];
static size_t log_len;
static int log_overflow;
static long live[K_COUNT];
static unsigned long misuse_count;
static char last_misuse[512];

static const char *const KIND_NAMES[K_COUNT] = {
    "context", "green", "stream", "event", "pool",    "alloc", "library", "program",
    "nvml",    "range", "chunk",  "array", "texture", "graph", "userobj", "fd",
};

static pthread_mutex_t stub_mutex = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static __thread int lock_depth; /* how many times this thread holds stub_mutex */

int stub_lock(void) {
    pthread_mutex_lock(&stub_mutex);
    lock_depth++;
    return 1;
}

void stub_unlock(int *held) {
    (void)held;
    lock_depth--;
    pthread_mutex_unlock(&stub_mutex);
}

int stub_unlock_all(void) {
    int depth = lock_depth;
    for (int i = 0; i < depth; i++)
        stub_unlock(NULL);
    return depth;
}

void stub_relock(int depth) {
    for (int i = 0; i < depth; i++)
        stub_lock();
}

static struct counter *counter_for(const char *name) {
    for (size_t i = 0; i < counter_count; i++) {
        if (strcmp(counters[i].name, name) == 0)
            return &counters[i];
    }
    if (counter_count == MAX_NAMES)
        return NULL;
    counters[counter_count].name = name; /* names are string literals */
    counters[counter_count].calls = 0;
    return &counters[counter_count++];
}

int stub_enter(const char *name, long arg) {
    STUB_LOCKED();
    struct counter *counter = counter_for(name);
    if (counter != NULL)
        counter->calls++;
    if (log_len < MAX_LOG) {
        call_log[log_len].name = name;
        call_log[log_len].arg = arg;
        log_len++;
    } else {
        log_overflow = 1;
    }
    for (size_t i = 0; i < MAX_FAULTS; i++) {
        struct fault *fault = &faults[i];
        if (fault->remaining > 0 && strcmp(fault->name, name) == 0 && --fault->remaining == 0)
            return fault->code;
    }
    return 0;
}

void stub_misuse_note(const char *format, ...) {
    STUB_LOCKED();
    va_list args;
    va_start(args, format);
    vsnprintf(last_misuse, sizeof last_misuse, format, args);
    va_end(args);
    misuse_count++;
}

void stub_live_add(enum kind kind, long delta) {
    STUB_LOCKED();
    live[kind] += delta;
}

/* With CUDA_SAFE_STUB_CALL_LOG set to a path, the call log is written there (one name per
 * line) when the process exits: how a program run as its own process, which cannot call the
 * control functions, shows the calls it made. */
__attribute__((destructor)) static void write_call_log(void) {
    const char *path = getenv("CUDA_SAFE_STUB_CALL_LOG");
    if (path == NULL || *path == '\0')
        return;
    FILE *file = fopen(path, "w");
    if (file == NULL) {
        fprintf(stderr, "stub: cannot write the call log to %s\n", path);
        return;
    }
    for (size_t i = 0; i < log_len; i++)
        fprintf(file, "%s\n", call_log[i].name);
    if (log_overflow)
        fprintf(file, "(more than %d calls: the rest were not logged)\n", MAX_LOG);
    fclose(file);
}

/* ---- Control functions (exported for the tests). ---- */

/* Disarms every fault and clears the call counts, the log and the misuse count; resets the
 * checkpoint state. Live objects are kept. */
void stub_reset(void) {
    STUB_LOCKED();
    memset(faults, 0, sizeof faults);
    for (size_t i = 0; i < counter_count; i++)
        counters[i].calls = 0;
    log_len = 0;
    log_overflow = 0;
    misuse_count = 0;
    last_misuse[0] = '\0';
    stub_driver_reset();
}

/* Arms a fault: the `nth` call (from 1) of `name` from now on returns `code` without doing
 * anything. Returns 0, or -1 when every slot is taken or the arguments are unusable. */
int stub_fail(const char *name, int code, int nth) {
    STUB_LOCKED();
    if (name == NULL || nth < 1 || strlen(name) >= sizeof faults[0].name)
        return -1;
    for (size_t i = 0; i < MAX_FAULTS; i++) {
        if (faults[i].remaining == 0) {
            strcpy(faults[i].name, name);
            faults[i].code = code;
            faults[i].remaining = nth;
            return 0;
        }
    }
    return -1;
}

/* Disarms every fault that has not fired. */
void stub_disarm(void) {
    STUB_LOCKED();
    memset(faults, 0, sizeof faults);
}

/* How many armed faults have not fired yet. */
int stub_faults_pending(void) {
    STUB_LOCKED();
    int pending = 0;
    for (size_t i = 0; i < MAX_FAULTS; i++)
        pending += faults[i].remaining > 0;
    return pending;
}

/* Calls of `name` since the last reset. */
unsigned long long stub_calls(const char *name) {
    STUB_LOCKED();
    for (size_t i = 0; i < counter_count; i++) {
        if (strcmp(counters[i].name, name) == 0)
            return counters[i].calls;
    }
    return 0;
}

/* The call log since the last reset or stub_log_clear: its length (-1 after an overflow), and
 * each entry's name and argument. */
long long stub_log_len(void) {
    STUB_LOCKED();
    return log_overflow ? -1 : (long long)log_len;
}

const char *stub_log_name(size_t index) {
    STUB_LOCKED();
    return index < log_len ? call_log[index].name : NULL;
}

long long stub_log_arg(size_t index) {
    STUB_LOCKED();
    return index < log_len ? call_log[index].arg : 0;
}

void stub_log_clear(void) {
    STUB_LOCKED();
    log_len = 0;
    log_overflow = 0;
}

/* Live objects of a kind ("stream", "alloc", ...); -1 for an unknown kind. */
long long stub_live(const char *kind) {
    STUB_LOCKED();
    for (size_t i = 0; i < K_COUNT; i++) {
        if (strcmp(KIND_NAMES[i], kind) == 0)
            return i == K_FD ? open_pool_fds() : live[i];
    }
    return -1;
}

/* Misuses since the last reset, and the last one's description. */
unsigned long long stub_misuse(void) {
    STUB_LOCKED();
    return misuse_count;
}

const char *stub_last_misuse(void) {
    STUB_LOCKED();
    return last_misuse;
}
