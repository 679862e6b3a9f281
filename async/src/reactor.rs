//! The reactor thread: it watches the events of the futures that had to wait, completes their
//! slots, and sleeps while nothing it watches can have finished.
//!
//! Marks recorded on one stream finish in their order, so they stand in one lane, and only the
//! lane's oldest mark is asked about (`cuEventQuery`), or its newest first, whose completion
//! completes the whole lane at once. Before sleeping, the reactor arms each lane whose oldest
//! mark is unfinished: on a side stream of its own (never the user's, which a host function
//! would stall, and never a capturing one), a wait on that mark and a host function that
//! raises the lane's flag and rings the bell. The bell wakes the reactor, which asks only the
//! lanes whose flag rose (and those with new marks), so a sleeping reactor costs no CPU and a
//! completion costs one host function per lane at most, however many futures wait behind it.
//! A stream's lane (its side stream and flag with it) is kept while the stream lives, named by
//! a [`WeakStream`] that does not keep it alive: the stream's next wait finds it ready, and it
//! goes at the first pass after the stream has gone.
//! When new futures arrive, the reactor first asks its lanes for up to [`reactor_spin`] (20 us
//! unless set) before it arms and sleeps: work that ends within that window wakes its future
//! one thread hop after it ends, without the driver's callback thread in between.
//! A sweep every [`sweep_interval`] (10 ms unless set) asks every lane, for a host function that is late (a user's host
//! function blocking the driver's callback thread) or never comes (after a sticky error).
//!
//! Wakers run, and what dropped futures left is dropped, on this thread, outside every lock
//! and under `catch_unwind`, once the pass has completed every slot it found finished: a
//! panicking waker or value cannot stop the reactor, lose another future's wake-up, or leave a
//! slot half completed. A value is dropped there only once its work has finished, or after a
//! sticky error (otherwise it is kept for good, `settle`).

use std::collections::{HashMap, VecDeque};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::Waker;
use std::time::{Duration, Instant};

use crate::bell::Bell;
use crate::settle::{gpu_has_stopped, release_after};
use crate::shared::{Core, LaneKey, Mark, Registration};
use crate::table::{Finish, Keep, SlotRef};
use crate::waiter::relaxed_capture_mode;
use cuda_safe::Context;
use cuda_safe::handle::log_drop_error;
use cuda_safe::{Result, cu};
use cuda_safe::{Stream, StreamOptions, WeakStream};
use cuda_sys::CUevent;
use std::ffi::c_void;

/// How often a reactor with unfinished work asks every lane unless [`set_sweep_interval`]
/// changes it.
const DEFAULT_SWEEP: Duration = Duration::from_millis(10);

/// The shortest sweep interval: shorter would poll rather than sleep.
const MIN_SWEEP: Duration = Duration::from_micros(100);

/// The sweep interval in force, in nanoseconds.
static SWEEP_NS: AtomicU64 = AtomicU64::new(DEFAULT_SWEEP.as_nanos() as u64);

/// Sets how often the reactor, while futures wait, asks every stream's oldest event whatever
/// the host functions say (process-wide; at least 100 us). The default is 10 ms: the longest a
/// completion waits when the driver runs the reactor's host function late (a user's host
/// function holding the driver's callback thread) or never (after a sticky error). Each sweep
/// costs a `cuEventQuery` per stream with waiting futures.
pub fn set_sweep_interval(interval: Duration) {
    let nanos = u64::try_from(interval.max(MIN_SWEEP).as_nanos()).unwrap_or(u64::MAX);
    SWEEP_NS.store(nanos, Ordering::Relaxed);
}

/// The sweep interval in force ([`set_sweep_interval`]).
pub fn sweep_interval() -> Duration {
    Duration::from_nanos(SWEEP_NS.load(Ordering::Relaxed))
}

/// How long the reactor asks its lanes after new futures arrive unless [`set_reactor_spin`]
/// changes it.
const DEFAULT_REACTOR_SPIN: Duration = Duration::from_micros(20);

