//! Compile, load and launch benchmark: the loops of `bench/floors/driver_floor.c` through
//! `cuda-safe`, with the floor's figure names, plus the program-cache figures.
//!
//! Prints `FIG name value unit` lines. Run beside the C floor in one job
//! (`bench/run_benchmarks.sh`), which turns both into one table of ratios.

use std::process::{Command, ExitCode};
use std::time::Instant;

use cuda_safe::KernelCache;
use cuda_safe::cache::{FileStreamProgramCache, InMemoryProgramCache, ProgramCache};
use cuda_safe::{
    CodeKind, Device, Event, EventOptions, LaunchConfig, ObjectCode, Program, ProgramOptions,
    Result, StreamOptions, launch,
};

/// The floor's kernels, byte for byte, plus a vectorised SAXPY.
const SOURCE: &str = "extern \"C\" __global__ void saxpy(float a, const float* __restrict__ x,\n    const float* __restrict__ y, float* out, size_t n) {\n  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;\n  if (i < n) out[i] = a * x[i] + y[i];\n}\nextern \"C\" __global__ void empty() {}\nextern \"C\" __global__ void spin(unsigned long long ns) {\n  unsigned long long t0; asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t0));\n  unsigned long long t = t0; while (t - t0 < ns) asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t));\n}\n";

