//! What the libraries' calls read and write: `cuda-safe`'s buffers and views of `T`s
//! ([`Input`], [`Output`]), seen as [`Operand`]s (address, length, stream, device). cuBLAS's,
//! cuFFT's, cuSOLVER's, cuSPARSE's, cuRAND's and cuDNN's calls take them; before a call, each
//! operand is checked to be memory the call's device can reach ([`Operand::on`]), and its
//! stream is ordered with the call's as a kernel launch orders its buffers.

use bytemuck::Pod;

#[cfg(any(feature = "solver", feature = "sparse", feature = "dnn"))]
use cuda_safe::MemoryResource;
use cuda_safe::{Buffer, DeviceSlice, DeviceSliceMut};
use cuda_safe::{Device, Stream};
use cuda_safe::{Error, Result};

/// Device memory a call reads or writes: its address, its length in elements, the stream its
/// buffer is ordered on, and the device whose memory it is.
#[derive(Debug, Clone, Copy)]
pub struct Operand<'a> {
    ptr: u64,
    len: usize,
    stream: &'a Stream,
    home: Option<Device>,
}

impl<'a> Operand<'a> {
    /// An operand of the view's memory (`ptr`, `len`, `stream`, `home`), refused when kernels
    /// cannot reach it (`device_accessible`: the view's resource said so).
    fn of_view(
        ptr: u64,
        len: usize,
        stream: &'a Stream,
        home: Option<Device>,
        device_accessible: bool,
    ) -> Result<Self> {
        if !device_accessible {
            return Err(Error::invalid_argument(
                "the libraries work on memory the GPU can reach; this memory's resource says \
                 kernels cannot",
            ));
        }
        Ok(Self {
            ptr,
            len,
            stream,
            home,
        })
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device address of the first element.
    pub fn as_raw(&self) -> u64 {
        self.ptr
    }

    /// The stream its buffer is ordered on.
    pub fn stream(&self) -> &'a Stream {
        self.stream
    }

    /// The device whose memory it is (`None` for pinned or managed host memory, which every
    /// device reaches).
    pub fn home(&self) -> Option<Device> {
        self.home
    }

    /// The stream its buffer is ordered on, for a call queued on `stream`, once kernels in
    /// `stream`'s context are known to reach the memory: host memory the GPU maps or memory of
    /// `stream`'s device (no driver call), or another device's that the driver says this
    /// context may read and write ([`Context::can_access`](cuda_safe::Context::can_access):
    /// pool memory granted to the device, memory of a context whose peer access is enabled).
    /// Only that last case costs a driver call.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for another device's memory the call's context cannot reach;
    /// the driver's error from the query.
    pub(crate) fn on(&self, stream: &Stream) -> Result<&'a Stream> {
        let device = stream.device();
        if let Some(home) = self.home
            && home != *device
            && !self.is_empty()
            && !stream.context().can_access(self.ptr)?
        {
            return Err(unreachable(self.ptr, home, device));
        }
        Ok(self.stream)
    }

    /// The address as the libraries' `const void *`.
    #[cfg(feature = "blas")]
    pub(crate) fn ptr(&self) -> *const std::ffi::c_void {
        self.ptr as *const std::ffi::c_void
    }

    /// The address as the libraries' `void *`.
    #[cfg(any(
        feature = "blas",
        feature = "fft",
        feature = "solver",
        feature = "sparse",
        feature = "dnn"
    ))]
    pub(crate) fn ptr_mut(&self) -> *mut std::ffi::c_void {
        self.ptr as *mut std::ffi::c_void
    }

    /// The address as a typed pointer (cuSOLVER's legacy API's `float *`, `int64_t *`).
    #[cfg(feature = "solver")]
    pub(crate) fn typed<U>(&self) -> *mut U {
        self.ptr as *mut U
    }
}

/// The refusal of memory at `ptr` of device `home` for a call on device `device`.
#[cold]
fn unreachable(ptr: u64, home: Device, device: &Device) -> Error {
    Error::invalid_argument(format!(
        "the memory at {ptr:#x} is device {}'s, and kernels on device {} (the call's stream's) \
         cannot reach it: grant that device access to the pool \
         (DeviceMemoryResource::grant_access), enable peer access (Device::enable_peer_access), \
         or copy the memory to device {}",
        home.ordinal(),
        device.ordinal(),
        device.ordinal()
    ))
}

/// Refuses `buffer` as the workspace (`what`: "a cuBLAS workspace") of a handle on `stream`
/// unless kernels on the stream's device reach it (an empty one is never read).
#[cfg(any(feature = "blas", feature = "fft"))]
pub(crate) fn workspace_buffer(buffer: &Buffer, stream: &Stream, what: &str) -> Result<()> {
    if buffer.is_empty() {
        return Ok(());
    }
    if !buffer.is_device_accessible() {
        return Err(Error::invalid_argument(format!(
            "{what} must be memory the GPU can reach"
        )));
    }
    Input::<u8>::operand(buffer)?.on(stream)?;
    Ok(())
}

