//! What both all-reduce examples share: the sizes, the method of `bench/floors/nccl_floor.c` (5
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

/// What every element starts at: 2^-100, so that after `WARM + iterations` sums over the
/// ranks (a factor of `ranks` each) it is still a normal `f32` for up to 17 ranks
/// (17^55 x 2^-100 < 2^125), and the result can be checked whatever the number of GPUs.
pub const START: f32 = f32::from_bits((127 - 100) << 23);

/// One measured size.
pub struct Row {
    pub bytes: usize,
    pub micros: f64,
    /// Element 0 after every iteration.
    pub value: f32,
    /// Whether `value` is the sum it should be.
    pub sum: Sum,
}

/// The check of an all-reduced element.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sum {
    /// Within rounding of `expected`.
    Right { expected: f64 },
    /// Farther from `expected` than rounding can take it.
    Wrong { expected: f64 },
    /// The exact sum is outside the normal `f32` range (more than 17 ranks): not checked.
    Unchecked,
}

impl Sum {
    /// Checks `value`, element 0 after every iteration at `bytes` over `ranks` ranks: `START`
    /// summed over the ranks `WARM + iterations(bytes)` times, so `START x ranks^steps`. Each
    /// sum of `ranks` equal terms rounds by at most `(ranks - 1)` half-ulps whatever the
    /// order NCCL adds them in, so the result is within `steps x (ranks - 1) x 2^-24` of the
    /// exact value, relatively (exactly equal for a power of two).
    pub fn check(value: f32, bytes: usize, ranks: usize) -> Self {
        let steps = WARM + iterations(bytes);
        let expected = f64::from(START) * (ranks as f64).powi(steps as i32);
        if !(f64::from(f32::MIN_POSITIVE)..=f64::from(f32::MAX)).contains(&expected) {
            return Self::Unchecked;
        }
        let half_ulp = f64::from(f32::EPSILON) / 2.0;
        let tolerance = 2.0 * steps as f64 * (ranks as f64 - 1.0) * half_ulp;
        if ((f64::from(value) - expected) / expected).abs() <= tolerance {
            Self::Right { expected }
        } else {
            Self::Wrong { expected }
        }
    }

    /// Whether the check did not find the sum wrong.
    pub fn is_right(self) -> bool {
        !matches!(self, Self::Wrong { .. })
    }
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

/// The table's header, as nccl-tests prints it.
pub fn print_header(ranks: usize) {
    println!("# all-reduce, float32 sum, in place, {ranks} ranks");
    println!(
        "{:>12} {:>12} {:>10} {:>10} {:>10}  check",
        "size(B)", "count", "time(us)", "algbw", "busbw"
    );
}

/// Prints one row, and the `FIG` lines for the floor's sizes; returns whether the sum was
/// not wrong.
pub fn print_row(row: &Row, ranks: usize) -> bool {
    let algbw = row.bytes as f64 / row.micros / 1e3;
    let busbw = algbw * 2.0 * (ranks as f64 - 1.0) / ranks as f64;
    let check = match row.sum {
        Sum::Right { expected } => format!("OK ({:e}, expected {expected:e})", row.value),
        Sum::Wrong { expected } => format!("WRONG ({:e}, expected {expected:e})", row.value),
        Sum::Unchecked => format!("not checked ({:e}: over 17 ranks)", row.value),
    };
    println!(
        "{:>12} {:>12} {:>10.2} {:>10.1} {:>10.1}  {check}",
        row.bytes,
        row.bytes / 4,
        row.micros,
        algbw,
        busbw,
    );
    if let Some((_, name)) = FIGURES.iter().find(|(bytes, _)| *bytes == row.bytes) {
        println!("FIG nccl_allreduce_{name} {:.2} us", row.micros);
        println!("FIG nccl_allreduce_{name}_busbw {busbw:.1} GB/s");
    }
    row.sum.is_right()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value a sum of `ranks` equal terms gives when added one by one in `f32`, `steps`
    /// times over, from `START`: the order a ring all-reduce adds them in.
    fn summed(ranks: usize, steps: usize) -> f32 {
        (0..steps).fold(START, |value, _| {
            (1..ranks).fold(value, |sum, _| sum + value)
        })
    }

    #[test]
    fn start_is_two_to_the_minus_100() {
        assert_eq!(f64::from(START), 2f64.powi(-100));
    }

    #[test]
    fn sums_rounded_by_f32_pass_for_every_number_of_ranks_up_to_17() {
        for ranks in 1..=17 {
            for bytes in [1 << 10, 1 << 30] {
                let value = summed(ranks, WARM + iterations(bytes));
                let sum = Sum::check(value, bytes, ranks);
                assert!(matches!(sum, Sum::Right { .. }), "{ranks} ranks: {sum:?}");
            }
        }
    }

    #[test]
    fn powers_of_two_are_exact() {
        for ranks in [1, 2, 4, 8, 16] {
            let steps = WARM + iterations(1 << 20);
            let exact = f64::from(START) * (ranks as f64).powi(steps as i32);
            assert_eq!(f64::from(summed(ranks, steps)), exact, "{ranks} ranks");
        }
    }

    #[test]
    fn a_missing_or_extra_rank_or_iteration_is_wrong() {
        let bytes = 1 << 20;
        let steps = WARM + iterations(bytes);
        for ranks in 2..=17 {
            for value in [
                summed(ranks - 1, steps),
                summed(ranks + 1, steps),
                summed(ranks, steps - 1),
                summed(ranks, steps + 1),
                0.0,
                START,
                f32::NAN,
                f32::INFINITY,
            ] {
                let sum = Sum::check(value, bytes, ranks);
                assert!(
                    matches!(sum, Sum::Wrong { .. }),
                    "{ranks} ranks, {value}: {sum:?}"
                );
            }
        }
    }

    #[test]
    fn past_the_f32_range_nothing_is_claimed() {
        assert_eq!(Sum::check(1.0, 1 << 10, 18), Sum::Unchecked);
        assert_eq!(Sum::check(1.0, 1 << 10, 64), Sum::Unchecked);
        assert!(Sum::Unchecked.is_right());
    }
}
