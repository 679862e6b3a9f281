//! The completion futures when the user's code panics inside them, against the stub driver
//! with its GPU held (`Stub::hold_gpu`: the work and the reactor's host functions wait until
//! the test releases it): a waker whose `clone`, `wake` or `drop` panics, a kept value whose
//! drop panics, a host function that panics. Each time the panic reaches the user's call (or
//! the reactor logs it), what the future holds stays held until the GPU is done with it (a
//! download's pinned staging block is never handed to another download meanwhile), and no
//! wake-up is lost: the reactor's sweep is off, so every future is woken by a host function
//! or not at all.
//!
//! A `main` of its own (`harness = false`): the stub is built and the library variables are set
//! before anything else runs.

mod support;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Poll, RawWaker, RawWakerVTable, Waker};
use std::time::Duration;

use cuda_safe::{Buffer, Error};
use cuda_safe_async::prelude::*;
use cuda_safe_async::{self as completion, Reactor};
use cuda_safe_stub::{self as stub, Stub};
use support::{Case, Fixture, Held, Verdict, ensure, failed, poll_once, poll_with, wait_until};

/// What a trap waker does, shared by its clones: panic in `clone`, `wake` or `drop` while
/// armed, and count its wakes.
#[derive(Default)]
struct Trap {
    clone_panics: AtomicBool,
    wake_panics: AtomicBool,
    drop_panics: AtomicBool,
    woken: AtomicUsize,
}

impl Trap {
    fn woken(&self) -> usize {
        self.woken.load(Ordering::SeqCst)
    }
}

const VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake_by_ref, drop_waker);

fn trap_of(data: *const ()) -> &'static Trap {
    // SAFETY: every trap waker's data is a leaked `Trap` (`trap_waker`), alive for good.
    unsafe { &*data.cast::<Trap>() }
}

fn clone(data: *const ()) -> RawWaker {
    assert!(
        !trap_of(data).clone_panics.load(Ordering::SeqCst),
        "the waker's clone panics"
    );
    RawWaker::new(data, &VTABLE)
}

fn wake(data: *const ()) {
    wake_by_ref(data);
    drop_waker(data);
}

fn wake_by_ref(data: *const ()) {
    let trap = trap_of(data);
    trap.woken.fetch_add(1, Ordering::SeqCst);
    assert!(
        !trap.wake_panics.load(Ordering::SeqCst),
        "the waker's wake panics"
    );
}

fn drop_waker(data: *const ()) {
    assert!(
        !trap_of(data).drop_panics.load(Ordering::SeqCst),
        "the waker's drop panics"
    );
}

/// A waker of a trap of its own (leaked: a test's few bytes).
fn trap_waker() -> (&'static Trap, Waker) {
    let trap: &'static Trap = Box::leak(Box::default());
    let raw = RawWaker::new(std::ptr::from_ref(trap).cast(), &VTABLE);
    // SAFETY: the vtable's functions keep `RawWaker`'s contract for the leaked trap (clones
    // share it; nothing is freed).
    (trap, unsafe { Waker::from_raw(raw) })
}

/// A value whose drop panics (once it has counted itself).
struct Bomb(&'static AtomicUsize);

impl Drop for Bomb {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
        panic!("a kept value's drop panics");
    }
}

/// Whether `f` panicked.
fn panics(f: impl FnOnce()) -> bool {
    catch_unwind(AssertUnwindSafe(f)).is_err()
}

/// A buffer of 1,024 copies of `value` on `stream`: one 4 KiB staging block to download.
fn filled(fx: &Fixture, stream: &cuda_safe::Stream, value: f32) -> Result<Buffer, String> {
    fx.pool
        .allocate_from_host(&[value; 1024], stream)
        .map_err(failed)
}

/// Whether a download's values are all `value`.
fn all(values: &cuda_safe::Result<Vec<f32>>, value: f32) -> bool {
    values
        .as_ref()
        .is_ok_and(|values| values.len() == 1024 && values.iter().all(|&v| v == value))
}

/// Staging in use now, in 4 KiB blocks.
fn blocks(reactor: &Reactor) -> usize {
    reactor.stats().staging_in_use / 4096
}

