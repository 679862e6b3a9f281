//! One kernel, the whole cycle: device, stream, pool, NVRTC compile, upload, launch, download.
use cuda_safe::{CodeKind, Device, LaunchConfig, Program, ProgramOptions, launch};

const SOURCE: &str = r#"extern "C" __global__ void scale(float a, float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}"#;

fn main() -> cuda_safe::Result<()> {
    let device = Device::new(0)?;
    device.set_current()?;
    let stream = device.create_stream(Default::default())?;
    let pool = device.default_memory_resource()?;
    let kernel = Program::new(SOURCE, ProgramOptions::default())?
        .compile(CodeKind::Cubin)?
        .load()?
        .get_kernel("scale")?;
    let n = 1 << 20;
    let mut x = pool.allocate_from_host(&vec![1.0f32; n], &stream)?;
    let config = LaunchConfig::for_num_elements(n, 256)?;
    // SAFETY: scale reads and writes n floats of x.
    unsafe { launch(&stream, &config, &kernel, (2.0f32, &mut x, n as i32))? };
    assert!(x.to_vec::<f32>()?.iter().all(|&v| v == 2.0));
    Ok(())
}
