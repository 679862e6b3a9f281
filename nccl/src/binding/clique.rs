//! The communicators one process made for all its GPUs (`ncclCommInitAll`), which check each
//! other's collectives: the n-th collective of every rank must be the same call with the same
//! count, type, operator and root, or NCCL hangs or corrupts memory. Calls made one by one
//! (each rank in its own thread) are checked through the clique's log; calls recorded in a
//! group against the group's other calls ([`check_in_group`]), and the group as a whole before
//! NCCL sees any of it ([`check_complete`]).

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Mutex, PoisonError};

use cuda_safe::{Error, Result};

/// What a collective call is, as every rank must agree on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Call {
    /// The collective (`"all-reduce"`).
    pub(crate) kind: &'static str,
    /// The count NCCL is given (per rank for all-gather's send and reduce-scatter's receive).
    pub(crate) count: usize,
    /// The `ncclDataType_t`.
    pub(crate) data_type: u32,
    /// The `ncclRedOp_t`, for reductions.
    pub(crate) op: Option<u32>,
    /// The root rank, for rooted collectives.
    pub(crate) root: Option<usize>,
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} of {} elements (NCCL type {}",
            self.kind, self.count, self.data_type
        )?;
        if let Some(op) = self.op {
            write!(f, ", operator {op}")?;
        }
        if let Some(root) = self.root {
            write!(f, ", root {root}")?;
        }
        f.write_str(")")
    }
}

/// The ranks of one process's all-GPU communicators, and the calls they made that not every
/// rank has matched yet.
#[derive(Debug)]
pub(crate) struct Clique {
    ranks: usize,
    log: Mutex<Log>,
}

#[derive(Debug)]
struct Log {
    /// The absolute index of `calls[0]`.
    base: u64,
    /// Calls some rank made and not every rank has matched, with the ranks that made them.
    calls: VecDeque<(Call, u64)>,
    /// Each rank's next call's absolute index.
    next: Vec<u64>,
}

impl Clique {
    /// A clique of `ranks` communicators (checked when at most 64; larger ones are not).
    pub(crate) fn new(ranks: usize) -> Self {
        Self {
            ranks,
            log: Mutex::new(Log {
                base: 0,
                calls: VecDeque::new(),
                next: vec![0; ranks],
            }),
        }
    }

    /// Checks `rank`'s next call against what the other ranks made at the same place, and
    /// records it.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when another rank made a different call there; nothing is
    /// recorded then.
    pub(crate) fn check(&self, rank: usize, call: Call) -> Result<()> {
        if self.ranks > 64 || rank >= self.ranks {
            return Ok(());
        }
        let mut log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        let position = usize::try_from(log.next[rank] - log.base).unwrap_or(usize::MAX);
        let bit = 1u64 << rank;
        match log.calls.get_mut(position) {
            Some((expected, ranks)) => {
                if *expected != call {
                    let other = ranks.trailing_zeros() as usize;
                    return Err(mismatch(rank, call, other, *expected));
                }
                *ranks |= bit;
            }
            None => log.calls.push_back((call, bit)),
        }
        log.next[rank] += 1;
        let all = if self.ranks == 64 {
            u64::MAX
        } else {
            (1u64 << self.ranks) - 1
        };
        while log.calls.front().is_some_and(|(_, ranks)| *ranks == all) {
            log.calls.pop_front();
            log.base += 1;
        }
        Ok(())
    }
}

/// The error for `rank`'s call `call` where rank `other` called `expected`.
#[cold]
fn mismatch(rank: usize, call: Call, other: usize, expected: Call) -> Error {
    Error::invalid_argument(format!(
        "rank {rank} calls {call} where rank {other} called {expected}: every rank of a \
         communicator must make the same collective calls"
    ))
}

/// One collective a group recorded on a rank of an all-GPU clique.
#[derive(Clone, Copy)]
pub(crate) struct InGroup<'a> {
    pub(crate) clique: &'a Clique,
    pub(crate) rank: usize,
    pub(crate) call: Call,
}

impl InGroup<'_> {
    fn of(&self, clique: &Clique) -> bool {
        std::ptr::eq(self.clique, clique) && clique.ranks <= 64 && self.rank < clique.ranks
    }
}

/// Checks `next`, about to be recorded in a group after `earlier`, against the other ranks'
/// calls at the same place in the group: `next` is its rank's n-th call of the group, and
/// every other rank's n-th call of the group, where made, must be the same.
///
/// # Errors
///
/// [`Error::InvalidArgument`] naming both calls.
pub(crate) fn check_in_group<'a>(
    earlier: impl Iterator<Item = InGroup<'a>> + Clone,
    next: InGroup<'_>,
) -> Result<()> {
    if !next.of(next.clique) {
        return Ok(());
    }
    let place = earlier
        .clone()
        .filter(|made| made.of(next.clique) && made.rank == next.rank)
        .count();
    let mut made_by = [0usize; 64];
    for made in earlier.filter(|made| made.of(next.clique) && made.rank != next.rank) {
        if made_by[made.rank] == place && made.call != next.call {
            return Err(mismatch(next.rank, next.call, made.rank, made.call));
        }
        made_by[made.rank] += 1;
    }
    Ok(())
}

