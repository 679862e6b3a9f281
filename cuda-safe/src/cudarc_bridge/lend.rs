//! This crate's buffers lent to cudarc as `CudaSlice`s that cudarc never frees.

use std::fmt;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;

use bytemuck::Pod;
use cudarc::driver::{CudaSlice, CudaStream, CudaViewMut};

use super::{check_context, raw_of, recorded_error};
use crate::error::{Error, Result};
use crate::handle::{assert_send_sync, log_drop_error};
use crate::memory::{Buffer, element_count};
use crate::ordering;
use crate::stream::Stream;

/// A [`Buffer`] lent to cudarc as a `CudaSlice<T>` ([`Buffer::lend_to_cudarc`]), read-only:
/// it dereferences to the slice, for cudarc's reads (copies from it, `&slice` launch
/// arguments, `slice.slice(..)`). Dropping it hands the memory back; the buffer keeps owning
/// it throughout, and cudarc never frees it. `Send` and `Sync`.
#[must_use = "dropping it at once hands the buffer back"]
pub struct Lent<'a, T> {
    lease: Lease<T>,
    _buffer: PhantomData<&'a Buffer>,
}

/// A [`Buffer`] lent to cudarc as a `CudaSlice<T>` it may write
/// ([`Buffer::lend_to_cudarc_mut`]): it dereferences to the slice for reads, and
/// [`view_mut`](Self::view_mut) gives cudarc's `CudaViewMut` for writes (never `&mut
/// CudaSlice`, which could be swapped out and freed). Dropping it hands the memory back.
/// `Send` and `Sync`.
#[must_use = "dropping it at once hands the buffer back"]
pub struct LentMut<'a, T> {
    lease: Lease<T>,
    _buffer: PhantomData<&'a mut Buffer>,
}

/// cudarc's slice of a buffer's memory, never dropped (so never freed by cudarc), and what
/// handing it back orders.
struct Lease<T> {
    slice: ManuallyDrop<CudaSlice<T>>,
    /// The slice's stream as this crate's, when it is not the buffer's: what the cross-stream
    /// rules order the buffer's stream with.
    theirs: Option<Stream>,
    /// The buffer's stream, which the buffer's later work (its free) is queued on.
    home: Stream,
    handed_back: bool,
}

impl<T: Pod> Lease<T> {
    /// `buffer`'s memory as cudarc's slice on `stream`, ordered after the work queued on the
    /// buffer's stream so far.
    fn new(buffer: &Buffer, stream: &Arc<CudaStream>) -> Result<Self> {
        if !buffer.is_device_accessible() {
            return Err(Error::invalid_argument(
                "only memory kernels can access can be lent to cudarc",
            ));
        }
        let len = element_count::<T>(buffer.as_raw(), buffer.len())?;
        let home = buffer.stream();
        check_context(home.context(), stream.context())?;
        let _current = home.context().scoped()?;
        let theirs = if raw_of(stream) == home.as_raw() {
            None
        } else {
            let owner: Arc<CudaStream> = Arc::clone(stream);
            // SAFETY: `stream` is a stream of `home`'s context (checked), cudarc's default
            // stream included (the legacy stream of that context, current here and when the
            // lease is handed back); the wrapper keeps an `Arc` of cudarc's handle, so the
            // stream outlives it.
            let theirs =
                unsafe { Stream::from_raw_with_owner(raw_of(stream), home.context(), owner) };
            ordering::hand_over(&theirs, home)?;
            Some(theirs)
        };
        let made = panic::catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: `len` whole, aligned elements of `T` (checked) start at the buffer's
            // address and stay allocated while the lease borrows the buffer; any bit pattern
            // is a `T` (`Pod`), so the memory is valid for `T` whatever it holds; the slice is
            // never dropped, so cudarc never frees it: the lease forgets it with `leak`.
            unsafe { stream.upgrade_device_ptr::<T>(buffer.as_raw(), len) }
        }));
        let slice = made.map_err(|_| {
            Error::unexpected(
                "cuEventCreate",
                "cudarc could not make the lent slice's events (its upgrade_device_ptr panics \
                 then; the panic was caught)",
            )
        })?;
        Ok(Self {
            slice: ManuallyDrop::new(slice),
            theirs,
            home: home.clone(),
            handed_back: false,
        })
    }
}

