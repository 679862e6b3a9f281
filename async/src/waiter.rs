//! The future side of a completion, shared by every future of the module: the event recorded
//! when the future is made, a short spin at its first poll, then the slot the reactor
//! completes.
//!
//! The first poll asks the event (`cuEventQuery`) for at most the spin budget
//! ([`set_spin_budget`](super::set_spin_budget), 20 us unless set): work that finishes in that
//! time resolves without the reactor, a host function or a wake. Spinning past that stops,
//! and a thread whose spins keep running out spins less and less often (after `n` misses in a
//! row it spins again only after `2^n - 1` first polls, at most 1,023), so a busy GPU, whose
//! futures all wait long, costs almost no spinning; one spin that finishes brings it back.
//! The spin runs in relaxed capture mode, so it is never refused by (nor disturbs) a
//! global-mode capture on another thread.

use std::hint::spin_loop;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::task::{Context as TaskContext, Poll, Waker};
use std::time::{Duration, Instant};

use crate::settle::{gpu_has_stopped, release_after};
use crate::shared::{Core, LaneKey, Mark, Reactor, Registration};
use crate::staging::Staging;
use crate::table::{Detach, Keep, Slot, SlotRef};
use cuda_safe::Stream;
use cuda_safe::callback::PanicSlot;
use cuda_safe::{Error, Result, cu};
use cuda_sys::{CUstreamCaptureMode, Driver};

/// The spin budget unless [`set_spin_budget`](super::set_spin_budget) changes it.
const DEFAULT_SPIN: Duration = Duration::from_micros(20);

/// The most first polls a spin that ran out makes the next ones skip (`2^10 - 1`).
const MAX_MISSES: u32 = 10;

/// How long first polls spin, and how often spins have run out lately.
struct Governor {
    budget_ns: AtomicU64,
    misses: AtomicU32,
    skip: AtomicU32,
}

static GOVERNOR: Governor = Governor {
    budget_ns: AtomicU64::new(DEFAULT_SPIN.as_nanos() as u64),
    misses: AtomicU32::new(0),
    skip: AtomicU32::new(0),
};

impl Governor {
    /// The budget for this first poll, or `None` when it should not spin.
    fn allow(&self) -> Option<Duration> {
        let budget = self.budget_ns.load(Ordering::Relaxed);
        if budget == 0 {
            return None;
        }
        let skipped = self
            .skip
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |skip| {
                skip.checked_sub(1)
            })
            .is_ok();
        (!skipped).then(|| Duration::from_nanos(budget))
    }

    /// Notes whether a spin saw its work finish.
    fn record(&self, finished: bool) {
        if finished {
            self.misses.store(0, Ordering::Relaxed);
            self.skip.store(0, Ordering::Relaxed);
        } else {
            let misses = (self.misses.fetch_add(1, Ordering::Relaxed) + 1).min(MAX_MISSES);
            self.skip.store((1 << misses) - 1, Ordering::Relaxed);
        }
    }
}

/// Sets how long the first poll of a completion future asks its event before leaving the wait
/// to the reactor (process-wide; [`Duration::ZERO`] never spins). The default is 20 us.
pub fn set_spin_budget(budget: Duration) {
    let nanos = u64::try_from(budget.as_nanos()).unwrap_or(u64::MAX);
    GOVERNOR.budget_ns.store(nanos, Ordering::Relaxed);
    GOVERNOR.misses.store(0, Ordering::Relaxed);
    GOVERNOR.skip.store(0, Ordering::Relaxed);
}

/// The spin budget in force ([`set_spin_budget`]).
pub fn spin_budget() -> Duration {
    Duration::from_nanos(GOVERNOR.budget_ns.load(Ordering::Relaxed))
}

