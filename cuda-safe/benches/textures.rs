//! Texture fetch bandwidth against a plain global-memory read of the same data: 256 MiB of
//! floats read once per launch by a grid-stride kernel that sums what it reads (one store per
//! thread), through `tex1Dfetch` over the buffer (a linear texture), through `tex2D` over a
//! CUDA array holding the same floats, and through plain loads of the buffer. Each kernel's
//! sum is checked against the host's.
//!
//! Prints `FIG name value unit` lines (GB/s: bytes read over the median of the launches' GPU
//! times). `bench/floors/graph_floor.c` has no texture row; the plain read is the floor
//! here, measured in the same process.

use std::process::ExitCode;
use std::sync::Arc;

use cuda_safe::{
    ArrayDescriptor, ArrayFormat, CodeKind, Copy3d, CudaArray, Device, Event, EventOptions,
    HostPitched, Kernel, LaunchConfig, Program, ProgramOptions, Result, Stream, StreamOptions,
    TextureDescriptor, TextureObject, launch,
};

const SOURCE: &str = r#"
extern "C" __global__ void read_global(const float* __restrict__ x, size_t n, float* sums) {
    float sum = 0.0f;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride) sum += x[i];
    sums[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}
extern "C" __global__ void read_tex1d(cudaTextureObject_t tex, size_t n, float* sums) {
    float sum = 0.0f;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride)
        sum += tex1Dfetch<float>(tex, (int)i);
    sums[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}
extern "C" __global__ void read_tex2d(cudaTextureObject_t tex, unsigned width, size_t n,
                                      float* sums) {
    float sum = 0.0f;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride)
        sum += tex2D<float>(tex, (float)(i % width) + 0.5f, (float)(i / width) + 0.5f);
    sums[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}
"#;

/// Row width and rows of the data: 16384 x 4096 floats, 256 MiB.
const WIDTH: usize = 16384;
const ROWS: usize = 4096;
const N: usize = WIDTH * ROWS;
/// Timed launches of each kernel.
const REPS: usize = 20;
const BLOCK: u32 = 256;

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn fig(name: &str, value: f64, unit: &str) {
    println!("FIG {name} {value:.4} {unit}");
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// One kernel's reads: launches it `REPS` times after a warm-up, returns the bandwidth (GB/s)
/// and whether its sum matched `expected`.
fn measure(
    stream: &Stream,
    config: &LaunchConfig,
    expected: f64,
    mut run: impl FnMut() -> Result<()>,
    sums: &cuda_safe::Buffer,
) -> Result<(f64, bool)> {
    let timed = EventOptions::default().timing(true);
    let (start, end) = (
        Event::new(stream.context(), timed)?,
        Event::new(stream.context(), timed)?,
    );
    run()?;
    stream.sync()?;
    let mut times = Vec::with_capacity(REPS);
    for _ in 0..REPS {
        start.record(stream)?;
        run()?;
        end.record(stream)?;
        end.sync()?;
        times.push(Event::elapsed(&start, &end)?.as_secs_f64());
    }
    let total: f64 = sums.to_vec::<f32>()?.iter().map(|&v| f64::from(v)).sum();
    let threads = f64::from(config.grid.x * config.block.x);
    let ok = (total - expected).abs() <= 1e-3 * expected.abs() + threads * 1e-3;
    if !ok {
        eprintln!("a kernel summed {total}, the host {expected}");
    }
    Ok(((N * 4) as f64 / median(&mut times) / 1e9, ok))
}

fn run() -> Result<bool> {
    let device = Device::new(0)?;
    device.set_current()?;
    let options = ProgramOptions::default().arch(format!("sm_{}", device.arch()?));
    let code = Program::new(SOURCE, options)?
        .compile(CodeKind::Cubin)?
        .load()?;
    let kernel = |name: &str| -> Result<Kernel> { code.get_kernel(name) };
    let stream = device.create_stream(StreamOptions::default())?;
    let pool = device.default_memory_resource()?;
    let host: Vec<f32> = (0..N).map(|i| (i % 17) as f32 * 0.125).collect();
    let expected: f64 = host.iter().map(|&v| f64::from(v)).sum();
    let data = Arc::new(pool.allocate_from_host(&host, &stream)?);
    let shape = ArrayDescriptor::new(WIDTH, ArrayFormat::F32, 1)
        .height(ROWS)
        .depth(0);
    let mut array = CudaArray::new(&stream, shape)?;
    array.copy_from_host(
        &HostPitched::rows(&host, WIDTH * 4)?,
        &Copy3d::rect(WIDTH * 4, ROWS),
    )?;
    let linear = TextureObject::from_linear(&data, ArrayFormat::F32, 1, &Default::default())?;
    let image = TextureObject::from_array(&array, &TextureDescriptor::default())?;
    let sms = device.properties()?.multiprocessor_count;
    let config = LaunchConfig::new(sms * 8, BLOCK);
    let sums = pool.allocate_zeroed::<f32>((sms * 8 * BLOCK) as usize, &stream)?;
    let (read_global, read_tex1d, read_tex2d) = (
        kernel("read_global")?,
        kernel("read_tex1d")?,
        kernel("read_tex2d")?,
    );
    let mut all_ok = true;

    let sums_ptr = sums.as_raw();
    let (global, ok) = measure(
        &stream,
        &config,
        expected,
        // SAFETY: read_global reads N floats of `data` and writes one float per thread of
        // `sums` (sized for the grid); both outlive the launches (synchronized in `measure`).
        || unsafe { launch(&stream, &config, &read_global, (&*data, N, sums_ptr)) },
        &sums,
    )?;
    all_ok &= ok;
    fig("global_read_256mib_gbps", global, "GB/s");
    let (tex1d, ok) = measure(
        &stream,
        &config,
        expected,
        // SAFETY: as above, through a linear texture of the same N floats.
        || unsafe { launch(&stream, &config, &read_tex1d, (&linear, N, sums_ptr)) },
        &sums,
    )?;
    all_ok &= ok;
    fig("texture_fetch_1d_linear_256mib_gbps", tex1d, "GB/s");
    fig("texture_fetch_1d_vs_global_ratio", tex1d / global, "x");
    let (tex2d, ok) = measure(
        &stream,
        &config,
        expected,
        // SAFETY: as above, through a 2-D texture over an array of the same N floats.
        || unsafe {
            launch(
                &stream,
                &config,
                &read_tex2d,
                (&image, WIDTH as u32, N, sums_ptr),
            )
        },
        &sums,
    )?;
    all_ok &= ok;
    fig("texture_fetch_2d_array_256mib_gbps", tex2d, "GB/s");
    fig("texture_fetch_2d_vs_global_ratio", tex2d / global, "x");
    Ok(all_ok)
}
