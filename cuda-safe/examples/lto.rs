//! Link-time optimisation at run time: two translation units compiled to LTO-IR with NVRTC
//! (the kernel in one calls a `__device__` function defined in the other), linked into one
//! CUBIN by nvJitLink, launched and checked against the CPU and against the same kernel
//! compiled as one program.
//!
//! ```text
//! cargo run --release -p cuda-safe --example lto
//! ```
//!
//! With no driver or GPU it prints one line saying what is missing and exits with status 1.

use std::process::ExitCode;
use std::time::Instant;

use cuda_safe::{
    CodeKind, Device, LaunchConfig, LinkInput, Linker, LinkerOptions, ObjectCode, Program,
    ProgramOptions, Result, launch,
};

/// The unit that defines the device function.
const LIBRARY: &str = r#"
__device__ float polynomial(float x) {
    return ((0.5f * x - 1.25f) * x + 2.0f) * x - 0.75f;
}
"#;

/// The unit whose kernel calls it across the unit boundary.
const KERNEL: &str = r#"
__device__ float polynomial(float x);
extern "C" __global__ void apply(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = polynomial(in[i]);
}
"#;

const N: usize = 1 << 20;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Runs `apply` from `code` on `input`.
fn apply(code: &ObjectCode, device: &Device, input: &[f32]) -> Result<Vec<f32>> {
    let stream = device.create_stream(Default::default())?;
    let pool = device.default_memory_resource()?;
    let kernel = code.get_kernel("apply")?;
    let data = pool.allocate_from_host(input, &stream)?;
    let mut out = pool.allocate(4 * input.len(), &stream)?;
    let config = LaunchConfig::for_num_elements(input.len(), 256)?;
    let n = i32::try_from(input.len()).unwrap_or(i32::MAX);
    // SAFETY: apply(const float*, float*, int) reads and writes n floats of each buffer.
    unsafe { launch(&stream, &config, &kernel, (&data, &mut out, n))? };
    out.to_vec::<f32>()
}

fn run() -> Result<()> {
    let device = Device::new(0)?;
    device.set_current()?;
    let rdc = ProgramOptions::default().relocatable_device_code(true);
    let library = Program::new(LIBRARY, rdc.clone())?.compile(CodeKind::LtoIr)?;
    let kernel = Program::new(KERNEL, rdc)?.compile(CodeKind::LtoIr)?;

    let mut linker = Linker::new(LinkerOptions::default().lto(true).optimization_level(3))?;
    linker.add(LinkInput::from_compiled(library.code(), "library.ltoir")?);
    linker.add(LinkInput::from_compiled(kernel.code(), "kernel.ltoir")?);
    let started = Instant::now();
    let linked = linker.link(CodeKind::Cubin)?;
    let link_time = started.elapsed();

    let whole = Program::new(&format!("{LIBRARY}{KERNEL}"), ProgramOptions::default())?
        .compile(CodeKind::Cubin)?;
    let input: Vec<f32> = (0..N).map(|i| (i % 4096) as f32 / 1024.0 - 2.0).collect();
    let from_lto = apply(&linked.load()?, &device, &input)?;
    let from_whole = apply(&whole.load()?, &device, &input)?;
    let worst = from_lto
        .iter()
        .zip(&input)
        .map(|(&y, &x)| (y - (((0.5 * x - 1.25) * x + 2.0) * x - 0.75)).abs())
        .fold(0f32, f32::max);
    let differ = from_lto
        .iter()
        .zip(&from_whole)
        .filter(|(a, b)| a != b)
        .count();
    println!(
        "lto: linked 2 LTO-IR units ({} + {} bytes) into a {}-byte CUBIN with {:?} in {:.1} ms; \
         {N} results within {worst:e} of the CPU, {differ} differ from the whole-program kernel's",
        library.bytes().len(),
        kernel.bytes().len(),
        linked.bytes().len(),
        linked.toolchain(),
        link_time.as_secs_f64() * 1e3,
    );
    if worst > 1e-4 {
        return Err(cuda_safe::Error::invalid_argument(
            "the linked kernel's results are wrong",
        ));
    }
    Ok(())
}
