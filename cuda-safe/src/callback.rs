//! Host callbacks: Rust closures the driver runs on a thread of its own, as a stream's host
//! function ([`Stream::launch_host_func`](crate::Stream::launch_host_func)) or a graph's host
//! node. Each runs under `catch_unwind`, so a panic never unwinds into the driver: it is kept in
//! the [`PanicSlot`] of the stream or graph that queued it, and the next call on that stream or
//! graph reports it as [`Error::CallbackPanicked`].
//!
//! CUDA must not be called from a callback (the driver may deadlock or refuse). Debug builds
//! check it: while a callback runs on a thread, every driver call this crate makes there
//! ([`cu!`](crate::error::cu)) fails with [`Error::InvalidArgument`] before reaching the
//! driver. Release builds do not pay for the check.

use std::any::Any;
use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use crate::error::{Error, Result};

/// The panics of one stream's or graph's callbacks, kept until a call on it reports them
/// ([`GraphExec::panic_slot`](crate::GraphExec::panic_slot) hands one out, for a wait that
/// reports them after the executable is gone).
#[derive(Default)]
pub struct PanicSlot {
    /// Whether a panic waits to be reported: the only thing the hot paths read.
    pending: AtomicBool,
    state: Mutex<SlotState>,
}

impl std::fmt::Debug for PanicSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PanicSlot")
            .field("pending", &self.pending.load(Ordering::Relaxed))
            .finish()
    }
}

#[derive(Default)]
struct SlotState {
    /// The first unreported panic's message.
    first: Option<Box<str>>,
    /// How many callbacks panicked since the last report.
    count: usize,
    /// Slots that report this one's panics too: the graph holding this one as a child or
    /// conditional body, the executable updated from it.
    watchers: Vec<Weak<PanicSlot>>,
}

impl PanicSlot {
    /// Reports a kept panic, once: [`Error::CallbackPanicked`] with the first message and the
    /// count, after which the slot is empty again. One relaxed load when there is none.
    ///
    /// # Errors
    ///
    /// [`Error::CallbackPanicked`] when a callback panicked since the last report.
    #[inline(always)]
    pub fn check(&self) -> Result<()> {
        if self.pending.load(Ordering::Relaxed) {
            return Err(self.take());
        }
        Ok(())
    }

    #[cold]
    fn take(&self) -> Error {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        self.pending.store(false, Ordering::Relaxed);
        let count = std::mem::take(&mut state.count).max(1);
        let message = state
            .first
            .take()
            .unwrap_or_else(|| "a host callback panicked".into());
        Error::CallbackPanicked { message, count }
    }

    /// Keeps a panic's message for the next report, here and in every slot watching this one
    /// (each slot once, even if watchers form a cycle).
    pub(crate) fn record(self: &Arc<Self>, message: &str) {
        let mut visited: Vec<*const PanicSlot> = Vec::new();
        let mut todo = vec![Arc::clone(self)];
        while let Some(slot) = todo.pop() {
            if visited.contains(&Arc::as_ptr(&slot)) {
                continue;
            }
            visited.push(Arc::as_ptr(&slot));
            let mut state = slot.state.lock().unwrap_or_else(PoisonError::into_inner);
            if state.first.is_none() {
                state.first = Some(message.into());
            }
            state.count += 1;
            slot.pending.store(true, Ordering::Release);
            state.watchers.retain(|watcher| watcher.strong_count() > 0);
            todo.extend(state.watchers.iter().filter_map(Weak::upgrade));
        }
    }

    /// Makes `watcher` report this slot's later panics too.
    pub(crate) fn report_to(&self, watcher: &Arc<PanicSlot>) {
        if std::ptr::eq(self, Arc::as_ptr(watcher)) {
            return;
        }
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let known = state
            .watchers
            .iter()
            .any(|known| std::ptr::eq(known.as_ptr(), Arc::as_ptr(watcher)));
        if !known {
            state.watchers.push(Arc::downgrade(watcher));
        }
    }
}

/// The text a panic was raised with (`"a panic without a message"` for other payloads).
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message")
}

