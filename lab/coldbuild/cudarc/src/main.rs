//! The same cycle on cudarc: context, stream, NVRTC compile, upload, launch, download.
use cudarc::driver::{CudaContext, LaunchConfig, PushKernelArg};

const SOURCE: &str = r#"extern "C" __global__ void scale(float a, float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let context = CudaContext::new(0)?;
    let stream = context.default_stream();
    let ptx = cudarc::nvrtc::compile_ptx(SOURCE)?;
    let kernel = context.load_module(ptx)?.load_function("scale")?;
    let n = 1usize << 20;
    let mut x = stream.clone_htod(&vec![1.0f32; n])?;
    let mut builder = stream.launch_builder(&kernel);
    let (a, count) = (2.0f32, n as i32);
    builder.arg(&a).arg(&mut x).arg(&count);
    // SAFETY: scale reads and writes n floats of x.
    unsafe { builder.launch(LaunchConfig::for_num_elems(n as u32)) }?;
    assert!(stream.clone_dtoh(&x)?.iter().all(|&v| v == 2.0));
    Ok(())
}
