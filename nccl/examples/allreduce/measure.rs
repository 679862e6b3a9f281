//! What both all-reduce examples share: the sizes, the method of `bench/floors/nccl_floor.c` (5
//! warm-up iterations, then 50 timed ones, 10 at 1 GiB, each a group of one all-reduce per
//! rank, f32 sum, in place; a monotonic clock around the loop, closed by a sync of every
//! stream), the check that follows them (one more all-reduce of [`pattern`], whose exact sum
//! [`expected`] gives for any number of ranks), and the table and `FIG` lines.

use std::time::Instant;

use cuda_safe::{DeviceSlice, DeviceSliceMut, Result};

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

/// What every element starts at before the timed iterations: 2^-100, so that after `WARM +
/// iterations` sums over the ranks (a factor of `ranks` each) it is still a normal `f32` for up
/// to 17 ranks (17^55 x 2^-100 < 2^125) rather than infinity. The timed sums are not checked:
/// their exact value is not an `f32` for most numbers of ranks. [`fill_pattern`] and
/// [`check_pattern`] check one more all-reduce after them.
pub const START: f32 = f32::from_bits((127 - 100) << 23);

/// The most ranks whose sum of [`pattern`] is exact in `f32`: every partial sum, in whatever
/// order NCCL adds the ranks' values, is an integer of at most `16 x ranks(ranks+1)/2`, exact
/// up to 2^24.
pub const EXACT_RANKS: usize = 1447;

/// The weight of element `i`, from 1 to 16: the top four bits of `i` times 2^64 over the golden
/// ratio (Fibonacci hashing), so that the weights do not repeat with any period a misplaced
/// chunk could hide behind.
pub fn weight(i: usize) -> u64 {
    ((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 60) + 1
}

/// What rank `rank` puts in element `i` before the checked all-reduce: `(rank + 1) x
/// weight(i)`, a small integer, different on every rank (a missing or doubled rank changes the
/// sum).
pub fn pattern(rank: usize, i: usize) -> f32 {
    ((rank as u64 + 1) * weight(i)) as f32
}

/// The exact sum over `ranks` ranks of element `i` of [`pattern`]: `weight(i) x ranks(ranks+1)/2`.
///
/// # Panics
///
/// For more than [`EXACT_RANKS`] ranks, where the sum would not be exact in `f32`.
pub fn expected(ranks: usize, i: usize) -> f32 {
    assert!(
        (1..=EXACT_RANKS).contains(&ranks),
        "{ranks} ranks: the pattern's sum is exact in f32 for 1 to {EXACT_RANKS}"
    );
    let ranks = ranks as u64;
    (weight(i) * ranks * (ranks + 1) / 2) as f32
}

/// The elements the pattern is written and read in at a time (16 MiB of host memory).
const CHUNK: usize = 1 << 22;

/// Writes [`pattern`] of rank `rank` into `part`, a chunk at a time (each copy waits).
pub fn fill_pattern(part: &mut DeviceSliceMut<'_, f32>, rank: usize) -> Result<()> {
    let mut host = Vec::with_capacity(CHUNK.min(part.len()));
    for start in (0..part.len()).step_by(CHUNK) {
        let end = (start + CHUNK).min(part.len());
        host.clear();
        host.extend((start..end).map(|i| pattern(rank, i)));
        part.slice_mut(start..end)?.copy_from_host(&host)?;
    }
    Ok(())
}

/// Reads `part` back, a chunk at a time, and checks every element against [`expected`] over
/// `ranks` ranks, exactly; `rank` names the rank in the first wrong element.
pub fn check_pattern(part: &DeviceSlice<'_, f32>, rank: usize, ranks: usize) -> Result<Check> {
    let mut check = Check::default();
    let mut host = vec![0f32; CHUNK.min(part.len())];
    for start in (0..part.len()).step_by(CHUNK) {
        let end = (start + CHUNK).min(part.len());
        let host = &mut host[..end - start];
        part.slice(start..end)?.copy_to_host(host)?;
        check.merge(Check::of(rank, start, host, ranks));
    }
    Ok(check)
}

/// The exact check of the all-reduce of [`pattern`], over one rank's buffer or several.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Check {
    /// The elements checked.
    pub elements: usize,
    /// The elements that were not [`expected`].
    pub wrong: usize,
    /// The first wrong one: its rank, its index, its value and the expected one.
    pub first_wrong: Option<(usize, usize, f32, f32)>,
}

