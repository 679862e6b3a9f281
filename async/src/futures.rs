//! The two futures: [`Completion`], work finished (handing back what it kept alive), and
//! [`Download`], a buffer's contents.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use bytemuck::Pod;

use crate::shared::Reactor;
use crate::table::Keep;
use crate::waiter::{Outcome, Waiter, held};
use cuda_safe::Buffer;
use cuda_safe::assert_send_sync;
use cuda_safe::{Error, Result};

/// A future that resolves once GPU work has finished: everything queued on a stream when it
/// was made ([`Stream::completion`](crate::StreamExt::completion)), the work before an event's
/// record ([`Event::into_completion`](crate::EventExt::into_completion)), a graph launch
/// ([`GraphExec::launch_async`](crate::GraphExecExt::launch_async)), an upload
/// ([`Buffer::upload_async`](crate::BufferExt::upload_async)) or an NCCL collective (feature
/// `nccl`).
///
/// It resolves to the value it was given to keep alive (`()` for none), or to the error that
/// stopped the work: a kernel fault or another sticky error of the context as
/// [`Error::Cuda`] with the driver's code, a host function's panic as
/// [`Error::CallbackPanicked`] where the matching `sync` would report it.
///
/// Dropping it before it resolves is safe: the work still runs, and what the future keeps
/// alive (buffers moved into it, its staging memory) is dropped by the reactor only once the
/// GPU is done with it. Polling it again after it resolved gives
/// [`Error::InvalidArgument`].
///
/// `Send` (and `Sync`) when `T` is; it is `Unpin`.
#[must_use = "the work runs anyway; await the completion to learn when it has finished"]
pub struct Completion<T: Send + 'static = ()> {
    waiter: Waiter,
    keep: Option<T>,
}

/// A future that resolves to a buffer's contents ([`Buffer::to_vec_async`](crate::BufferExt::to_vec_async)),
/// copied through pinned staging memory once the work queued on the buffer's stream before it
/// has finished.
///
/// Errors and dropping are as for [`Completion`]: a dropped download's staging memory goes
/// back to the reactor's cache only once the copy into it has finished. `Send`, `Sync` and
/// `Unpin`.
#[must_use = "the copy runs anyway; await the download to get the contents"]
pub struct Download<T: Pod> {
    waiter: Waiter,
    len: usize,
    _elements: PhantomData<fn() -> T>,
}

impl<T: Send + 'static> Completion<T> {
    /// A completion waiting as `waiter` does, keeping `keep` alive until then.
    pub(super) fn new(waiter: Waiter, keep: T) -> Self {
        Self {
            waiter,
            keep: Some(keep),
        }
    }

    /// The reactor this completion holds.
    pub fn reactor(&self) -> &Reactor {
        self.waiter.reactor()
    }
}

impl<T: Pod> Download<T> {
    /// A download of `len` elements waiting as `waiter` does (which holds its staging block).
    pub(super) fn new(waiter: Waiter, len: usize) -> Self {
        Self {
            waiter,
            len,
            _elements: PhantomData,
        }
    }

    /// How many elements the download brings.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the download brings no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

// Neither pins what it holds: the kept value is only moved out by value.
impl<T: Send + 'static> Unpin for Completion<T> {}
impl<T: Pod> Unpin for Download<T> {}

impl<T: Send + 'static> Future for Completion<T> {
    type Output = Result<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Result<T>> {
        let this = self.get_mut();
        let Poll::Ready(Outcome {
            result,
            release,
            hold,
        }) = this.waiter.poll(cx)
        else {
            return Poll::Pending;
        };
        Poll::Ready(match result {
            Ok(()) => {
                drop(hold);
                this.keep.take().ok_or_else(polled_again)
            }
            Err(error) => {
                let keep = boxed_keep(this.keep.take());
                let core = this.waiter.reactor().core;
                release.apply(held(keep, hold), &error, core);
                Err(error)
            }
        })
    }
}

impl<T: Pod> Future for Download<T> {
    type Output = Result<Vec<T>>;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Result<Vec<T>>> {
        let this = self.get_mut();
        let Poll::Ready(Outcome {
            result,
            release,
            hold,
        }) = this.waiter.poll(cx)
        else {
            return Poll::Pending;
        };
        Poll::Ready(match (result, hold) {
            (Ok(()), Some(staging)) => {
                // SAFETY: the block holds the `len` elements the finished copy wrote (it was
                // sized for them, is page-aligned and initialized), and nothing else uses it.
                let values = unsafe {
                    std::slice::from_raw_parts(staging.as_ptr().cast::<T>().cast_const(), this.len)
                };
                Ok(values.to_vec())
            }
            (Ok(()), None) if this.len == 0 => Ok(Vec::new()),
            (Ok(()), None) => Err(polled_again()),
            (Err(error), hold) => {
                release.apply(held(None, hold), &error, this.waiter.reactor().core);
                Err(error)
            }
        })
    }
}

/// A kept value as the reactor keeps it: boxed, unless it has no drop glue (it then frees
/// nothing and needs no keeping).
fn boxed_keep<T: Send + 'static>(keep: Option<T>) -> Option<Keep> {
    keep.filter(|_| std::mem::needs_drop::<T>())
        .map(|keep| Box::new(keep) as Keep)
}

/// The error of a future polled after it resolved.
fn polled_again() -> Error {
    Error::invalid_argument("a completion future was polled again after it resolved")
}

impl<T: Send + 'static> Drop for Completion<T> {
    fn drop(&mut self) {
        if self.waiter.is_done() {
            return;
        }
        let keep = boxed_keep(self.keep.take());
        self.waiter.abandon(keep);
    }
}

impl<T: Pod> Drop for Download<T> {
    fn drop(&mut self) {
        if !self.waiter.is_done() {
            self.waiter.abandon(None);
        }
    }
}

impl<T: Send + 'static> fmt::Debug for Completion<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Completion")
            .field("resolved", &self.waiter.is_done())
            .field("keeps", &std::any::type_name::<T>())
            .finish()
    }
}

impl<T: Pod> fmt::Debug for Download<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Download")
            .field("resolved", &self.waiter.is_done())
            .field("len", &self.len)
            .field("elements", &std::any::type_name::<T>())
            .finish()
    }
}

assert_send_sync!(Completion, Completion<Buffer>, Download<f32>, Reactor);