/// The reactor spin in force, in nanoseconds.
static REACTOR_SPIN_NS: AtomicU64 = AtomicU64::new(DEFAULT_REACTOR_SPIN.as_nanos() as u64);

/// Sets how long the reactor thread, when new futures arrive, asks their streams' events
/// before it arms a host function per stream and sleeps (process-wide; [`Duration::ZERO`]
/// arms at once). The default is 20 us: work that ends within it wakes its future one thread
/// hop after it ends instead of two (the driver's callback thread, then the reactor), at the
/// cost of at most that much of the reactor's CPU each time futures arrive. It adds to the
/// futures' own spin ([`set_spin_budget`](crate::set_spin_budget)), which runs on the
/// polling thread before the future is handed to the reactor.
pub fn set_reactor_spin(spin: Duration) {
    let nanos = u64::try_from(spin.as_nanos()).unwrap_or(u64::MAX);
    REACTOR_SPIN_NS.store(nanos, Ordering::Relaxed);
}

/// The reactor spin in force ([`set_reactor_spin`]).
pub fn reactor_spin() -> Duration {
    Duration::from_nanos(REACTOR_SPIN_NS.load(Ordering::Relaxed))
}

/// Idle side streams kept per context.
const MAX_IDLE_NOTIFIERS: usize = 64;

/// The thread's body: runs until no handle is left and nothing is watched.
pub(super) fn run(core: &'static Core) {
    core.bell.attach();
    // Querying events on this thread never disturbs (nor is refused by) another thread's
    // global-mode capture.
    if let Ok(driver) = cuda_sys::driver() {
        let mut mode = cuda_sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
        if let Err(error) = relaxed_capture_mode(driver, &mut mode) {
            log::warn!("cuda-safe: the completion reactor keeps the default capture mode: {error}");
        }
    }
    let mut worker = Worker {
        core,
        lanes: HashMap::new(),
        inbox: Vec::new(),
        notifiers: Vec::new(),
        done: Done::default(),
    };
    worker.run();
}

/// One watched mark and the slot it completes.
struct Entry {
    mark: Mark,
    slot: SlotRef,
}

/// The marks of one stream (or one lone mark), oldest first.
struct Lane {
    entries: VecDeque<Entry>,
    ordered: bool,
    /// The stream the marks are recorded on, named without being kept alive: the lane, its
    /// side stream and its flag are kept while the stream lives, and go at the first pass
    /// after it has gone (a lane with marks has a live stream: each mark holds it).
    stream: Option<WeakStream>,
    /// The context side streams are made in.
    context: Context,
    /// The side stream the lane's host functions wait on.
    notifier: Option<Stream>,
    /// Raised by the lane's host function.
    signal: Arc<Signal>,
    /// A host function is queued for the lane and has not run yet.
    armed: bool,
    /// Arming failed: the lane is left to the sweep until it is empty.
    unarmable: bool,
    /// Something may have finished: ask the lane on this pass.
    dirty: bool,
    /// The lane is asked because of the sweep alone.
    swept: bool,
}

impl Lane {
    /// Whether the lane may go: it watches nothing, and its stream (if it has one) is gone.
    fn is_spent(&self) -> bool {
        self.entries.is_empty() && !self.stream.as_ref().is_some_and(WeakStream::is_alive)
    }
}

/// What one pass completed, acted on outside every lock.
#[derive(Default)]
struct Done {
    wakers: Vec<Waker>,
    keeps: Vec<Keep>,
    marks: Vec<Mark>,
    slots: Vec<SlotRef>,
}

struct Worker {
    core: &'static Core,
    lanes: HashMap<LaneKey, Lane>,
    inbox: Vec<Registration>,
    /// Idle side streams, by context.
    notifiers: Vec<(Context, Vec<Stream>)>,
    done: Done,
}

