//! This crate's NVRTC-compiled kernel launched on cudarc's buffers, and one of this crate's
//! buffers read by cudarc, with nothing copied between the two crates:
//!
//! 1. cudarc makes a stream and two `CudaSlice<f32>`s (as candle or burn would hold them);
//! 2. `Stream::from_cudarc` wraps cudarc's stream, and `view` / `view_mut` see its slices as
//!    this crate's views, ordered by cudarc's read and write events;
//! 3. SAXPY (`y = a * x + y`), compiled with NVRTC, runs on them, and cudarc reads `y` back;
//! 4. a pool buffer of this crate is lent to cudarc (`Buffer::lend_to_cudarc`) and cudarc
//!    copies it to the host; the buffer stays this crate's and is freed by it.
//!
//! `cargo run -p cuda-safe --example cudarc_bridge --features cudarc` (cudarc's CUDA version
//! comes from `CUDARC_CUDA_VERSION`, set for this workspace in .cargo/config.toml).

use cuda_safe::cudarc_bridge::{view, view_mut};
use cuda_safe::{CodeKind, Device, LaunchConfig, Program, ProgramOptions, Stream, launch};
use cudarc::driver::CudaContext;

const SAXPY: &str = r#"
extern "C" __global__ void saxpy(float a, const float* x, float* y, unsigned long long n) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

const N: usize = 1 << 20;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // cudarc's side: device 0's primary context, a stream of its own and two slices.
    let context = CudaContext::new(0)?;
    let theirs = context.new_stream()?;
    let x_host: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let x = theirs.clone_htod(&x_host)?;
    let mut y = theirs.clone_htod(&vec![1.0f32; N])?;

    // The same stream as this crate's, and the kernel compiled for the device.
    let stream = Stream::from_cudarc(&theirs)?;
    let kernel = Program::new(SAXPY, ProgramOptions::default())?
        .compile(CodeKind::Cubin)?
        .load()?
        .get_kernel("saxpy")?;
    let config = LaunchConfig::for_num_elements(N, 256)?;
    {
        let x_view = view(&x, &stream)?;
        let mut y_view = view_mut(&mut y, &stream)?;
        // SAFETY: saxpy(float, const float*, float*, n) reads N floats of x and updates N of y,
        // which the views hold.
        unsafe {
            launch(
                &stream,
                &config,
                &kernel,
                (2.0f32, &*x_view, &mut *y_view, N as u64),
            )?
        };
    } // x's read event and y's write event are recorded on the stream here.
    let result = theirs.clone_dtoh(&y)?;
    let wrong = result
        .iter()
        .enumerate()
        .filter(|&(i, &value)| value != 2.0 * i as f32 + 1.0)
        .count();
    println!(
        "saxpy on cudarc's slices: y[1] = {}, y[{}] = {}, {wrong} wrong of {N}",
        result[1],
        N - 1,
        result[N - 1]
    );

    // This crate's buffer, filled here, read by cudarc on its own stream.
    let device = Device::new(0)?;
    let ours = device.create_stream(Default::default())?;
    let mut buffer = device
        .default_memory_resource()?
        .allocate_zeroed::<f32>(N, &ours)?;
    buffer.fill(0.5f32)?;
    let read = {
        let lent = buffer.lend_to_cudarc::<f32>(&theirs)?; // after the fill on `ours`
        theirs.clone_dtoh(&*lent)?
    }; // handed back: `ours` (and the buffer's free) waits for cudarc's copy
    let halves = read.iter().filter(|&&value| value == 0.5).count();
    println!("cudarc read this crate's buffer: {halves} of {N} elements are 0.5");
    buffer.close()?;
    context.check_err()?;

    if wrong != 0 || halves != N {
        return Err("the results are wrong".into());
    }
    println!("ok");
    Ok(())
}
