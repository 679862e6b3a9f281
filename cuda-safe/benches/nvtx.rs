//! NVTX with no tool attached: what an annotated hot loop pays when no profiler runs.
//!
//! Prints `FIG nvtx_push_pop_no_tool_ns <value> ns` (a `nvtx::range` pushed and its guard
//! dropped: one relaxed load and a branch) and `FIG nvtx_mark_no_tool_ns <value> ns`, the
//! median of 21 runs of 10 million each. Run without `NVTX_INJECTION64_PATH` (it refuses to
//! measure with a tool attached: that would time the tool).

use std::hint::black_box;
use std::process::ExitCode;
use std::time::Instant;

use cuda_safe::nvtx;

const PAIRS: u32 = 10_000_000;
const RUNS: usize = 21;

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn fig(name: &str, value: f64, unit: &str) {
    println!("FIG {name} {value:.4} {unit}");
}

/// The median ns per iteration of `body`, over [`RUNS`] runs of [`PAIRS`].
fn time(mut body: impl FnMut(&str)) -> f64 {
    let name = black_box("step");
    let mut runs = [0f64; RUNS];
    for run in runs.iter_mut() {
        let start = Instant::now();
        for _ in 0..PAIRS {
            body(black_box(name));
        }
        *run = start.elapsed().as_secs_f64() * 1e9 / f64::from(PAIRS);
    }
    median(&mut runs)
}

fn main() -> ExitCode {
    if nvtx::is_enabled() {
        eprintln!("error: an NVTX tool is attached (NVTX_INJECTION64_PATH): unset it to measure");
        return ExitCode::FAILURE;
    }
    fig(
        "nvtx_push_pop_no_tool_ns",
        time(|name| {
            let _range = nvtx::range(name);
        }),
        "ns",
    );
    fig("nvtx_mark_no_tool_ns", time(nvtx::mark), "ns");
    ExitCode::SUCCESS
}
