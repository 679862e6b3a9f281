//! How many received file descriptors this process can afford to hold at once: the bound on a
//! declared count of virtual-memory chunks (a descriptor each), checked before any of them is
//! received, so that a peer cannot fill the process's descriptor table by declaring one.
//!
//! The rule: the open-file soft limit (`getrlimit(RLIMIT_NOFILE)`), less the descriptors open
//! now, less a quarter of the soft limit kept free for the rest of the process; never more
//! than [`MAX_VMM_CHUNKS`](crate::MAX_VMM_CHUNKS). Where the limit is infinite or cannot be
//! read, only the protocol's maximum bounds the count; where the open descriptors cannot be
//! counted (no `/proc/self/fd` or `/dev/fd`), none are taken to be open.

use crate::IpcError;
use crate::MAX_VMM_CHUNKS;
use cuda_safe::Result;

/// The share of the soft limit kept free for the rest of the process: one part in this many.
const KEPT_FREE_PART: u64 = 4;

/// Refuses `declared` chunks ([`IpcError::DescriptorLimit`]) when this process cannot hold
/// that many more descriptors under its rule (see the module's documentation).
pub(super) fn check_declared_chunks(declared: usize) -> Result<()> {
    let Some(soft_limit) = soft_limit() else {
        return Ok(());
    };
    let open = open_descriptors();
    let affordable = soft_limit
        .saturating_sub(open as u64)
        .saturating_sub(soft_limit / KEPT_FREE_PART);
    let affordable = usize::try_from(affordable)
        .unwrap_or(usize::MAX)
        .min(MAX_VMM_CHUNKS);
    if declared <= affordable {
        return Ok(());
    }
    Err(IpcError::DescriptorLimit {
        declared,
        affordable,
        soft_limit,
        open,
    }
    .into())
}

/// The open-file soft limit, unless it is infinite or unknown.
fn soft_limit() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid place for the answer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0
        || limit.rlim_cur == libc::RLIM_INFINITY
    {
        return None;
    }
    #[allow(
        clippy::useless_conversion,
        reason = "rlim_t is u64 on Linux and macOS, i64 on the BSDs"
    )]
    u64::try_from(limit.rlim_cur).ok()
}

/// How many descriptors this process has open (0 where it cannot be told).
fn open_descriptors() -> usize {
    for listing in ["/proc/self/fd", "/dev/fd"] {
        if let Ok(entries) = std::fs::read_dir(listing) {
            // The listing's own descriptor is among its entries.
            return entries.count().saturating_sub(1);
        }
    }
    0
}