impl Worker {
    fn run(&mut self) {
        let mut sweep = false;
        loop {
            let fresh = self.take_incoming();
            self.collect_signals(sweep);
            self.poll_dirty();
            self.finish();
            self.retire_lanes();
            if self.watched() == 0 {
                if self.core.may_stop() {
                    self.core.lanes.store(0, Ordering::Relaxed);
                    return;
                }
                sweep = false;
                self.core.bell.wait(None);
                continue;
            }
            if fresh && self.spin() {
                sweep = false;
                continue;
            }
            self.arm();
            self.finish();
            sweep = !self.core.bell.wait(Some(sweep_interval()));
        }
    }

    fn watched(&self) -> usize {
        self.lanes.values().map(|lane| lane.entries.len()).sum()
    }

    /// Puts the new registrations into their lanes; returns whether there were any.
    fn take_incoming(&mut self) -> bool {
        self.core.take_incoming(&mut self.inbox);
        let fresh = !self.inbox.is_empty();
        for Registration { lane, mark, slot } in self.inbox.drain(..) {
            let entry = self.lanes.entry(lane).or_insert_with(|| Lane {
                entries: VecDeque::new(),
                ordered: matches!(lane, LaneKey::Stream(..)),
                stream: None,
                context: mark.context().clone(),
                notifier: None,
                signal: Arc::new(Signal {
                    raised: AtomicBool::new(false),
                    bell: &self.core.bell,
                }),
                armed: false,
                unarmable: false,
                dirty: false,
                swept: false,
            });
            // A new lane, or one whose stream has gone since the last pass and whose handle
            // (of the same context, which the lane keeps alive) the driver gave to this one.
            // A lane of its own (a special stream's mark) names no stream: it goes once empty.
            if entry.ordered
                && let Some(stream) = mark.stream()
                && !entry.stream.as_ref().is_some_and(WeakStream::is_alive)
            {
                entry.stream = Some(stream.downgrade());
            }
            entry.entries.push_back(Entry { mark, slot });
            entry.dirty = true;
        }
        self.core.lanes.store(self.lanes.len(), Ordering::Relaxed);
        fresh
    }

    /// Asks every lane with waiting entries, again and again, until something completes (woken
    /// at once), the bell rings (new futures, a host function) or the reactor spin runs out;
    /// returns whether to go round again rather than arm and sleep.
    fn spin(&mut self) -> bool {
        let budget = reactor_spin();
        if budget.is_zero() {
            return false;
        }
        let start = Instant::now();
        loop {
            let mut completed = 0;
            for lane in self.lanes.values_mut() {
                if !lane.entries.is_empty() {
                    completed += poll_lane(lane, self.core, &mut self.done);
                }
            }
            if completed > 0 {
                self.core
                    .found_by_spin
                    .fetch_add(completed as u64, Ordering::Relaxed);
                self.finish();
                return true;
            }
            if self.core.bell.is_rung() {
                return true;
            }
            if start.elapsed() >= budget {
                return false;
            }
            std::hint::spin_loop();
        }
    }

    /// Marks the lanes whose host function ran (and, on a sweep, every lane) to be asked.
    fn collect_signals(&mut self, sweep: bool) {
        for lane in self.lanes.values_mut() {
            if lane.signal.raised.swap(false, Ordering::Acquire) {
                lane.armed = false;
                lane.dirty = true;
            }
            if sweep && !lane.dirty && !lane.entries.is_empty() {
                lane.dirty = true;
                lane.swept = true;
            }
        }
    }

    /// Asks the lanes marked dirty and completes what has finished.
    fn poll_dirty(&mut self) {
        let mut by_sweep = 0u64;
        for lane in self.lanes.values_mut() {
            if !std::mem::take(&mut lane.dirty) {
                continue;
            }
            let completed = poll_lane(lane, self.core, &mut self.done);
            if std::mem::take(&mut lane.swept) {
                by_sweep += completed as u64;
            }
        }
        if by_sweep > 0 {
            self.core
                .found_by_sweep
                .fetch_add(by_sweep, Ordering::Relaxed);
        }
    }

