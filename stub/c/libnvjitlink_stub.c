/*
 * A fake nvJitLink: links "complete" whatever they were given, and give back a small CUBIN (an
 * ELF header for EM_CUDA: ET_REL for an incremental link, `-r`, else ET_EXEC), PTX text, or
 * LTO-IR for an `-lto` link. Its version is the tests' to set (13.0 by default); like the real
 * libraries before 13.2 it refuses `-r` as an unrecognized option. The options of the last
 * link are kept for the tests (stub_nvjitlink_last_options).
 */
#include <stdlib.h>
#include <string.h>

#include "stub.h"

typedef int nvJitLinkResult;

enum {
    NVJITLINK_SUCCESS = 0,
    NVJITLINK_ERROR_UNRECOGNIZED_OPTION = 1,
    NVJITLINK_ERROR_INVALID_INPUT = 3,
    NVJITLINK_ERROR_LTO_NOT_ENABLED = 18,
};

#define LINK_MAGIC 0x4A4C4E4Bu

struct link {
    unsigned magic;
    int alive;
    int lto;
    int incremental;
    int completed;
    unsigned inputs;
};

static unsigned version_major = 13, version_minor = 0;
static char last_options[1024];

static const char PTX[] = "//\n// cuda-safe stub nvJitLink PTX\n//\n.version 8.5\n"
                          ".target sm_90\n.address_size 64\n";
static const unsigned char LTOIR[16] = {'L', 'I', 'N', 'K', 'E', 'D', ' ', 'I', 'R', 0};
static const char INFO_LOG[] = "info    : stub link\n";

/* Sets the version nvJitLinkVersion reports. */
void stub_nvjitlink_set_version(unsigned major, unsigned minor) {
    STUB_LOCKED();
    version_major = major;
    version_minor = minor;
}

/* The options of the last nvJitLinkCreate, joined by spaces. */
const char *stub_nvjitlink_last_options(void) { return last_options; }

static int valid(const struct link *link, const char *api) {
    if (link == NULL || link->magic != LINK_MAGIC || !link->alive) {
        stub_misuse_note("%s: %p is no live nvJitLink handle", api, (const void *)link);
        return 0;
    }
    return 1;
}

nvJitLinkResult nvJitLinkVersion(unsigned *major, unsigned *minor) {
    ENTER("nvJitLinkVersion");
    if (major == NULL || minor == NULL)
        return NVJITLINK_ERROR_INVALID_INPUT;
    STUB_LOCKED();
    *major = version_major;
    *minor = version_minor;
    return NVJITLINK_SUCCESS;
}

nvJitLinkResult nvJitLinkCreate(struct link **handle, unsigned count, const char **options) {
    ENTER("nvJitLinkCreate");
    if (handle == NULL || (count > 0 && options == NULL))
        return NVJITLINK_ERROR_INVALID_INPUT;
    STUB_LOCKED();
    int lto = 0, incremental = 0;
    last_options[0] = '\0';
    for (unsigned i = 0; i < count; i++) {
        if (strlen(last_options) + strlen(options[i]) + 2 < sizeof last_options) {
            if (i > 0)
                strcat(last_options, " ");
            strcat(last_options, options[i]);
        }
        lto |= strcmp(options[i], "-lto") == 0;
        incremental |= strcmp(options[i], "-r") == 0;
    }
    if (incremental && (version_major < 13 || (version_major == 13 && version_minor < 2)))
        return NVJITLINK_ERROR_UNRECOGNIZED_OPTION;
    struct link *made = calloc(1, sizeof *made);
    if (made == NULL)
        abort();
    made->magic = LINK_MAGIC;
    made->alive = 1;
    made->lto = lto;
    made->incremental = incremental;
    *handle = made;
    return NVJITLINK_SUCCESS;
}

/* The handle is marked destroyed, never freed, so a later use is caught. */
nvJitLinkResult nvJitLinkDestroy(struct link **handle) {
    ENTER("nvJitLinkDestroy");
    if (handle == NULL || !valid(*handle, "nvJitLinkDestroy"))
        return NVJITLINK_ERROR_INVALID_INPUT;
    (*handle)->alive = 0;
    *handle = NULL;
    return NVJITLINK_SUCCESS;
}

nvJitLinkResult nvJitLinkAddData(struct link *link, int kind, const void *data, size_t size,
                                 const char *name) {
    ENTER("nvJitLinkAddData");
    (void)kind;
    (void)name;
    if (!valid(link, "nvJitLinkAddData") || data == NULL || size == 0)
        return NVJITLINK_ERROR_INVALID_INPUT;
    link->inputs++;
    return NVJITLINK_SUCCESS;
}

nvJitLinkResult nvJitLinkComplete(struct link *link) {
    ENTER("nvJitLinkComplete");
    if (!valid(link, "nvJitLinkComplete") || link->inputs == 0)
        return NVJITLINK_ERROR_INVALID_INPUT;
    link->completed = 1;
    return NVJITLINK_SUCCESS;
}

