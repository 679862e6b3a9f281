//! Failure: a communicator's asynchronous errors, and waiting that gives up on a dead peer.

use crate::NcclError;
use std::time::{Duration, Instant};

use super::comm::{Communicator, POLL_INTERVAL};
use super::state::in_group;
use cuda_safe::Stream;
use cuda_safe::{Error, Result};

impl Communicator {
    /// Checks the communicator for an asynchronous error (`ncclCommGetAsyncError`): a peer
    /// that died, a network failure, a fault in a collective. On one, the communicator is
    /// aborted (it cannot be used any more) and the error returned.
    ///
    #[doc = nccl_sys::api_doc!(ncclCommGetAsyncError)]
    /// # Errors
    ///
    /// [`NcclError::Async`](crate::NcclError::Async) with NCCL's code and message; NCCL's error for the query itself.
    #[doc(alias = "ncclCommGetAsyncError")]
    pub fn async_error(&self) -> Result<()> {
        match self.poll_async() {
            Ok(_) => Ok(()),
            Err(error) => {
                self.abort_now()?;
                Err(error)
            }
        }
    }

    /// Waits until `stream` has finished its queued work (this communicator's collectives on
    /// it included), polling the communicator's asynchronous error and the stream: done once
    /// NCCL has nothing in progress (a non-blocking communicator's calls have reached their
    /// streams) and the stream is idle. When the communicator fails, or `timeout` passes
    /// first, the communicator is aborted (its kernels stop, so the stream drains) and the
    /// error returned: a rank whose peer died does not wait forever.
    ///
    /// # Errors
    ///
    /// [`NcclError::Async`](crate::NcclError::Async) when the communicator failed; [`NcclError::Timeout`](crate::NcclError::Timeout) when the time
    /// ran out; the driver's error for the stream; [`Error::InvalidArgument`] inside a
    /// [`group`](super::group)'s closure (its calls are not made yet).
    pub fn wait_with_timeout(&self, stream: &Stream, timeout: Duration) -> Result<()> {
        if in_group() {
            return Err(Error::invalid_argument(
                "Communicator::wait_with_timeout inside nccl::group: the group's calls are made \
                 when its closure returns, so wait after nccl::group",
            ));
        }
        let start = Instant::now();
        loop {
            // NCCL first: a non-blocking communicator's call may still be `ncclInProgress`,
            // its work not yet on the stream, so an idle stream alone proves nothing.
            let queued = match self.poll_async() {
                Ok(queued) => queued,
                Err(error) => {
                    self.abort_now()?;
                    return Err(error);
                }
            };
            if queued && stream.query()? {
                return self.async_error();
            }
            if start.elapsed() >= timeout {
                self.abort_now()?;
                return Err(NcclError::Timeout { waited: timeout }.into());
            }
            std::thread::sleep(POLL_INTERVAL);
        }
    }
}