/// Checks that every clique with calls in a group has them from every one of its ranks, as
/// many from each: a rank left out would leave the others' collectives waiting for it on the
/// GPU for ever (one thread drives all the ranks of a clique, so the missing calls cannot come
/// from elsewhere within the group).
///
/// # Errors
///
/// [`Error::InvalidArgument`] naming the rank short of calls.
pub(crate) fn check_complete<'a>(calls: impl Iterator<Item = InGroup<'a>> + Clone) -> Result<()> {
    for (index, first) in calls.clone().enumerate() {
        let clique = first.clique;
        let seen_before = calls
            .clone()
            .take(index)
            .any(|made| std::ptr::eq(made.clique, clique));
        if seen_before || !first.of(clique) {
            continue;
        }
        let mut made_by = [0usize; 64];
        for made in calls.clone().filter(|made| made.of(clique)) {
            made_by[made.rank] += 1;
        }
        let most = made_by.iter().copied().max().unwrap_or(0);
        if let Some(short) = (0..clique.ranks).find(|&rank| made_by[rank] != most) {
            return Err(Error::invalid_argument(format!(
                "rank {short} of an all-GPU communicator made {} collective calls in the group \
                 where another rank made {most}: the ranks of Communicator::init_all are driven \
                 together, every rank the same calls in each group (nothing was queued)",
                made_by[short]
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_reduce(count: usize) -> Call {
        Call {
            kind: "all-reduce",
            count,
            data_type: 7,
            op: Some(0),
            root: None,
        }
    }

    #[test]
    fn matching_calls_pass_and_are_forgotten() {
        let clique = Clique::new(2);
        for count in [1, 2, 3] {
            clique.check(0, all_reduce(count)).unwrap();
        }
        for count in [1, 2, 3] {
            clique.check(1, all_reduce(count)).unwrap();
        }
        let log = clique.log.lock().unwrap();
        assert!(log.calls.is_empty());
        assert_eq!(log.base, 3);
    }

    #[test]
    fn a_different_count_or_root_is_refused_before_nccl() {
        let clique = Clique::new(3);
        clique.check(0, all_reduce(1024)).unwrap();
        let error = clique.check(2, all_reduce(1000)).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("rank 2 calls all-reduce of 1000")
                && error
                    .to_string()
                    .contains("rank 0 called all-reduce of 1024"),
            "{error}"
        );
        // The refused call left no trace: the right one still passes.
        clique.check(2, all_reduce(1024)).unwrap();
        let broadcast = Call {
            kind: "broadcast",
            count: 8,
            data_type: 7,
            op: None,
            root: Some(0),
        };
        clique.check(1, all_reduce(1024)).unwrap();
        clique.check(0, broadcast).unwrap();
        let other_root = Call {
            root: Some(1),
            ..broadcast
        };
        assert!(clique.check(1, other_root).is_err());
    }

    #[test]
    fn a_group_checks_each_place_and_wants_every_rank() {
        let clique = Clique::new(2);
        let other = Clique::new(2);
        let made = |clique, rank, count| InGroup {
            clique,
            rank,
            call: all_reduce(count),
        };
        let earlier = [made(&clique, 0, 4), made(&clique, 0, 8), made(&other, 1, 3)];
        // Rank 1's first call meets rank 0's first, its second rank 0's second.
        check_in_group(earlier.iter().copied(), made(&clique, 1, 4)).unwrap();
        let error = check_in_group(earlier.iter().copied(), made(&clique, 1, 8)).unwrap_err();
        assert!(
            error.to_string().contains("rank 1 calls all-reduce of 8")
                && error.to_string().contains("rank 0 called all-reduce of 4"),
            "{error}"
        );
        let second = [
            made(&clique, 0, 4),
            made(&clique, 0, 8),
            made(&clique, 1, 4),
        ];
        check_in_group(second.iter().copied(), made(&clique, 1, 8)).unwrap();
        // Another clique's calls are no measure.
        check_in_group(earlier.iter().copied(), made(&other, 0, 3)).unwrap();
        assert!(check_in_group(earlier.iter().copied(), made(&other, 0, 9)).is_err());

        // Complete: both ranks of each clique, as many calls each.
        let complete = [
            made(&clique, 0, 4),
            made(&other, 0, 1),
            made(&clique, 1, 4),
            made(&other, 1, 1),
        ];
        check_complete(complete.iter().copied()).unwrap();
        let error = check_complete(complete[..3].iter().copied()).unwrap_err();
        assert!(
            matches!(&error, Error::InvalidArgument(text) if text.contains("rank 1 of an all-GPU")),
            "{error}"
        );
        assert!(check_complete(earlier.iter().copied()).is_err());
        assert!(
            all_reduce(5)
                .to_string()
                .contains("all-reduce of 5 elements")
        );
    }
}