/// The reproduction: a download polled again with another waker, whose predecessor's drop
/// panics. The download stays watched: polled again it gets its own values, and dropped it
/// keeps its staging block until the copy is done, so the next download (of another buffer,
/// on another stream) gets a block of its own and its own values.
fn a_waker_whose_drop_panics(stub: &Stub, fx: &Fixture, reactor: &Reactor) -> Verdict {
    let first = filled(fx, &fx.stream, 1.0)?;
    let second = filled(fx, &fx.other, 2.0)?;
    let held = Held::new(stub);
    let (mut polled_again, mut dropped) = (first.to_vec_async(), first.to_vec_async());
    for download in [&mut polled_again, &mut dropped] {
        let (old, old_waker) = trap_waker();
        ensure(poll_with(download, &old_waker).is_pending(), || {
            "held work was done".into()
        })?;
        old.drop_panics.store(true, Ordering::SeqCst);
        let (_, new_waker) = trap_waker();
        let panicked = panics(|| drop(poll_with(download, &new_waker)));
        old.drop_panics.store(false, Ordering::SeqCst);
        ensure(panicked, || "the waker's drop did not panic".into())?;
    }
    drop(dropped);
    ensure(blocks(reactor) == 2, || {
        format!(
            "the dropped download gave its staging back early: {:?}",
            reactor.stats()
        )
    })?;
    let other = second.to_vec_async::<f32>();
    ensure(blocks(reactor) == 3, || {
        format!(
            "the next download reused a block in use: {:?}",
            reactor.stats()
        )
    })?;
    drop(held);
    ensure(all(&pollster::block_on(other), 2.0), || {
        "the next download got another buffer's values".into()
    })?;
    ensure(all(&pollster::block_on(polled_again), 1.0), || {
        "the download polled after the panic lost its values".into()
    })?;
    wait_until("the staging is back", || blocks(reactor) == 0)
}

/// The reproduction with the caller's pinned memory: a download into a pinned block, polled
/// again with a waker whose predecessor's drop panics, then dropped while its copy runs. The
/// block is not freed (`cuMemFreeHost`) while the held GPU may still write it, and is freed once
/// the copy is done; a second download into a block of its own gets its own values.
fn a_pinned_download_whose_waker_drop_panics(stub: &Stub, fx: &Fixture) -> Verdict {
    let source = filled(fx, &fx.stream, 6.0)?;
    let other = filled(fx, &fx.other, 7.0)?;
    let pinned = cuda_safe::PinnedMemoryResource::new(fx.stream.device()).map_err(failed)?;
    let block = |bytes| pinned.allocate_block(bytes).map_err(failed);
    let (first_block, second_block) = (block(source.len())?, block(other.len())?);
    let frees = stub.calls("cuMemFreeHost");
    let held = Held::new(stub);
    let mut dropped = source.download_into::<f32>(first_block);
    let (old, old_waker) = trap_waker();
    ensure(poll_with(&mut dropped, &old_waker).is_pending(), || {
        "held work was done".into()
    })?;
    old.drop_panics.store(true, Ordering::SeqCst);
    let (_, new_waker) = trap_waker();
    let panicked = panics(|| drop(poll_with(&mut dropped, &new_waker)));
    old.drop_panics.store(false, Ordering::SeqCst);
    ensure(panicked, || "the waker's drop did not panic".into())?;
    drop(dropped);
    let next = other.download_into::<f32>(second_block);
    ensure(stub.calls("cuMemFreeHost") == frees, || {
        "the dropped download's block was freed while its copy could run".into()
    })?;
    drop(held);
    let values = pollster::block_on(next).map_err(failed)?;
    ensure(values.iter().all(|&v| v == 7.0), || {
        "the next download got another buffer's values".into()
    })?;
    wait_until("the dropped download's block is freed", || {
        stub.calls("cuMemFreeHost") == frees + 1
    })
}

/// A waker whose clone panics, at the first poll (before the wait goes to the reactor) and at
/// a later one: the download keeps waiting as before, resolves when polled again, and dropped
/// keeps its staging.
fn a_waker_whose_clone_panics(stub: &Stub, fx: &Fixture, reactor: &Reactor) -> Verdict {
    let buffer = filled(fx, &fx.stream, 3.0)?;
    let held = Held::new(stub);
    let (bad, bad_waker) = trap_waker();
    bad.clone_panics.store(true, Ordering::SeqCst);
    let mut first = buffer.to_vec_async();
    ensure(panics(|| drop(poll_with(&mut first, &bad_waker))), || {
        "the first poll's clone did not panic".into()
    })?;
    let (good, good_waker) = trap_waker();
    ensure(poll_with(&mut first, &good_waker).is_pending(), || {
        "held work was done".into()
    })?;
    ensure(panics(|| drop(poll_with(&mut first, &bad_waker))), || {
        "a later poll's clone did not panic".into()
    })?;
    let mut dropped = buffer.to_vec_async::<f32>();
    ensure(poll_once(&mut dropped).is_pending(), || "held".into())?;
    ensure(panics(|| drop(poll_with(&mut dropped, &bad_waker))), || {
        "the clone did not panic".into()
    })?;
    drop(dropped);
    ensure(blocks(reactor) == 2, || {
        format!(
            "a download gave its staging back early: {:?}",
            reactor.stats()
        )
    })?;
    drop(held);
    wait_until("the kept waker is woken", || good.woken() == 1)?;
    ensure(
        matches!(poll_with(&mut first, &good_waker), Poll::Ready(ref values) if all(values, 3.0)),
        || "the download did not resolve to its values".into(),
    )?;
    wait_until("the staging is back", || blocks(reactor) == 0)
}

