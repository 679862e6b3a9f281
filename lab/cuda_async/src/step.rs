//! One fallible step as a cuda-async operation: what the server composes its requests of
//! (upload, launch, download) with `then`, each step queuing its work on the stream its
//! execution context names. cuda-async 0.5.0 has no copy operations of its own (NVIDIA's
//! tensor crate has them), and its `with_context` closures cannot fail, so a step is this
//! type: its closure gets the context and returns the step's output or the error.

use std::fmt;
use std::future::IntoFuture;

use cuda_async::device_context::with_default_device_policy;
use cuda_async::device_future::DeviceFuture;
use cuda_async::device_operation::{DeviceOp, ExecutionContext};
use cuda_async::error::DeviceError;

/// An operation that runs `F` on its execution context when it is executed.
pub struct Step<F>(F);

impl<F> fmt::Debug for Step<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Step")
    }
}

/// The operation that runs `work` when executed. `work` must register what the GPU uses with
/// [`ExecutionContext::retain`] or [`ExecutionContext::retain_buffer`] before queuing it, as
/// cuda-async asks of every operation.
pub fn step<O, F>(work: F) -> Step<F>
where
    O: Send,
    F: FnOnce(&ExecutionContext) -> Result<O, DeviceError> + Send,
{
    Step(work)
}

impl<O, F> DeviceOp for Step<F>
where
    O: Send,
    F: FnOnce(&ExecutionContext) -> Result<O, DeviceError> + Send,
{
    type Output = O;

    unsafe fn execute(self, context: &ExecutionContext) -> Result<O, DeviceError> {
        (self.0)(context)
    }
}

/// Awaited directly, a step goes where the thread's default policy sends it, as every
/// operation of cuda-async does.
impl<O, F> IntoFuture for Step<F>
where
    O: Send,
    F: FnOnce(&ExecutionContext) -> Result<O, DeviceError> + Send,
{
    type Output = Result<O, DeviceError>;
    type IntoFuture = DeviceFuture<O, Self>;

    fn into_future(self) -> Self::IntoFuture {
        match with_default_device_policy(|policy| self.schedule(policy)) {
            Ok(Ok(future)) => future,
            Ok(Err(error)) | Err(error) => DeviceFuture::failed(error),
        }
    }
}
