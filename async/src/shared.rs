//! The reactor's shared state and its handle: the waker table, the bell, the registrations
//! waiting for the reactor thread, the recycled staging memory, and the count of
//! handles that keeps the thread alive.
//!
//! The state is made once per process and lives for good (a few hundred bytes, and the table's
//! idle slots): a handle is a reference to it and a count, so that [`Reactor::shared`] costs
//! one atomic increment, with no lock. What costs more than memory comes and goes with the
//! thread: its side streams are its own, and when it ends it frees the idle staging blocks and
//! slots.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::thread;

use crate::bell::Bell;
use crate::error::AsyncError;
use crate::reactor;
use crate::staging::StagingCache;
use crate::table::{SlotRef, Table};
use cuda_safe::Context;
use cuda_safe::Event;
use cuda_safe::Stream;
use cuda_safe::handle::log_drop_error;
use cuda_safe::{Result, cu, cu_ready};
use cuda_sys::{CUevent, Driver};

/// The reactor's state, made by the first handle.
static CORE: OnceLock<Core> = OnceLock::new();

/// Reactor threads alive in the process (0 or 1, and briefly 2 while one ends and the next
/// starts).
static RUNNING: AtomicUsize = AtomicUsize::new(0);

/// A handle to the reactor that watches GPU work for completion futures, and keeps it (its
/// thread, its side streams and staging memory) alive.
///
/// Every future of [`completion`](super) holds one; a server that awaits GPU work one request
/// after another keeps one too ([`Reactor::shared`] at start-up), so that the reactor's thread
/// and caches are not made again for each request. The thread starts with the first future
/// that has to wait (one that finishes within the spin budget never needs it) and ends when
/// the last handle is gone and no dropped future's work is still running: nothing is left
/// behind, and nothing waits for it at process exit.
///
/// `Send` and `Sync`; cloning is cheap.
pub struct Reactor {
    pub(super) core: &'static Core,
}

/// What the reactor holds now ([`Reactor::stats`]): a snapshot, for tests and monitoring.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReactorStats {
    /// Handles alive (the futures among them).
    pub handles: usize,
    /// Futures (and dropped futures' work) the reactor thread watches.
    pub watched: usize,
    /// Lanes the reactor thread keeps: one per stream a future waited on, kept while that
    /// stream lives (with its side stream), and one per lone event being watched.
    pub lanes: usize,
    /// Slots of the waker table, and how many of them are idle.
    pub slots: usize,
    /// Idle slots.
    pub idle_slots: usize,
    /// Pinned staging memory in use by downloads and uploads in flight, in bytes.
    pub staging_in_use: usize,
    /// Pinned staging memory kept for reuse, in bytes.
    pub staging_idle: usize,
    /// Completions the reactor found by its periodic sweep rather than by a driver callback
    /// (work whose callback was late, or never came, as after a sticky error).
    pub found_by_sweep: u64,
    /// Completions the reactor found while it spun after new futures arrived
    /// ([`set_reactor_spin`](crate::set_reactor_spin)), before arming a host function.
    pub found_by_spin: u64,
}

/// The reactor's shared state.
pub(super) struct Core {
    /// Handles alive: the thread ends once this is 0 and nothing is watched.
    handles: AtomicUsize,
    pub(super) bell: Bell,
    pub(super) table: Table,
    /// Registrations the reactor thread has not taken yet.
    incoming: Mutex<Vec<Registration>>,
    /// Whether a thread runs (or was started and has not decided to end).
    started: Mutex<bool>,
    pub(super) staging: Mutex<StagingCache>,
    /// Registered work not yet completed.
    pub(super) watched: AtomicUsize,
    /// Lanes the thread keeps (it alone writes this).
    pub(super) lanes: AtomicUsize,
    pub(super) found_by_sweep: std::sync::atomic::AtomicU64,
    pub(super) found_by_spin: std::sync::atomic::AtomicU64,
}

/// What a future hands the reactor thread: the mark to watch, where it stands, the slot to
/// complete.
pub(super) struct Registration {
    pub(super) lane: LaneKey,
    pub(super) mark: Mark,
    pub(super) slot: SlotRef,
}

