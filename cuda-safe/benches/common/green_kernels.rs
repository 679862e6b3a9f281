//! The kernels of the green section of `bench/floors/driver_floor.c`, byte for byte:
//! `saxpy` (the probe) and `spin` (the filler), for `green_contention`.

/// `saxpy(float a, const float* x, const float* y, float* out, size_t n)` and
/// `spin(unsigned long long ns)`.
pub const SOURCE: &str = "extern \"C\" __global__ void saxpy(float a, const float* __restrict__ x,\n    const float* __restrict__ y, float* out, size_t n) {\n  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;\n  if (i < n) out[i] = a * x[i] + y[i];\n}\nextern \"C\" __global__ void spin(unsigned long long ns) {\n  unsigned long long t0; asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t0));\n  unsigned long long t = t0; while (t - t0 < ns) asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t));\n}\n";
