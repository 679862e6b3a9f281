//! The full SAXPY sample of the `cuda.core` article this project started from, written from the
//! README and `docs/program-cache.md` alone: device and stream, a memory pool, the kernel compiled once
//! under the article's string key (`saxpy_sm_90`) in an in-memory cache, 10 million floats
//! there and back, checked.

use std::process::ExitCode;

use cuda_safe::cache::{CacheKey, InMemoryProgramCache, ProgramCache};
use cuda_safe::{CodeKind, Device, LaunchConfig, Program, ProgramOptions, launch};

const SAXPY: &str = r#"extern "C" __global__ void saxpy(
    float alpha, const float* __restrict__ x,
    const float* __restrict__ y, float* out, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) out[idx] = alpha * x[idx] + y[idx];
}"#;

const N: usize = 10_000_000;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> cuda_safe::Result<()> {
    // 1. Device and stream.
    let device = Device::new(0)?;
    device.set_current()?;
    let stream = device.create_stream(Default::default())?;
    println!(
        "GPU: {}, SM: {}",
        device.name()?,
        device.properties()?.multiprocessor_count
    );

    // 2. Memory pool.
    let pool = device.default_memory_resource()?;

    // 3-4. The kernel, compiled once under the article's string key.
    let arch = format!("sm_{}", device.arch()?);
    let cache = InMemoryProgramCache::default();
    let key = CacheKey::labelled(&format!("saxpy_{arch}"));
    let cubin = cache.get_or_insert_with(&key, || {
        let program = Program::new(SAXPY, ProgramOptions::default().arch(&arch))?;
        Ok(program.compile(CodeKind::Cubin)?.into_code())
    })?;
    let again = cache.get_or_insert_with(&key, || {
        Err(cuda_safe::Error::invalid_argument(
            "the second lookup compiled again",
        ))
    })?;
    assert_eq!(cubin.bytes(), again.bytes());
    let kernel = cubin.load()?.get_kernel("saxpy")?;

    // 5-6. GPU memory, host to device.
    let bytes = N * 4;
    let mut x = pool.allocate(bytes, &stream)?;
    let mut y = pool.allocate(bytes, &stream)?;
    let mut out = pool.allocate(bytes, &stream)?;
    x.copy_from_host(&vec![2.0f32; N])?;
    y.copy_from_host(&vec![1.0f32; N])?;

    // 7. Launch.
    let config = LaunchConfig::for_num_elements(N, 256)?;
    let alpha = 3.0f32;
    // SAFETY: saxpy reads N floats of x and y and writes N floats of out, which they hold.
    unsafe {
        launch(
            &stream,
            &config,
            &kernel,
            (alpha, &x, &y, &mut out, N as i32),
        )?
    };

    // 8. Device to host, checked.
    stream.sync()?;
    let result: Vec<f32> = out.to_vec()?;
    if result.iter().any(|&v| v != alpha * 2.0 + 1.0) {
        return Err(cuda_safe::Error::invalid_argument("SAXPY is wrong"));
    }
    println!("SAXPY OK: {:.1} (key {key})", result[0]);
    Ok(())
}