/// Exchanges the calling thread's capture mode with `mode` (`cuThreadExchangeStreamCaptureMode`).
pub(super) fn relaxed_capture_mode(
    driver: &'static Driver,
    mode: &mut CUstreamCaptureMode,
) -> Result<()> {
    // SAFETY: a valid pointer to a mode, read and written by the driver.
    unsafe { cu!(driver, cuThreadExchangeStreamCaptureMode(mode)) }
}

/// What a waiter reports once: the result, when what the future holds may go, and the staging
/// block it held.
pub(super) struct Outcome {
    pub(super) result: Result<()>,
    pub(super) release: Release,
    pub(super) hold: Option<Staging>,
}

/// When what a failed future holds may be released.
#[derive(Clone)]
pub(super) enum Release {
    /// Now: the GPU is done with it, or can no longer touch it.
    Now,
    /// Once the stream has passed the work queued on it when the future failed to record its
    /// event (a copy into its staging may be among it): the reactor keeps it until then.
    AfterStream(Stream),
    /// Never, unless the failure stopped the GPU ([`release_after`]): it says nothing of the
    /// GPU's progress.
    Unknown,
}

impl Release {
    /// Releases `keep`, after `error`, as `self` says.
    pub(super) fn apply(self, keep: Option<Keep>, error: &Error, core: &'static Core) {
        let Some(keep) = keep else { return };
        match self {
            Self::Now => drop(keep),
            Self::AfterStream(stream) => hand_over(core, keep, Mark::Drain(stream), None),
            Self::Unknown => release_after(keep, error),
        }
    }
}

/// What a future holds, as one value for the reactor: the values it keeps and its staging.
pub(super) fn held(keep: Option<Keep>, hold: Option<Staging>) -> Option<Keep> {
    match (keep, hold) {
        (keep, None) => keep,
        (None, Some(hold)) => Some(Box::new(hold)),
        (Some(keep), Some(hold)) => Some(Box::new((keep, hold))),
    }
}

/// Gives `keep` to the reactor, to drop once `mark` has finished (standing in `lane`); without
/// a reactor thread, waits for the mark on this thread first.
fn hand_over(core: &'static Core, keep: Keep, mark: Mark, lane: Option<(usize, usize)>) {
    if let Err(error) = core.start() {
        log::warn!("cuda-safe: {error}; the dropping thread waits for the GPU");
        match mark.sync() {
            Ok(()) => drop(keep),
            Err(error) => release_after(keep, &error),
        }
        mark.recycle();
        return;
    }
    let slot = core.table.take();
    let _left = slot.detach(Some(keep));
    core.register(Registration {
        lane: lane_key(lane, &slot),
        mark,
        slot,
    });
}

/// Which callbacks' panics the completion reports, as the wait it stands for would.
#[derive(Default)]
pub(super) struct Report {
    /// The stream's host functions ([`Stream::sync`] reports them).
    pub(super) stream: Option<Stream>,
    /// The graph's host nodes.
    pub(super) graph: Option<Arc<PanicSlot>>,
}

enum Phase {
    /// Nothing to wait for.
    Ready,
    /// Making the completion failed; what it holds goes as `release` says.
    Failed { error: Error, release: Release },
    /// The event is recorded; not polled yet.
    Recorded {
        mark: Mark,
        /// The lane of a real stream; `None` for a mark with no order to others.
        lane: Option<(usize, usize)>,
    },
    /// The reactor watches it.
    Registered(SlotRef),
    /// Reported.
    Done,
}

/// What a poll does once it has looked at the phase (and run the user's code it needs).
enum Step {
    /// The work's outcome is known.
    Resolved(Result<()>),
    /// Making the completion failed (the error, and when what the future holds may go).
    Failed(Error, Release),
    /// The wait goes to the reactor with this waker.
    Watch(Waker),
}

/// One future's wait.
pub(super) struct Waiter {
    reactor: Reactor,
    phase: Phase,
    report: Report,
    hold: Option<Staging>,
}

