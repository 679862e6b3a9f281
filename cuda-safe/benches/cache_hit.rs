//! Program-cache hits in fresh processes, written as a user writes them, beside
//! `bench/floors/disk_hit_floor.c` (11 fresh processes, each timing one hit after its
//! context is up).
//!
//! Prints `FIG name value unit` lines (medians over the fresh processes):
//!
//! - `disk_hit_floor_fresh_process_to_kernel`: `KernelCache` over a `FileStreamProgramCache`,
//!   NVRTC's version learnt as a user's code learns it (no version assumed), from the request to
//!   the launchable kernel; the floor's name, so the runner pairs it with the floor's read +
//!   load + get.
//! - `disk_hit_floor_read` and `disk_hit_floor_load_get_kernel`: the same hit in two steps
//!   (`Program::compile_cached`: key, note and entry read and verified; then load + get kernel),
//!   against the floor's read and its load + get.
//! - `cache_hit_nvrtc_loaded`: in how many of those processes libnvrtc was mapped after the hit
//!   (0 when the note did its job).
//! - `cache_hit_open_cache`: creating the `FileStreamProgramCache` and the `KernelCache` (before
//!   the request, not in the figures above; the floor opens no cache).
//! - `cache_hit_assumed_fresh_process_to_kernel`: the first figure with
//!   `KernelCache::assume_nvrtc_version` (compare with the floor's
//!   `disk_hit_floor_fresh_process_to_kernel`).
//! - `cache_link_hit_fresh_process_to_kernel`: `Linker::link_cached` (two LTO-IR inputs, already
//!   in memory) over a `FileStreamProgramCache`, load and get kernel; `cache_link_read_load_fresh_process_to_kernel`:
//!   reading the cached image's bytes from a file and loading them (`ObjectCode::from_cubin`) and
//!   getting the kernel, the reference the link hit is held to (goal ≤ 1.2x); and
//!   `cache_link_hit_over_read_load`, the ratio of the two medians; `cache_link_nvjitlink_loaded`
//!   counts the hit processes with libnvJitLink mapped.
//! - `cache_link_hit_plain_fresh_process_to_kernel`: the link hit without its noted copy (the
//!   cache's `with_noted_copies(false)`: the note file, then the entry), in processes
//!   alternating with the first link figure's; `cache_link_noted_over_plain`, the ratio of the
//!   two medians, tells whether the noted copy still gains.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use cuda_safe::cache::{FileStreamProgramCache, ProgramCache};
use cuda_safe::{
    CodeKind, Device, Error, KernelCache, LinkInput, LinkInputKind, Linker, LinkerOptions,
    ObjectCode, Program, ProgramOptions, Result,
};

/// `disk_hit_floor.c`'s SAXPY, byte for byte.
const SAXPY: &str = "extern \"C\" __global__ void saxpy(float a, const float* __restrict__ x,\n    const float* __restrict__ y, float* out, size_t n) {\n  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;\n  if (i < n) out[i] = a * x[i] + y[i];\n}\n";

/// The link's two units: a device function and the kernel that calls it.
const LIBRARY: &str = "__device__ float scale(float x) { return 3.0f * x; }\n";
const KERNEL: &str = "__device__ float scale(float x);\nextern \"C\" __global__ void k(float* x) { x[threadIdx.x] = scale(x[threadIdx.x]); }\n";

/// Fresh processes per figure, as the floor.
const RUNS: usize = 11;

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn fig(name: &str, value: f64, unit: &str) {
    println!("FIG {name} {value:.4} {unit}");
}

fn us(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e6
}

