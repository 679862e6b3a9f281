//! The monitoring sample of the `cuda.core` article this project started from, written from
//! `docs/nvml.md` alone: the device count, then device 0's utilization and memory through NVML.

use std::process::ExitCode;

use cuda_safe::system;

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
    println!("Devices: {}", system::device_count()?);
    let device = cuda_safe::Device::new(0)?;
    device.set_current()?;
    let gpu = device.to_nvml()?;
    let utilization = gpu.utilization()?;
    let memory = gpu.memory_info()?;
    println!(
        "{}: GPU {}%, MEM {}%",
        gpu.name()?,
        utilization.gpu,
        utilization.memory
    );
    println!(
        "Memory: {} MB / {} MB",
        memory.used >> 20,
        memory.total >> 20
    );
    Ok(())
}