impl Waiter {
    /// A wait for the work queued on `stream` so far (an event recorded there now), reporting
    /// as `report` says, holding `hold` until it is done. `capture_checked`: the caller has
    /// made sure the stream is not being captured (before queuing a copy into `hold`).
    pub(super) fn on_stream(
        reactor: Reactor,
        stream: &Stream,
        report: Report,
        hold: Option<Staging>,
        capture_checked: bool,
    ) -> Self {
        let phase = match record(stream, capture_checked) {
            Ok(mark) => {
                let raw = stream.as_raw() as usize;
                // The special handles name a different stream on each thread or context.
                let lane = (raw > 2).then(|| (raw, stream.context().as_raw() as usize));
                Phase::Recorded { mark, lane }
            }
            // A caller that checked the capture state queued a copy after the check.
            Err(error) => failure_phase(error, Some(stream), capture_checked),
        };
        Self {
            reactor,
            phase,
            report,
            hold,
        }
    }

    /// A wait on an event the caller keeps alive until the wait is over (it holds it, or the
    /// future does).
    pub(super) fn on_mark(reactor: Reactor, mark: Mark) -> Self {
        Self {
            reactor,
            phase: Phase::Recorded { mark, lane: None },
            report: Report::default(),
            hold: None,
        }
    }

    /// A wait that is over at once (nothing was queued).
    pub(super) fn ready(reactor: Reactor) -> Self {
        Self {
            reactor,
            phase: Phase::Ready,
            report: Report::default(),
            hold: None,
        }
    }

    /// A wait whose making failed before anything was queued.
    pub(super) fn failed(reactor: Reactor, error: Error, stream: Option<&Stream>) -> Self {
        Self {
            reactor,
            phase: failure_phase(error, stream, false),
            report: Report::default(),
            hold: None,
        }
    }

    /// The reactor this waiter holds.
    pub(super) fn reactor(&self) -> &Reactor {
        &self.reactor
    }

    /// Whether the outcome was reported.
    pub(super) fn is_done(&self) -> bool {
        matches!(self.phase, Phase::Done)
    }

