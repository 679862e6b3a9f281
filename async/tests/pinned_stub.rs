//! Downloads that pin no memory of their own, against the stub driver: a download into the
//! caller's pinned block allocates nothing, stages nothing and lands the values in that block,
//! which it keeps (dropped in flight) until the held GPU has passed the copy; bad input is a
//! typed error, the block handed back; and a staging block past the idle cache's limit is reused by the next download
//! that large rather than pinned and freed at each use.
//!
//! A `main` of its own (`harness = false`): the stub is built and the library variables are set
//! before anything else runs.

mod support;

use std::process::ExitCode;
use std::time::Duration;

use cuda_safe::{Error, PinnedBlock, PinnedMemoryResource};
use cuda_safe_async::prelude::*;
use cuda_safe_async::{self as completion, Reactor};
use cuda_safe_stub::Stub;
use support::{Case, Fixture, Held, Verdict, ensure, failed, poll_once, wait_until};

/// Elements of the small downloads.
const LEN: usize = 1024;

/// The idle staging the reactor keeps in blocks of its size class (docs/async.md): a download
/// one byte larger takes a block past it.
const IDLE_STAGING_LIMIT: usize = 64 << 20;

/// What a staging block past [`IDLE_STAGING_LIMIT`] is rounded up to a multiple of
/// (docs/async.md).
const LARGE_GRANULE: usize = 2 << 20;

/// A pinned block for `bytes` bytes of the fixture's device.
fn pinned_block(fx: &Fixture, bytes: usize) -> Result<PinnedBlock, String> {
    PinnedMemoryResource::new(fx.stream.device())
        .and_then(|pinned| pinned.allocate_block(bytes))
        .map_err(failed)
}

/// Two downloads into one block, handed back between them: the values of each buffer, with
/// no `cuMemHostAlloc` and no staging in use, ever.
fn lands_in_the_callers_block(stub: &Stub, fx: &Fixture, reactor: &Reactor) -> Verdict {
    let block = pinned_block(fx, LEN * size_of::<f32>())?;
    let allocations = stub.calls("cuMemHostAlloc");
    let mut block = Some(block);
    for value in [4.0f32, 9.0] {
        let source = fx.pool.allocate_from_host(&[value; LEN], &fx.stream);
        let source = source.map_err(failed)?;
        let into = block.take().ok_or("the block was not handed back")?;
        let held = Held::new(stub);
        let mut download = source.download_into::<f32>(into);
        ensure(poll_once(&mut download).is_pending(), || {
            "held work was done".into()
        })?;
        let staging = reactor.stats().staging_in_use;
        ensure(staging == 0, || format!("{staging} bytes staged"))?;
        drop(held);
        let values = pollster::block_on(download).map_err(failed)?;
        ensure(
            values.len() == LEN && values.iter().all(|&v| v == value),
            || {
                format!(
                    "the block holds {:?}, not {LEN} times {value}",
                    &values[..4]
                )
            },
        )?;
        block = Some(values.into_block());
    }
    let made = stub.calls("cuMemHostAlloc") - allocations;
    ensure(made == 0, || {
        format!("{made} pinned allocations for two downloads")
    })
}

/// A pinned download dropped while its copy is held keeps the block (no `cuMemFreeHost`) until
/// the GPU has passed the copy; it is freed then, once.
fn a_dropped_download_keeps_the_block(stub: &Stub, fx: &Fixture) -> Verdict {
    let source = fx.pool.allocate_from_host(&[1.0f32; LEN], &fx.stream);
    let source = source.map_err(failed)?;
    let block = pinned_block(fx, source.len())?;
    let frees = stub.calls("cuMemFreeHost");
    let held = Held::new(stub);
    let mut download = source.download_into::<f32>(block);
    ensure(poll_once(&mut download).is_pending(), || {
        "held work was done".into()
    })?;
    drop(download);
    drop(source);
    ensure(stub.calls("cuMemFreeHost") == frees, || {
        "the block was freed while the copy into it could run".into()
    })?;
    drop(held);
    wait_until("the block is freed", || {
        stub.calls("cuMemFreeHost") == frees + 1
    })
}