fn failed(what: impl std::fmt::Display) -> Error {
    Error::invalid_argument(what.to_string())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.as_slice() {
        [mode, dir, rest @ ..] if mode.starts_with("--") => child(mode, Path::new(dir), rest),
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

/// The current device, current, and the SAXPY program for it.
fn setup() -> Result<(Device, Program)> {
    let device = Device::new(0)?;
    device.set_current()?;
    let options = ProgramOptions::default().arch(format!("sm_{}", device.arch()?));
    Ok((device, Program::new(SAXPY, options)?))
}

/// Whether a library whose file name starts with `stem` is mapped in this process.
fn mapped(stem: &str) -> bool {
    std::fs::read_to_string("/proc/self/maps").is_ok_and(|maps| {
        maps.lines().any(|line| {
            line.rsplit('/')
                .next()
                .is_some_and(|file| file.starts_with(stem))
        })
    })
}

/// The two LTO-IR units of the link, written to (and read back from) `dir`.
fn link_inputs(dir: &Path) -> Result<Linker> {
    let arch = format!("sm_{}", Device::new(0)?.arch()?);
    let mut linker = Linker::new(LinkerOptions::default().arch(arch.clone()).lto(true))?;
    for (name, source) in [("library.ltoir", LIBRARY), ("kernel.ltoir", KERNEL)] {
        let path = dir.join(name);
        if !path.exists() {
            let options = ProgramOptions::default()
                .arch(arch.clone())
                .relocatable_device_code(true);
            let code = Program::new(source, options)?.compile(CodeKind::LtoIr)?;
            std::fs::write(&path, code.bytes()).map_err(failed)?;
        }
        linker.add(LinkInput::from_file_as(&path, LinkInputKind::LtoIr)?);
    }
    Ok(linker)
}

/// One fresh process's part; prints its timings on one line.
fn child(mode: &str, dir: &Path, rest: &[String]) -> Result<()> {
    let (_device, program) = setup()?;
    let cache_dir = dir.join("cache");
    match mode {
        // A first run: compiles through the cache, which notes NVRTC and stores the entry.
        "--populate" => {
            let kernels = KernelCache::new(FileStreamProgramCache::new(&cache_dir)?);
            kernels.kernel(&program, CodeKind::Cubin, "saxpy")?;
            let linker = link_inputs(dir)?;
            let linked = linker.link_cached(CodeKind::Cubin, kernels.programs())?;
            std::fs::write(dir.join("linked.cubin"), linked.bytes()).map_err(failed)?;
        }
        "--kernel-cache" => {
            let opened = Instant::now();
            let mut kernels = KernelCache::new(FileStreamProgramCache::new(&cache_dir)?);
            if let Some(version) = rest.first() {
                let (major, minor) = version.split_once('.').ok_or_else(|| failed(version))?;
                let parse = |text: &str| text.parse::<u32>().map_err(failed);
                kernels = kernels.assume_nvrtc_version(parse(major)?, parse(minor)?);
            }
            let open_us = us(opened);
            let start = Instant::now();
            let kernel = kernels.kernel(&program, CodeKind::Cubin, "saxpy")?;
            let total = us(start);
            std::hint::black_box(kernel);
            let hits = kernels.programs().stats()?.hits;
            println!(
                "{total:.3} {open_us:.3} {} {hits}",
                u8::from(mapped("libnvrtc.so"))
            );
        }
        "--two-steps" => {
            let disk = FileStreamProgramCache::new(&cache_dir)?;
            let start = Instant::now();
            let hit = program.compile_cached(CodeKind::Cubin, &disk)?;
            let fetched = us(start);
            let loaded = Instant::now();
            let kernel = hit.load()?.get_kernel("saxpy")?;
            let load = us(loaded);
            std::hint::black_box(kernel);
            if !hit.from_cache() {
                return Err(failed("the fresh process missed the disk cache"));
            }
            println!("{fetched:.3} {load:.3}");
        }
        "--link-hit" | "--link-hit-plain" => {
            let linker = link_inputs(dir)?;
            let disk =
                FileStreamProgramCache::new(&cache_dir)?.with_noted_copies(mode == "--link-hit");
            let start = Instant::now();
            let linked = linker.link_cached(CodeKind::Cubin, &disk)?;
            let kernel = linked.load()?.get_kernel("k")?;
            let total = us(start);
            std::hint::black_box(kernel);
            if !linked.from_cache() {
                return Err(failed("the fresh process missed the cached link"));
            }
            println!("{total:.3} {}", u8::from(mapped("libnvJitLink.so")));
        }
        "--read-load" => {
            let start = Instant::now();
            let bytes = std::fs::read(dir.join("linked.cubin")).map_err(failed)?;
            let kernel = ObjectCode::from_cubin(&bytes)?.get_kernel("k")?;
            let total = us(start);
            std::hint::black_box(kernel);
            println!("{total:.3}");
        }
        other => return Err(failed(format!("unknown mode {other}"))),
    }
    Ok(())
}

/// Runs `runs` fresh processes of `args` and returns each line's numbers, by column.
fn fresh(exe: &Path, args: &[&str], columns: usize, runs: usize) -> Result<Vec<Vec<f64>>> {
    let mut values = vec![Vec::new(); columns];
    for _ in 0..runs {
        let output = Command::new(exe).args(args).output().map_err(failed)?;
        let text = String::from_utf8_lossy(&output.stdout);
        let numbers: Vec<f64> = text
            .split_whitespace()
            .filter_map(|value| value.parse().ok())
            .collect();
        if !output.status.success() || numbers.len() != columns {
            return Err(failed(format!(
                "the fresh process {args:?} failed: {text}{}",
                String::from_utf8_lossy(&output.stderr)
            )));
        }
        for (column, value) in values.iter_mut().zip(numbers) {
            column.push(value);
        }
    }
    Ok(values)
}

fn run() -> Result<()> {
    let (_device, program) = setup()?;
    let dir = std::env::temp_dir().join(format!("cuda-safe-cache-hit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(failed)?;
    let exe: PathBuf = std::env::current_exe().map_err(failed)?;
    let dir_arg = dir.to_string_lossy().into_owned();
    drop(program);
    let result = figures(&exe, &dir_arg);
    // Best effort: the directory is this run's own scratch space.
    let _ = std::fs::remove_dir_all(&dir);
    result?;
    println!("DONE");
    Ok(())
}

fn figures(exe: &Path, dir: &str) -> Result<()> {
    // The first run of a user's program, in a process of its own (as every hit after it).
    fresh(exe, &["--populate", dir], 0, 1)?;

    let mut natural = fresh(exe, &["--kernel-cache", dir], 4, RUNS)?;
    fig(
        "disk_hit_floor_fresh_process_to_kernel",
        median(&mut natural[0]),
        "us",
    );
    fig("cache_hit_open_cache", median(&mut natural[1]), "us");
    fig(
        "cache_hit_nvrtc_loaded",
        natural[2].iter().sum(),
        "processes",
    );
    let mut steps = fresh(exe, &["--two-steps", dir], 2, RUNS)?;
    fig("disk_hit_floor_read", median(&mut steps[0]), "us");
    fig(
        "disk_hit_floor_load_get_kernel",
        median(&mut steps[1]),
        "us",
    );

    let (major, minor) = cuda_safe::nvrtc_version()?;
    let version = format!("{major}.{minor}");
    let mut assumed = fresh(exe, &["--kernel-cache", dir, &version], 4, RUNS)?;
    fig(
        "cache_hit_assumed_fresh_process_to_kernel",
        median(&mut assumed[0]),
        "us",
    );

    // The link hit with its noted copy (one read) and without (the note, then the entry),
    // alternating process by process.
    let (mut link, mut plain) = (vec![Vec::new(), Vec::new()], Vec::new());
    for _ in 0..RUNS {
        for (column, one) in fresh(exe, &["--link-hit", dir], 2, 1)?
            .into_iter()
            .enumerate()
        {
            link[column].extend(one);
        }
        plain.extend(fresh(exe, &["--link-hit-plain", dir], 2, 1)?.swap_remove(0));
    }
    let mut reference = fresh(exe, &["--read-load", dir], 1, RUNS)?;
    let (link_us, reference_us) = (median(&mut link[0]), median(&mut reference[0]));
    let plain_us = median(&mut plain);
    fig("cache_link_hit_fresh_process_to_kernel", link_us, "us");
    fig(
        "cache_link_hit_plain_fresh_process_to_kernel",
        plain_us,
        "us",
    );
    fig("cache_link_noted_over_plain", link_us / plain_us, "x");
    fig(
        "cache_link_read_load_fresh_process_to_kernel",
        reference_us,
        "us",
    );
    fig("cache_link_hit_over_read_load", link_us / reference_us, "x");
    fig(
        "cache_link_nvjitlink_loaded",
        link[1].iter().sum(),
        "processes",
    );
    let programs = FileStreamProgramCache::new(Path::new(dir).join("cache"))?;
    fig(
        "cache_hit_entries",
        programs.stats()?.entries as f64,
        "entries",
    );
    Ok(())
}
