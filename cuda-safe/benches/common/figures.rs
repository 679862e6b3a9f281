//! How the benchmarks report: `FIG name value unit` lines, medians, and microseconds since a
//! start.

use std::time::Instant;

/// The median of `values` (sorted in place).
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Prints one figure as the bundle's runner reads it.
pub fn fig(name: &str, value: f64, unit: &str) {
    println!("FIG {name} {value:.4} {unit}");
}

/// Microseconds since `start`.
pub fn us(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e6
}