/// Where a watched mark stands: on a stream, after that stream's earlier marks (so a later
/// one done means every earlier one is done), or alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum LaneKey {
    /// A real stream's marks, in order: the stream's handle and its context's.
    Stream(usize, usize),
    /// One mark with no order to others (a user's event, a special stream's mark), named by
    /// its slot.
    Alone(usize),
}

/// The event a future waits on.
pub(super) enum Mark {
    /// One of the stream's spare events, recorded there for the future, and the stream (kept
    /// while the mark is watched, so that its handle cannot be reused by another stream).
    Pooled { event: Event, stream: Stream },
    /// The user's event, kept alive by the future (or by what a dropped future left).
    Borrowed {
        raw: CUevent,
        context: Context,
        driver: &'static Driver,
    },
    /// Everything queued on the stream when a future failed to record its event there: what
    /// it holds waits for the stream to pass that work, asked (`cuStreamQuery`, never while the
    /// stream is captured) by the reactor's sweep, with no event to wait on.
    Drain(Stream),
}

// SAFETY: a CUevent may be used from any thread; the borrowed one is kept alive by its owner
// until the reactor is done with it.
unsafe impl Send for Mark {}
// SAFETY: as above; a shared mark is only read (the handle, the context, queries).
unsafe impl Sync for Mark {}

impl Mark {
    /// The context the event belongs to.
    pub(super) fn context(&self) -> &Context {
        match self {
            Self::Pooled { event, .. } => event.context(),
            Self::Borrowed { context, .. } => context,
            Self::Drain(stream) => stream.context(),
        }
    }

    /// The raw event; `None` for a drain, which has none.
    pub(super) fn raw(&self) -> Option<CUevent> {
        match self {
            Self::Pooled { event, .. } => Some(event.as_raw()),
            Self::Borrowed { raw, .. } => Some(*raw),
            Self::Drain(_) => None,
        }
    }

    /// The stream the mark was recorded on, for a spare event.
    pub(super) fn stream(&self) -> Option<&Stream> {
        match self {
            Self::Pooled { stream, .. } => Some(stream),
            Self::Borrowed { .. } | Self::Drain(_) => None,
        }
    }

    /// Gives a spare event back to its stream (a borrowed one stays with its owner).
    pub(super) fn recycle(self) {
        if let Self::Pooled { event, stream } = self {
            stream.keep_spare_event(event);
        }
    }

    /// Waits on this thread until the work before the event's record (or a drain's work) has
    /// finished (`cuEventSynchronize`, `cuStreamSynchronize`): for when no reactor thread can be
    /// started.
    pub(super) fn sync(&self) -> Result<()> {
        match self {
            Self::Pooled { event, .. } => event.sync(),
            Self::Borrowed { raw, driver, .. } => {
                // SAFETY: the event is alive (its owner keeps it until the wait is over).
                unsafe { cu!(driver, cuEventSynchronize(*raw)) }
            }
            Self::Drain(stream) => stream.drain(),
        }
    }

    /// Whether the work before the event's record has finished (`cuEventQuery`); for a drain,
    /// whether the stream has passed its work (`cuStreamQuery`, and `false` while the stream is
    /// captured, which the query would disturb).
    pub(super) fn is_done(&self) -> Result<bool> {
        match self {
            Self::Pooled { event, .. } => event.is_done(),
            Self::Borrowed { raw, driver, .. } => {
                // SAFETY: the event is alive (its owner keeps it until the reactor is done).
                unsafe { cu_ready!(driver, cuEventQuery(*raw)) }
            }
            Self::Drain(stream) => {
                if stream.is_capturing()? {
                    return Ok(false);
                }
                // SAFETY: the stream is alive (the mark holds it).
                unsafe { cu_ready!(stream.context().driver(), cuStreamQuery(stream.as_raw())) }
            }
        }
    }
}

impl Reactor {
    /// The process's reactor (its state made with the first handle): one atomic increment.
    pub fn shared() -> Reactor {
        let core = CORE.get_or_init(Core::new);
        core.handles.fetch_add(1, Ordering::Relaxed);
        Reactor { core }
    }