/* The CUBIN: an ELF64 header for EM_CUDA (190), relocatable (1) after -r, else executable. */
static void cubin(const struct link *link, unsigned char out[64]) {
    memset(out, 0, 64);
    memcpy(out, "\x7f" "ELF\x02\x01\x01\x33", 8);
    out[16] = link->incremental ? 1 : 2;
    out[18] = 190;
    out[20] = 1;
    out[52] = 64;
}

nvJitLinkResult nvJitLinkGetLinkedCubinSize(struct link *link, size_t *size) {
    ENTER("nvJitLinkGetLinkedCubinSize");
    if (!valid(link, "nvJitLinkGetLinkedCubinSize") || !link->completed || size == NULL)
        return NVJITLINK_ERROR_INVALID_INPUT;
    *size = 64;
    return NVJITLINK_SUCCESS;
}

nvJitLinkResult nvJitLinkGetLinkedCubin(struct link *link, void *out) {
    ENTER("nvJitLinkGetLinkedCubin");
    if (!valid(link, "nvJitLinkGetLinkedCubin") || !link->completed || out == NULL)
        return NVJITLINK_ERROR_INVALID_INPUT;
    cubin(link, out);
    return NVJITLINK_SUCCESS;
}

nvJitLinkResult nvJitLinkGetLinkedPtxSize(struct link *link, size_t *size) {
    ENTER("nvJitLinkGetLinkedPtxSize");
    if (!valid(link, "nvJitLinkGetLinkedPtxSize") || !link->completed || size == NULL)
        return NVJITLINK_ERROR_INVALID_INPUT;
    *size = sizeof PTX;
    return NVJITLINK_SUCCESS;
}

nvJitLinkResult nvJitLinkGetLinkedPtx(struct link *link, char *out) {
    ENTER("nvJitLinkGetLinkedPtx");
    if (!valid(link, "nvJitLinkGetLinkedPtx") || !link->completed || out == NULL)
        return NVJITLINK_ERROR_INVALID_INPUT;
    memcpy(out, PTX, sizeof PTX);
    return NVJITLINK_SUCCESS;
}

nvJitLinkResult nvJitLinkGetLinkedLTOIRSize(struct link *link, size_t *size) {
    ENTER("nvJitLinkGetLinkedLTOIRSize");
    if (!valid(link, "nvJitLinkGetLinkedLTOIRSize") || !link->completed || size == NULL)
        return NVJITLINK_ERROR_INVALID_INPUT;
    if (!link->lto)
        return NVJITLINK_ERROR_LTO_NOT_ENABLED;
    *size = sizeof LTOIR;
    return NVJITLINK_SUCCESS;
}

nvJitLinkResult nvJitLinkGetLinkedLTOIR(struct link *link, void *out) {
    ENTER("nvJitLinkGetLinkedLTOIR");
    if (!valid(link, "nvJitLinkGetLinkedLTOIR") || !link->completed || out == NULL)
        return NVJITLINK_ERROR_INVALID_INPUT;
    if (!link->lto)
        return NVJITLINK_ERROR_LTO_NOT_ENABLED;
    memcpy(out, LTOIR, sizeof LTOIR);
    return NVJITLINK_SUCCESS;
}

static nvJitLinkResult log_size(struct link *link, const char *api, size_t *size,
                                const char *text) {
    if (!valid(link, api) || size == NULL)
        return NVJITLINK_ERROR_INVALID_INPUT;
    *size = strlen(text) + 1;
    return NVJITLINK_SUCCESS;
}

static nvJitLinkResult log_text(struct link *link, const char *api, char *out, const char *text) {
    if (!valid(link, api) || out == NULL)
        return NVJITLINK_ERROR_INVALID_INPUT;
    strcpy(out, text);
    return NVJITLINK_SUCCESS;
}

nvJitLinkResult nvJitLinkGetErrorLogSize(struct link *link, size_t *size) {
    ENTER("nvJitLinkGetErrorLogSize");
    return log_size(link, "nvJitLinkGetErrorLogSize", size, "");
}

nvJitLinkResult nvJitLinkGetErrorLog(struct link *link, char *out) {
    ENTER("nvJitLinkGetErrorLog");
    return log_text(link, "nvJitLinkGetErrorLog", out, "");
}

nvJitLinkResult nvJitLinkGetInfoLogSize(struct link *link, size_t *size) {
    ENTER("nvJitLinkGetInfoLogSize");
    return log_size(link, "nvJitLinkGetInfoLogSize", size, INFO_LOG);
}

nvJitLinkResult nvJitLinkGetInfoLog(struct link *link, char *out) {
    ENTER("nvJitLinkGetInfoLog");
    return log_text(link, "nvJitLinkGetInfoLog", out, INFO_LOG);
}
