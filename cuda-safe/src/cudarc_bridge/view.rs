//! cudarc's slices as this crate's views, ordered by cudarc's event tracking.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use bytemuck::Pod;
use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut, SyncOnDrop};

use super::{raw_of, recorded_error};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::handle::{assert_send_sync, log_drop_error};
use crate::memory::{DeviceSlice, DeviceSliceMut, Placement};
use crate::stream::Stream;

/// A cudarc slice (`CudaSlice`, `CudaView` or `CudaViewMut`) seen as this crate's
/// [`DeviceSlice`], made with [`view`]: a launch argument (`&*view`) and a copy source like any
/// other view, its operations queued on the view's stream.
///
/// It was made after the slice's last write through cudarc; when it drops, it records the
/// slice's read event on its stream, so cudarc's later writes and its free wait for what was
/// queued through the view. `Send` and `Sync` when `T` is `Sync`, as a `&[T]` is.
#[must_use = "the view orders cudarc's later uses after it when it drops"]
pub struct CudarcView<'a, T> {
    slice: DeviceSlice<'a, T>,
    hand_back: HandBack<'a>,
}

/// A cudarc slice (`CudaSlice` or `CudaViewMut`) seen as this crate's [`DeviceSliceMut`], made
/// with [`view_mut`]: after every read and write queued through cudarc, and recording the
/// slice's write event on its stream when it drops. `Send` and `Sync` when `T` is.
#[must_use = "the view orders cudarc's later uses after it when it drops"]
pub struct CudarcViewMut<'a, T> {
    slice: DeviceSliceMut<'a, T>,
    hand_back: HandBack<'a>,
}

/// What a view does when it drops: cudarc's event recorded on the view's stream, or, where
/// cudarc tracks no events, the slice's stream made to wait for the view's.
struct HandBack<'a> {
    context: &'a Context,
    /// The view stream's cudarc side.
    ours: &'a CudaStream,
    record: Option<SyncOnDrop<'a>>,
    /// Where cudarc tracks no events and the streams differ: the slice's stream, which waits
    /// for the view's.
    home: Option<Arc<CudaStream>>,
    /// Whether the hand-back ran (by `close` or on drop).
    finished: bool,
}

/// The view stream's cudarc side, after checking that it shares the slice's context.
fn cudarc_side<'a>(stream: &'a Stream, home: &CudaStream) -> Result<&'a CudaStream> {
    let ours = stream.cudarc().ok_or_else(|| {
        Error::invalid_argument(
            "a view of a cudarc slice needs a stream with a cudarc side: make it with \
             Stream::from_cudarc or Stream::with_cudarc",
        )
    })?;
    if **ours.context() != **home.context() {
        return Err(Error::invalid_argument(
            "the cudarc slice belongs to another context than the view's stream",
        ));
    }
    Ok(ours)
}

/// Where the device's memory lives, for the view's copies.
fn placement(stream: &Stream) -> Placement {
    Placement {
        home: Some(*stream.device()),
        needs_context: false,
        device_accessible: true,
    }
}

impl<'a> HandBack<'a> {
    /// Checks what cudarc recorded while ordering the view (`record` is the guard of the
    /// slice's event, kept until the view drops), and orders the view's stream after the
    /// slice's stream `home` where cudarc tracks no events.
    fn new(
        stream: &'a Stream,
        ours: &'a CudaStream,
        record: SyncOnDrop<'a>,
        home: Arc<CudaStream>,
    ) -> Result<Self> {
        let mut hand_back = Self {
            context: stream.context(),
            ours,
            record: Some(record),
            home: None,
            finished: false,
        };
        recorded_error(ours.context())?;
        if !home.context().is_managing_stream_synchronization() && raw_of(&home) != raw_of(ours) {
            ours.join(&home)?;
            hand_back.home = Some(home);
        }
        Ok(hand_back)
    }

    /// Records the slice's event on the view's stream (or makes the slice's stream wait).
    fn finish(&mut self) -> Result<()> {
        if std::mem::replace(&mut self.finished, true) {
            return Ok(());
        }
        let _current = self.context.scoped()?;
        drop(self.record.take());
        let recorded = recorded_error(self.ours.context());
        if let Some(home) = self.home.take()
            && let Err(error) = home.join(self.ours)
        {
            // Nothing may run on the slice's stream (its free) before the view's work.
            self.ours.synchronize()?;
            return Err(error.into());
        }
        recorded
    }
}

