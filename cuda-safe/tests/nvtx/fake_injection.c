/* A fake NVTX tool for tests/nvtx: an injection library as Nsight's are, loaded through
 * NVTX_INJECTION64_PATH. Its InitializeInjectionNvtx2 asks the client for its export tables
 * and fills the CORE and CORE2 modules' slots with functions that log each call, one line
 * each, read back through fake_nvtx_log(). It checks what a real tool relies on: the table
 * sizes, the attributes' version and size, and push/pop nesting per thread.
 *
 * FAKE_NVTX_REFUSE=1 makes the initialisation return 0 (the tool refuses to attach);
 * FAKE_NVTX_CORE_ONLY=1 leaves the CORE2 (domain) slots empty, as a tool that ignores domains. */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

typedef void (*fn_ptr)(void);
typedef fn_ptr **function_table;
typedef const void *(*get_export_table_fn)(uint32_t id);

typedef struct {
    size_t struct_size;
    int (*get_module_function_table)(int module, function_table *out_table, unsigned int *out_size);
} callbacks_table;

typedef struct {
    size_t struct_size;
    uint32_t version;
    uint32_t reserved0;
    void (*set_injection_nvtx_version)(uint32_t version);
} version_table;

typedef struct {
    uint16_t version;
    uint16_t size;
    uint32_t category;
    int32_t color_type;
    uint32_t color;
    int32_t payload_type;
    int32_t reserved0;
    union {
        uint64_t u64;
        int64_t i64;
        double f64;
        uint32_t u32;
        int32_t i32;
        float f32;
    } payload;
    int32_t message_type;
    const void *message;
} attributes;

typedef struct {
    int id;
    char text[64];
} registered;

typedef struct {
    int id;
    char name[64];
} domain;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char log_text[1 << 16];
static size_t log_len;
static int depth;
static uint64_t next_range = 100;
static int next_domain = 1;
static int next_string = 1;

static void note(const char *format, ...) {
    va_list args;
    va_start(args, format);
    pthread_mutex_lock(&lock);
    if (log_len < sizeof log_text - 1) {
        int n = vsnprintf(log_text + log_len, sizeof log_text - log_len, format, args);
        if (n > 0) {
            log_len += (size_t)n;
            if (log_len > sizeof log_text - 2)
                log_len = sizeof log_text - 2;
        }
        log_text[log_len++] = '\n';
        log_text[log_len] = 0;
    }
    pthread_mutex_unlock(&lock);
    va_end(args);
}

const char *fake_nvtx_log(void) { return log_text; }

/* The attributes as text: "msg=... color=... cat=... payload=...". */
static void describe(const attributes *a, char *out, size_t size) {
    char message[400];
    if (a->version != 3 || a->size != sizeof(attributes)) {
        snprintf(out, size, "BAD ATTRIBUTES version=%u size=%u", a->version, a->size);
        return;
    }
    if (a->message_type == 1)
        snprintf(message, sizeof message, "%s", (const char *)a->message);
    else if (a->message_type == 3)
        snprintf(message, sizeof message, "reg:%d(%s)", ((const registered *)a->message)->id,
                 ((const registered *)a->message)->text);
    else
        snprintf(message, sizeof message, "none(type %d)", a->message_type);
    char color[16] = "none";
    if (a->color_type == 1)
        snprintf(color, sizeof color, "%08x", a->color);
    char payload[48] = "none";
    switch (a->payload_type) {
    case 1: snprintf(payload, sizeof payload, "u64:%llu", (unsigned long long)a->payload.u64); break;
    case 2: snprintf(payload, sizeof payload, "i64:%lld", (long long)a->payload.i64); break;
    case 3: snprintf(payload, sizeof payload, "f64:%g", a->payload.f64); break;
    case 4: snprintf(payload, sizeof payload, "u32:%u", a->payload.u32); break;
    case 5: snprintf(payload, sizeof payload, "i32:%d", a->payload.i32); break;
    case 6: snprintf(payload, sizeof payload, "f32:%g", (double)a->payload.f32); break;
    }
    snprintf(out, size, "%s color=%s cat=%u payload=%s", message, color, a->category, payload);
}

static void mark_ex(const attributes *a) {
    char text[512];
    describe(a, text, sizeof text);
    note("mark_ex %s", text);
}
static void mark_a(const char *message) {
    if (strlen(message) > 64)
        note("mark long:%zu", strlen(message));
    else
        note("mark %s", message);
}
static uint64_t range_start_ex(const attributes *a) {
    char text[512];
    describe(a, text, sizeof text);
    uint64_t id = __atomic_fetch_add(&next_range, 1, __ATOMIC_SEQ_CST);
    note("start_ex %s -> %llu", text, (unsigned long long)id);
    return id;
}
static uint64_t range_start_a(const char *message) {
    uint64_t id = __atomic_fetch_add(&next_range, 1, __ATOMIC_SEQ_CST);
    note("start %s -> %llu", message, (unsigned long long)id);
    return id;
}
static void range_end(uint64_t id) { note("end %llu", (unsigned long long)id); }
static int range_push_ex(const attributes *a) {
    char text[512];
    describe(a, text, sizeof text);
    note("push_ex %s depth=%d", text, depth);
    return depth++;
}
static int range_push_a(const char *message) {
    note("push %s depth=%d", message, depth);
    return depth++;
}
static int range_pop(void) {
    if (depth == 0) {
        note("pop UNDERFLOW");
        return -1;
    }
    note("pop depth=%d", --depth);
    return depth;
}
static void name_category_a(uint32_t category, const char *name) {
    note("name_category %u %s", category, name);
}

