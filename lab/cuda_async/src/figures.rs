//! The figures' format and arithmetic, as our benchmarks have them: `FIG name value unit` lines
//! (each name with the `cuda_async_` prefix, so a table sets it beside ours), medians,
//! quantiles and the process's CPU time.

use std::time::Duration;

/// The prefix of every figure these programs print.
pub const PREFIX: &str = "cuda_async_";

/// Prints `FIG cuda_async_<name> <value> <unit>` with four decimals, as `completion` does.
pub fn fig(name: &str, value: f64, unit: &str) {
    println!("FIG {PREFIX}{name} {value:.4} {unit}");
}

/// Prints `FIG cuda_async_<name> <value> <unit>` with one decimal, as `completion_threads` and
/// the server print rates and latencies.
pub fn fig1(name: &str, value: f64, unit: &str) {
    println!("FIG {PREFIX}{name} {value:.1} {unit}");
}

/// The median of `values` (sorted in place; the upper one of an even count, as ours).
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The value at quantile `q` of sorted `values` (nearest rank, as the server example's).
pub fn quantile(values: &[Duration], q: f64) -> Duration {
    let index = ((values.len() as f64 - 1.0) * q).round() as usize;
    values.get(index).copied().unwrap_or_default()
}

/// The process's CPU time so far, in milliseconds (`CLOCK_PROCESS_CPUTIME_ID`: every thread,
/// the driver's and cuda-async's reactor thread included).
pub fn process_cpu_ms() -> f64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer for a clock every Linux has.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut now) };
    now.tv_sec as f64 * 1e3 + now.tv_nsec as f64 / 1e6
}
