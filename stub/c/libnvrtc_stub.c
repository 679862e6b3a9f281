/*
 * A fake NVRTC 12.9: programs are created, "compiled" (a source containing `#error` fails
 * with a log), and give back a small PTX text, a CUBIN that starts like an ELF file, LTO-IR
 * when `-dlto` was asked, and lowered names ("_Zstub_" and the expression, which the driver
 * stub knows as kernels). A compile with `--pch` or `--create-pch=` "creates" a PCH of
 * PCH_BYTES, which fits a PCH heap of at least that size (64 MiB at first). Its version is
 * 12.9, or what CUDA_SAFE_STUB_NVRTC_VERSION says ("MAJOR.MINOR": another NVRTC in the same
 * file, for the program cache's notes).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stub.h"

typedef int nvrtcResult;

enum {
    NVRTC_SUCCESS = 0,
    NVRTC_ERROR_INVALID_INPUT = 3,
    NVRTC_ERROR_INVALID_PROGRAM = 4,
    NVRTC_ERROR_COMPILATION = 6,
    NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION = 8,
    NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION = 9,
    NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID = 10,
    NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED = 13,
    NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED = 14,
};

/* The PCH every PCH-creating compile makes, and the process's PCH heap. */
#define PCH_BYTES ((size_t)1 << 20)
static size_t pch_heap = (size_t)64 << 20;

#define PROGRAM_MAGIC 0x4E565254u
#define MAX_EXPRESSIONS 16

struct program {
    unsigned magic;
    int alive;
    char *source;
    int compiled;
    int virtual_arch; /* compiled for compute_XX: PTX only */
    int lto;
    int pch_create; /* compiled with --pch or --create-pch= */
    size_t expression_count;
    char *expressions[MAX_EXPRESSIONS];
    char *lowered[MAX_EXPRESSIONS];
    const char *log;
};

static const char PTX[] = "//\n// cuda-safe stub PTX\n//\n.version 8.5\n.target sm_90\n"
                          ".address_size 64\n\n.visible .entry twice(\n)\n{\n\tret;\n}\n";
/* A minimal CUBIN the crate's image check accepts: an ELF64 little-endian header for EM_CUDA
 * (190) with a 64-byte header size and no sections or segments. */
static const unsigned char CUBIN[64] = {
    0x7f, 'E', 'L', 'F', 2, 1, 1, 0x33, [18] = 190, [20] = 1, [52] = 64};
static const unsigned char LTOIR[32] = {'L', 'T', 'O', 'I', 'R', 0};
static const char COMPILE_LOG[] = "stub.cu(1): error: #error directive\n";
static const int ARCHS[] = {75, 80, 86, 87, 89, 90, 100, 120};

static char *copy(const char *text) {
    char *made = malloc(strlen(text) + 1);
    if (made == NULL)
        abort();
    return strcpy(made, text);
}

static int valid(const struct program *program, const char *api) {
    if (program == NULL || program->magic != PROGRAM_MAGIC) {
        stub_misuse_note("%s: %p is not an NVRTC program", api, (const void *)program);
        return 0;
    }
    if (!program->alive) {
        stub_misuse_note("%s: the NVRTC program %p was destroyed", api, (const void *)program);
        return 0;
    }
    return 1;
}

struct code_text {
    int code;
    const char *text;
};

static const struct code_text ERRORS[] = {
    {0, "NVRTC_SUCCESS"},
    {1, "NVRTC_ERROR_OUT_OF_MEMORY"},
    {2, "NVRTC_ERROR_PROGRAM_CREATION_FAILURE"},
    {3, "NVRTC_ERROR_INVALID_INPUT"},
    {4, "NVRTC_ERROR_INVALID_PROGRAM"},
    {5, "NVRTC_ERROR_INVALID_OPTION"},
    {6, "NVRTC_ERROR_COMPILATION"},
    {7, "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE"},
    {8, "NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION"},
    {9, "NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION"},
    {10, "NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID"},
    {11, "NVRTC_ERROR_INTERNAL_ERROR"},
    {12, "NVRTC_ERROR_TIME_FILE_WRITE_FAILED"},
    {13, "NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED"},
    {14, "NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED"},
    {15, "NVRTC_ERROR_PCH_CREATE"},
};

/* As NVRTC: the enumerator's name, or a fixed text for an unknown code (it cannot fail). */
const char *nvrtcGetErrorString(nvrtcResult result) {
    stub_enter("nvrtcGetErrorString", 0);
    for (size_t i = 0; i < sizeof ERRORS / sizeof ERRORS[0]; i++) {
        if (ERRORS[i].code == result)
            return ERRORS[i].text;
    }
    return "NVRTC_ERROR unknown";
}