impl<T> Lease<T> {
    /// Takes the memory back from cudarc: cudarc's slice waits for its read and write events
    /// and forgets the memory (`leak`), then the buffer's stream waits for the slice's. Should
    /// any of that fail, waits for the whole context, so that the buffer's free cannot come
    /// before cudarc's work on it, and returns the error.
    fn hand_back(&mut self) -> Result<()> {
        if std::mem::replace(&mut self.handed_back, true) {
            return Ok(());
        }
        // SAFETY: taken once (`handed_back` guards this), and never used again.
        let slice = unsafe { ManuallyDrop::take(&mut self.slice) };
        let cudarc = Arc::clone(slice.stream());
        let current = self.home.context().scoped();
        // The pointer is the buffer's, which still owns the memory.
        let _ = slice.leak();
        let ordered = recorded_error(cudarc.context()).and_then(|()| match &self.theirs {
            Some(theirs) => ordering::wait_for(&self.home, theirs),
            None => Ok(()),
        });
        if let Err(error) = ordered {
            cudarc.context().synchronize()?;
            return Err(error);
        }
        current.map(drop)
    }
}

impl<T> Drop for Lease<T> {
    fn drop(&mut self) {
        if let Err(error) = self.hand_back() {
            log_drop_error("buffer lent to cudarc", &error);
        }
    }
}

impl Buffer {
    /// Lends the buffer to cudarc as a `CudaSlice<T>` on cudarc's `stream`, read-only, without
    /// copying: cudarc's work on it is ordered after the work queued on the buffer's stream so
    /// far, and dropping the [`Lent`] makes the buffer's stream wait for cudarc's reads (the
    /// slice's events, then its stream), so the buffer's free comes after them. cudarc never
    /// frees the memory.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the buffer is not a whole number of aligned `T`s, is
    /// memory kernels cannot access, or `stream` belongs to another context than the buffer's
    /// stream; [`Error::UnexpectedAnswer`] when cudarc cannot make the slice's events; the
    /// driver's error ordering the streams.
    pub fn lend_to_cudarc<T: Pod>(&self, stream: &Arc<CudaStream>) -> Result<Lent<'_, T>> {
        Ok(Lent {
            lease: Lease::new(self, stream)?,
            _buffer: PhantomData,
        })
    }

    /// Lends the buffer to cudarc as a `CudaSlice<T>` it may write ([`LentMut::view_mut`]),
    /// ordered as [`lend_to_cudarc`](Self::lend_to_cudarc) orders it; the exclusive borrow
    /// keeps this crate's work off the buffer meanwhile.
    ///
    /// # Errors
    ///
    /// As [`lend_to_cudarc`](Self::lend_to_cudarc).
    pub fn lend_to_cudarc_mut<T: Pod>(
        &mut self,
        stream: &Arc<CudaStream>,
    ) -> Result<LentMut<'_, T>> {
        Ok(LentMut {
            lease: Lease::new(self, stream)?,
            _buffer: PhantomData,
        })
    }
}

impl<T> Lent<'_, T> {
    /// Hands the buffer back now, returning the error (dropping does the same and logs it).
    pub fn close(mut self) -> Result<()> {
        self.lease.hand_back()
    }
}

impl<T> LentMut<'_, T> {
    /// cudarc's exclusive view of the whole slice, for its writes (`memcpy_htod`,
    /// `memset_zeros`, `&mut view` launch arguments).
    pub fn view_mut(&mut self) -> CudaViewMut<'_, T> {
        self.lease.slice.as_view_mut()
    }

    /// Hands the buffer back now, returning the error (dropping does the same and logs it).
    pub fn close(mut self) -> Result<()> {
        self.lease.hand_back()
    }
}

impl<T> Deref for Lent<'_, T> {
    type Target = CudaSlice<T>;

    fn deref(&self) -> &CudaSlice<T> {
        &self.lease.slice
    }
}

impl<T> Deref for LentMut<'_, T> {
    type Target = CudaSlice<T>;

    fn deref(&self) -> &CudaSlice<T> {
        &self.lease.slice
    }
}

impl<T> fmt::Debug for Lease<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lease")
            .field("len", &self.slice.len())
            .field("stream", &self.home)
            .finish_non_exhaustive()
    }
}

impl<T> fmt::Debug for Lent<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Lent").field(&self.lease).finish()
    }
}

impl<T> fmt::Debug for LentMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("LentMut").field(&self.lease).finish()
    }
}

assert_send_sync!(Lent<'static, f32>, LentMut<'static, f32>);
