//! The busy green-partitioned probe of `bench/floors/driver_floor.c` (SAXPY on 1M floats,
//! launch to completion, in its own green context of half the SMs while `spin` fills the
//! other half), taken two ways in one process and interleaved sample by sample: through
//! `cuda-safe` (`launch` + `Stream::sync`) and through the raw driver calls the floor makes
//! (`cuLaunchKernel` + `cuStreamSynchronize` on the same kernel, streams and buffers).
//!
//! Across processes this figure drifts between about 13 and 40 us with the GPU's state (the
//! time is spent on the GPU: events around the probe agree with the host clock, the SM clock
//! stays put), so comparing two programs run one after the other needs many rounds. Here the
//! two ways alternate A B B A, each sample within about 50 ms of its partner, and the ratio
//! reported is the median of the per-pair ratios: the crate's cost over the driver's own in the
//! same GPU state.
//!
//! Prints `FIG green_busy_probe_crate`, `FIG green_busy_probe_raw` (medians, us) and
//! `FIG green_busy_probe_crate_over_raw` (median per-pair ratio). Two other ways can be named
//! to find where a difference comes from: `green_contention raw raw` (the control: two
//! identical ways, whose ratio shows the method's own spread), `crate-launch raw` (the crate's
//! launch, the raw sync) or `crate-sync raw` (the raw launch, the crate's sync).

use std::ffi::c_void;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[path = "common/check.rs"]
mod check;
#[path = "common/green_kernels.rs"]
mod green_kernels;

use check::check;
use cuda_safe::sys::{CUfunction, CUstream};
use cuda_safe::{
    Buffer, CodeKind, Device, Error, GreenContextOptions, Kernel, LaunchConfig, Program,
    ProgramOptions, Result, SplitRequest, Stream, launch,
};
use green_kernels::SOURCE;

const PROBE_N: usize = 1 << 20;
/// Busy samples per way.
const SAMPLES: usize = 32;
const WARMUP: usize = 32;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The probe's kernel, buffers and stream.
struct Probe {
    kernel: Kernel,
    stream: Stream,
    x: Buffer,
    y: Buffer,
    out: Buffer,
}

/// How a probe is launched and waited for.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Way {
    /// `launch` + `Stream::sync`.
    Crate,
    /// `cuLaunchKernel` + `cuStreamSynchronize`, as the floor.
    Raw,
    /// `launch` + `cuStreamSynchronize`.
    CrateLaunch,
    /// `cuLaunchKernel` + `Stream::sync`.
    CrateSync,
}

impl Way {
    fn parse(name: &str) -> Result<Self> {
        match name {
            "crate" => Ok(Self::Crate),
            "raw" => Ok(Self::Raw),
            "crate-launch" => Ok(Self::CrateLaunch),
            "crate-sync" => Ok(Self::CrateSync),
            other => Err(Error::invalid_argument(format!(
                "unknown way `{other}`: crate, raw, crate-launch or crate-sync"
            ))),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Crate => "crate",
            Self::Raw => "raw",
            Self::CrateLaunch => "crate-launch",
            Self::CrateSync => "crate-sync",
        }
    }
}

impl Probe {
    /// One probe made `way`; elapsed microseconds.
    fn once(&mut self, way: Way) -> Result<f64> {
        let driver = cuda_safe::sys::driver()?;
        let config = LaunchConfig::for_num_elements(PROBE_N, 256)?;
        let (mut a, mut n) = (2.0f32, PROBE_N);
        let (mut x, mut y, mut out) = (self.x.as_raw(), self.y.as_raw(), self.out.as_raw());
        let mut params: [*mut c_void; 5] = [
            (&raw mut a).cast(),
            (&raw mut x).cast(),
            (&raw mut y).cast(),
            (&raw mut out).cast(),
            (&raw mut n).cast(),
        ];
        let (function, stream): (CUfunction, CUstream) =
            (self.kernel.as_raw().cast(), self.stream.as_raw());
        let start = Instant::now();
        if matches!(way, Way::Crate | Way::CrateLaunch) {
            // SAFETY: saxpy touches PROBE_N floats of each buffer, which hold 4 MiB.
            unsafe {
                launch(
                    &self.stream,
                    &config,
                    &self.kernel,
                    (2.0f32, &self.x, &self.y, &mut self.out, PROBE_N),
                )?
            };
        } else {
            // SAFETY: a CUkernel is accepted where a CUfunction is; `params` holds the five
            // arguments of saxpy in order, and the buffers hold PROBE_N floats each.
            let launched = unsafe {
                driver.cuLaunchKernel(
                    function,
                    config.grid.x,
                    1,
                    1,
                    256,
                    1,
                    1,
                    0,
                    stream,
                    params.as_mut_ptr(),
                    std::ptr::null_mut(),
                )
            }?;
            check("cuLaunchKernel", launched)?;
        }
        if matches!(way, Way::Crate | Way::CrateSync) {
            self.stream.sync()?;
        } else {
            // SAFETY: a valid stream of this process.
            let synced = unsafe { driver.cuStreamSynchronize(stream) }?;
            check("cuStreamSynchronize", synced)?;
        }
        Ok(start.elapsed().as_secs_f64() * 1e6)
    }
}

