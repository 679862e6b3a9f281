//! The article's two-thread SAXPY in green contexts: the GPU's SMs split in two equal
//! partitions, one SAXPY job in each, from two threads at once. Prints each partition's SM
//! count and result (7.0 and 22.0).
//!
//! ```text
//! cargo run --release -p cuda-safe --example green_contexts
//! ```

use std::process::ExitCode;

use cuda_safe::{
    CodeKind, Context, Device, GreenContextOptions, Kernel, LaunchConfig, Program, ProgramOptions,
    Result, SplitRequest, launch,
};

const SOURCE: &str = r#"
extern "C" __global__ void saxpy(float alpha, const float* __restrict__ x,
                                 const float* __restrict__ y, float* out, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) out[idx] = alpha * x[idx] + y[idx];
}
"#;

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

fn run() -> Result<()> {
    let device = Device::new(0)?;
    device.set_current()?;
    let all = device.resources().sm()?;
    println!("GPU: {}, total SMs: {}", device.name()?, all.sm_count());

    // Two equal partitions, as large as the hardware's partition rules allow.
    let rules = all.rules()?;
    let half = all.sm_count() / 2;
    let split = all.split(&SplitRequest::equal(2, half).rounding(true))?;
    println!(
        "split: {} + {} SMs, {} left over ({rules:?})",
        split.groups[0].sm_count(),
        split.groups[1].sm_count(),
        split.remainder.sm_count()
    );
    let ctx_a = device.create_green_context(&split.groups[0], GreenContextOptions::default())?;
    let ctx_b = device.create_green_context(&split.groups[1], GreenContextOptions::default())?;

    // One compile, one load: the context-independent kernel runs in both contexts.
    let compiled = Program::new(SOURCE, ProgramOptions::default())?.compile(CodeKind::Cubin)?;
    let kernel = compiled.load()?.get_kernel("saxpy")?;

    let results = std::thread::scope(|scope| {
        let a = scope.spawn(|| run_task(&device, &ctx_a, &kernel, 3.0, 2.0, 1.0));
        let b = scope.spawn(|| run_task(&device, &ctx_b, &kernel, 5.0, 4.0, 2.0));
        [a.join(), b.join()]
    });
    for (name, result) in ["Task-A", "Task-B"].into_iter().zip(results) {
        match result {
            Ok(Ok((sms, value))) => println!("  {name} ({sms} SMs): result={value:.1}"),
            Ok(Err(error)) => return Err(error),
            Err(_) => {
                return Err(cuda_safe::Error::invalid_argument(format!(
                    "{name} panicked"
                )));
            }
        }
    }
    ctx_a.close()?;
    ctx_b.close()
}

/// SAXPY over `N` elements of constant inputs in `context`; returns its SM count and `out[0]`.
fn run_task(
    device: &Device,
    context: &Context,
    kernel: &Kernel,
    alpha: f32,
    x_value: f32,
    y_value: f32,
) -> Result<(u32, f32)> {
    let stream = context.create_stream(Default::default())?;
    let pool = device.default_memory_resource()?;
    let bytes = N * 4;
    let mut x = pool.allocate(bytes, &stream)?;
    let mut y = pool.allocate(bytes, &stream)?;
    let mut out = pool.allocate(bytes, &stream)?;
    x.copy_from_host(&vec![x_value; N])?;
    y.copy_from_host(&vec![y_value; N])?;
    let config = LaunchConfig::for_num_elements(N, 256)?;
    // SAFETY: saxpy reads N floats of x and y and writes N floats of out, which they hold.
    unsafe {
        launch(
            &stream,
            &config,
            kernel,
            (alpha, &x, &y, &mut out, N as i32),
        )?
    };
    let result: Vec<f32> = out.to_vec()?;
    let expected = alpha * x_value + y_value;
    if result.iter().any(|&v| v != expected) {
        return Err(cuda_safe::Error::invalid_argument(
            "a green-context SAXPY is wrong",
        ));
    }
    let sms = context.green_sm_count().unwrap_or(0);
    Ok((sms, result[0]))
}
