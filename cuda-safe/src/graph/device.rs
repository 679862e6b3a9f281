//! Device graph launch: an executable instantiated for device launch
//! ([`InstantiateOptions::device_launch`](super::InstantiateOptions::device_launch)) and
//! uploaded is launched by a kernel, which takes its [`DeviceGraphHandle`] as an argument and
//! calls the device runtime's `cudaGraphLaunch` (link the device runtime into the kernel's
//! image: [`Linker::add_device_runtime`](crate::Linker::add_device_runtime)).

use super::exec::GraphExec;
use crate::error::{Error, Result};
use crate::launch::DeviceRepr;
use cuda_sys::CUgraphExec;

/// What a kernel launches a device graph with: the executable's `CUgraphExec`, a
/// `cudaGraphExec_t` parameter in CUDA C++. Made by [`GraphExec::device_handle`].
///
/// Plain data: a kernel argument, and a value that can be stored in device memory (a table of
/// graphs a scheduling kernel picks from). It is only a value: it names its executable while
/// that lives, and the caller keeps the executable alive while a kernel may launch it.
///
/// ```text
/// extern "C" __global__ void next(const int* flag, cudaGraphExec_t a, cudaGraphExec_t b) {
///     cudaGraphLaunch(*flag ? a : b, cudaStreamGraphTailLaunch); // after this graph ends
/// }
/// ```
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeviceGraphHandle(u64);

// SAFETY: a `u64` alone (`repr(transparent)`): no padding, every bit pattern a value.
unsafe impl bytemuck::Zeroable for DeviceGraphHandle {}
// SAFETY: as above.
unsafe impl bytemuck::Pod for DeviceGraphHandle {}
// SAFETY: the 64 bits of a `cudaGraphExec_t` (a pointer on every 64-bit platform CUDA runs
// on), which is how kernels take it.
unsafe impl DeviceRepr for DeviceGraphHandle {}

impl DeviceGraphHandle {
    /// The raw `CUgraphExec`.
    pub fn as_raw(&self) -> CUgraphExec {
        self.0 as CUgraphExec
    }
}

impl GraphExec {
    /// The handle a kernel launches this executable with, from the device: pass it as a
    /// `cudaGraphExec_t` argument, and call `cudaGraphLaunch(handle, stream)` with
    /// `cudaStreamGraphFireAndForget` (it runs at once, beside the launching graph, which
    /// finishes only when it has), `cudaStreamGraphTailLaunch` (it runs when the launching
    /// graph has finished) or `cudaStreamGraphFireAndForgetAsSibling`.
    ///
    /// What the driver asks, and the crate cannot see: the executable is uploaded
    /// ([`upload`](Self::upload), or one [`launch`](Self::launch) from the host) before a
    /// kernel launches it, and again after an [`update`](Self::update); the launching kernel
    /// runs in a graph itself; one launch of it runs at a time (the device's
    /// `cudaGraphLaunch` returns `cudaErrorInvalidValue` while one is running), never from the
    /// host and the device at once; it stays alive while a kernel may launch it.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when it was not instantiated with
    /// [`InstantiateOptions::device_launch`](super::InstantiateOptions::device_launch).
    pub fn device_handle(&self) -> Result<DeviceGraphHandle> {
        if !self.device_launch() {
            return Err(Error::invalid_argument(
                "this executable graph was not instantiated for device launch: instantiate it \
                 with InstantiateOptions::default().device_launch(true) to launch it from a kernel",
            ));
        }
        Ok(DeviceGraphHandle(self.as_raw() as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::KernelArgs;

    #[test]
    fn a_handle_is_a_kernel_argument_of_a_pointers_size() {
        let handle = DeviceGraphHandle(0x1234_5678_9abc);
        assert_eq!(size_of::<DeviceGraphHandle>(), size_of::<CUgraphExec>());
        assert_eq!(handle.as_raw() as u64, 0x1234_5678_9abc);
        (7i32, handle).with_params(|pointers, sizes, names| {
            assert_eq!(sizes, [4, 8]);
            assert!(names[1].ends_with("DeviceGraphHandle"), "{}", names[1]);
            // SAFETY: the second pointer points at the laid-out handle.
            assert_eq!(unsafe { *pointers[1].cast::<u64>() }, 0x1234_5678_9abc);
        });
        assert_eq!(
            bytemuck::bytes_of(&handle),
            0x1234_5678_9abc_u64.to_ne_bytes()
        );
    }
}
