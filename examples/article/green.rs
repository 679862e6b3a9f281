//! The green-context sample of the `cuda.core` article this project started from, written from
//! `docs/green-contexts.md` and the `cuda.core` migration guide alone: the SMs split in two,
//! one green context on each half, the SAXPY compiled once under the article's string key,
//! and two threads each running it in its own partition.

use std::process::ExitCode;

use cuda_safe::cache::{CacheKey, InMemoryProgramCache, ProgramCache};
use cuda_safe::{
    CodeKind, Context, Device, GreenContextOptions, LaunchConfig, Program, ProgramOptions,
    SplitRequest, launch,
};

const SAXPY: &str = r#"extern "C" __global__ void saxpy(
    float alpha, const float* __restrict__ x,
    const float* __restrict__ y, float* out, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) out[idx] = alpha * x[idx] + y[idx];
}"#;

const N: usize = 5_000_000;

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
    let device = Device::new(0)?;
    device.set_current()?;
    let sms = device.resources().sm()?;
    println!("GPU: {}, Total SMs: {}", device.name()?, sms.sm_count());

    // Two halves; `rounding` lets the split round each half to what the hardware allows
    // (the H200's 132 SMs split in groups of 8: 64 + 64, 4 left over).
    let split = sms.split(&SplitRequest::equal(2, sms.sm_count() / 2).rounding(true))?;
    let ctx_a = device.create_green_context(&split.groups[0], GreenContextOptions::default())?;
    let ctx_b = device.create_green_context(&split.groups[1], GreenContextOptions::default())?;
    for (name, context) in [("A", &ctx_a), ("B", &ctx_b)] {
        println!(
            "Context {name}: {} SMs, is_green={}",
            context.green_sm_count().unwrap_or(0),
            context.is_green()
        );
    }

    let arch = format!("sm_{}", device.arch()?);
    let cache = InMemoryProgramCache::default();
    let key = CacheKey::labelled(&format!("saxpy_{arch}"));
    cache.get_or_insert_with(&key, || {
        let program = Program::new(SAXPY, ProgramOptions::default().arch(&arch))?;
        Ok(program.compile(CodeKind::Cubin)?.into_code())
    })?;

    let results = std::thread::scope(|scope| {
        let a = scope.spawn(|| task(&device, &ctx_a, &cache, &key, 3.0, 2.0, 1.0));
        let b = scope.spawn(|| task(&device, &ctx_b, &cache, &key, 5.0, 4.0, 2.0));
        [a.join(), b.join()]
    });
    for (name, result) in ["Task-A", "Task-B"].into_iter().zip(results) {
        let value = result
            .map_err(|_| cuda_safe::Error::invalid_argument(format!("{name} panicked")))??;
        println!("  {name}: result={value:.1}");
    }
    ctx_a.close()?;
    ctx_b.close()
}

fn task(
    device: &Device,
    context: &Context,
    cache: &InMemoryProgramCache,
    key: &CacheKey,
    alpha: f32,
    fill_x: f32,
    fill_y: f32,
) -> cuda_safe::Result<f32> {
    // A stream of the green context runs on its SM partition.
    let stream = context.create_stream(Default::default())?;
    let pool = device.default_memory_resource()?;
    let cubin = cache
        .get(key)?
        .ok_or_else(|| cuda_safe::Error::invalid_argument("the SAXPY is not in the cache"))?;
    let kernel = cubin.load()?.get_kernel("saxpy")?;
    let bytes = N * 4;
    let mut x = pool.allocate(bytes, &stream)?;
    let mut y = pool.allocate(bytes, &stream)?;
    let mut out = pool.allocate(bytes, &stream)?;
    x.copy_from_host(&vec![fill_x; N])?;
    y.copy_from_host(&vec![fill_y; N])?;
    let config = LaunchConfig::for_num_elements(N, 256)?;
    // SAFETY: saxpy reads N floats of x and y and writes N floats of out, which they hold.
    unsafe {
        launch(
            &stream,
            &config,
            &kernel,
            (alpha, &x, &y, &mut out, N as i32),
        )?
    };
    stream.sync()?;
    let result: Vec<f32> = out.to_vec()?;
    let expected = alpha * fill_x + fill_y;
    if result.iter().any(|&v| v != expected) {
        return Err(cuda_safe::Error::invalid_argument(
            "a green-context SAXPY is wrong",
        ));
    }
    Ok(result[0])
}
