//! User-buffer registration (`ncclCommRegister`): NCCL reads and writes a registered buffer
//! directly, without copying through its own staging buffers.

use std::ffi::c_void;
use std::fmt;

use super::comm::Communicator;
use crate::error::nccl;
use bytemuck::Pod;
use cuda_safe::handle::{Owned, Release};
use cuda_safe::{Error, Result};

use cuda_safe::{Buffer, DeviceSlice, DeviceSliceMut};

/// A buffer registered with a communicator: it owns the buffer (so it cannot be freed while
/// NCCL knows it) and deregisters it when dropped or on [`into_buffer`](Self::into_buffer),
/// after waiting for the buffer's stream (which every collective on it is ordered before).
/// Collectives take its memory as typed views ([`as_slice`](Self::as_slice),
/// [`as_mut_slice`](Self::as_mut_slice)): no `&mut Buffer` is handed out, since one could be
/// swapped for another buffer and the registered one freed while registered.
///
/// ```compile_fail,E0599
/// # fn swap(registered: &mut cuda_safe_nccl::Registered<'_>, other: &mut cuda_safe::Buffer) {
/// std::mem::swap(registered.buffer_mut(), other);
/// # }
/// ```
#[must_use = "the buffer is deregistered when this is dropped"]
pub struct Registered<'c> {
    inner: Owned<Registration<'c>>,
}

/// One registration of a buffer with a communicator, undone by its release.
struct Registration<'c> {
    comm: &'c Communicator,
    buffer: Buffer,
    handle: *mut c_void,
}

impl Communicator {
    /// Registers `buffer` with this communicator (`ncclCommRegister`, NCCL 2.19 and later),
    /// for zero-copy collectives on it.
    ///
    #[doc = nccl_sys::api_doc!(ncclCommRegister)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an empty buffer or one of another device; NCCL's error;
    /// a missing entry point before NCCL 2.19 ([`Error::is_not_supported`]). The buffer is
    /// dropped (freed in order on its stream) on error.
    #[doc(alias = "ncclCommRegister")]
    pub fn register(&self, buffer: Buffer) -> Result<Registered<'_>> {
        let raw = self.handle()?;
        if buffer.is_empty() {
            return Err(Error::invalid_argument(
                "an empty buffer cannot be registered",
            ));
        }
        let device = buffer
            .memory_resource()
            .device()
            .unwrap_or(*buffer.stream().device());
        if !buffer.is_device_accessible() || device.ordinal() != self.device().ordinal() {
            return Err(Error::invalid_argument(format!(
                "only device memory of the communicator's device ({}) can be registered",
                self.device().ordinal()
            )));
        }
        let mut handle = std::ptr::null_mut();
        // SAFETY: `raw` is live; the buffer's `len` bytes at its address are device memory
        // that stays allocated until the registration is undone (the guard holds it).
        unsafe {
            nccl!(
                self.inner().nccl,
                ncclCommRegister(
                    raw,
                    buffer.as_raw() as *mut c_void,
                    buffer.len(),
                    &mut handle
                )
            )?
        };
        Ok(Registered {
            inner: Owned::new(Registration {
                comm: self,
                buffer,
                handle,
            }),
        })
    }
}

impl Registered<'_> {
    /// The registered buffer.
    pub fn buffer(&self) -> &Buffer {
        &self.inner.buffer
    }

    /// A typed view of the registered memory, for collectives to read.
    ///
    /// # Errors
    ///
    /// As [`Buffer::as_slice`].
    pub fn as_slice<T: Pod>(&self) -> Result<DeviceSlice<'_, T>> {
        self.inner.buffer.as_slice()
    }

    /// An exclusive typed view of the registered memory, for collectives to write.
    ///
    /// # Errors
    ///
    /// As [`Buffer::as_mut_slice`].
    pub fn as_mut_slice<T: Pod>(&mut self) -> Result<DeviceSliceMut<'_, T>> {
        self.inner.buffer.as_mut_slice()
    }

    /// Waits for the buffer's stream, then deregisters the buffer (`ncclCommDeregister`) and
    /// gives it back.
    ///
    #[doc = nccl_sys::api_doc!(ncclCommDeregister)]
    /// # Errors
    ///
    /// The driver's error from the wait (the buffer then stays registered until the
    /// communicator is destroyed, and is dropped); NCCL's error (the buffer is then dropped).
    #[doc(alias = "ncclCommDeregister")]
    pub fn into_buffer(self) -> Result<Buffer> {
        let mut registration = self.inner.into_unreleased();
        let deregistered = registration.release();
        deregistered.map(|()| registration.buffer)
    }
}

impl Release for Registration<'_> {
    const WHAT: &'static str = "NCCL buffer registration";

    fn release(&mut self) -> Result<()> {
        let handle = std::mem::replace(&mut self.handle, std::ptr::null_mut());
        if handle.is_null() {
            return Ok(());
        }
        let Ok(raw) = self.comm.handle() else {
            // Aborted: NCCL released the communicator's registrations with it (and the handle
            // is gone), so there is nothing left to undo.
            return Ok(());
        };
        // Every collective on the memory is ordered before the buffer's stream's later work
        // (as a launch is): once the stream is idle, none is still using the registration.
        // When the wait fails, the registration is left to the communicator's destruction.
        self.buffer.stream().drain()?;
        // SAFETY: `handle` came from ncclCommRegister on this live communicator and is
        // deregistered once.
        unsafe { nccl!(self.comm.inner().nccl, ncclCommDeregister(raw, handle)) }
    }
}

impl fmt::Debug for Registered<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registered")
            .field("buffer", &self.inner.buffer)
            .field("handle", &self.inner.handle)
            .finish()
    }
}