    /// Wakes the woken, drops what dropped futures left, recycles events and slots.
    fn finish(&mut self) {
        let done = &mut self.done;
        for waker in done.wakers.drain(..) {
            if !caught(move || waker.wake()) {
                log::error!("cuda-safe: a waker panicked when the completion reactor woke it");
            }
        }
        for keep in done.keeps.drain(..) {
            if !caught(move || drop(keep)) {
                log::error!("cuda-safe: dropping a value a dropped completion held panicked");
            }
        }
        done.marks.drain(..).for_each(Mark::recycle);
        for slot in done.slots.drain(..) {
            self.core.table.give(slot);
        }
    }

    /// Drops the lanes that watch nothing and whose stream has gone (a lone mark's at once),
    /// giving their side streams back; a live stream's lane stays, armed again at its next
    /// wait with no new lane, flag or side stream.
    fn retire_lanes(&mut self) {
        let mut retired = Vec::new();
        self.lanes.retain(|_, lane| {
            if !lane.is_spent() {
                // A failed arming leaves the lane to the sweep until it is empty; its next
                // wait tries a host function again.
                lane.unarmable &= !lane.entries.is_empty();
                return true;
            }
            retired.extend(lane.notifier.take());
            false
        });
        self.core.lanes.store(self.lanes.len(), Ordering::Relaxed);
        for notifier in retired {
            self.give_notifier(notifier);
        }
    }

    /// Arms every lane whose oldest mark is unfinished and has no host function queued.
    fn arm(&mut self) {
        let mut notifiers = std::mem::take(&mut self.notifiers);
        for lane in self.lanes.values_mut() {
            // A drain has no event to wait on: the sweep asks it.
            let Some(event) = lane.entries.front().and_then(|head| head.mark.raw()) else {
                continue;
            };
            if lane.armed || lane.unarmable {
                continue;
            }
            match arm_lane(lane, event, &mut notifiers) {
                Ok(()) => lane.armed = true,
                Err(error) => {
                    log::warn!(
                        "cuda-safe: the completion reactor could not arm a host function \
                         ({error}); the lane is swept every {:?}",
                        sweep_interval()
                    );
                    lane.unarmable = true;
                    lane.dirty = true;
                    lane.swept = true;
                }
            }
        }
        self.notifiers = notifiers;
    }

    fn give_notifier(&mut self, notifier: Stream) {
        match self
            .notifiers
            .iter_mut()
            .find(|(context, _)| context.same_as(notifier.context()))
        {
            Some((_, idle)) if idle.len() < MAX_IDLE_NOTIFIERS => idle.push(notifier),
            Some(_) => {
                if let Err(error) = notifier.close() {
                    log_drop_error("completion side stream", &error);
                }
            }
            None => {
                let context = notifier.context().clone();
                self.notifiers.push((context, vec![notifier]));
            }
        }
    }
}

/// Asks `lane` what has finished and completes it; returns how many entries completed.
fn poll_lane(lane: &mut Lane, core: &Core, done: &mut Done) -> usize {
    let mut completed = 0;
    // The newest mark done means every earlier one of the stream is.
    if lane.ordered
        && lane.entries.len() > 1
        && lane
            .entries
            .back()
            .is_some_and(|entry| entry.mark.is_done().is_ok_and(|finished| finished))
    {
        for entry in lane.entries.drain(..) {
            complete(entry, Ok(()), core, done);
            completed += 1;
        }
        return completed;
    }
    while let Some(head) = lane.entries.front() {
        let outcome = match head.mark.is_done() {
            Ok(false) => break,
            Ok(true) => Ok(()),
            Err(error) => Err(error),
        };
        if let Some(entry) = lane.entries.pop_front() {
            complete(entry, outcome, core, done);
            completed += 1;
        }
    }
    completed
}

/// Completes one entry's slot with `outcome`.
fn complete(entry: Entry, outcome: Result<()>, core: &Core, done: &mut Done) {
    core.watched.fetch_sub(1, Ordering::Relaxed);
    let Entry { mark, slot } = entry;
    let failure = outcome.as_ref().err().cloned();
    match slot.complete(outcome) {
        Finish::Wake(waker) => done.wakers.extend(waker),
        Finish::Release(keep) => {
            match (keep, failure) {
                (Some(keep), Some(error)) if !gpu_has_stopped(&error) => {
                    release_after(keep, &error)
                }
                (Some(keep), _) => done.keeps.push(keep),
                (None, _) => {}
            }
            done.slots.push(slot);
        }
    }
    done.marks.push(mark);
}

