//! Name expressions: one templated kernel, instantiated for `float` and `double`, looked up by
//! the C++ expressions NVRTC mangles (`scale<float>`).
//!
//! ```text
//! cargo run --release -p cuda-safe --example templated
//! ```

use std::process::ExitCode;

use cuda_safe::{CodeKind, Device, LaunchConfig, Program, ProgramOptions, launch};

const SOURCE: &str = r#"
template <typename T>
__global__ void scale(T* data, T factor, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) data[i] *= factor;
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

fn run() -> cuda_safe::Result<()> {
    let device = Device::new(0)?;
    let stream = device.create_stream(Default::default())?;
    let pool = device.default_memory_resource()?;

    let mut program = Program::new(SOURCE, ProgramOptions::default())?;
    program.add_name_expression("scale<float>")?;
    program.add_name_expression("scale<double>")?;
    let compiled = program.compile(CodeKind::Cubin)?;
    for expression in ["scale<float>", "scale<double>"] {
        println!(
            "{expression:14} -> {}",
            compiled.lowered_name(expression).unwrap_or("?")
        );
    }
    let code = compiled.load()?;

    let n = 1000usize;
    let config = LaunchConfig::for_num_elements(n, 128)?;

    let mut singles = pool.allocate(n * 4, &stream)?;
    singles.copy_from_host(&vec![1.5f32; n])?;
    let kernel = code.get_kernel("scale<float>")?;
    // SAFETY: scale<float>(float*, float, size_t) touches `n` floats, which the buffer holds.
    unsafe { launch(&stream, &config, &kernel, (&mut singles, 2.0f32, n))? };

    let mut doubles = pool.allocate(n * 8, &stream)?;
    doubles.copy_from_host(&vec![1.5f64; n])?;
    let kernel = code.get_kernel("scale<double>")?;
    // SAFETY: scale<double>(double*, double, size_t) touches `n` doubles, which it holds.
    unsafe { launch(&stream, &config, &kernel, (&mut doubles, 4.0f64, n))? };

    let singles: Vec<f32> = singles.to_vec()?;
    let doubles: Vec<f64> = doubles.to_vec()?;
    println!(
        "float: {} (expected 3), double: {} (expected 6)",
        singles[n - 1],
        doubles[n - 1]
    );
    if singles.iter().any(|&v| v != 3.0) || doubles.iter().any(|&v| v != 6.0) {
        return Err(cuda_safe::Error::invalid_argument(
            "a templated kernel computed a wrong value",
        ));
    }

    // Passing a double where the float kernel expects a float is caught before the launch.
    let kernel = code.get_kernel("scale<float>")?;
    let mut probe = pool.allocate(4, &stream)?;
    // SAFETY: refused before the launch: the argument sizes do not match.
    match unsafe { launch(&stream, &config, &kernel, (&mut probe, 2.0f64, 1usize)) } {
        Err(error) => println!("caught: {error}"),
        Ok(()) => println!("this driver does not report parameter lists (before CUDA 12.4)"),
    }
    Ok(())
}