/// A waker whose wake (or whose drop, which the reactor's wake ends with) panics on the
/// reactor thread: the reactor logs it, wakes the other futures of the pass, and goes on; the
/// future whose waker panicked resolves when polled.
fn a_waker_whose_wake_panics(stub: &Stub, fx: &Fixture) -> Verdict {
    stub::take_error_logs();
    let held = Held::new(stub);
    let mut futures: Vec<_> = (0..4)
        .map(|i| [&fx.stream, &fx.other][i % 2].completion())
        .collect();
    let traps: Vec<_> = futures
        .iter_mut()
        .map(|future| {
            let (trap, waker) = trap_waker();
            let pending = poll_with(future, &waker).is_pending();
            (trap, waker, pending)
        })
        .collect();
    ensure(traps.iter().all(|(_, _, pending)| *pending), || {
        "held work was done".into()
    })?;
    traps[0].0.wake_panics.store(true, Ordering::SeqCst);
    traps[1].0.drop_panics.store(true, Ordering::SeqCst);
    drop(held);
    wait_until("every future is woken", || {
        traps.iter().all(|(trap, ..)| trap.woken() == 1)
    })?;
    traps[1].0.drop_panics.store(false, Ordering::SeqCst);
    for (future, (_, waker, _)) in futures.iter_mut().zip(&traps) {
        ensure(
            matches!(poll_with(future, waker), Poll::Ready(Ok(()))),
            || "a woken future did not resolve".into(),
        )?;
    }
    let logs = stub::take_error_logs();
    ensure(
        logs.iter()
            .filter(|line| line.contains("a waker panicked"))
            .count()
            == 2,
        || format!("the reactor did not log both panics: {logs:?}"),
    )?;
    the_reactor_still_wakes(stub, fx)
}

/// A future that waits goes to the reactor and is woken by it.
fn the_reactor_still_wakes(stub: &Stub, fx: &Fixture) -> Verdict {
    let held = Held::new(stub);
    let mut next = fx.stream.completion();
    let (trap, waker) = trap_waker();
    ensure(poll_with(&mut next, &waker).is_pending(), || {
        "held work was done".into()
    })?;
    drop(held);
    wait_until("the reactor wakes the next future", || trap.woken() == 1)?;
    ensure(
        matches!(poll_with(&mut next, &waker), Poll::Ready(Ok(()))),
        || "the next future did not resolve".into(),
    )
}

/// Values whose drop panics, kept by dropped futures and dropped by the reactor once their
/// work has finished, or after a sticky error: the reactor catches the panics, drops the
/// other values of the pass and goes on.
fn a_kept_value_whose_drop_panics(stub: &Stub, fx: &Fixture) -> Verdict {
    const ILLEGAL_ADDRESS: i32 = 700;
    static DROPPED: AtomicUsize = AtomicUsize::new(0);
    let frees = stub.calls("cuMemFreeAsync");
    let held = Held::new(stub);
    drop(fx.stream.completion_with(Bomb(&DROPPED)));
    let buffer = fx.pool.allocate(4096, &fx.stream).map_err(failed)?;
    drop(fx.stream.completion_with((Bomb(&DROPPED), buffer)));
    ensure(DROPPED.load(Ordering::SeqCst) == 0, || {
        "a kept value went early".into()
    })?;
    drop(held);
    wait_until("the kept values are dropped", || {
        DROPPED.load(Ordering::SeqCst) == 2 && stub.calls("cuMemFreeAsync") == frees + 1
    })?;
    the_reactor_still_wakes(stub, fx)?;
    // A sticky error: the reactor releases what the dropped future kept, catching its panic.
    let held = Held::new(stub);
    let mut waiting = fx.other.completion_with(Bomb(&DROPPED));
    ensure(poll_once(&mut waiting).is_pending(), || {
        "held work was done".into()
    })?;
    drop(waiting);
    stub.fail("cuEventQuery", ILLEGAL_ADDRESS, 1);
    drop(held);
    wait_until("the value is dropped after the fault", || {
        DROPPED.load(Ordering::SeqCst) == 3
    })?;
    the_reactor_still_wakes(stub, fx)
}