nvrtcResult nvrtcVersion(int *major, int *minor) {
    ENTER("nvrtcVersion");
    if (major == NULL || minor == NULL)
        return NVRTC_ERROR_INVALID_INPUT;
    const char *forced = getenv("CUDA_SAFE_STUB_NVRTC_VERSION");
    if (forced != NULL && sscanf(forced, "%d.%d", major, minor) == 2)
        return NVRTC_SUCCESS;
    *major = 12;
    *minor = 9;
    return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetNumSupportedArchs(int *count) {
    ENTER("nvrtcGetNumSupportedArchs");
    if (count == NULL)
        return NVRTC_ERROR_INVALID_INPUT;
    *count = (int)(sizeof ARCHS / sizeof ARCHS[0]);
    return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetSupportedArchs(int *archs) {
    ENTER("nvrtcGetSupportedArchs");
    if (archs == NULL)
        return NVRTC_ERROR_INVALID_INPUT;
    memcpy(archs, ARCHS, sizeof ARCHS);
    return NVRTC_SUCCESS;
}

nvrtcResult nvrtcCreateProgram(struct program **program, const char *source, const char *name,
                               int header_count, const char *const *headers,
                               const char *const *include_names) {
    ENTER("nvrtcCreateProgram");
    (void)name;
    if (program == NULL || source == NULL || header_count < 0 ||
        (header_count > 0 && (headers == NULL || include_names == NULL)))
        return NVRTC_ERROR_INVALID_INPUT;
    struct program *made = calloc(1, sizeof *made);
    if (made == NULL)
        abort();
    made->magic = PROGRAM_MAGIC;
    made->alive = 1;
    made->source = copy(source);
    stub_live_add(K_PROGRAM, 1);
    *program = made;
    return NVRTC_SUCCESS;
}

/* The program is marked destroyed, never freed, so a later use is caught. */
nvrtcResult nvrtcDestroyProgram(struct program **program) {
    ENTER("nvrtcDestroyProgram");
    if (program == NULL || !valid(*program, "nvrtcDestroyProgram"))
        return NVRTC_ERROR_INVALID_PROGRAM;
    (*program)->alive = 0;
    *program = NULL;
    stub_live_add(K_PROGRAM, -1);
    return NVRTC_SUCCESS;
}

nvrtcResult nvrtcAddNameExpression(struct program *program, const char *expression) {
    ENTER("nvrtcAddNameExpression");
    if (!valid(program, "nvrtcAddNameExpression"))
        return NVRTC_ERROR_INVALID_PROGRAM;
    if (expression == NULL || program->expression_count == MAX_EXPRESSIONS)
        return NVRTC_ERROR_INVALID_INPUT;
    if (program->compiled)
        return NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION;
    program->expressions[program->expression_count++] = copy(expression);
    return NVRTC_SUCCESS;
}

nvrtcResult nvrtcCompileProgram(struct program *program, int count, const char *const *options) {
    ENTER("nvrtcCompileProgram");
    if (!valid(program, "nvrtcCompileProgram"))
        return NVRTC_ERROR_INVALID_PROGRAM;
    if (count < 0 || (count > 0 && options == NULL))
        return NVRTC_ERROR_INVALID_INPUT;
    for (int i = 0; i < count; i++) {
        if (strncmp(options[i], "--gpu-architecture=compute_", 27) == 0)
            program->virtual_arch = 1;
        if (strcmp(options[i], "-dlto") == 0)
            program->lto = 1;
        if (strcmp(options[i], "--pch") == 0 || strncmp(options[i], "--create-pch=", 13) == 0)
            program->pch_create = 1;
    }
    if (strstr(program->source, "#error") != NULL) {
        program->log = COMPILE_LOG;
        return NVRTC_ERROR_COMPILATION;
    }
    for (size_t i = 0; i < program->expression_count; i++) {
        const char *expression = program->expressions[i];
        char *lowered = malloc(strlen(expression) + 8);
        if (lowered == NULL)
            abort();
        strcpy(lowered, "_Zstub_");
        char *out = lowered + 7;
        for (const char *in = expression; *in != '\0'; in++)
            *out++ = (*in >= 'a' && *in <= 'z') || (*in >= 'A' && *in <= 'Z') ||
                             (*in >= '0' && *in <= '9')
                         ? *in
                         : '_';
        *out = '\0';
        program->lowered[i] = lowered;
    }
    program->compiled = 1;
    program->log = "";
    return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetProgramLogSize(struct program *program, size_t *size) {
    ENTER("nvrtcGetProgramLogSize");
    if (!valid(program, "nvrtcGetProgramLogSize"))
        return NVRTC_ERROR_INVALID_PROGRAM;
    if (size == NULL)
        return NVRTC_ERROR_INVALID_INPUT;
    *size = strlen(program->log != NULL ? program->log : "") + 1;
    return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetProgramLog(struct program *program, char *log) {
    ENTER("nvrtcGetProgramLog");
    if (!valid(program, "nvrtcGetProgramLog"))
        return NVRTC_ERROR_INVALID_PROGRAM;
    if (log == NULL)
        return NVRTC_ERROR_INVALID_INPUT;
    strcpy(log, program->log != NULL ? program->log : "");
    return NVRTC_SUCCESS;
}

/* The output of one kind: its bytes and size (0 when the compile made none). */
static nvrtcResult output(struct program *program, const char *api, const void **bytes,
                          size_t *size, int kind) {
    if (!valid(program, api))
        return NVRTC_ERROR_INVALID_PROGRAM;
    if (!program->compiled)
        return NVRTC_ERROR_INVALID_PROGRAM;
    switch (kind) {
    case 0: *bytes = PTX; *size = sizeof PTX; break;
    case 1: *bytes = CUBIN; *size = program->virtual_arch ? 0 : sizeof CUBIN; break;
    default: *bytes = LTOIR; *size = program->lto ? sizeof LTOIR : 0; break;
    }
    return NVRTC_SUCCESS;
}

static nvrtcResult output_size(struct program *program, const char *api, size_t *size,
                               int kind) {
    const void *bytes;
    if (size == NULL)
        return NVRTC_ERROR_INVALID_INPUT;
    return output(program, api, &bytes, size, kind);
}

static nvrtcResult output_bytes(struct program *program, const char *api, char *out, int kind) {
    const void *bytes;
    size_t size;
    if (out == NULL)
        return NVRTC_ERROR_INVALID_INPUT;
    nvrtcResult result = output(program, api, &bytes, &size, kind);
    if (result == NVRTC_SUCCESS)
        memcpy(out, bytes, size);
    return result;
}

nvrtcResult nvrtcGetPTXSize(struct program *program, size_t *size) {
    ENTER("nvrtcGetPTXSize");
    return output_size(program, "nvrtcGetPTXSize", size, 0);
}

nvrtcResult nvrtcGetPTX(struct program *program, char *ptx) {
    ENTER("nvrtcGetPTX");
    return output_bytes(program, "nvrtcGetPTX", ptx, 0);
}

nvrtcResult nvrtcGetCUBINSize(struct program *program, size_t *size) {
    ENTER("nvrtcGetCUBINSize");
    return output_size(program, "nvrtcGetCUBINSize", size, 1);
}

nvrtcResult nvrtcGetCUBIN(struct program *program, char *cubin) {
    ENTER("nvrtcGetCUBIN");
    return output_bytes(program, "nvrtcGetCUBIN", cubin, 1);
}

nvrtcResult nvrtcGetLTOIRSize(struct program *program, size_t *size) {
    ENTER("nvrtcGetLTOIRSize");
    return output_size(program, "nvrtcGetLTOIRSize", size, 2);
}

nvrtcResult nvrtcGetLTOIR(struct program *program, char *ltoir) {
    ENTER("nvrtcGetLTOIR");
    return output_bytes(program, "nvrtcGetLTOIR", ltoir, 2);
}

nvrtcResult nvrtcGetLoweredName(struct program *program, const char *expression,
                                const char **lowered) {
    ENTER("nvrtcGetLoweredName");
    if (!valid(program, "nvrtcGetLoweredName"))
        return NVRTC_ERROR_INVALID_PROGRAM;
    if (expression == NULL || lowered == NULL)
        return NVRTC_ERROR_INVALID_INPUT;
    if (!program->compiled)
        return NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION;
    for (size_t i = 0; i < program->expression_count; i++) {
        if (strcmp(program->expressions[i], expression) == 0) {
            *lowered = program->lowered[i];
            return NVRTC_SUCCESS;
        }
    }
    return NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID;
}

nvrtcResult nvrtcGetPCHHeapSize(size_t *size) {
    ENTER("nvrtcGetPCHHeapSize");
    if (size == NULL)
        return NVRTC_ERROR_INVALID_INPUT;
    STUB_LOCKED();
    *size = pch_heap;
    return NVRTC_SUCCESS;
}

nvrtcResult nvrtcSetPCHHeapSize(size_t size) {
    ENTER("nvrtcSetPCHHeapSize");
    STUB_LOCKED();
    pch_heap = size;
    return NVRTC_SUCCESS;
}

/* Created when the compile asked for a PCH and the heap holds it. */
nvrtcResult nvrtcGetPCHCreateStatus(struct program *program) {
    ENTER("nvrtcGetPCHCreateStatus");
    if (!valid(program, "nvrtcGetPCHCreateStatus") || !program->compiled)
        return NVRTC_ERROR_INVALID_PROGRAM;
    if (!program->pch_create)
        return NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED;
    STUB_LOCKED();
    return pch_heap < PCH_BYTES ? NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED : NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetPCHHeapSizeRequired(struct program *program, size_t *size) {
    ENTER("nvrtcGetPCHHeapSizeRequired");
    if (!valid(program, "nvrtcGetPCHHeapSizeRequired") || size == NULL)
        return NVRTC_ERROR_INVALID_PROGRAM;
    *size = PCH_BYTES;
    return NVRTC_SUCCESS;
}
