/*
 * A fake nvFatbin 13.0, loaded through CUDA_SAFE_LIBNVFATBIN: handles are created with the
 * options nvFatbin knows (an unknown one fails creation, and the handle is handed out all the
 * same, as nvFatbin does), entries are checked as nvFatbin checks its arguments and kept, and
 * the fatbin is laid out as nvFatbin lays it out (a 16-byte header, then each entry's 64-byte
 * part header and its payload padded to 8 bytes), uncompressed, so the crate's loader check
 * walks every CUBIN in it. nvFatbinGet before nvFatbinSize fails, as in nvFatbin.
 *
 * nvfatbin_stub_live() counts live handles; nvfatbin_stub_last() describes the last handle
 * built: its options and each entry as added (kind, architecture, name, size, JIT options).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stub.h"

typedef int nvFatbinResult;

enum {
    NVFATBIN_SUCCESS = 0,
    NVFATBIN_ERROR_INTERNAL = 1,
    NVFATBIN_ERROR_NULL_POINTER = 5,
    NVFATBIN_ERROR_UNRECOGNIZED_OPTION = 8,
    NVFATBIN_ERROR_INVALID_ARCH = 9,
    NVFATBIN_ERROR_EMPTY_INPUT = 11,
};

#define FATBIN_MAGIC 0x46415442u
#define MAX_ENTRIES 16

struct entry {
    uint16_t kind; /* the part kind: 1 PTX, 2 ELF, 4 LTO-IR (the stub's) */
    unsigned arch;
    unsigned char *bytes;
    size_t size;
};

struct fatbin {
    unsigned magic;
    int alive;
    int sized; /* nvFatbinSize was asked since the last entry */
    size_t count;
    struct entry entries[MAX_ENTRIES];
};

static long live_handles;
static char last[4096];

long long nvfatbin_stub_live(void) {
    STUB_LOCKED();
    return live_handles;
}

const char *nvfatbin_stub_last(void) {
    STUB_LOCKED();
    return last;
}

/* Appends to the description of the last handle. */
__attribute__((format(printf, 1, 2))) static void note(const char *format, ...) {
    size_t used = strlen(last);
    va_list args;
    va_start(args, format);
    vsnprintf(last + used, sizeof last - used, format, args);
    va_end(args);
}

static int valid(const struct fatbin *fatbin, const char *api) {
    if (fatbin == NULL || fatbin->magic != FATBIN_MAGIC) {
        stub_misuse_note("%s: %p is not an nvFatbin handle", api, (const void *)fatbin);
        return 0;
    }
    if (!fatbin->alive) {
        stub_misuse_note("%s: the nvFatbin handle %p was destroyed", api, (const void *)fatbin);
        return 0;
    }
    return 1;
}

static int known_option(const char *option) {
    static const char *const EXACT[] = {"-32", "-64", "-c", "-compress=true", "-compress=false",
                                        "-compress-all", "-concat", "-cuda", "-opencl", "-g",
                                        "-host=linux", "-host=windows", "-host=mac"};
    for (size_t i = 0; i < sizeof EXACT / sizeof EXACT[0]; i++) {
        if (strcmp(option, EXACT[i]) == 0)
            return 1;
    }
    return strncmp(option, "-compress-mode=", 15) == 0;
}

/* The architecture's number (90 for "90" and "90a"), or 0 for one that is not digits. */
static unsigned arch_number(const char *arch) {
    if (arch == NULL || arch[0] < '0' || arch[0] > '9')
        return 0;
    char *end;
    unsigned long number = strtoul(arch, &end, 10);
    if ((*end != '\0' && strcmp(end, "a") != 0 && strcmp(end, "f") != 0) || number < 10)
        return 0;
    return (unsigned)number;
}