impl Drop for HandBack<'_> {
    fn drop(&mut self) {
        if let Err(error) = self.finish() {
            log_drop_error("view of a cudarc slice", &error);
        }
    }
}

/// A view of cudarc's `slice`, its operations queued on `stream`: made after the slice's last
/// write through cudarc (cudarc's `device_ptr`, with `stream`'s cudarc side), it records the
/// slice's read event on `stream` when it drops. Where cudarc tracks no events, `stream`
/// waits for the slice's stream instead, and the slice's stream waits for `stream` when the
/// view drops. Nothing is copied.
///
/// # Errors
///
/// [`Error::InvalidArgument`] when `stream` carries no cudarc side ([`Stream::from_cudarc`],
/// [`Stream::with_cudarc`]) or the slice belongs to another context; an error cudarc recorded
/// in the context (its guards report failed waits there; this takes it, as cudarc's
/// `check_err` does); the driver's error making the context current.
pub fn view<'a, T: Pod, S: DevicePtr<T>>(
    slice: &'a S,
    stream: &'a Stream,
) -> Result<CudarcView<'a, T>> {
    let home = slice.stream();
    let ours = cudarc_side(stream, home)?;
    let _current = stream.context().scoped()?;
    let (ptr, record) = slice.device_ptr(ours);
    let hand_back = HandBack::new(stream, ours, record, Arc::clone(home))?;
    Ok(CudarcView {
        slice: DeviceSlice::from_parts(ptr, slice.len(), stream, placement(stream)),
        hand_back,
    })
}

/// An exclusive view of cudarc's `slice`, its operations queued on `stream`: made after every
/// read and write of it queued through cudarc (cudarc's `device_ptr_mut`), it records the
/// slice's write event on `stream` when it drops (where cudarc tracks no events, as
/// [`view`]). Nothing is copied.
///
/// # Errors
///
/// As [`view`].
pub fn view_mut<'a, T: Pod, S: DevicePtrMut<T>>(
    slice: &'a mut S,
    stream: &'a Stream,
) -> Result<CudarcViewMut<'a, T>> {
    let home = Arc::clone(slice.stream());
    let ours = cudarc_side(stream, &home)?;
    let _current = stream.context().scoped()?;
    let len = slice.len();
    let (ptr, record) = slice.device_ptr_mut(ours);
    let hand_back = HandBack::new(stream, ours, record, home)?;
    Ok(CudarcViewMut {
        slice: DeviceSliceMut::from_parts(ptr, len, stream, placement(stream)),
        hand_back,
    })
}

impl<T> CudarcView<'_, T> {
    /// Ends the view now, returning the error of its hand-back (dropping does the same and
    /// logs it).
    pub fn close(mut self) -> Result<()> {
        self.hand_back.finish()
    }
}

impl<T> CudarcViewMut<'_, T> {
    /// Ends the view now, returning the error of its hand-back (dropping does the same and
    /// logs it).
    pub fn close(mut self) -> Result<()> {
        self.hand_back.finish()
    }
}

impl<'a, T> Deref for CudarcView<'a, T> {
    type Target = DeviceSlice<'a, T>;

    fn deref(&self) -> &DeviceSlice<'a, T> {
        &self.slice
    }
}

impl<'a, T> Deref for CudarcViewMut<'a, T> {
    type Target = DeviceSliceMut<'a, T>;

    fn deref(&self) -> &DeviceSliceMut<'a, T> {
        &self.slice
    }
}

impl<'a, T> DerefMut for CudarcViewMut<'a, T> {
    fn deref_mut(&mut self) -> &mut DeviceSliceMut<'a, T> {
        &mut self.slice
    }
}

impl<T: Pod> fmt::Debug for CudarcView<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CudarcView")
            .field("ptr", &format_args!("{:#x}", self.slice.as_raw()))
            .field("len", &self.slice.len())
            .field("stream", self.slice.stream())
            .finish()
    }
}

impl<T: Pod> fmt::Debug for CudarcViewMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CudarcViewMut")
            .field("ptr", &format_args!("{:#x}", self.slice.as_raw()))
            .field("len", &self.slice.len())
            .field("stream", self.slice.stream())
            .finish()
    }
}

assert_send_sync!(CudarcView<'static, f32>, CudarcViewMut<'static, f32>);
