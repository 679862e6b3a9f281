//! Linking and TMA figures, measured by this program (there is no C floor for them):
//!
//! - the kernel linked from two LTO-IR units against the same kernel compiled whole
//!   (`lto_kernel_us`, `whole_kernel_us`: equal within noise when LTO inlined across units);
//! - the link itself (`link_nvjitlink_ms`), and `cuda.core`'s `Linker` on the same LTO-IR
//!   files (`link_cuda_core_ms`) when a Python with `cuda.core` is found (`$CUDA_CORE_PYTHON`,
//!   `python3` on the path, or `/opt/torch/.venv/bin/python3`).
//!
//! - a 2-D tile copy of an 8192 x 8192 float matrix through TMA tensor maps
//!   (`tma_copy_gbs`, the kernel of `examples/tma/copy.cu`) against `cuMemcpy2DAsync` of the
//!   same region (`memcpy2d_gbs`), bytes read plus bytes written over GPU time.
//!
//! Prints `FIG name value unit` lines (`bench/run_benchmarks.sh` collects them).

#[path = "../examples/tma/common.rs"]
mod tma;

use std::io::Write;
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use cuda_safe::{
    CodeKind, Device, Event, EventOptions, LaunchConfig, LinkInput, Linker, LinkerOptions,
    ObjectCode, Program, ProgramOptions, Result, Stream, launch,
};
use tma::Matrix;

/// The unit that defines the device function.
const LIBRARY: &str = r#"
__device__ float step(float x) { return 0.999f * x * (1.0f - x) + 0.25f; }
"#;

/// The unit whose kernel calls it 256 times per element.
const KERNEL: &str = r#"
__device__ float step(float x);
extern "C" __global__ void iterate(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    for (int k = 0; k < 256; ++k) v = step(v);
    x[i] = v;
}
"#;

