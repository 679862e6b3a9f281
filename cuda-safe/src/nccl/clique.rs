//! The communicators one process made for all its GPUs (`ncclCommInitAll`), which check each
//! other's collectives: the n-th collective of every rank must be the same call with the same
//! count, type, operator and root, or NCCL hangs or corrupts memory.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Mutex, PoisonError};

use crate::error::{Error, Result};

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
                    let other = ranks.trailing_zeros();
                    return Err(Error::invalid_argument(format!(
                        "rank {rank} calls {call} where rank {other} called {expected}: every \
                         rank of a communicator must make the same collective calls"
                    )));
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

    /// Forgets unmatched calls: at the end of a group, whatever was left unmatched went to
    /// NCCL as it was, and the ranks start level again.
    pub(crate) fn reset(&self) {
        let mut log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        let level = log.next.iter().copied().max().unwrap_or(0);
        log.calls.clear();
        log.base = level;
        log.next.iter_mut().for_each(|next| *next = level);
    }
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
    fn reset_levels_the_ranks() {
        let clique = Clique::new(2);
        clique.check(0, all_reduce(1)).unwrap();
        clique.reset();
        clique.check(1, all_reduce(2)).unwrap();
        clique.check(0, all_reduce(2)).unwrap();
        assert!(clique.log.lock().unwrap().calls.is_empty());
        assert!(
            all_reduce(5)
                .to_string()
                .contains("all-reduce of 5 elements")
        );
    }
}