impl Check {
    /// Checks `values`, elements `start..` of rank `rank`'s buffer after the all-reduce over
    /// `ranks` ranks (bit for bit: a NaN or a negative zero is wrong).
    pub fn of(rank: usize, start: usize, values: &[f32], ranks: usize) -> Self {
        let mut check = Self {
            elements: values.len(),
            ..Self::default()
        };
        for (i, &value) in (start..).zip(values) {
            let expected = expected(ranks, i);
            if value.to_bits() != expected.to_bits() {
                check.wrong += 1;
                check.first_wrong.get_or_insert((rank, i, value, expected));
            }
        }
        check
    }

    /// Adds `other`'s elements to this check (its first wrong one counts if this has none).
    pub fn merge(&mut self, other: Self) {
        self.elements += other.elements;
        self.wrong += other.wrong;
        if self.first_wrong.is_none() {
            self.first_wrong = other.first_wrong;
        }
    }

    /// Whether every element was checked and right.
    pub fn is_right(&self) -> bool {
        self.elements > 0 && self.wrong == 0
    }
}

/// One measured size.
pub struct Row {
    pub bytes: usize,
    pub micros: f64,
    /// The check of the all-reduce of [`pattern`] that followed the timed ones.
    pub check: Check,
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

/// Prints one row, and the `FIG` lines for the floor's sizes; returns whether the check found
/// every element right.
pub fn print_row(row: &Row, ranks: usize) -> bool {
    let algbw = row.bytes as f64 / row.micros / 1e3;
    let busbw = algbw * 2.0 * (ranks as f64 - 1.0) / ranks as f64;
    let check = match row.check.first_wrong {
        None if row.check.is_right() => format!("OK (exact, {} elements)", row.check.elements),
        None => "WRONG (nothing checked)".to_owned(),
        Some((rank, i, value, expected)) => format!(
            "WRONG ({} of {} elements; rank {rank} element {i}: {value:e}, expected {expected:e})",
            row.check.wrong, row.check.elements
        ),
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
    row.check.is_right()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Indices across a 1 GiB buffer of `f32`: the first thousands, some around each chunk
    /// boundary, and the last element.
    fn indices() -> impl Iterator<Item = usize> {
        let last = (1usize << 30) / size_of::<f32>() - 1;
        (0..4096)
            .chain((1..64).flat_map(|k| k * CHUNK - 3..k * CHUNK + 3))
            .chain(last - 4096..=last)
    }

    /// The values of element `i` over `ranks` ranks.
    fn terms(ranks: usize, i: usize) -> Vec<f32> {
        (0..ranks).map(|rank| pattern(rank, i)).collect()
    }

    #[test]
    fn start_is_two_to_the_minus_100() {
        assert_eq!(f64::from(START), 2f64.powi(-100));
    }

    #[test]
    fn the_formula_is_the_brute_force_sum_for_1_to_8_ranks() {
        for ranks in 1..=8 {
            for i in indices() {
                let brute: u64 = (0..ranks).map(|rank| pattern(rank, i) as u64).sum();
                assert_eq!(
                    f64::from(expected(ranks, i)),
                    brute as f64,
                    "{ranks} ranks, {i}"
                );
                for term in terms(ranks, i) {
                    assert_eq!(term.fract(), 0.0);
                    assert!((1.0..=128.0).contains(&term));
                }
            }
        }
    }

    #[test]
    fn every_partial_sum_is_exact_so_every_order_gives_the_formula() {
        // Any order of addition (a ring, a tree, NVLS) only ever adds two partial sums of
        // disjoint sets of ranks; every such sum is an integer of at most 2^24, so each f32
        // addition is exact. Checked over every subset of up to 8 ranks, then in actual orders.
        for ranks in 1..=8 {
            for i in indices().step_by(7) {
                let terms = terms(ranks, i);
                for subset in 0u32..1 << ranks {
                    let exact: u64 = (0..ranks)
                        .filter(|rank| subset & (1 << rank) != 0)
                        .map(|rank| terms[rank] as u64)
                        .sum();
                    assert!(exact <= 1 << 24);
                    let summed: f32 = (0..ranks)
                        .filter(|rank| subset & (1 << rank) != 0)
                        .map(|rank| terms[rank])
                        .sum();
                    assert_eq!(summed as u64, exact);
                }
                let want = expected(ranks, i);
                // A ring from every starting rank, both ways round.
                for first in 0..ranks {
                    let forward = (0..ranks).map(|k| terms[(first + k) % ranks]);
                    let backward = (0..ranks).map(|k| terms[(first + ranks - k) % ranks]);
                    assert_eq!(forward.sum::<f32>(), want);
                    assert_eq!(backward.sum::<f32>(), want);
                }
                // A pairwise tree.
                let mut level = terms.clone();
                while level.len() > 1 {
                    level = level.chunks(2).map(|pair| pair.iter().sum()).collect();
                }
                assert_eq!(level[0], want);
            }
        }
    }

    #[test]
    fn exact_ranks_is_the_last_whose_largest_sum_is_exact() {
        let largest = |ranks: u64| 16 * ranks * (ranks + 1) / 2;
        assert!(largest(EXACT_RANKS as u64) <= 1 << 24);
        assert!(largest(EXACT_RANKS as u64 + 1) > 1 << 24);
        let i = (0..).find(|&i| weight(i) == 16).unwrap();
        assert_eq!(
            f64::from(expected(EXACT_RANKS, i)),
            largest(EXACT_RANKS as u64) as f64
        );
    }

    #[test]
    #[should_panic(expected = "exact in f32")]
    fn past_exact_ranks_the_formula_refuses() {
        expected(EXACT_RANKS + 1, 0);
    }

    #[test]
    fn weights_cover_1_to_16_and_a_shifted_chunk_shows() {
        let weights: Vec<u64> = (0..1 << 16).map(weight).collect();
        for w in 1..=16 {
            assert!(weights.contains(&w), "{w}");
        }
        for shift in (0..20).map(|k| 1 << k).chain([3, 5, 7, 1000, CHUNK]) {
            let moved = (0..4096)
                .filter(|&i| weight(i) != weight(i + shift))
                .count();
            assert!(
                moved > 2048,
                "a shift of {shift} changes only {moved} of 4096"
            );
        }
    }

    #[test]
    fn the_check_passes_the_sum_and_finds_what_is_wrong() {
        for ranks in 1..=8 {
            let start = 1000;
            let right: Vec<f32> = (start..start + 5000).map(|i| expected(ranks, i)).collect();
            let check = Check::of(3, start, &right, ranks);
            assert!(check.is_right(), "{ranks} ranks: {check:?}");
            assert_eq!(check.elements, 5000);
            // A rank doubled, the last element wrong, a NaN; with more than one rank, a rank
            // missing and a rank's values as they were before the all-reduce.
            let missing: Vec<f32> = (start..start + 5000)
                .map(|i| expected(ranks, i) - pattern(ranks - 1, i))
                .collect();
            let doubled: Vec<f32> = (start..start + 5000)
                .map(|i| expected(ranks, i) + pattern(0, i))
                .collect();
            let mut last = right.clone();
            *last.last_mut().unwrap() += 1.0;
            let mut nan = right.clone();
            nan[17] = f32::NAN;
            let mut cases = vec![(doubled, start), (last, start + 4999), (nan, start + 17)];
            if ranks > 1 {
                let before: Vec<f32> = (start..start + 5000)
                    .map(|i| pattern(ranks - 1, i))
                    .collect();
                cases.push((missing, start));
                cases.push((before, start));
            }
            for (values, first) in cases {
                let check = Check::of(3, start, &values, ranks);
                assert!(!check.is_right(), "{ranks} ranks");
                let (rank, i, _, want) = check.first_wrong.unwrap();
                assert_eq!((rank, i, want), (3, first, expected(ranks, first)));
            }
        }
    }

    #[test]
    fn merged_checks_count_every_element_and_keep_the_first_wrong() {
        let mut all = Check::default();
        assert!(!all.is_right());
        all.merge(Check::of(0, 0, &[expected(2, 0), expected(2, 1)], 2));
        assert!(all.is_right());
        all.merge(Check::of(1, 5, &[0.0], 2));
        all.merge(Check::of(2, 9, &[0.0], 2));
        assert_eq!(all.elements, 4);
        assert_eq!(all.wrong, 2);
        assert_eq!(all.first_wrong.map(|w| (w.0, w.1)), Some((1, 5)));
        assert!(!all.is_right());
    }
}
