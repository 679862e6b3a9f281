//! The future of a composed operation: nothing until its first poll, which picks the stream,
//! submits every step and records one completion behind them; then the completion's wait.

use std::fmt;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use super::steps::Landing;
use super::{DeviceOp, Submit};
use crate::futures::Completion;
use crate::methods::StreamExt;
use crate::pool::{Busy, StreamPool};
use crate::shared::Reactor;
use crate::table::Keep;
use crate::waiter::{Waiter, refuse_capturing};
use cuda_safe::{Error, Result, Stream};

/// Where an operation will run.
pub(crate) enum Target {
    /// On the stream the pool picks at the first poll.
    Pool(StreamPool),
    /// On this stream.
    Stream(Stream),
}

/// What a submitted operation holds until the GPU has passed it: its output (none when a step
/// failed), what its work uses, its downloads, and its place in the pool's count.
struct InFlight<T> {
    output: Option<T>,
    keep: Vec<Keep>,
    landings: Vec<Arc<Landing>>,
    busy: Option<Busy>,
}

/// The future of a [`DeviceOp`] ([`run`](DeviceOp::run), [`run_on`](DeviceOp::run_on)):
/// nothing is queued before its first poll, which submits every step on one stream and
/// records one event behind them; it then waits as a [`Completion`] does, and resolves to
/// the operation's output.
///
/// Dropping it before the first poll drops the operation (nothing ran); dropping it later
/// leaves what the operation uses (its buffers, staging memory, kernels) to the reactor until
/// the GPU has passed the work, as a dropped [`Completion`] does. A panic in a step of the
/// caller's ([`on_stream`](super::on_stream), a [`then`](DeviceOp::then) closure) reaches the
/// poll, after what the steps before it queued has been handed to the reactor likewise.
///
/// `Send` when the operation is; `Unpin`.
#[must_use = "an operation does nothing until its future is polled"]
pub struct OpFuture<O: DeviceOp> {
    state: State<O>,
}

enum State<O: DeviceOp> {
    /// Not polled yet.
    Idle(O, Target),
    /// Submitted (or failed while submitting): the completion behind its work.
    Waiting(Completion<InFlight<O::Output>>),
    /// Resolved.
    Done,
}

impl<O: DeviceOp> OpFuture<O> {
    pub(super) fn new(op: O, target: Target) -> Self {
        Self {
            state: State::Idle(op, target),
        }
    }

    /// Whether the operation was submitted (the future was polled).
    pub fn is_submitted(&self) -> bool {
        !matches!(self.state, State::Idle(..))
    }
}

// The operation is only ever moved out by value, never pinned.
impl<O: DeviceOp> Unpin for OpFuture<O> {}

impl<O: DeviceOp> Future for OpFuture<O> {
    type Output = Result<O::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Result<O::Output>> {
        let this = self.get_mut();
        if matches!(this.state, State::Idle(..)) {
            this.state = match std::mem::replace(&mut this.state, State::Done) {
                State::Idle(op, target) => State::Waiting(submit(op, target)),
                other => other,
            };
        }
        let State::Waiting(completion) = &mut this.state else {
            return Poll::Ready(Err(Error::invalid_argument(
                "an operation's future was polled again after it resolved",
            )));
        };
        let Poll::Ready(result) = Pin::new(completion).poll(cx) else {
            return Poll::Pending;
        };
        this.state = State::Done;
        Poll::Ready(result.and_then(|in_flight| {
            let InFlight {
                output,
                keep,
                landings,
                busy,
            } = in_flight;
            for landing in &landings {
                landing.mark_landed();
            }
            // The GPU has passed the work: what it used goes, and the stream is free again.
            drop((keep, busy));
            output.ok_or_else(|| Error::invalid_argument("an operation resolved without output"))
        }))
    }
}

/// Submits `op` where `target` says and returns the completion behind its work; a failure,
/// and what the steps before it queued, become a completion that resolves to the error at
/// once and whose holdings the reactor keeps until the stream has passed that work.
fn submit<O: DeviceOp>(op: O, target: Target) -> Completion<InFlight<O::Output>> {
    let reactor = Reactor::shared();
    let (stream, busy) = match target {
        Target::Pool(pool) => {
            let (stream, busy) = pool.lease();
            (stream, Some(busy))
        }
        Target::Stream(stream) => (stream, None),
    };
    if let Err(error) = refuse_capturing(&stream) {
        let nothing = InFlight {
            output: None,
            keep: Vec::new(),
            landings: Vec::new(),
            busy,
        };
        return Completion::new(Waiter::failed(reactor, error, None), nothing);
    }
    let mut cx = Submit::new(stream.clone(), None, reactor.core);
    let submitted = catch_unwind(AssertUnwindSafe(|| op.submit(&mut cx)));
    let (keep, landings) = cx.into_parts();
    let mut in_flight = InFlight {
        output: None,
        keep,
        landings,
        busy,
    };
    match submitted {
        Ok(Ok(output)) => {
            in_flight.output = Some(output);
            stream.completion_with(in_flight)
        }
        Ok(Err(error)) => Completion::new(Waiter::failed(reactor, error, Some(&stream)), in_flight),
        Err(panic) => {
            let error = Error::invalid_argument("a step of the operation panicked");
            // Dropped unresolved: the reactor keeps what was queued until the stream passes it.
            drop(Completion::new(
                Waiter::failed(reactor, error, Some(&stream)),
                in_flight,
            ));
            resume_unwind(panic)
        }
    }
}

impl<O: DeviceOp> fmt::Debug for OpFuture<O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            State::Idle(..) => "not submitted",
            State::Waiting(_) => "submitted",
            State::Done => "resolved",
        };
        f.debug_struct("OpFuture")
            .field("operation", &std::any::type_name::<O>())
            .field("state", &state)
            .finish()
    }
}