/// Refuses `resource` as where a handle on `stream` takes its workspace (`what`: "a cuDNN
/// workspace") unless kernels on the stream's device reach what it allocates: memory of that
/// device, or pinned or managed host memory. Another device's resource is refused even where
/// peer access would reach it: a workspace belongs with its handle's device.
#[cfg(any(feature = "solver", feature = "sparse", feature = "dnn"))]
pub(crate) fn workspace_resource(
    resource: &dyn MemoryResource,
    stream: &Stream,
    what: &str,
) -> Result<()> {
    if !resource.is_device_accessible() {
        return Err(Error::invalid_argument(format!(
            "{what} must be memory the GPU can reach"
        )));
    }
    let device = stream.device();
    match resource.device() {
        _ if resource.is_host_accessible() => Ok(()),
        Some(home) if home == *device => Ok(()),
        home => Err(Error::invalid_argument(format!(
            "{what} must be memory of device {} (the handle's stream's) or pinned or managed \
             host memory; this resource allocates {}",
            device.ordinal(),
            home.map_or_else(
                || "memory of no device".to_owned(),
                |home| format!("device {}'s memory", home.ordinal())
            )
        ))),
    }
}

/// Keeps [`Input`] and [`Output`] to `cuda-safe`'s memory types: an operand's length counts
/// elements of the `T` it was made for, so an outside implementation returning another type's
/// length would let a library read or write past the memory.
mod sealed {
    use cuda_safe::{Buffer, DeviceSlice, DeviceSliceMut};

    pub trait Input<T> {}

    impl<T: bytemuck::Pod> Input<T> for DeviceSlice<'_, T> {}
    impl<T: bytemuck::Pod> Input<T> for DeviceSliceMut<'_, T> {}
    impl<T: bytemuck::Pod> Input<T> for Buffer {}

    pub trait Output<T> {}

    impl<T: bytemuck::Pod> Output<T> for DeviceSliceMut<'_, T> {}
    impl<T: bytemuck::Pod> Output<T> for Buffer {}
}

/// Memory a call reads: a [`DeviceSlice`], a [`DeviceSliceMut`] or a [`Buffer`] of `T`s (whose
/// byte size must hold whole, aligned elements), memory kernels can reach: of the call's
/// device, another device's that the call's device may access, or pinned or managed host
/// memory. Its stream orders it as a kernel launch orders its buffers: the call waits for the
/// stream's queued work, and the stream's later work (the buffer's free) waits for the call.
/// The trait is sealed.
pub trait Input<T: Pod>: sealed::Input<T> {
    /// The operand the call reads.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a buffer that does not hold whole, aligned `T`s, or
    /// memory that no GPU can reach (its resource says so).
    fn operand(&self) -> Result<Operand<'_>>;
}

/// Memory a call writes (and may read): a [`DeviceSliceMut`] or a [`Buffer`] (sealed, as
/// [`Input`]).
pub trait Output<T: Pod>: Input<T> + sealed::Output<T> {
    /// The operand the call writes.
    ///
    /// # Errors
    ///
    /// As [`Input::operand`].
    fn operand_mut(&mut self) -> Result<Operand<'_>>;
}

impl<T: Pod> Input<T> for DeviceSlice<'_, T> {
    #[inline]
    fn operand(&self) -> Result<Operand<'_>> {
        Operand::of_view(
            self.as_raw(),
            self.len(),
            self.stream(),
            self.home(),
            self.is_device_accessible(),
        )
    }
}

impl<T: Pod> Input<T> for DeviceSliceMut<'_, T> {
    #[inline]
    fn operand(&self) -> Result<Operand<'_>> {
        Operand::of_view(
            self.as_raw(),
            self.len(),
            self.stream(),
            self.home(),
            self.is_device_accessible(),
        )
    }
}

impl<T: Pod> Output<T> for DeviceSliceMut<'_, T> {
    #[inline]
    fn operand_mut(&mut self) -> Result<Operand<'_>> {
        Input::<T>::operand(self)
    }
}

impl<T: Pod> Input<T> for Buffer {
    #[inline]
    fn operand(&self) -> Result<Operand<'_>> {
        let view = self.as_slice::<T>()?;
        Operand::of_view(
            view.as_raw(),
            view.len(),
            view.stream(),
            view.home(),
            view.is_device_accessible(),
        )
    }
}

impl<T: Pod> Output<T> for Buffer {
    #[inline]
    fn operand_mut(&mut self) -> Result<Operand<'_>> {
        Input::<T>::operand(self)
    }
}
