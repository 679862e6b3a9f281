//! Latency of the common NVML getters through `cuda_safe::system`, on GPU 0, beside the same
//! calls made straight through the raw layer (`nvml_sys`). Prints `FIG name value unit` lines
//! with the names `bench/floors/nvml_floor.c` uses for the C calls, so the two compare line by line
//! when run in one job; the raw-layer figures carry a `_raw` suffix.
//!
//! Each figure is the median of up to 2,000 timed calls (at most 2 s per getter) after 50
//! warm-up calls, the same rule as the C program.
//!
//! ```text
//! cargo bench -p cuda-safe --bench nvml_latency
//! ```

use std::hint::black_box;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use cuda_safe::nvml_sys::{self, nvmlDevice_t, nvmlReturn_t};
use cuda_safe::system::{ClockType, Device, ProcessInfo, Session};

/// Timed calls per getter, at most.
const SAMPLES: usize = 2000;
/// Time per getter, at most.
const BUDGET: Duration = Duration::from_secs(2);
/// Untimed calls before the timed ones.
const WARMUP: usize = 50;
/// Room for processes in the raw call, as in the C program.
const MAX_PROCESSES: usize = 64;

/// The median time of one `call`, in microseconds.
fn median_us(mut call: impl FnMut()) -> f64 {
    for _ in 0..WARMUP {
        call();
    }
    let mut times = Vec::with_capacity(SAMPLES);
    let start = Instant::now();
    while times.len() < SAMPLES && start.elapsed() < BUDGET {
        let before = Instant::now();
        call();
        times.push(before.elapsed());
    }
    times.sort_unstable();
    times
        .get(times.len() / 2)
        .map_or(f64::NAN, |median| median.as_secs_f64() * 1e6)
}

/// Prints one figure.
fn fig(name: &str, value: f64, unit: &str) {
    println!("FIG {name} {value:.4} {unit}");
}

/// Measures `call` as figure `name` when a first call succeeds; says why otherwise.
fn measure<T, E: std::fmt::Display>(name: &str, mut call: impl FnMut() -> Result<T, E>) {
    match call() {
        Ok(_) => fig(
            name,
            median_us(|| {
                let _ = black_box(call());
            }),
            "us",
        ),
        Err(error) => println!("# {name}: not measured: {error}"),
    }
}

/// A raw call's result as `Result`, for [`measure`].
fn raw(result: Result<nvmlReturn_t, nvml_sys::LoadError>) -> Result<(), String> {
    match result {
        Ok(nvmlReturn_t::NVML_SUCCESS) => Ok(()),
        Ok(code) => Err(format!("NVML return code {}", code.0)),
        Err(error) => Err(error.to_string()),
    }
}

/// The safe layer's getters.
fn safe(gpu: &Device) {
    let temperature = if nvml_sys::ABI_MAJOR < 13 {
        "nvml_temperature"
    } else {
        "nvml_temperature_v"
    };
    let mut processes: Vec<ProcessInfo> = Vec::new();
    measure("nvml_utilization", || gpu.utilization());
    measure("nvml_memory_info_v2", || gpu.memory_info());
    measure(temperature, || gpu.temperature_c());
    measure("nvml_power_usage", || gpu.power_usage_mw());
    measure("nvml_clock_info_sm", || gpu.clock_mhz(ClockType::SM));
    measure("nvml_compute_processes_v3", || {
        gpu.compute_processes_into(&mut processes)
    });
}

/// The same calls through the raw layer: what the safe layer adds is the difference.
fn raw_calls(nvml: &'static nvml_sys::Nvml, handle: nvmlDevice_t) {
    measure("nvml_utilization_raw", || {
        let mut rates = nvml_sys::nvmlUtilization_t::default();
        // SAFETY: NVML is initialised (the caller holds a device); valid out-pointer.
        raw(unsafe { nvml.nvmlDeviceGetUtilizationRates(handle, &mut rates) })
    });
    measure("nvml_memory_info_v2_raw", || {
        let mut memory = nvml_sys::nvmlMemory_v2_t {
            version: nvml_sys::nvmlMemory_v2,
            ..Default::default()
        };
        // SAFETY: as above; a versioned struct.
        raw(unsafe { nvml.nvmlDeviceGetMemoryInfo_v2(handle, &mut memory) })
    });
    nvml_sys::if_abi12! {
    measure("nvml_temperature_raw", || {
        let mut celsius = 0;
        // SAFETY: as above.
        raw(unsafe {
            nvml.nvmlDeviceGetTemperature(
                handle,
                nvml_sys::nvmlTemperatureSensors_t::NVML_TEMPERATURE_GPU,
                &mut celsius,
            )
        })
    });
    }
    nvml_sys::if_abi13! {
    measure("nvml_temperature_v_raw", || {
        let mut reading = nvml_sys::nvmlTemperature_t {
            version: nvml_sys::nvmlTemperature_v1,
            sensorType: nvml_sys::nvmlTemperatureSensors_t::NVML_TEMPERATURE_GPU,
            temperature: 0,
        };
        // SAFETY: as above; a versioned struct.
        raw(unsafe { nvml.nvmlDeviceGetTemperatureV(handle, &mut reading) })
    });
    }
    measure("nvml_power_usage_raw", || {
        let mut milliwatts = 0;
        // SAFETY: as above.
        raw(unsafe { nvml.nvmlDeviceGetPowerUsage(handle, &mut milliwatts) })
    });
    measure("nvml_clock_info_sm_raw", || {
        let mut mhz = 0;
        // SAFETY: as above.
        raw(unsafe {
            nvml.nvmlDeviceGetClockInfo(handle, nvml_sys::nvmlClockType_t::NVML_CLOCK_SM, &mut mhz)
        })
    });
    let mut infos = [nvml_sys::nvmlProcessInfo_t::default(); MAX_PROCESSES];
    measure("nvml_compute_processes_v3_raw", || {
        let mut count = MAX_PROCESSES as u32;
        // SAFETY: as above; `infos` has room for `count` entries.
        raw(unsafe {
            nvml.nvmlDeviceGetComputeRunningProcesses_v3(handle, &mut count, infos.as_mut_ptr())
        })
    });
}

fn main() -> ExitCode {
    let abi = if cuda_safe::sys::ABI_MAJOR < 13 {
        "cuda-12"
    } else {
        "cuda-13"
    };
    println!("# nvml_latency: cuda_safe::system on GPU 0 ({abi} ABI), medians");
    let start = Instant::now();
    let session = match Session::new() {
        Ok(session) => session,
        Err(error) => {
            eprintln!("nvml_latency: NVML unavailable: {error}");
            return ExitCode::FAILURE;
        }
    };
    fig("nvml_init_first", start.elapsed().as_secs_f64() * 1e3, "ms");
    let gpu = match session.device(0) {
        Ok(gpu) => gpu,
        Err(error) => {
            eprintln!("nvml_latency: no GPU 0: {error}");
            return ExitCode::FAILURE;
        }
    };
    match (gpu.name(), session.driver_version()) {
        (Ok(name), Ok(driver)) => println!("# device {name}, driver {driver}"),
        (name, driver) => println!("# device {name:?}, driver {driver:?}"),
    }
    safe(&gpu);
    match nvml_sys::nvml() {
        Ok(nvml) => raw_calls(nvml, gpu.as_raw()),
        Err(error) => println!("# raw calls not measured: {error}"),
    }
    ExitCode::SUCCESS
}
