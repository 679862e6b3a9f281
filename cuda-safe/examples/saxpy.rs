//! The full SAXPY cycle (`out = a * x + y`): device, stream, memory pool, NVRTC compile through
//! a program cache, upload, launch, download, check against the CPU, and the kernel's time and
//! bandwidth at 10M and 100M elements.
//!
//! ```text
//! cargo run --release -p cuda-safe --example saxpy
//! ```
//!
//! With no driver or GPU it prints one line saying what is missing and exits with status 1.

use std::process::ExitCode;

use cuda_safe::cache::InMemoryProgramCache;
use cuda_safe::{
    CodeKind, CppStandard, Device, Event, EventOptions, LaunchConfig, Program, ProgramOptions,
    Result, launch,
};

/// The article's kernel, and a variant that moves four floats per thread.
const SOURCE: &str = r#"
extern "C" __global__ void saxpy(float alpha, const float* __restrict__ x,
                                 const float* __restrict__ y, float* out, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) out[idx] = alpha * x[idx] + y[idx];
}

extern "C" __global__ void saxpy_vec4(float alpha, const float4* __restrict__ x,
                                      const float4* __restrict__ y, float4* out, int n4) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n4) {
        float4 a = x[idx], b = y[idx];
        out[idx] = make_float4(alpha * a.x + b.x, alpha * a.y + b.y,
                               alpha * a.z + b.z, alpha * a.w + b.w);
    }
}
"#;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Deterministic pseudo-random floats in [0, 1).
fn random_floats(n: usize, mut seed: u64) -> Vec<f32> {
    (0..n)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 40) as f32 / (1u64 << 24) as f32
        })
        .collect()
}

fn run() -> Result<()> {
    // 1. Device and stream.
    let device = Device::new(0)?;
    device.set_current()?;
    let stream = device.create_stream(Default::default())?;
    let properties = device.properties()?;
    println!(
        "GPU: {}, {} SMs, sm_{}",
        device.name()?,
        properties.multiprocessor_count,
        device.arch()?
    );

    // 2. The device's memory pool (stream-ordered, reuses freed memory).
    let pool = device.default_memory_resource()?;

    // 3-4. Compile through a cache: the second request compiles nothing.
    let options = ProgramOptions::default().std(CppStandard::Cpp17);
    let program = Program::new(SOURCE, options)?;
    let cache = InMemoryProgramCache::new(16 << 20);
    let started = std::time::Instant::now();
    let compiled = program.compile_cached(CodeKind::Cubin, &cache)?;
    let cold = started.elapsed();
    let started = std::time::Instant::now();
    let compiled_again = program.compile_cached(CodeKind::Cubin, &cache)?;
    let hit = started.elapsed();
    println!(
        "compile: {:.2} ms cold, {:.1} us from the cache ({:.0}x)",
        cold.as_secs_f64() * 1e3,
        hit.as_secs_f64() * 1e6,
        cold.as_secs_f64() / hit.as_secs_f64()
    );
    debug_assert_eq!(compiled.code(), compiled_again.code());
    let code = compiled.load()?;
    let saxpy = code.get_kernel("saxpy")?;
    let saxpy_vec4 = code.get_kernel("saxpy_vec4")?;

    let timed = EventOptions::default().timing(true);
    let (start, end) = (device.create_event(timed)?, device.create_event(timed)?);
    let alpha = 3.0f32;
    for n in [10_000_000usize, 100_000_000] {
        let bytes = n * size_of::<f32>();
        // 5. GPU memory.
        let mut x = pool.allocate(bytes, &stream)?;
        let mut y = pool.allocate(bytes, &stream)?;
        let mut out = pool.allocate(bytes, &stream)?;
        // 6. Host to device; the output is poisoned so a kernel that writes nothing fails.
        let x_host = random_floats(n, 1);
        let y_host = random_floats(n, 2);
        x.copy_from_host(&x_host)?;
        y.copy_from_host(&y_host)?;
        let count = i32::try_from(n)
            .map_err(|_| cuda_safe::Error::invalid_argument("n must fit the kernel's int"))?;
        for (name, kernel, config, length) in [
            (
                "saxpy",
                &saxpy,
                LaunchConfig::for_num_elements(n, 256)?,
                count,
            ),
            (
                "saxpy_vec4",
                &saxpy_vec4,
                LaunchConfig::for_num_elements(n / 4, 256)?,
                count / 4,
            ),
        ] {
            out.fill::<u32>(0x7fc0_0000)?; // NaN
            // 7. Launch (one warm-up, then a timed run).
            for timed_run in [false, true] {
                if timed_run {
                    stream.record(&start)?;
                }
                // SAFETY: both kernels read `n` floats of x and y and write `n` floats of
                // `out` (n is a multiple of 4 here), all of which the buffers hold.
                unsafe { launch(&stream, &config, kernel, (alpha, &x, &y, &mut out, length))? };
            }
            stream.record(&end)?;
            let elapsed = Event::elapsed(&start, &end)?;
            // 8. Device to host, and the check.
            let out_host: Vec<f32> = out.to_vec()?;
            let worst = out_host
                .iter()
                .zip(x_host.iter().zip(&y_host))
                .map(|(&o, (&a, &b))| (o - (alpha * a + b)).abs())
                .fold(0f32, |worst, error| {
                    if error.is_nan() {
                        f32::INFINITY
                    } else {
                        worst.max(error)
                    }
                });
            if worst > 1e-5 {
                return Err(cuda_safe::Error::invalid_argument(format!(
                    "{name} over {n} elements is wrong: largest error {worst}"
                )));
            }
            println!(
                "{name:10} n = {n:>11}: {:.3} ms, {:.0} GB/s, max error {worst:e}, out[0] = {:.4}",
                elapsed.as_secs_f64() * 1e3,
                3.0 * bytes as f64 / elapsed.as_secs_f64() / 1e9,
                out_host[0]
            );
        }
    }
    stream.sync()?;
    Ok(())
}
