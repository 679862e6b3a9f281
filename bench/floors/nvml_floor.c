// The floor for the NVML getters: the calls `cuda_safe::system` wraps, made straight from C.
// Build where the CUDA toolkit is (it needs nvml.h and the driver's libnvidia-ml.so.1):
//   gcc -O2 bench/floors/nvml_floor.c -I/usr/local/cuda/include -lnvidia-ml -o nvml_floor
//   (or -l:libnvidia-ml.so.1 when no unversioned libnvidia-ml.so is installed)
// Measures, on GPU 0, the median latency of nvmlDeviceGetUtilizationRates,
// nvmlDeviceGetMemoryInfo_v2, nvmlDeviceGetTemperature (and nvmlDeviceGetTemperatureV where the
// header has it), nvmlDeviceGetPowerUsage, nvmlDeviceGetClockInfo (SM) and
// nvmlDeviceGetComputeRunningProcesses_v3: up to 2,000 timed calls (at most 2 s per getter)
// after 50 warm-up calls, the rule cuda-safe/benches/nvml_latency.rs follows.
// Prints `FIG name value unit` lines with the names that benchmark prints.
#include <nvml.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define SAMPLES 2000
#define WARMUP 50
#define BUDGET_US 2e6
#define MAX_PROCESSES 64

static double now_us(void) {
  struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
static int cmpd(const void* a, const void* b) { double x = *(double*)a, y = *(double*)b; return x < y ? -1 : x > y; }
static double median(double* v, int n) { qsort(v, n, sizeof(double), cmpd); return v[n / 2]; }
static void fig(const char* n, double v, const char* u) { printf("FIG %s %.4f %s\n", n, v, u); fflush(stdout); }

static double samples[SAMPLES];

// MEASURE(name, call): if a first `call` succeeds, times it and prints the median as `name`.
#define MEASURE(name, call) do { \
  nvmlReturn_t r_ = (call); \
  if (r_ != NVML_SUCCESS) { printf("# %s: not measured: %s\n", name, nvmlErrorString(r_)); break; } \
  for (int i_ = 0; i_ < WARMUP; i_++) (void)(call); \
  int n_ = 0; double start_ = now_us(); \
  while (n_ < SAMPLES && now_us() - start_ < BUDGET_US) { \
    double before_ = now_us(); (void)(call); samples[n_++] = now_us() - before_; } \
  fig(name, median(samples, n_), "us"); } while (0)

int main(void) {
  printf("# nvml_floor: C on GPU 0, medians\n");
  double t0 = now_us();
  nvmlReturn_t r = nvmlInit_v2();
  if (r != NVML_SUCCESS) { fprintf(stderr, "nvmlInit_v2: %s\n", nvmlErrorString(r)); return 1; }
  fig("nvml_init_first", (now_us() - t0) / 1e3, "ms");

  nvmlDevice_t dev;
  r = nvmlDeviceGetHandleByIndex_v2(0, &dev);
  if (r != NVML_SUCCESS) { fprintf(stderr, "nvmlDeviceGetHandleByIndex_v2: %s\n", nvmlErrorString(r)); return 1; }
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = "?", driver[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = "?";
  nvmlDeviceGetName(dev, name, sizeof name);
  nvmlSystemGetDriverVersion(driver, sizeof driver);
  printf("# device %s, driver %s\n", name, driver);

  nvmlUtilization_t util;
  MEASURE("nvml_utilization", nvmlDeviceGetUtilizationRates(dev, &util));

  nvmlMemory_v2_t memory = {0};
  memory.version = nvmlMemory_v2;
  MEASURE("nvml_memory_info_v2", nvmlDeviceGetMemoryInfo_v2(dev, &memory));

  unsigned int celsius;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  MEASURE("nvml_temperature", nvmlDeviceGetTemperature(dev, NVML_TEMPERATURE_GPU, &celsius));
#pragma GCC diagnostic pop
#ifdef nvmlTemperature_v1
  nvmlTemperature_t reading = {0};
  reading.version = nvmlTemperature_v1;
  reading.sensorType = NVML_TEMPERATURE_GPU;
  MEASURE("nvml_temperature_v", nvmlDeviceGetTemperatureV(dev, &reading));
#endif

  unsigned int milliwatts;
  MEASURE("nvml_power_usage", nvmlDeviceGetPowerUsage(dev, &milliwatts));

  unsigned int mhz;
  MEASURE("nvml_clock_info_sm", nvmlDeviceGetClockInfo(dev, NVML_CLOCK_SM, &mhz));

  static nvmlProcessInfo_t infos[MAX_PROCESSES];
  unsigned int count;
  MEASURE("nvml_compute_processes_v3",
          (count = MAX_PROCESSES, nvmlDeviceGetComputeRunningProcesses_v3(dev, &count, infos)));

  nvmlShutdown();
  return 0;
}
