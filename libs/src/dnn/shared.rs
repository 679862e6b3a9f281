//! [`CudnnHandle`]: the `cudnnHandle_t` and the stream it is bound to, shared by a
//! [`Dnn`](super::Dnn) and every plan made with it, so that the handle (and the stream, and its
//! context) is destroyed after the last of them, whichever drops last.

use std::sync::Arc;

use crate::dnn::error::cudnn;
use cuda_safe::handle::{Owned, Release};
use cuda_safe::{Result, Stream};
use cudnn_sys::{Cudnn, cudnnHandle_t};

/// A cuDNN handle, destroyed when its last owner (its `Dnn`, a plan) drops it.
pub(crate) type SharedHandle = Arc<Owned<CudnnHandle>>;

/// A `cudnnHandle_t` and the stream it is bound to.
pub(crate) struct CudnnHandle {
    pub(crate) raw: cudnnHandle_t,
    pub(crate) cudnn: &'static Cudnn,
    /// Kept so that the stream, and its context, outlive the handle.
    pub(crate) stream: Stream,
}

// SAFETY: cuDNN's handle may be used from any thread, one at a time: only the `Dnn` that made
// it (`Send`, not `Sync`) calls cuDNN with it; its plans only keep it alive, and the last owner,
// on whichever thread, destroys it.
unsafe impl Send for CudnnHandle {}
// SAFETY: as for `Send`: a shared reference gives the raw handle's value and the stream, and
// every cuDNN call made with the handle is its one `Dnn`'s.
unsafe impl Sync for CudnnHandle {}

impl CudnnHandle {
    /// A new handle bound to `stream`, made in the stream's context.
    pub(crate) fn create(stream: &Stream) -> Result<SharedHandle> {
        let cudnn = cudnn_sys::cudnn()?;
        let _current = stream.context().scoped()?;
        let mut raw: cudnnHandle_t = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; the stream's context is current.
        unsafe { cudnn!(cudnn, cudnnCreate(&mut raw)) }?;
        let handle = Arc::new(Owned::new(Self {
            raw,
            cudnn,
            stream: stream.clone(),
        }));
        // SAFETY: a live handle and stream.
        unsafe { cudnn!(cudnn, cudnnSetStream(raw, stream.as_raw().cast())) }?;
        Ok(handle)
    }
}

impl Release for CudnnHandle {
    const WHAT: &'static str = "cuDNN handle";

    fn release(&mut self) -> Result<()> {
        // The last plan may drop on any thread: cuDNN synchronizes the handle's device.
        let _current = self.stream.context().scoped()?;
        // SAFETY: made by cudnnCreate, destroyed once (by `Owned`), when its last owner drops
        // it: every plan made with it holds it, so none is left; the `Dnn`'s workspace is freed
        // after (a field dropped later).
        unsafe { cudnn!(self.cudnn, cudnnDestroy(self.raw)) }
    }
}