/// A future registered with a waker whose drop panics, then dropped: the panic reaches the
/// dropping code, and the staging block stays in use until the copy is done.
fn a_dropped_future_whose_waker_drop_panics(stub: &Stub, fx: &Fixture, r: &Reactor) -> Verdict {
    let buffer = filled(fx, &fx.stream, 4.0)?;
    let held = Held::new(stub);
    let mut download = buffer.to_vec_async::<f32>();
    let (trap, waker) = trap_waker();
    ensure(poll_with(&mut download, &waker).is_pending(), || {
        "held work was done".into()
    })?;
    trap.drop_panics.store(true, Ordering::SeqCst);
    let panicked = panics(move || drop(download));
    trap.drop_panics.store(false, Ordering::SeqCst);
    ensure(panicked, || "the waker's drop did not panic".into())?;
    ensure(blocks(r) == 1, || {
        format!("the staging went early: {:?}", r.stats())
    })?;
    drop(held);
    wait_until("the staging is back", || blocks(r) == 0)
}

/// A host function of the user's that panics (the core catches it and the stream reports it):
/// the completion behind it resolves to `CallbackPanicked` through the reactor, and the
/// reactor goes on.
fn a_host_function_that_panics(stub: &Stub, fx: &Fixture) -> Verdict {
    let stream = fx
        .stream
        .device()
        .create_stream(Default::default())
        .map_err(failed)?;
    let held = Held::new(stub);
    stream
        .launch_host_func(|| panic!("a host function panics"))
        .map_err(failed)?;
    let buffer = fx.pool.allocate(4096, &stream).map_err(failed)?;
    let mut done = stream.completion_with(buffer);
    let (trap, waker) = trap_waker();
    ensure(poll_with(&mut done, &waker).is_pending(), || {
        "held work was done".into()
    })?;
    drop(held);
    wait_until("the completion is woken", || trap.woken() == 1)?;
    ensure(
        matches!(
            poll_with(&mut done, &waker),
            Poll::Ready(Err(Error::CallbackPanicked { .. }))
        ),
        || "the host function's panic was not reported".into(),
    )?;
    the_reactor_still_wakes(stub, fx)
}

fn main() -> ExitCode {
    let Some((stub, fixture)) = support::start("unwinding") else {
        return ExitCode::SUCCESS;
    };
    // Every future waits for the reactor, and only a host function may wake it.
    completion::set_spin_budget(Duration::ZERO);
    completion::set_sweep_interval(Duration::from_secs(3600));
    let reactor = Reactor::shared();
    let (fx, r) = (&fixture, &reactor);
    let cases: Vec<(&str, Case<'_>)> = vec![
        (
            "a waker whose drop panics",
            Box::new(|| a_waker_whose_drop_panics(stub, fx, r)),
        ),
        (
            "a pinned download whose waker's drop panics",
            Box::new(|| a_pinned_download_whose_waker_drop_panics(stub, fx)),
        ),
        (
            "a waker whose clone panics",
            Box::new(|| a_waker_whose_clone_panics(stub, fx, r)),
        ),
        (
            "a waker whose wake panics",
            Box::new(|| a_waker_whose_wake_panics(stub, fx)),
        ),
        (
            "a kept value whose drop panics",
            Box::new(|| a_kept_value_whose_drop_panics(stub, fx)),
        ),
        (
            "a dropped future whose waker's drop panics",
            Box::new(|| a_dropped_future_whose_waker_drop_panics(stub, fx, r)),
        ),
        (
            "a host function that panics",
            Box::new(|| a_host_function_that_panics(stub, fx)),
        ),
    ];
    let total = cases.len();
    // The panics the cases provoke are expected: keep the output to the verdicts.
    std::panic::set_hook(Box::new(|_| {}));
    let failures = support::run(&cases);
    drop(cases);
    let found_by_sweep = reactor.stats().found_by_sweep;
    let failures = failures + usize::from(found_by_sweep != 0);
    if found_by_sweep != 0 {
        println!("FAIL the sweep found {found_by_sweep} completions: a wake-up was lost");
    }
    support::finish(
        "unwinding",
        stub,
        (fixture, reactor),
        (0, 0),
        (total, failures),
    )
}