/// A block smaller than the buffer and a buffer that is not a whole number of elements are
/// refused before any copy is queued, each download handing the caller's block back.
fn bad_input_is_refused(stub: &Stub, fx: &Fixture) -> Verdict {
    let source = fx.pool.allocate_from_host(&[2.0f32; LEN], &fx.stream);
    let source = source.map_err(failed)?;
    let odd = fx.pool.allocate(6, &fx.other).map_err(failed)?;
    let copies = stub.calls("cuMemcpyAsync");
    let small = pinned_block(fx, source.len() / 2)?;
    let uneven = pinned_block(fx, odd.len())?;
    let cases = [
        (
            "a small block",
            small.as_ptr(),
            source.download_into::<f32>(small),
        ),
        (
            "an uneven buffer",
            uneven.as_ptr(),
            odd.download_into::<f32>(uneven),
        ),
    ];
    for (what, address, mut download) in cases {
        let result = pollster::block_on(&mut download);
        ensure(matches!(result, Err(Error::InvalidArgument(_))), || {
            format!("{what} gave {result:?}")
        })?;
        // The refused download hands the caller's block back.
        let back = download.into_block();
        ensure(
            back.as_ref().map(PinnedBlock::as_ptr) == Some(address),
            || format!("{what}: the block back was {back:?}"),
        )?;
    }
    let queued = stub.calls("cuMemcpyAsync") - copies;
    ensure(queued == 0, || {
        format!("{queued} copies queued for refused downloads")
    })
}

/// Two downloads of a buffer past the idle limit: the second reuses the first's block (one
/// `cuMemHostAlloc`, no `cuMemFreeHost`), which stays idle in the cache afterwards, its size
/// the download's rounded up to 2 MiB.
fn a_large_staging_block_is_reused(stub: &Stub, fx: &Fixture, reactor: &Reactor) -> Verdict {
    let bytes = IDLE_STAGING_LIMIT + 1;
    let source = fx.pool.allocate(bytes, &fx.stream).map_err(failed)?;
    let (allocations, frees) = (stub.calls("cuMemHostAlloc"), stub.calls("cuMemFreeHost"));
    for _ in 0..2 {
        let values = pollster::block_on(source.to_vec_async::<u8>()).map_err(failed)?;
        ensure(values.len() == bytes, || {
            format!("{} bytes came", values.len())
        })?;
        wait_until("the staging is back", || {
            reactor.stats().staging_in_use == 0
        })?;
    }
    let made = stub.calls("cuMemHostAlloc") - allocations;
    let freed = stub.calls("cuMemFreeHost") - frees;
    ensure(made == 1 && freed == 0, || {
        format!("{made} allocations and {freed} frees for two large downloads (1 and 0 expected)")
    })?;
    let idle = reactor.stats().staging_idle;
    ensure(idle > IDLE_STAGING_LIMIT, || {
        format!("{idle} bytes idle: the large block was not kept")
    })?;
    // The large block is the download rounded up to the granule, not to a power of two (the
    // small idle blocks of the earlier cases are under one granule).
    ensure(idle < IDLE_STAGING_LIMIT + 2 * LARGE_GRANULE, || {
        format!("{idle} bytes idle for a download of {bytes} bytes")
    })
}

fn main() -> ExitCode {
    let Some((stub, fixture)) = support::start("pinned_stub") else {
        return ExitCode::SUCCESS;
    };
    completion::set_spin_budget(Duration::ZERO);
    let reactor = Reactor::shared();
    let (fx, r) = (&fixture, &reactor);
    let cases: Vec<(&str, Case<'_>)> = vec![
        (
            "a download lands in the caller's block",
            Box::new(|| lands_in_the_callers_block(stub, fx, r)),
        ),
        (
            "a dropped pinned download keeps its block",
            Box::new(|| a_dropped_download_keeps_the_block(stub, fx)),
        ),
        (
            "bad input is refused",
            Box::new(|| bad_input_is_refused(stub, fx)),
        ),
        (
            "a large staging block is reused",
            Box::new(|| a_large_staging_block_is_reused(stub, fx, r)),
        ),
    ];
    let total = cases.len();
    let failures = support::run(&cases);
    drop(cases);
    support::finish(
        "pinned_stub",
        stub,
        (fixture, reactor),
        (0, 0),
        (total, failures),
    )
}