    /// Polls the wait; the outcome is reported once.
    ///
    /// The only code of the user's it runs (the waker's `clone`, and the `drop` of the waker a
    /// later poll replaces) runs while the phase still says where the wait stands: when it
    /// panics, the wait is as it was, and what the future holds stays held until the GPU is
    /// done with it. The phase advances only after that, and nothing of the user's runs
    /// between there and the outcome's return.
    pub(super) fn poll(&mut self, cx: &mut TaskContext<'_>) -> Poll<Outcome> {
        let core = &self.reactor.core;
        let step = match &self.phase {
            Phase::Done => {
                return Poll::Ready(Outcome {
                    result: Err(Error::invalid_argument(
                        "a completion future was polled again after it resolved",
                    )),
                    release: Release::Now,
                    hold: None,
                });
            }
            Phase::Ready => Step::Resolved(Ok(())),
            Phase::Failed { error, release } => Step::Failed(error.clone(), release.clone()),
            Phase::Recorded { mark, .. } => match spin(mark) {
                Some(verdict) => Step::Resolved(verdict),
                None => match core.start() {
                    Ok(()) => Step::Watch(cx.waker().clone()),
                    Err(error) => Step::Resolved(block_on_mark(mark, error)),
                },
            },
            Phase::Registered(slot) => match slot.poll(cx.waker()) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(outcome) => Step::Resolved(outcome),
            },
        };
        let resolved = match step {
            Step::Watch(waker) => {
                self.watch(waker);
                return Poll::Pending;
            }
            Step::Resolved(result) => Ok(result),
            Step::Failed(error, release) => Err((error, release)),
        };
        match std::mem::replace(&mut self.phase, Phase::Done) {
            Phase::Recorded { mark, .. } => mark.recycle(),
            Phase::Registered(slot) => self.reactor.core.table.give(slot),
            Phase::Ready | Phase::Failed { .. } | Phase::Done => {}
        }
        Poll::Ready(match resolved {
            Ok(result) => self.finish(result),
            Err((error, release)) => Outcome {
                result: Err(error),
                release,
                hold: self.hold.take(),
            },
        })
    }

    /// Hands the recorded mark to the reactor with `waker` (cloned by the caller, before
    /// anything changed): nothing of the user's runs here.
    fn watch(&mut self, waker: Waker) {
        let core = &self.reactor.core;
        let slot = core.table.take();
        slot.watch(waker);
        if let Phase::Recorded { mark, lane } =
            std::mem::replace(&mut self.phase, Phase::Registered(slot.clone()))
        {
            core.register(Registration {
                lane: lane_key(lane, &slot),
                mark,
                slot,
            });
        }
    }

    /// The outcome of finished (or failed) work: the callbacks' panics reported after a
    /// success.
    fn finish(&mut self, result: Result<()>) -> Outcome {
        let hold = self.hold.take();
        match result {
            Ok(()) => {
                let stream = self
                    .report
                    .stream
                    .as_ref()
                    .map_or(Ok(()), Stream::check_callback_panics);
                let graph = self
                    .report
                    .graph
                    .as_ref()
                    .map_or(Ok(()), |slot| slot.check());
                Outcome {
                    result: stream.and(graph),
                    release: Release::Now,
                    hold,
                }
            }
            Err(error) => Outcome {
                release: if gpu_has_stopped(&error) {
                    Release::Now
                } else {
                    Release::Unknown
                },
                result: Err(error),
                hold,
            },
        }
    }

    /// The future is dropped before it resolved: `keep` (and the staging block held) live
    /// until the GPU is done with them, in the reactor's care if need be.
    pub(super) fn abandon(&mut self, keep: Option<Keep>) {
        let keep = held(keep, self.hold.take());
        let core = self.reactor.core;
        match std::mem::replace(&mut self.phase, Phase::Done) {
            Phase::Recorded { mark, lane } => match keep {
                Some(keep) => hand_over(core, keep, mark, lane),
                None => mark.recycle(),
            },
            Phase::Registered(slot) => {
                let (detached, waker) = slot.detach(keep);
                if let Detach::Done(keep, outcome) = detached {
                    core.table.give(slot);
                    if let Some(keep) = keep {
                        match outcome {
                            Ok(()) => drop(keep),
                            Err(error) => release_after(keep, &error),
                        }
                    }
                }
                // The user's waker goes last, what the future held being in safe hands.
                drop(waker);
            }
            Phase::Failed { error, release } => release.apply(keep, &error, core),
            Phase::Ready | Phase::Done => drop(keep),
        }
    }
}

/// The lane of a mark: its stream's, or one of its own (named by its slot).
fn lane_key(lane: Option<(usize, usize)>, slot: &SlotRef) -> LaneKey {
    match lane {
        Some((stream, context)) => LaneKey::Stream(stream, context),
        None => LaneKey::Alone(std::ptr::from_ref::<Slot>(slot) as usize),
    }
}

/// Refuses a capturing stream: an event recorded there would become part of the graph, never
/// completing (and a copy queued there, a node of it).
pub(super) fn refuse_capturing(stream: &Stream) -> Result<()> {
    if stream.is_capturing()? {
        return Err(Error::invalid_argument(
            "a completion cannot wait on a stream being captured (its event would be captured \
             into the graph); await the graph's launch instead (GraphExec::launch_async)",
        ));
    }
    Ok(())
}

/// Records one of the stream's spare events there (refused while it is captured, unless the
/// caller has checked).
fn record(stream: &Stream, capture_checked: bool) -> Result<Mark> {
    if !capture_checked {
        refuse_capturing(stream)?;
    }
    let event = stream.take_spare_event()?;
    match event.record(stream) {
        Ok(()) => Ok(Mark::Pooled {
            event,
            stream: stream.clone(),
        }),
        Err(error) => {
            stream.keep_spare_event(event);
            Err(error)
        }
    }
}