    /// Whether a reactor thread is alive in the process. It is not, once the last handle has
    /// gone and the work of dropped futures has finished (give it a moment to end).
    pub fn is_running() -> bool {
        RUNNING.load(Ordering::SeqCst) > 0
    }

    /// What the reactor holds now.
    pub fn stats(&self) -> ReactorStats {
        let core = &self.core;
        let (slots, idle_slots) = core.table.sizes();
        let (staging_in_use, staging_idle) = lock(&core.staging).bytes();
        ReactorStats {
            handles: core.handles.load(Ordering::Relaxed),
            watched: core.watched.load(Ordering::Relaxed),
            lanes: core.lanes.load(Ordering::Relaxed),
            slots,
            idle_slots,
            staging_in_use,
            staging_idle,
            found_by_sweep: core.found_by_sweep.load(Ordering::Relaxed),
            found_by_spin: core.found_by_spin.load(Ordering::Relaxed),
        }
    }
}

impl Clone for Reactor {
    fn clone(&self) -> Self {
        self.core.handles.fetch_add(1, Ordering::Relaxed);
        Reactor { core: self.core }
    }
}

impl Drop for Reactor {
    fn drop(&mut self) {
        if self.core.handles.fetch_sub(1, Ordering::AcqRel) == 1 {
            // The thread, if it runs, looks whether it may end.
            self.core.bell.ring();
        }
    }
}

impl std::fmt::Debug for Reactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reactor")
            .field("stats", &self.stats())
            .finish()
    }
}

/// Locks `mutex`, taking a poisoned one's data as it is (nothing here panics while holding a
/// lock, and user code never runs under one).
pub(super) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Core {
    fn new() -> Self {
        Self {
            handles: AtomicUsize::new(0),
            bell: Bell::new(),
            table: Table::new(),
            incoming: Mutex::new(Vec::new()),
            started: Mutex::new(false),
            staging: Mutex::new(StagingCache::default()),
            watched: AtomicUsize::new(0),
            lanes: AtomicUsize::new(0),
            found_by_sweep: std::sync::atomic::AtomicU64::new(0),
            found_by_spin: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Hands `registration` to the reactor thread, which [`start`](Self::start) has started.
    pub(super) fn register(&self, registration: Registration) {
        self.watched.fetch_add(1, Ordering::Relaxed);
        lock(&self.incoming).push(registration);
        self.bell.ring();
    }

    /// Starts the reactor thread unless one runs.
    ///
    /// # Errors
    ///
    /// [`Error::ReactorThread`] when the operating system refuses the thread.
    pub(super) fn start(&'static self) -> Result<()> {
        let mut started = lock(&self.started);
        if *started {
            return Ok(());
        }
        RUNNING.fetch_add(1, Ordering::SeqCst);
        let spawned = thread::Builder::new()
            .name("cuda-safe-completion".into())
            .spawn(move || {
                reactor::run(self);
                RUNNING.fetch_sub(1, Ordering::SeqCst);
            });
        match spawned {
            Ok(_) => {
                *started = true;
                Ok(())
            }
            Err(error) => {
                RUNNING.fetch_sub(1, Ordering::SeqCst);
                Err(AsyncError::ReactorThread(error.to_string().into()).into())
            }
        }
    }

    /// Moves the registrations waiting for the thread into `into`.
    pub(super) fn take_incoming(&self, into: &mut Vec<Registration>) {
        let mut incoming = lock(&self.incoming);
        std::mem::swap(&mut *incoming, into);
    }

    /// Whether the thread may end: no handle is left and nothing waits for it. Decided under
    /// the lock [`start`](Self::start) takes, so that a future arriving afterwards starts a
    /// new thread rather than registering with this one; the idle staging blocks and slots
    /// are freed then.
    pub(super) fn may_stop(&self) -> bool {
        let mut started = lock(&self.started);
        if self.handles.load(Ordering::Acquire) != 0 || !lock(&self.incoming).is_empty() {
            return false;
        }
        *started = false;
        drop(started);
        let idle = lock(&self.staging).drain_idle();
        for block in idle {
            if let Err(error) = block.close() {
                log_drop_error("pinned staging block", &error);
            }
        }
        self.table.trim();
        true
    }
}