const N: usize = 1 << 24;
const REPS: usize = 50;
const LINK_REPS: usize = 20;

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn fig(name: &str, value: f64, unit: &str) {
    println!("FIG {name} {value:.4} {unit}");
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// The median GPU time of `iterate` from `code` over the same buffer, in microseconds.
fn kernel_us(code: &ObjectCode, stream: &Stream, device: &Device) -> Result<f64> {
    let kernel = code.get_kernel("iterate")?;
    let pool = device.default_memory_resource()?;
    let mut x = pool.allocate_from_host(&vec![0.5f32; N], stream)?;
    let config = LaunchConfig::for_num_elements(N, 256)?;
    // SAFETY: iterate(float*, int) updates N floats, which the buffer holds.
    median_us(device, stream, || unsafe {
        launch(stream, &config, &kernel, (&mut x, N as i32))
    })
}

fn run() -> Result<()> {
    let device = Device::new(0)?;
    device.set_current()?;
    let stream = device.create_stream(Default::default())?;
    let arch = format!("sm_{}", device.arch()?);
    let rdc = ProgramOptions::default()
        .arch(arch.clone())
        .relocatable_device_code(true);
    let library = Program::new(LIBRARY, rdc.clone())?.compile(CodeKind::LtoIr)?;
    let kernel = Program::new(KERNEL, rdc)?.compile(CodeKind::LtoIr)?;
    let mut linker = Linker::new(LinkerOptions::default().arch(arch.clone()).lto(true))?;
    linker.add(LinkInput::from_compiled(library.code(), "library.ltoir")?);
    linker.add(LinkInput::from_compiled(kernel.code(), "kernel.ltoir")?);

    let mut link_ms = Vec::with_capacity(LINK_REPS);
    let mut linked = linker.link(CodeKind::Cubin)?;
    for _ in 0..LINK_REPS {
        let started = Instant::now();
        linked = linker.link(CodeKind::Cubin)?;
        link_ms.push(started.elapsed().as_secs_f64() * 1e3);
    }
    let whole = Program::new(
        &format!("{LIBRARY}{KERNEL}"),
        ProgramOptions::default().arch(arch.clone()),
    )?
    .compile(CodeKind::Cubin)?;
    let lto_us = kernel_us(&linked.load()?, &stream, &device)?;
    let whole_us = kernel_us(&whole.load()?, &stream, &device)?;
    fig("lto_kernel_us", lto_us, "us");
    fig("whole_kernel_us", whole_us, "us");
    fig("lto_over_whole", lto_us / whole_us, "ratio");
    fig("link_nvjitlink_ms", median(&mut link_ms), "ms");
    if let Ok(nvjitlink) = cuda_safe::nvjitlink_sys::nvjitlink() {
        println!(
            "note: nvJitLink from {}",
            nvjitlink.library().path().display()
        );
    }
    cuda_core_link(library.bytes(), kernel.bytes(), &arch);
    tma_figures(&device, &stream)
}

/// The median GPU time of `work` on `stream` over [`REPS`] runs after one warm-up, in
/// microseconds.
fn median_us(
    device: &Device,
    stream: &Stream,
    mut work: impl FnMut() -> Result<()>,
) -> Result<f64> {
    let timing = EventOptions::default().timing(true);
    let (start, end) = (device.create_event(timing)?, device.create_event(timing)?);
    work()?;
    let mut times = Vec::with_capacity(REPS);
    for _ in 0..REPS {
        start.record(stream)?;
        work()?;
        end.record(stream)?;
        end.sync()?;
        times.push(Event::elapsed(&start, &end)?.as_secs_f64() * 1e6);
    }
    Ok(median(&mut times))
}

/// The TMA tile copy's GB/s against `cuMemcpy2DAsync`'s on the same matrix (checked once).
fn tma_figures(device: &Device, stream: &Stream) -> Result<()> {
    if device.compute_capability()?.0 < 9 {
        println!("note: no TMA figures: the device is older than compute capability 9.0");
        return Ok(());
    }
    let matrix = Matrix {
        width: 8192,
        height: 8192,
        pitch: 8192 * 4,
    };
    let pool = device.default_memory_resource()?;
    let host: Vec<u32> = (0..matrix.bytes() as u32 / 4)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let src = pool.allocate_from_host(&host, stream)?;
    let mut dst = pool.allocate_zeroed::<u32>(host.len(), stream)?;
    let kernel = tma::kernel(device)?;
    let (src_map, dst_map) = (matrix.map(&src)?, matrix.map(&dst)?);
    // SAFETY: the maps describe `src` and `dst`, which outlive every queued copy (the stream
    // is synchronised before they drop).
    let copy = || unsafe { tma::copy(stream, &kernel, &matrix, &src_map, &dst_map) };
    copy()?;
    if dst.to_vec::<u32>()? != host {
        return Err(cuda_safe::Error::invalid_argument("the TMA copy is wrong"));
    }
    let tma_us = median_us(device, stream, copy)?;
    let memcpy_us = median_us(device, stream, || {
        tma::memcpy_2d(stream, &matrix, &src, &mut dst)
    })?;
    stream.sync()?;
    let moved = 2.0 * (matrix.width * matrix.height * 4) as f64;
    println!("note: TMA tiles of {} x {} floats", tma::BOX_W, tma::BOX_H);
    fig("tma_copy_gbs", moved / tma_us / 1e3, "GB/s");
    fig("memcpy2d_gbs", moved / memcpy_us / 1e3, "GB/s");
    fig("tma_over_memcpy2d", memcpy_us / tma_us, "ratio");
    Ok(())
}

/// The Python that `cuda.core` is tried with, first found.
fn pythons() -> Vec<String> {
    let mut found: Vec<String> = std::env::var("CUDA_CORE_PYTHON").into_iter().collect();
    found.push("python3".to_owned());
    found.push("/opt/torch/.venv/bin/python3".to_owned());
    found
}

/// Times `cuda.core`'s `Linker` on the same two LTO-IR units and prints its figure, or a note
/// saying why it could not.
fn cuda_core_link(library: &[u8], kernel: &[u8], arch: &str) {
    let dir = std::env::temp_dir().join(format!("cuda-safe-bench-link-{}", std::process::id()));
    let written = std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(dir.join("library.ltoir"), library))
        .and_then(|()| std::fs::write(dir.join("kernel.ltoir"), kernel));
    if let Err(error) = written {
        println!("note: cuda.core link not timed: writing the LTO-IR files failed: {error}");
        return;
    }
    let script = format!(
        r#"
import statistics, time
try:
    from cuda.core import Device, Linker, LinkerOptions, ObjectCode
except ImportError:
    from cuda.core.experimental import Device, Linker, LinkerOptions, ObjectCode
Device(0).set_current()
units = [ObjectCode.from_ltoir(open({dir:?} + "/" + name, "rb").read(), name=name)
         for name in ("library.ltoir", "kernel.ltoir")]
options = LinkerOptions(arch={arch:?}, link_time_optimization=True)
Linker(*units, options=options).link("cubin")
times = []
for _ in range({LINK_REPS}):
    start = time.perf_counter()
    Linker(*units, options=options).link("cubin")
    times.append((time.perf_counter() - start) * 1e3)
try:
    from cuda.bindings import nvjitlink
    print("note: cuda.core's nvJitLink is %d.%d" % tuple(nvjitlink.version()))
except Exception as error:
    print("note: cuda.core's nvJitLink version unknown: %s" % error)
print("FIG link_cuda_core_ms %.4f ms" % statistics.median(times))
"#,
        dir = dir.display().to_string(),
    );
    let mut reasons = Vec::new();
    for python in pythons() {
        match run_python(&python, &script, &dir) {
            Ok(line) => {
                println!("{line}");
                let _ = std::fs::remove_dir_all(&dir);
                return;
            }
            Err(reason) => reasons.push(format!("{python}: {reason}")),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!("note: cuda.core link not timed ({})", reasons.join("; "));
}

/// Runs `script` with `python` and returns its FIG line, after its note lines.
fn run_python(python: &str, script: &str, dir: &Path) -> std::result::Result<String, String> {
    let mut child = Command::new(python)
        .arg("-")
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| error.to_string())?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(script.as_bytes())
            .map_err(|error| error.to_string())?;
    }
    let output = child
        .wait_with_output()
        .map_err(|error| error.to_string())?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    match stdout.lines().find(|line| line.starts_with("FIG ")) {
        Some(line) if output.status.success() => {
            let notes = stdout.lines().filter(|line| line.starts_with("note: "));
            Ok(notes.chain([line]).collect::<Vec<_>>().join("\n"))
        }
        _ => {
            let stderr = String::from_utf8_lossy(&output.stderr);
            Err(stderr.lines().last().unwrap_or("no output").to_owned())
        }
    }
}