const VEC4_SOURCE: &str = r#"
extern "C" __global__ void saxpy_vec4(float a, const float4* __restrict__ x,
                                      const float4* __restrict__ y, float4* out, size_t n4) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 p = x[i], q = y[i];
        out[i] = make_float4(a * p.x + q.x, a * p.y + q.y, a * p.z + q.z, a * p.w + q.w);
    }
}
"#;

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn fig(name: &str, value: f64, unit: &str) {
    println!("FIG {name} {value:.4} {unit}");
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let result = match args.get(1).map(String::as_str) {
        Some("--disk-hit") => match args.get(2) {
            Some(dir) => disk_hit(dir, args.get(3).map(String::as_str)),
            None => Err(cuda_safe::Error::invalid_argument(
                "--disk-hit needs a directory",
            )),
        },
        _ => run(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// The program every cache figure uses: the floor's source for this device.
fn program(device: &Device) -> Result<Program> {
    let options = ProgramOptions::default().arch(format!("sm_{}", device.arch()?));
    Program::new(SOURCE, options)
}

/// In a fresh process (after driver initialisation): an on-disk cache hit to a launchable
/// kernel. With `version` (`"13.0"`) the NVRTC version is assumed, as
/// `KernelCache::assume_nvrtc_version` does, and NVRTC is never loaded; without, the key asks
/// NVRTC. Prints the total and its phases in microseconds: the key (NVRTC's load included),
/// reading and verifying the entry, loading it and getting the kernel.
fn disk_hit(dir: &str, version: Option<&str>) -> Result<()> {
    let device = Device::new(0)?;
    device.set_current()?;
    let program = program(&device)?;
    let disk = FileStreamProgramCache::new(dir)?;
    let start = Instant::now();
    let key = match version {
        Some(version) => program.cache_key_for_compiler(CodeKind::Cubin, version)?,
        None => program.cache_key(CodeKind::Cubin)?,
    };
    let keyed = start.elapsed();
    let cached = disk.get(&key)?.ok_or_else(|| {
        cuda_safe::Error::invalid_argument("the fresh process missed the disk cache")
    })?;
    let fetched = start.elapsed();
    let kernel = ObjectCode::from_compiled(&cached)?.get_kernel("saxpy")?;
    let total = start.elapsed();
    // The same read again, warm: what the first one paid for cold code and first syscalls.
    let again = Instant::now();
    let warm = disk.get(&key)?;
    let warm_read = again.elapsed();
    let us = |duration: std::time::Duration| duration.as_secs_f64() * 1e6;
    println!(
        "{:.3} {:.3} {:.3} {:.3} {:.3} {} {}",
        us(total),
        us(keyed),
        us(fetched - keyed),
        us(total - fetched),
        us(warm_read),
        kernel.name(),
        warm.is_some()
    );
    Ok(())
}

fn run() -> Result<()> {
    let device = Device::new(0)?;
    device.set_current()?;
    let program = program(&device)?;

    // NVRTC compile to CUBIN (5 runs), as the floor.
    let mut compile_ms = Vec::new();
    let mut cubin = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        let compiled = program.compile(CodeKind::Cubin)?;
        compile_ms.push(start.elapsed().as_secs_f64() * 1e3);
        cubin = compiled.bytes().to_vec();
    }
    fig("nvrtc_compile_cubin_median", median(&mut compile_ms), "ms");

    // CUBIN load + get kernel (200 runs; the previous library is unloaded after the next loads).
    let mut load_us = Vec::new();
    let mut loaded = None;
    for _ in 0..200 {
        let start = Instant::now();
        let code = ObjectCode::from_cubin(&cubin)?;
        let kernel = code.get_kernel("saxpy")?;
        load_us.push(start.elapsed().as_secs_f64() * 1e6);
        loaded = Some((code, kernel));
    }
    fig("library_load_get_kernel", median(&mut load_us), "us");
    let code = match loaded {
        Some((code, _)) => code,
        None => ObjectCode::from_cubin(&cubin)?,
    };
    let saxpy = code.get_kernel("saxpy")?;
    let empty = code.get_kernel("empty")?;

    let stream = device.create_stream(StreamOptions::default())?;
    let pool = device.default_memory_resource()?;
    let one = LaunchConfig::new(1, 1);
    let launches = 20_000;
    for _ in 0..1000 {
        // SAFETY: `empty` takes no argument and touches nothing.
        unsafe { launch(&stream, &one, &empty, ())? };
    }
    stream.sync()?;
    let start = Instant::now();
    for _ in 0..launches {
        // SAFETY: as above.
        unsafe { launch(&stream, &one, &empty, ())? };
    }
    fig(
        "launch_empty_enqueue",
        start.elapsed().as_secs_f64() * 1e6 / f64::from(launches),
        "us",
    );
    stream.sync()?;

    let (sx, sy) = (pool.allocate(1024, &stream)?, pool.allocate(1024, &stream)?);
    let mut so = pool.allocate(1024, &stream)?;
    for _ in 0..1000 {
        // SAFETY: saxpy with n = 1 reads and writes one float of 1 KiB buffers.
        unsafe { launch(&stream, &one, &saxpy, (2.0f32, &sx, &sy, &mut so, 1usize))? };
    }
    stream.sync()?;
    let start = Instant::now();
    for _ in 0..launches {
        // SAFETY: as above.
        unsafe { launch(&stream, &one, &saxpy, (2.0f32, &sx, &sy, &mut so, 1usize))? };
    }
    fig(
        "launch_saxpy_5args_enqueue",
        start.elapsed().as_secs_f64() * 1e6 / f64::from(launches),
        "us",
    );
    stream.sync()?;

    let mut round_trips = vec![0f64; 5000];
    for time in &mut round_trips {
        let start = Instant::now();
        // SAFETY: `empty` touches nothing.
        unsafe { launch(&stream, &one, &empty, ())? };
        stream.sync()?;
        *time = start.elapsed().as_secs_f64() * 1e6;
    }
    fig("launch_empty_plus_sync", median(&mut round_trips), "us");

    // SAXPY 100M float32, the floor's kernel and launch shape; then the vectorised kernel and
    // a device-to-device copy of the same size.
    let n = 100_000_000usize;
    let bytes = n * 4;
    let mut x = pool.allocate(bytes, &stream)?;
    let mut y = pool.allocate(bytes, &stream)?;
    let mut out = pool.allocate(bytes, &stream)?;
    x.fill::<u32>(1.0f32.to_bits())?;
    y.fill::<u32>(2.0f32.to_bits())?;
    let timed = EventOptions::default().timing(true);
    let (e0, e1) = (device.create_event(timed)?, device.create_event(timed)?);
    let config = LaunchConfig::for_num_elements(n, 256)?;
    let mut kernel_ms = Vec::new();
    for run in 0..23 {
        stream.record(&e0)?;
        // SAFETY: saxpy reads n floats of x and y and writes n floats of out.
        unsafe { launch(&stream, &config, &saxpy, (3.0f32, &x, &y, &mut out, n))? };
        stream.record(&e1)?;
        let elapsed = Event::elapsed(&e0, &e1)?.as_secs_f64() * 1e3;
        if run >= 3 {
            kernel_ms.push(elapsed);
        }
    }
    let saxpy_ms = median(&mut kernel_ms);
    fig("saxpy_100M_kernel", saxpy_ms, "ms");
    fig(
        "saxpy_100M_bandwidth",
        3.0 * bytes as f64 / saxpy_ms / 1e6,
        "GB/s",
    );
    if out.to_vec::<f32>()?.iter().any(|&v| v != 5.0) {
        return Err(cuda_safe::Error::invalid_argument(
            "saxpy computed a wrong value",
        ));
    }

    let vec4 = Program::new(VEC4_SOURCE, program.options().clone())?.compile(CodeKind::Cubin)?;
    let vec4_code = vec4.load()?;
    let saxpy_vec4 = vec4_code.get_kernel("saxpy_vec4")?;
    let config4 = LaunchConfig::for_num_elements(n / 4, 256)?;
    let mut vec4_ms = Vec::new();
    for run in 0..23 {
        stream.record(&e0)?;
        // SAFETY: saxpy_vec4 reads n/4 float4 of x and y and writes n/4 float4 of out.
        unsafe {
            launch(
                &stream,
                &config4,
                &saxpy_vec4,
                (3.0f32, &x, &y, &mut out, n / 4),
            )?
        };
        stream.record(&e1)?;
        let elapsed = Event::elapsed(&e0, &e1)?.as_secs_f64() * 1e3;
        if run >= 3 {
            vec4_ms.push(elapsed);
        }
    }
    let vec4_bandwidth = 3.0 * bytes as f64 / median(&mut vec4_ms) / 1e6;
    fig("saxpy_vec4_100M_bandwidth", vec4_bandwidth, "GB/s");

    let mut copy_ms = Vec::new();
    for _ in 0..20 {
        stream.record(&e0)?;
        out.copy_from(&x)?;
        stream.record(&e1)?;
        copy_ms.push(Event::elapsed(&e0, &e1)?.as_secs_f64() * 1e3);
    }
    let copy_bandwidth = 2.0 * bytes as f64 / median(&mut copy_ms) / 1e6;
    fig("d2d_copy_400MB_bandwidth_rw", copy_bandwidth, "GB/s");
    fig(
        "saxpy_vec4_percent_of_d2d",
        100.0 * vec4_bandwidth / copy_bandwidth,
        "%",
    );

    cache_figures(&program)
}

/// Cold compile through a cache, in-memory hits, and on-disk hits in fresh processes.
fn cache_figures(program: &Program) -> Result<()> {
    let memory = InMemoryProgramCache::new(64 << 20);
    let start = Instant::now();
    let cold = program.compile_cached(CodeKind::Cubin, &memory)?;
    let cold_us = start.elapsed().as_secs_f64() * 1e6;
    fig("cache_cold_compile", cold_us / 1e3, "ms");
    drop(cold);

    let mut hit_us = Vec::new();
    for _ in 0..200 {
        let start = Instant::now();
        let hit = program.compile_cached(CodeKind::Cubin, &memory)?;
        let kernel = hit.load()?.get_kernel("saxpy")?;
        hit_us.push(start.elapsed().as_secs_f64() * 1e6);
        drop(kernel);
    }
    fig(
        "cache_memory_hit_bytes_to_kernel",
        median(&mut hit_us),
        "us",
    );

    let kernels = KernelCache::new(InMemoryProgramCache::new(64 << 20));
    kernels.kernel(program, CodeKind::Cubin, "saxpy")?;
    let mut warm_us = Vec::new();
    for _ in 0..1000 {
        let start = Instant::now();
        let kernel = kernels.kernel(program, CodeKind::Cubin, "saxpy")?;
        warm_us.push(start.elapsed().as_secs_f64() * 1e6);
        drop(kernel);
    }
    let memory_hit = median(&mut warm_us);
    fig("cache_memory_hit_to_kernel", memory_hit, "us");
    fig("cache_memory_hit_speedup", cold_us / memory_hit, "x");

    let dir = std::env::temp_dir().join(format!("cuda-safe-bench-cache-{}", std::process::id()));
    let disk = FileStreamProgramCache::new(&dir)?;
    program.compile_cached(CodeKind::Cubin, &disk)?;
    let exe = std::env::current_exe()
        .map_err(|e| cuda_safe::Error::invalid_argument(format!("current_exe: {e}")))?;
    let (major, minor) = cuda_safe::nvrtc_version()?;
    let version = format!("{major}.{minor}");
    for (label, assumed) in [("", None), ("_assumed_nvrtc", Some(version.as_str()))] {
        let mut phases: [Vec<f64>; 5] = Default::default();
        for _ in 0..11 {
            let mut command = Command::new(&exe);
            command.arg("--disk-hit").arg(&dir).args(assumed);
            let output = command.output().map_err(|e| {
                cuda_safe::Error::invalid_argument(format!("spawning {exe:?}: {e}"))
            })?;
            let text = String::from_utf8_lossy(&output.stdout);
            let values: Vec<f64> = text
                .split_whitespace()
                .take(5)
                .filter_map(|value| value.parse().ok())
                .collect();
            if !output.status.success() || values.len() != 5 {
                return Err(cuda_safe::Error::invalid_argument(format!(
                    "the disk-hit child failed: {}",
                    String::from_utf8_lossy(&output.stderr)
                )));
            }
            for (phase, value) in phases.iter_mut().zip(values) {
                phase.push(value);
            }
        }
        let [total, key, fetch, load, warm_fetch] = &mut phases;
        let disk_hit = median(total);
        fig(
            &format!("cache_disk_hit{label}_fresh_process_to_kernel"),
            disk_hit,
            "us",
        );
        fig(&format!("cache_disk_hit{label}_key"), median(key), "us");
        fig(
            &format!("cache_disk_hit{label}_read_verify"),
            median(fetch),
            "us",
        );
        fig(
            &format!("cache_disk_hit{label}_load_get_kernel"),
            median(load),
            "us",
        );
        fig(
            &format!("cache_disk_hit{label}_read_verify_warm"),
            median(warm_fetch),
            "us",
        );
        fig(
            &format!("cache_disk_hit{label}_speedup"),
            cold_us / disk_hit,
            "x",
        );
        if assumed.is_some() {
            // The deployment path (no NVRTC in the process) does the floor's work plus the
            // cache's: the floor's names, so the runner pairs them with disk_hit_floor.c.
            fig("disk_hit_floor_fresh_process_to_kernel", disk_hit, "us");
            fig("disk_hit_floor_load_get_kernel", median(load), "us");
            fig("disk_hit_floor_read", median(fetch), "us");
        }
    }
    // Best effort: the directory is this run's own scratch space.
    let _ = std::fs::remove_dir_all(&dir);
    println!("DONE");
    Ok(())
}
