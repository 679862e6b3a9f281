//! A live GPU table like `nvidia-smi dmon`, through `cuda_safe::system` (NVML, no CUDA): power,
//! temperature, utilization, memory, clocks, performance state and process count of every GPU,
//! once a second, then the processes on each GPU.
//!
//! ```text
//! cargo run --release -p cuda-safe --example monitor              # 5 samples
//! cargo run --release -p cuda-safe --example monitor -- --samples 30
//! cargo run --release -p cuda-safe --example monitor -- --once
//! ```
//!
//! A value the GPU does not report is shown as `-`; any other failure of a query as `ERR`.
//! Without NVML it prints one line saying why and exits with status 1.

use std::fmt::Display;
use std::process::ExitCode;
use std::time::Duration;

use cuda_safe::system::{ClockType, Device, ProcessInfo, Session};
use cuda_safe::{Error, Result};

/// The usage line, printed for `--help` and after a bad argument.
const USAGE: &str = "usage: monitor [--samples N | --once]";

/// Samples taken when no option says otherwise.
const DEFAULT_SAMPLES: u32 = 5;

/// Time between samples.
const INTERVAL: Duration = Duration::from_secs(1);

/// How many samples to take, from the command line.
fn parse_args(args: impl IntoIterator<Item = String>) -> std::result::Result<u32, String> {
    let mut samples = DEFAULT_SAMPLES;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--once" => samples = 1,
            "--samples" => {
                let value = args.next().ok_or("--samples needs a number")?;
                samples =
                    value.parse().ok().filter(|&n| n > 0).ok_or_else(|| {
                        format!("--samples needs a positive number, not {value:?}")
                    })?;
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(samples)
}

/// A table cell: the value, `-` when the GPU does not report it, `ERR` on another failure.
fn cell<T: Display>(value: Result<T>) -> String {
    match value {
        Ok(value) => value.to_string(),
        Err(error) if error.is_not_supported() || error.is_symbol_missing() => "-".to_owned(),
        Err(_) => "ERR".to_owned(),
    }
}

/// Prints the two header lines of the table.
fn print_header() {
    println!(
        "# {:>3} {:>5} {:>5} {:>4} {:>4} {:>9} {:>9} {:>5} {:>5} {:>6} {:>5}",
        "gpu",
        "pwr",
        "gtemp",
        "sm",
        "mem",
        "fb_used",
        "fb_total",
        "sclk",
        "mclk",
        "pstate",
        "procs"
    );
    println!(
        "# {:>3} {:>5} {:>5} {:>4} {:>4} {:>9} {:>9} {:>5} {:>5} {:>6} {:>5}",
        "Idx", "W", "C", "%", "%", "MiB", "MiB", "MHz", "MHz", "", "#"
    );
}

/// Prints one row for `gpu`; `processes` is reused between calls.
fn print_row(index: u32, gpu: &Device, processes: &mut Vec<ProcessInfo>) {
    let utilization = gpu.utilization();
    let memory = gpu.memory_info();
    let process_count = gpu
        .compute_processes_into(processes)
        .map(|()| processes.len());
    println!(
        "  {:>3} {:>5} {:>5} {:>4} {:>4} {:>9} {:>9} {:>5} {:>5} {:>6} {:>5}",
        index,
        cell(gpu.power_usage_mw().map(|mw| mw / 1000)),
        cell(gpu.temperature_c()),
        cell(utilization.as_ref().map(|u| u.gpu).map_err(Clone::clone)),
        cell(utilization.map(|u| u.memory)),
        cell(memory.as_ref().map(|m| m.used >> 20).map_err(Clone::clone)),
        cell(memory.map(|m| m.total >> 20)),
        cell(gpu.clock_mhz(ClockType::SM)),
        cell(gpu.clock_mhz(ClockType::MEMORY)),
        cell(gpu.performance_state()),
        cell(process_count),
    );
}

/// Prints the compute processes of every GPU: pid, name and GPU memory.
fn print_processes(session: &Session, gpus: &[Device]) {
    println!();
    println!("# {:>3} {:>8} {:>9}  name", "gpu", "pid", "MiB");
    for (index, gpu) in (0u32..).zip(gpus) {
        match gpu.compute_processes() {
            Ok(processes) if processes.is_empty() => {
                println!("  {index:>3} (no compute processes)")
            }
            Ok(processes) => {
                for process in processes {
                    let memory = process
                        .used_gpu_memory()
                        .map_or_else(|| "-".to_owned(), |bytes| (bytes >> 20).to_string());
                    let name = session
                        .process_name(process.pid())
                        .unwrap_or_else(|_| "?".to_owned());
                    println!("  {index:>3} {:>8} {memory:>9}  {name}", process.pid());
                }
            }
            Err(error) => println!("  {index:>3} processes not available: {error}"),
        }
    }
}

fn run(samples: u32) -> Result<()> {
    let session = Session::new()?;
    let gpus = session.devices()?;
    println!(
        "# driver {}, CUDA {}, NVML {}",
        cell(session.driver_version()),
        cell(session.cuda_driver_version()),
        cell(session.nvml_version())
    );
    for (index, gpu) in (0u32..).zip(&gpus) {
        println!("# gpu {index}: {} {}", cell(gpu.name()), cell(gpu.uuid()));
    }
    if gpus.is_empty() {
        println!("# no GPU");
        return Ok(());
    }
    print_header();
    let mut processes = Vec::new();
    for sample in 0..samples {
        if sample > 0 {
            std::thread::sleep(INTERVAL);
        }
        for (index, gpu) in (0u32..).zip(&gpus) {
            print_row(index, gpu, &mut processes);
        }
    }
    print_processes(&session, &gpus);
    Ok(())
}

fn main() -> ExitCode {
    let samples = match parse_args(std::env::args().skip(1)) {
        Ok(samples) => samples,
        Err(message) if message.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("monitor: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(samples) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Error::Load(error)) => {
            eprintln!("monitor: NVML is not available: {error}");
            ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("monitor: {error}");
            ExitCode::FAILURE
        }
    }
}