/// A failed making: what the future holds may be released once the GPU is done with it, or can
/// no longer touch it. Nothing was queued for it (`stream` is `None`), or the stream is being
/// captured and nothing of the future was queued (`queued` is false: releasing a value is then
/// what dropping it would do), or the context has stopped; otherwise the reactor keeps it until
/// the stream has passed what was queued, a capture begun since by another thread included (the
/// future's error is returned at once, no thread waits).
fn failure_phase(error: Error, stream: Option<&Stream>, queued: bool) -> Phase {
    let release = match stream {
        None => Release::Now,
        Some(_) if gpu_has_stopped(&error) => Release::Now,
        Some(stream) => match release_after_failure(stream.is_capturing(), queued) {
            Some(true) => Release::AfterStream(stream.clone()),
            Some(false) => Release::Now,
            None => Release::Unknown,
        },
    };
    Phase::Failed { error, release }
}

/// Whether a failed making's holdings wait for the stream (`Some(true)`), go now
/// (`Some(false)`) or are kept for good (`None`), given whether the stream is being captured
/// and whether something of the future was queued on it.
fn release_after_failure(capturing: Result<bool>, queued: bool) -> Option<bool> {
    match capturing {
        Ok(capturing) => Some(queued || !capturing),
        Err(_) => None,
    }
}

/// Without a reactor thread, waits for the mark on this thread.
fn block_on_mark(mark: &Mark, error: Error) -> Result<()> {
    log::warn!("cuda-safe: {error}; waiting for the GPU on the polling thread instead");
    mark.sync()
}

/// Asks the event for at most the spin budget; `None` when it did not finish (or spinning is
/// off).
fn spin(mark: &Mark) -> Option<Result<()>> {
    let budget = GOVERNOR.allow()?;
    let driver = mark.context().driver();
    let mut mode = CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
    relaxed_capture_mode(driver, &mut mode).ok()?;
    let start = Instant::now();
    let verdict = loop {
        match mark.is_done() {
            Ok(true) => break Some(Ok(())),
            Ok(false) if start.elapsed() < budget => spin_loop(),
            Ok(false) => break None,
            Err(error) => break Some(Err(error)),
        }
    };
    if let Err(error) = relaxed_capture_mode(driver, &mut mode) {
        log::warn!("cuda-safe: restoring the thread's capture mode failed: {error}");
    }
    GOVERNOR.record(verdict.is_some());
    verdict
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_queued_before_a_capture_began_waits_for_the_stream() {
        let query_failed = Err(Error::invalid_argument("no answer"));
        assert_eq!(release_after_failure(Ok(true), true), Some(true));
        assert_eq!(release_after_failure(Ok(true), false), Some(false));
        assert_eq!(release_after_failure(Ok(false), false), Some(true));
        assert_eq!(release_after_failure(Ok(false), true), Some(true));
        assert_eq!(release_after_failure(query_failed, true), None);
    }

    #[test]
    fn spins_that_run_out_back_off_and_one_that_finishes_resets() {
        let governor = Governor {
            budget_ns: AtomicU64::new(20_000),
            misses: AtomicU32::new(0),
            skip: AtomicU32::new(0),
        };
        let mut spun = 0;
        for _ in 0..1000 {
            if governor.allow().is_some() {
                spun += 1;
                governor.record(false);
            }
        }
        assert!(spun <= 11, "{spun} spins in 1000 first polls of a busy GPU");
        governor.record(true);
        assert_eq!(governor.allow(), Some(Duration::from_micros(20)));
        assert!(
            governor.allow().is_some(),
            "spins again after a finished one"
        );
        governor.budget_ns.store(0, Ordering::Relaxed);
        assert_eq!(governor.allow(), None, "a zero budget never spins");
    }
}