#[cfg(debug_assertions)]
thread_local! {
    /// Whether this thread is running a host callback (debug builds only).
    static INSIDE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks the thread as running a host callback until dropped (debug builds only).
pub(crate) struct InsideCallback {
    #[cfg(debug_assertions)]
    was: bool,
}

impl InsideCallback {
    /// Marks the calling thread.
    pub(crate) fn enter() -> Self {
        #[cfg(debug_assertions)]
        {
            let was = INSIDE
                .try_with(|inside| inside.replace(true))
                .unwrap_or(false);
            Self { was }
        }
        #[cfg(not(debug_assertions))]
        Self {}
    }
}

impl Drop for InsideCallback {
    fn drop(&mut self) {
        #[cfg(debug_assertions)]
        let _ = INSIDE.try_with(|inside| inside.set(self.was));
    }
}

/// Refuses a driver call made from inside a host callback, in debug builds; `Ok` (and free)
/// in release builds. [`cu!`](crate::error::cu) calls it before every driver call.
#[inline(always)]
pub fn refuse_inside_callback(api: &'static str) -> Result<()> {
    #[cfg(debug_assertions)]
    if INSIDE.try_with(std::cell::Cell::get).unwrap_or(false) {
        return Err(Error::invalid_argument(format!(
            "{api} was called from inside a host callback; CUDA must not be called there \
             (debug builds refuse it before it reaches the driver)"
        )));
    }
    let _ = api;
    Ok(())
}

/// Runs `f` as a host callback: the thread is marked as inside one, and a panic (in `f`, or in
/// dropping what it owns) is caught and kept in `slot`.
pub(crate) fn run_caught(slot: &Arc<PanicSlot>, f: impl FnOnce()) {
    let _inside = InsideCallback::enter();
    if let Err(payload) = catch_unwind(AssertUnwindSafe(f)) {
        slot.record(panic_message(payload.as_ref()));
        // A payload whose own drop panics must not unwind into the driver either.
        let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
    }
}

/// A closure queued once (a stream's host function) and the slot its panic goes to.
struct Once<F> {
    f: F,
    slot: Arc<PanicSlot>,
}

/// Boxes `f` for [`run_once`]: the pointer is the callback's user data, run (and freed) once by
/// the driver, or freed with [`drop_once`] when queueing fails.
pub(crate) fn boxed_once<F: FnOnce() + Send + 'static>(f: F, slot: Arc<PanicSlot>) -> *mut c_void {
    Box::into_raw(Box::new(Once { f, slot })).cast()
}

/// Frees a [`boxed_once`] closure that was never queued, without running it.
///
/// # Safety
///
/// `data` must come from `boxed_once::<F>` and be used by nothing else, now or later.
pub(crate) unsafe fn drop_once<F: FnOnce() + Send + 'static>(data: *mut c_void) {
    // SAFETY: the caller's promise: a live `Once<F>` box that nothing else will use.
    drop(unsafe { Box::from_raw(data.cast::<Once<F>>()) });
}

/// The driver's entry for a [`boxed_once`] closure: runs it once, catching a panic, and frees
/// it.
///
/// # Safety
///
/// `data` must come from `boxed_once::<F>` and be passed here exactly once.
pub(crate) unsafe extern "C" fn run_once<F: FnOnce() + Send + 'static>(data: *mut c_void) {
    // SAFETY: the caller's promise: a live `Once<F>` box, handed over once.
    let once = unsafe { Box::from_raw(data.cast::<Once<F>>()) };
    let Once { f, slot } = *once;
    run_caught(&slot, f);
}

/// A closure run at every replay of a graph (a host node) and the slot its panics go to; kept
/// alive by the graph for as long as an executable may run it.
pub(crate) struct Shared<F> {
    f: F,
    slot: Arc<PanicSlot>,
}

impl<F: Fn() + Send + Sync + 'static> Shared<F> {
    /// Wraps `f`, reporting its panics to `slot`.
    pub(crate) fn new(f: F, slot: Arc<PanicSlot>) -> Arc<Self> {
        Arc::new(Self { f, slot })
    }

    /// The user data for [`run_shared`]: valid while the `Arc` (or a clone) lives.
    pub(crate) fn user_data(this: &Arc<Self>) -> *mut c_void {
        Arc::as_ptr(this).cast_mut().cast()
    }
}

