//! What both all-reduce examples share: the sizes, the method of `bench/nccl_floor.c` (5
//! warm-up iterations, then 50 timed ones, 10 at 1 GiB, each a group of one all-reduce per
//! rank, f32 sum, in place; a monotonic clock around the loop, closed by a sync of every
//! stream), the check of the sum, and the table and `FIG` lines.

use std::time::Instant;

/// Sizes from 1 KiB to 1 GiB, times four.
pub const SIZES: [usize; 11] = [
    1 << 10,
    4 << 10,
    16 << 10,
    64 << 10,
    256 << 10,
    1 << 20,
    4 << 20,
    16 << 20,
    64 << 20,
    256 << 20,
    1 << 30,
];

/// The floor's warm-up iterations.
pub const WARM: usize = 5;

/// The floor's timed iterations at `bytes`: 10 at 1 GiB, 50 below.
pub fn iterations(bytes: usize) -> usize {
    if bytes >= 1 << 30 { 10 } else { 50 }
}

/// The sizes the floor reports, with the names of its `FIG` lines.
const FIGURES: [(usize, &str); 3] = [(1 << 20, "1MiB"), (64 << 20, "64MiB"), (1 << 30, "1GiB")];

/// One measured size.
pub struct Row {
    pub bytes: usize,
    pub micros: f64,
    /// Element 0 after every iteration, and what it should be.
    pub value: f32,
    pub expected: f32,
}

/// Runs `iteration` the floor's way: `WARM` untimed calls, then the timed ones between a sync
/// of every stream (`sync`) and another.
pub fn time<E>(
    bytes: usize,
    mut iteration: impl FnMut() -> Result<(), E>,
    mut sync: impl FnMut() -> Result<(), E>,
) -> Result<f64, E> {
    let iters = iterations(bytes);
    let mut start = Instant::now();
    for it in 0..WARM + iters {
        if it == WARM {
            sync()?;
            start = Instant::now();
        }
        iteration()?;
    }
    sync()?;
    Ok(start.elapsed().as_secs_f64() * 1e6 / iters as f64)
}

/// Every element started at 1 and was summed over `ranks` ranks `WARM + iterations` times.
pub fn expected(bytes: usize, ranks: usize) -> f32 {
    (ranks as f64).powi((WARM + iterations(bytes)) as i32) as f32
}

/// The table's header, as nccl-tests prints it.
pub fn print_header(ranks: usize) {
    println!("# all-reduce, float32 sum, in place, {ranks} ranks");
    println!(
        "{:>12} {:>12} {:>10} {:>10} {:>10}  check",
        "size(B)", "count", "time(us)", "algbw", "busbw"
    );
}

/// Prints one row, and the `FIG` lines for the floor's sizes; returns whether the sum was
/// right.
pub fn print_row(row: &Row, ranks: usize) -> bool {
    let algbw = row.bytes as f64 / row.micros / 1e3;
    let busbw = algbw * 2.0 * (ranks as f64 - 1.0) / ranks as f64;
    let right = row.value == row.expected;
    println!(
        "{:>12} {:>12} {:>10.2} {:>10.1} {:>10.1}  {} ({} expected {})",
        row.bytes,
        row.bytes / 4,
        row.micros,
        algbw,
        busbw,
        if right { "OK" } else { "WRONG" },
        row.value,
        row.expected
    );
    if let Some((_, name)) = FIGURES.iter().find(|(bytes, _)| *bytes == row.bytes) {
        println!("FIG nccl_allreduce_{name} {:.2} us", row.micros);
        println!("FIG nccl_allreduce_{name}_busbw {busbw:.1} GB/s");
    }
    right
}