static const char *const MESSAGES[] = {
    NULL,
    "stub: internal error",
    "stub: elf arch does not match user-specified arch",
    "stub: elf size doesn't match user-specified size",
    "stub: could not find ptx version",
    "stub: input contained null pointer",
    "stub: compression failed",
    "stub: compressed size is bigger than max size of compressed size field",
    "stub: unknown option",
    "stub: invalid architecture",
    "stub: invalid NVVM input",
    "stub: empty input",
};

const char *nvFatbinGetErrorString(nvFatbinResult result) {
    stub_enter("nvFatbinGetErrorString", result);
    if (result >= 0 && (size_t)result < sizeof MESSAGES / sizeof MESSAGES[0])
        return MESSAGES[result];
    return "stub: unknown error";
}

nvFatbinResult nvFatbinVersion(unsigned *major, unsigned *minor) {
    ENTER("nvFatbinVersion");
    if (major == NULL || minor == NULL)
        return NVFATBIN_ERROR_NULL_POINTER;
    *major = 13;
    *minor = 0;
    return NVFATBIN_SUCCESS;
}

nvFatbinResult nvFatbinCreate(struct fatbin **handle, const char **options, size_t count) {
    STUB_LOCKED();
    ENTER("nvFatbinCreate");
    if (handle == NULL || (count > 0 && options == NULL))
        return NVFATBIN_ERROR_NULL_POINTER;
    struct fatbin *made = calloc(1, sizeof *made);
    if (made == NULL)
        abort();
    made->magic = FATBIN_MAGIC;
    made->alive = 1;
    live_handles++;
    *handle = made;
    strcpy(last, "create");
    int refused = 0;
    for (size_t i = 0; i < count; i++) {
        note(" %s", options[i]);
        refused |= !known_option(options[i]);
    }
    return refused ? NVFATBIN_ERROR_UNRECOGNIZED_OPTION : NVFATBIN_SUCCESS;
}

/* The handle is marked destroyed, never freed, so a later use is caught. */
nvFatbinResult nvFatbinDestroy(struct fatbin **handle) {
    STUB_LOCKED();
    ENTER("nvFatbinDestroy");
    if (handle == NULL || !valid(*handle, "nvFatbinDestroy"))
        return NVFATBIN_ERROR_NULL_POINTER;
    for (size_t i = 0; i < (*handle)->count; i++)
        free((*handle)->entries[i].bytes);
    (*handle)->alive = 0;
    *handle = NULL;
    live_handles--;
    return NVFATBIN_SUCCESS;
}

/* Checks an entry as nvFatbin does and keeps a copy (`kind` 0: a host object's relocatable
 * PTX, which has no architecture), noting it in the description. */
static nvFatbinResult add(struct fatbin *fatbin, const char *api, uint16_t kind,
                          const void *code, size_t size, const char *arch,
                          const char *identifier, const char *options) {
    if (!valid(fatbin, api))
        return NVFATBIN_ERROR_NULL_POINTER;
    if (code == NULL || identifier == NULL || (kind != 0 && arch == NULL))
        return NVFATBIN_ERROR_NULL_POINTER;
    if (size == 0)
        return NVFATBIN_ERROR_EMPTY_INPUT;
    unsigned number = kind == 0 ? 0 : arch_number(arch);
    if (kind != 0 && number == 0)
        return NVFATBIN_ERROR_INVALID_ARCH;
    if (fatbin->count == MAX_ENTRIES)
        return NVFATBIN_ERROR_INTERNAL;
    struct entry *entry = &fatbin->entries[fatbin->count++];
    entry->kind = kind == 0 ? 1 : kind; /* relocatable PTX is PTX */
    entry->arch = number;
    entry->bytes = malloc(size);
    if (entry->bytes == NULL)
        abort();
    memcpy(entry->bytes, code, size);
    entry->size = size;
    fatbin->sized = 0;
    static const char *const KINDS[] = {"reloc", "ptx", "cubin", "", "ltoir"};
    note("|%s %s %s %zu", KINDS[kind], kind == 0 ? "-" : arch, identifier, size);
    if (options != NULL)
        note(" [%s]", options);
    return NVFATBIN_SUCCESS;
}