/// The driver's entry for a [`Shared`] closure: runs it, catching a panic.
///
/// # Safety
///
/// `data` must come from [`Shared::user_data`] of an `Arc` still alive.
pub(crate) unsafe extern "C" fn run_shared<F: Fn() + Send + Sync + 'static>(data: *mut c_void) {
    // SAFETY: the caller's promise: a live `Shared<F>`, only read here.
    let shared = unsafe { &*data.cast::<Shared<F>>() };
    run_caught(&shared.slot, || (shared.f)());
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    #[test]
    fn a_slot_reports_a_panic_once_with_the_first_message_and_the_count() {
        let slot = Arc::new(PanicSlot::default());
        assert!(slot.check().is_ok());
        slot.record("first");
        slot.record("second");
        match slot.check() {
            Err(Error::CallbackPanicked { message, count }) => {
                assert_eq!(&*message, "first");
                assert_eq!(count, 2);
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(slot.check().is_ok(), "reported once");
    }

    #[test]
    fn watchers_report_panics_too_even_in_a_cycle() {
        let child = Arc::new(PanicSlot::default());
        let parent = Arc::new(PanicSlot::default());
        child.report_to(&parent);
        child.report_to(&parent);
        parent.report_to(&child);
        child.report_to(&child);
        child.record("in the child");
        assert!(parent.check().is_err());
        match child.check() {
            Err(Error::CallbackPanicked { count, .. }) => assert_eq!(count, 1),
            other => panic!("unexpected {other:?}"),
        }
        drop(parent);
        child.record("again");
        assert!(child.check().is_err(), "a dropped watcher is skipped");
    }

    /// Boxes `f` and names its trampolines, as a stream does.
    fn queued<F: FnOnce() + Send + 'static>(
        f: F,
        slot: &Arc<PanicSlot>,
    ) -> (
        *mut c_void,
        unsafe extern "C" fn(*mut c_void),
        unsafe fn(*mut c_void),
    ) {
        (boxed_once(f, slot.clone()), run_once::<F>, drop_once::<F>)
    }

    #[test]
    fn a_stream_callback_runs_once_and_its_panic_is_kept() {
        let slot = Arc::new(PanicSlot::default());
        let runs = Arc::new(AtomicUsize::new(0));
        let counted = runs.clone();
        let (data, run, _) = queued(
            move || {
                counted.fetch_add(1, Ordering::SeqCst);
            },
            &slot,
        );
        // SAFETY: `data` came from `boxed_once` with this closure type and is run once.
        unsafe { run(data) };
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert!(slot.check().is_ok());

        let (data, run, _) = queued(|| panic!("boom in a callback"), &slot);
        // SAFETY: as above.
        unsafe { run(data) };
        let error = slot.check().unwrap_err();
        assert!(error.to_string().contains("boom in a callback"), "{error}");
    }

    #[test]
    fn a_callback_never_queued_is_freed_without_running() {
        let slot = Arc::new(PanicSlot::default());
        let owned = Arc::new(());
        let held = owned.clone();
        let (data, _, free) = queued(move || drop(held), &slot);
        assert_eq!(Arc::strong_count(&owned), 2);
        // SAFETY: from `boxed_once` of this closure type; never queued.
        unsafe { free(data) };
        assert_eq!(Arc::strong_count(&owned), 1, "the closure was dropped");
    }

    #[test]
    fn a_graph_callback_runs_at_every_call_and_keeps_panics() {
        let slot = Arc::new(PanicSlot::default());
        let runs = Arc::new(AtomicUsize::new(0));
        let counted = runs.clone();
        let shared = Shared::new(
            move || {
                if counted.fetch_add(1, Ordering::SeqCst) == 1 {
                    panic!("second run");
                }
            },
            slot.clone(),
        );
        let data = Shared::user_data(&shared);
        for _ in 0..3 {
            // SAFETY: `shared` is alive.
            unsafe { run_shared_of(&shared)(data) };
        }
        assert_eq!(runs.load(Ordering::SeqCst), 3);
        let error = slot.check().unwrap_err();
        assert!(error.to_string().contains("second run"), "{error}");
    }

    fn run_shared_of<F: Fn() + Send + Sync + 'static>(
        _shared: &Arc<Shared<F>>,
    ) -> unsafe extern "C" fn(*mut c_void) {
        run_shared::<F>
    }

    #[test]
    fn messages_of_any_payload() {
        assert_eq!(panic_message(&"text"), "text");
        assert_eq!(panic_message(&String::from("owned")), "owned");
        assert_eq!(panic_message(&7u32), "a panic without a message");
    }

    #[cfg(debug_assertions)]
    #[test]
    fn debug_builds_refuse_driver_calls_inside_a_callback() {
        assert!(refuse_inside_callback("cuStreamSynchronize").is_ok());
        let slot = Arc::new(PanicSlot::default());
        let mut inside = None;
        run_caught(&slot, || {
            inside = Some(refuse_inside_callback("cuStreamSynchronize"));
        });
        let error = inside.unwrap().unwrap_err();
        assert!(error.to_string().contains("cuStreamSynchronize"), "{error}");
        assert!(
            refuse_inside_callback("cuStreamSynchronize").is_ok(),
            "unmarked after"
        );
    }
}
