//! The SMs a stream's work runs on (`cuStreamGetDevResource`, CUDA 13.1): a green context's
//! partition for its streams, the whole device for a primary context's.

use super::resources::{CUDA_13_1, SmResource, require_driver};
use crate::abi;
use crate::error::Result;
use crate::stream::Stream;

impl Stream {
    /// The SMs this stream's work runs on: its green context's partition, or all of the
    /// device's for a stream of a primary context. It works for streams wrapped from another
    /// library ([`Stream::from_raw`]) too, which is how a library learns what a stream it was
    /// handed may use.
    ///
    /// Calls [`cuStreamGetDevResource`][cuStreamGetDevResource] (in the CUDA 13 bindings
    /// only). Needs a CUDA 13.1 driver.
    ///
    /// [cuStreamGetDevResource]: https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GREEN__CONTEXTS.html#group__CUDA__GREEN__CONTEXTS_1g25acc306a4e2ba88d1eb8b7bd2b2b578
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`](crate::Error::Unsupported) under the `cuda-12` ABI, or with a
    /// driver older than CUDA 13.1 (the version is named; nothing is asked of the driver);
    /// the driver's error.
    #[doc(alias = "cuStreamGetDevResource")]
    pub fn sm_resource(&self) -> Result<SmResource> {
        require_driver("a stream's SM resource", CUDA_13_1)?;
        let raw = abi::stream_sm_resource(self.context().driver(), self.as_raw())?;
        Ok(SmResource::from_raw_parts(raw, *self.device()))
    }
}