nvFatbinResult nvFatbinAddPTX(struct fatbin *handle, const char *code, size_t size,
                              const char *arch, const char *identifier, const char *options) {
    STUB_LOCKED();
    ENTER("nvFatbinAddPTX");
    if (options == NULL)
        return NVFATBIN_ERROR_NULL_POINTER;
    if (code != NULL && size > 0 && code[size - 1] != '\0')
        stub_misuse_note("nvFatbinAddPTX: the size does not count the PTX's NUL terminator");
    return add(handle, "nvFatbinAddPTX", 1, code, size, arch, identifier, options);
}

nvFatbinResult nvFatbinAddCubin(struct fatbin *handle, const void *code, size_t size,
                                const char *arch, const char *identifier) {
    STUB_LOCKED();
    ENTER("nvFatbinAddCubin");
    return add(handle, "nvFatbinAddCubin", 2, code, size, arch, identifier, NULL);
}

nvFatbinResult nvFatbinAddLTOIR(struct fatbin *handle, const void *code, size_t size,
                                const char *arch, const char *identifier, const char *options) {
    STUB_LOCKED();
    ENTER("nvFatbinAddLTOIR");
    if (options == NULL)
        return NVFATBIN_ERROR_NULL_POINTER;
    return add(handle, "nvFatbinAddLTOIR", 4, code, size, arch, identifier, options);
}

nvFatbinResult nvFatbinAddReloc(struct fatbin *handle, const void *code, size_t size) {
    STUB_LOCKED();
    ENTER("nvFatbinAddReloc");
    return add(handle, "nvFatbinAddReloc", 0, code, size, NULL, "", NULL);
}

static size_t padded(size_t size) { return (size + 7) & ~(size_t)7; }

nvFatbinResult nvFatbinSize(struct fatbin *handle, size_t *size) {
    STUB_LOCKED();
    ENTER("nvFatbinSize");
    if (!valid(handle, "nvFatbinSize") || size == NULL)
        return NVFATBIN_ERROR_NULL_POINTER;
    size_t total = 16;
    for (size_t i = 0; i < handle->count; i++)
        total += 64 + padded(handle->entries[i].size);
    *size = total;
    handle->sized = 1;
    return NVFATBIN_SUCCESS;
}

static void put(unsigned char *at, uint64_t value, size_t bytes) {
    for (size_t i = 0; i < bytes; i++)
        at[i] = (unsigned char)(value >> (8 * i));
}

nvFatbinResult nvFatbinGet(struct fatbin *handle, void *buffer) {
    STUB_LOCKED();
    ENTER("nvFatbinGet");
    if (!valid(handle, "nvFatbinGet") || buffer == NULL)
        return NVFATBIN_ERROR_NULL_POINTER;
    if (!handle->sized) {
        stub_misuse_note("nvFatbinGet: nvFatbinSize was not asked first");
        return NVFATBIN_ERROR_INTERNAL;
    }
    unsigned char *out = buffer;
    size_t body = 0;
    for (size_t i = 0; i < handle->count; i++)
        body += 64 + padded(handle->entries[i].size);
    memset(out, 0, 16 + body);
    put(out, 0xBA55ED50u, 4);
    put(out + 4, 1, 2);
    put(out + 6, 16, 2);
    put(out + 8, body, 8);
    unsigned char *at = out + 16;
    for (size_t i = 0; i < handle->count; i++) {
        const struct entry *entry = &handle->entries[i];
        put(at, entry->kind, 2);
        put(at + 2, 0x0101, 2);
        put(at + 4, 64, 4);
        put(at + 8, padded(entry->size), 8);
        put(at + 28, entry->arch, 4);
        put(at + 40, 0x11, 8); /* 64-bit, Linux, not compressed */
        memcpy(at + 64, entry->bytes, entry->size);
        at += 64 + padded(entry->size);
    }
    return NVFATBIN_SUCCESS;
}
