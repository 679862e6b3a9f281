//! The device: cuda-async's process-wide context of GPU 0, after a clear check that the CUDA
//! driver loads at all (without one, every program stops with that line rather than a bare
//! driver code).

use std::sync::Arc;

use cuda_async::device_context::with_device;
use cuda_core::{Context, Stream};

use crate::Result;

/// The ordinal every program uses, as our benchmarks do.
pub const DEVICE: usize = 0;

/// cuda-async's context of [`DEVICE`] (the device's primary context, as ours uses), current on
/// this thread.
///
/// # Errors
///
/// No CUDA driver could be loaded (the loader's reasons, every file tried), or the driver has no
/// device 0 or could not retain its primary context.
pub fn open() -> Result<Arc<Context>> {
    if let Some(reason) = cuda_core::sys::cuda_driver_load_error() {
        return Err(format!("no CUDA driver (this needs a GPU machine): {reason}").into());
    }
    let context = with_device(DEVICE, |context| context.clone())?;
    context.bind_to_thread()?;
    Ok(context)
}

/// A new non-blocking stream of `context` (cuda-core's `new_stream`), as ours creates with
/// default options.
///
/// # Errors
///
/// The driver's, from `cuStreamCreate`.
pub fn stream(context: &Arc<Context>) -> Result<Arc<Stream>> {
    Ok(context.new_stream()?)
}