/// Runs the user's code `f` (a waker, a value's drop) on the reactor thread: whether it
/// returned. A panic is caught, and its payload leaked rather than dropped (a payload whose own
/// drop panics would otherwise end the thread, and with it every wake-up still to come).
fn caught(f: impl FnOnce()) -> bool {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(()) => true,
        Err(payload) => {
            std::mem::forget(payload);
            false
        }
    }
}

/// Queues, on the lane's side stream, a wait on its oldest mark's `event` and a host function
/// raising its flag, with the driver's calls themselves: no capture check is needed. The side stream
/// is the reactor's, never captured, and the reactor's thread is in relaxed capture mode; the
/// only way into a capture would be a wait on an event recorded by one, and the head has been
/// asked before (the pass that made it the head asked it, and marks are never recorded again
/// while watched): it answered "not ready", which a captured event never does.
#[doc = cuda_sys::api_doc!(cuStreamWaitEvent)]
#[doc = cuda_sys::api_doc!(cuLaunchHostFunc)]
#[doc(alias = "cuStreamWaitEvent", alias = "cuLaunchHostFunc")]
fn arm_lane(
    lane: &mut Lane,
    event: CUevent,
    notifiers: &mut [(Context, Vec<Stream>)],
) -> Result<()> {
    let notifier = match lane.notifier.take() {
        Some(notifier) => notifier,
        None => take_notifier(notifiers, &lane.context)?,
    };
    let armed = arm_after(&notifier, event, &lane.signal);
    lane.notifier = Some(notifier);
    armed
}

/// Queues on `notifier` a wait on `event` and then [`raise`] of `signal`.
fn arm_after(notifier: &Stream, event: CUevent, signal: &Arc<Signal>) -> Result<()> {
    let driver = notifier.context().driver();
    // SAFETY: both handles are alive (the lane keeps the side stream, the entry its event).
    unsafe { cu!(driver, cuStreamWaitEvent(notifier.as_raw(), event, 0)) }?;
    let data = Arc::into_raw(signal.clone()).cast_mut().cast::<c_void>();
    // SAFETY: `raise` takes back the reference `data` holds, once, when the driver runs it.
    let queued = unsafe {
        cu!(
            driver,
            cuLaunchHostFunc(notifier.as_raw(), Some(raise), data)
        )
    };
    if queued.is_err() {
        // SAFETY: the driver refused the function, so `raise` never runs: the reference
        // `data` holds is given back here.
        drop(unsafe { Arc::from_raw(data.cast::<Signal>().cast_const()) });
    }
    queued
}

/// A lane's flag, raised by its host function, and the bell it rings.
pub(super) struct Signal {
    raised: AtomicBool,
    bell: &'static Bell,
}

/// The host function of an armed lane, run by the driver's thread: raises the flag and rings
/// the bell. It cannot panic (an atomic store, and the bell's unpark).
unsafe extern "C" fn raise(data: *mut c_void) {
    // SAFETY: `data` is a reference to the lane's signal that `arm_after` gave up to the driver,
    // which runs this function once.
    let signal = unsafe { Arc::from_raw(data.cast::<Signal>().cast_const()) };
    signal.raised.store(true, Ordering::Release);
    signal.bell.ring();
}

/// An idle side stream of `context`, or a new one.
fn take_notifier(notifiers: &mut [(Context, Vec<Stream>)], context: &Context) -> Result<Stream> {
    let idle = notifiers
        .iter_mut()
        .find(|(owner, _)| owner.same_as(context))
        .and_then(|(_, idle)| idle.pop());
    match idle {
        Some(notifier) => Ok(notifier),
        None => Stream::new(context, StreamOptions::default()),
    }
}
