/*
 * A fake NVML: initialisation counted (K_NVML), one GPU (the driver stub's, same UUID), and a
 * few getters: name, UUID, memory, temperature (both ABIs' calls), power, versions. Event sets
 * are libnvml_events_stub.c's (sharing libnvml_stub.h).
 */
#include <stdio.h>
#include <string.h>

#include "libnvml_stub.h"

const unsigned char *stub_device_uuid(void);

static int initialised;
static int the_device; /* its address is the device handle */

static int valid(const void *device, const char *api) {
    if (device != &the_device) {
        stub_misuse_note("%s: %p is not an NVML device handle", api, device);
        return 0;
    }
    return 1;
}

int nvml_stub_ready(const char *api) {
    if (initialised == 0) {
        stub_misuse_note("%s while NVML is not initialised", api);
        return 0;
    }
    return 1;
}

int nvml_stub_valid_device(const void *device, const char *api) {
    return valid(device, api);
}

void *nvml_stub_device(void) {
    return &the_device;
}

/* Writes `text` into a caller's buffer of `length` chars. */
static nvmlReturn_t write_text(char *buffer, unsigned length, const char *text) {
    if (buffer == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(text) + 1 > length)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    strcpy(buffer, text);
    return NVML_SUCCESS;
}

static void uuid_text(char *out, size_t size) {
    const unsigned char *b = stub_device_uuid();
    snprintf(out, size,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

struct code_text {
    int code;
    const char *text;
};

static const struct code_text ERRORS[] = {
    {0, "Success"},
    {1, "Uninitialized"},
    {2, "Invalid Argument"},
    {3, "Not Supported"},
    {4, "Insufficient Permissions"},
    {6, "Not Found"},
    {7, "Insufficient Size"},
    {9, "Driver Not Loaded"},
    {15, "GPU is lost"},
    {20, "Insufficient Memory"},
    {25, "Argument version mismatch"},
    {999, "Unknown Error"},
};

const char *nvmlErrorString(nvmlReturn_t result) {
    stub_enter("nvmlErrorString", 0);
    for (size_t i = 0; i < sizeof ERRORS / sizeof ERRORS[0]; i++) {
        if (ERRORS[i].code == result)
            return ERRORS[i].text;
    }
    return "Unknown Error";
}

nvmlReturn_t nvmlInit_v2(void) {
    ENTER("nvmlInit_v2");
    initialised++;
    stub_live_add(K_NVML, 1);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) {
    NVML("nvmlShutdown");
    initialised--;
    stub_live_add(K_NVML, -1);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *count) {
    NVML("nvmlDeviceGetCount_v2");
    if (count == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *count = 1;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, void **device) {
    NVML("nvmlDeviceGetHandleByIndex_v2");
    if (device == NULL || index != 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    *device = &the_device;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, void **device) {
    NVML("nvmlDeviceGetHandleByUUID");
    char mine[64];
    uuid_text(mine, sizeof mine);
    if (uuid == NULL || device == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (strcmp(uuid, mine) != 0)
        return NVML_ERROR_NOT_FOUND;
    *device = &the_device;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetIndex(void *device, unsigned *index) {
    NVML("nvmlDeviceGetIndex");
    if (!valid(device, "nvmlDeviceGetIndex") || index == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *index = 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(void *device, char *name, unsigned length) {
    NVML("nvmlDeviceGetName");
    if (!valid(device, "nvmlDeviceGetName"))
        return NVML_ERROR_INVALID_ARGUMENT;
    return write_text(name, length, "NVIDIA H200 (cuda-safe stub)");
}

nvmlReturn_t nvmlDeviceGetUUID(void *device, char *uuid, unsigned length) {
    NVML("nvmlDeviceGetUUID");
    if (!valid(device, "nvmlDeviceGetUUID"))
        return NVML_ERROR_INVALID_ARGUMENT;
    char text[64];
    uuid_text(text, sizeof text);
    return write_text(uuid, length, text);
}

/* nvmlMemory_v2_t: a version, then total, reserved, free and used (8 bytes each, from 8). */
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(void *device, unsigned char *memory) {
    NVML("nvmlDeviceGetMemoryInfo_v2");
    if (!valid(device, "nvmlDeviceGetMemoryInfo_v2") || memory == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned version;
    memcpy(&version, memory, sizeof version);
    if (version != (40u | 2u << 24))
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    const unsigned long long values[4] = {150754820096ULL, 536870912ULL, 149144207360ULL,
                                          1073741824ULL};
    memcpy(memory + 8, values, sizeof values);
    return NVML_SUCCESS;
}

/* The CUDA 12 ABI's call. */
nvmlReturn_t nvmlDeviceGetTemperature(void *device, int sensor, unsigned *celsius) {
    NVML("nvmlDeviceGetTemperature");
    if (!valid(device, "nvmlDeviceGetTemperature") || sensor != 0 || celsius == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *celsius = 41;
    return NVML_SUCCESS;
}

/* The CUDA 13 ABI's call: nvmlTemperature_v1_t (version, sensor, temperature). */
nvmlReturn_t nvmlDeviceGetTemperatureV(void *device, int *reading) {
    NVML("nvmlDeviceGetTemperatureV");
    if (!valid(device, "nvmlDeviceGetTemperatureV") || reading == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if ((unsigned)reading[0] != (12u | 1u << 24))
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (reading[1] != 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    reading[2] = 41;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(void *device, unsigned *milliwatts) {
    NVML("nvmlDeviceGetPowerUsage");
    if (!valid(device, "nvmlDeviceGetPowerUsage") || milliwatts == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *milliwatts = 123456;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned length) {
    NVML("nvmlSystemGetDriverVersion");
    return write_text(version, length, "580.65.06");
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned length) {
    NVML("nvmlSystemGetNVMLVersion");
    return write_text(version, length, "13.580.65.06");
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *version) {
    NVML("nvmlSystemGetCudaDriverVersion_v2");
    if (version == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *version = 13010;
    return NVML_SUCCESS;
}