fn run() -> Result<()> {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let (first, second) = match args.as_slice() {
        [] => (Way::Crate, Way::Raw),
        [a, b] => (Way::parse(a)?, Way::parse(b)?),
        _ => {
            return Err(Error::invalid_argument(
                "usage: green_contention [WAY WAY] (crate, raw, crate-launch, crate-sync)",
            ));
        }
    };
    let device = Device::new(0)?;
    device.set_current()?;
    let code = Program::new(SOURCE, ProgramOptions::default())?
        .compile(CodeKind::Cubin)?
        .load()?;
    let spin = code.get_kernel("spin")?;
    let all = device.resources().sm()?;
    let split = all.split(&SplitRequest::equal(2, all.sm_count() / 2).rounding(true))?;
    let filler_ctx =
        device.create_green_context(&split.groups[0], GreenContextOptions::default())?;
    let probe_ctx =
        device.create_green_context(&split.groups[1], GreenContextOptions::default())?;
    let filler = filler_ctx.create_stream(Default::default())?;
    let stream = probe_ctx.create_stream(Default::default())?;
    let pool = device.default_memory_resource()?;
    let mut probe = Probe {
        kernel: code.get_kernel("saxpy")?,
        x: pool.allocate(4 << 20, &stream)?,
        y: pool.allocate(4 << 20, &stream)?,
        out: pool.allocate(4 << 20, &stream)?,
        stream,
    };
    let fill = LaunchConfig::new(device.properties()?.multiprocessor_count * 25, 1024);
    // Warm-up: the filler's first launch in its context and both ways of probing.
    // SAFETY: spin reads the clock and touches no memory.
    unsafe { launch(&filler, &fill, &spin, (1_000u64,))? };
    filler.sync()?;
    for _ in 0..WARMUP {
        probe.once(first)?;
        probe.once(second)?;
    }
    let mut busy = |way: Way| -> Result<f64> {
        // SAFETY: spin reads the clock and touches no memory.
        unsafe { launch(&filler, &fill, &spin, (2_000_000u64,))? };
        let wait = Instant::now();
        while wait.elapsed() < Duration::from_millis(3) {}
        let elapsed = probe.once(way)?;
        filler.sync()?;
        Ok(elapsed)
    };
    let (mut ones, mut twos, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for pair in 0..SAMPLES {
        // A B, then B A: neither way always goes first.
        let (one, two) = if pair % 2 == 0 {
            let one = busy(first)?;
            (one, busy(second)?)
        } else {
            let two = busy(second)?;
            (busy(first)?, two)
        };
        ones.push(one);
        twos.push(two);
        ratios.push(one / two);
    }
    println!(
        "{SAMPLES} pairs of busy probes ({} vs {}) in a green context of {} SMs, the filler in {} SMs",
        first.name(),
        second.name(),
        split.groups[1].sm_count(),
        split.groups[0].sm_count()
    );
    let (one, two) = (
        first.name().replace('-', "_"),
        second.name().replace('-', "_"),
    );
    println!("FIG green_busy_probe_{one} {:.4} us", median(&mut ones));
    if first != second {
        println!("FIG green_busy_probe_{two} {:.4} us", median(&mut twos));
    }
    println!(
        "FIG green_busy_probe_{one}_over_{two} {:.4} ratio",
        median(&mut ratios)
    );
    Ok(())
}