static void domain_mark_ex(domain *d, const attributes *a) {
    char text[512];
    describe(a, text, sizeof text);
    note("domain %s mark_ex %s", d->name, text);
}
static uint64_t domain_range_start_ex(domain *d, const attributes *a) {
    char text[512];
    describe(a, text, sizeof text);
    uint64_t id = __atomic_fetch_add(&next_range, 1, __ATOMIC_SEQ_CST);
    note("domain %s start_ex %s -> %llu", d->name, text, (unsigned long long)id);
    return id;
}
static void domain_range_end(domain *d, uint64_t id) {
    note("domain %s end %llu", d->name, (unsigned long long)id);
}
static int domain_range_push_ex(domain *d, const attributes *a) {
    char text[512];
    describe(a, text, sizeof text);
    note("domain %s push_ex %s depth=%d", d->name, text, depth);
    return depth++;
}
static int domain_range_pop(domain *d) {
    if (depth == 0) {
        note("domain %s pop UNDERFLOW", d->name);
        return -1;
    }
    note("domain %s pop depth=%d", d->name, --depth);
    return depth;
}
static void domain_name_category_a(domain *d, uint32_t category, const char *name) {
    note("domain %s name_category %u %s", d->name, category, name);
}
/* Registered strings live as long as the tool (the process), as a real tool's do. */
static registered strings[64];

static registered *domain_register_string_a(domain *d, const char *text) {
    pthread_mutex_lock(&lock);
    if (next_string > (int)(sizeof strings / sizeof strings[0])) {
        pthread_mutex_unlock(&lock);
        note("TOO MANY STRINGS");
        return NULL;
    }
    registered *r = &strings[next_string - 1];
    r->id = next_string++;
    pthread_mutex_unlock(&lock);
    snprintf(r->text, sizeof r->text, "%s", text);
    note("domain %s register %s -> %d", d->name, text, r->id);
    return r;
}
static domain *domain_create_a(const char *name) {
    domain *d = calloc(1, sizeof *d);
    d->id = next_domain++;
    snprintf(d->name, sizeof d->name, "%s", name);
    note("domain_create %s -> %d", name, d->id);
    return d;
}
static void domain_destroy(domain *d) {
    note("domain_destroy %s", d->name);
    free(d);
}

static void put(fn_ptr *const *table, unsigned int size, unsigned int id, fn_ptr f) {
    if (id < size && table[id])
        *table[id] = f;
    else
        note("MISSING SLOT %u", id);
}

int InitializeInjectionNvtx2(get_export_table_fn get_export_table) {
    const char *refuse = getenv("FAKE_NVTX_REFUSE");
    if (refuse && refuse[0] == '1') {
        note("init refused");
        return 0;
    }
    const callbacks_table *callbacks = get_export_table(1);
    const version_table *version = get_export_table(3);
    if (!callbacks || callbacks->struct_size < sizeof *callbacks || get_export_table(2) ||
        !version || version->struct_size < sizeof *version) {
        note("BAD EXPORT TABLES");
        return 0;
    }
    version->set_injection_nvtx_version(3);
    function_table core, core2, cuda;
    unsigned int core_size = 0, core2_size = 0, cuda_size = 0;
    if (!callbacks->get_module_function_table(1, &core, &core_size) ||
        !callbacks->get_module_function_table(5, &core2, &core2_size) ||
        !callbacks->get_module_function_table(2, &cuda, &cuda_size) ||
        callbacks->get_module_function_table(42, &cuda, &cuda_size)) {
        note("BAD MODULES");
        return 0;
    }
    /* The trailing null after each table. */
    note("init version=%u core=%u core2=%u cuda=%u ends=%d", version->version, core_size,
         core2_size, cuda_size, core[core_size] == NULL && core2[core2_size] == NULL && core[0] == NULL);
    put(core, core_size, 1, (fn_ptr)mark_ex);
    put(core, core_size, 2, (fn_ptr)mark_a);
    put(core, core_size, 4, (fn_ptr)range_start_ex);
    put(core, core_size, 5, (fn_ptr)range_start_a);
    put(core, core_size, 7, (fn_ptr)range_end);
    put(core, core_size, 8, (fn_ptr)range_push_ex);
    put(core, core_size, 9, (fn_ptr)range_push_a);
    put(core, core_size, 11, (fn_ptr)range_pop);
    put(core, core_size, 12, (fn_ptr)name_category_a);
    const char *core_only = getenv("FAKE_NVTX_CORE_ONLY");
    if (core_only && core_only[0] == '1')
        return 1;
    put(core2, core2_size, 1, (fn_ptr)domain_mark_ex);
    put(core2, core2_size, 2, (fn_ptr)domain_range_start_ex);
    put(core2, core2_size, 3, (fn_ptr)domain_range_end);
    put(core2, core2_size, 4, (fn_ptr)domain_range_push_ex);
    put(core2, core2_size, 5, (fn_ptr)domain_range_pop);
    put(core2, core2_size, 8, (fn_ptr)domain_name_category_a);
    put(core2, core2_size, 10, (fn_ptr)domain_register_string_a);
    put(core2, core2_size, 12, (fn_ptr)domain_create_a);
    put(core2, core2_size, 14, (fn_ptr)domain_destroy);
    return 1;
}
