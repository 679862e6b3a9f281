//! The collectives and point-to-point calls, on this crate's buffers and streams.

use std::ffi::c_void;

use super::clique::Call;
use super::comm::Communicator;
use super::group::{defer_ordering, in_group, note_clique};
use super::types::{NcclType, ReduceOp};
use crate::error::{Error, Result, nccl};
use crate::memory::{Buffer, DeviceSlice, DeviceSliceMut};
use crate::nccl_sys::{cudaStream_t, ncclComm_t};
use crate::ordering::ForeignStreams;
use crate::stream::Stream;
use crate::sys::CUdeviceptr;

/// Device memory a collective reads or writes, as NCCL sees it.
#[derive(Debug, Clone, Copy)]
pub struct View<'a> {
    ptr: CUdeviceptr,
    len: usize,
    stream: &'a Stream,
    device: usize,
}

impl View<'_> {
    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the view holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device (ordinal) whose memory this is.
    pub fn device(&self) -> usize {
        self.device
    }

    fn ptr(&self) -> *const c_void {
        self.ptr as *const c_void
    }

    fn ptr_mut(&self) -> *mut c_void {
        self.ptr as *mut c_void
    }

    /// Elements `start..start + len` (in bounds: the callers checked).
    fn part(&self, start: usize, len: usize, element: usize) -> Self {
        Self {
            ptr: self.ptr + (start * element) as u64,
            len,
            ..*self
        }
    }
}

/// Keeps the collective traits to this crate's memory types: a [`View`]'s length counts
/// elements of the `T` it was made for, so an outside implementation returning another
/// type's view (a `DeviceSlice<f32>` as `u64`s) would have NCCL read and write past the memory,
/// and one making a shared slice a target would have NCCL write through a shared borrow.
mod sealed {
    pub trait Source<T> {}

    impl<T: super::NcclType> Source<T> for super::DeviceSlice<'_, T> {}
    impl<T: super::NcclType> Source<T> for super::DeviceSliceMut<'_, T> {}
    impl<T: super::NcclType> Source<T> for super::Buffer {}

    pub trait Target<T> {}

    impl<T: super::NcclType> Target<T> for super::DeviceSliceMut<'_, T> {}
    impl<T: super::NcclType> Target<T> for super::Buffer {}
}

/// Memory a collective reads: a [`DeviceSlice`], a [`DeviceSliceMut`], or a [`Buffer`] of
/// `T`s (whose byte size must hold whole, aligned elements). Its stream orders it as a launch
/// orders its buffers: the collective waits for the stream's queued work and the stream's
/// later work waits for the collective.
///
/// The trait is sealed: only those three types implement it, so a view's length always
/// counts `T`s.
///
/// ```compile_fail,E0277
/// use cuda_safe::nccl::{CollectiveSource, NcclType, View};
/// use cuda_safe::nccl_sys::ncclDataType_t;
/// use cuda_safe::{DeviceSlice, Result};
///
/// #[derive(Clone, Copy)]
/// #[repr(transparent)]
/// struct Wide(f64);
/// // SAFETY: an f64 in the same layout.
/// unsafe impl bytemuck::Zeroable for Wide {}
/// // SAFETY: as above.
/// unsafe impl bytemuck::Pod for Wide {}
/// // SAFETY: as above.
/// unsafe impl NcclType for Wide {
///     const DATA_TYPE: ncclDataType_t = ncclDataType_t::ncclFloat64;
/// }
/// // An f32 slice's length passed off as a count of 8-byte elements: refused.
/// impl CollectiveSource<Wide> for DeviceSlice<'_, f32> {
///     fn source(&self) -> Result<View<'_>> {
///         CollectiveSource::<f32>::source(self)
///     }
/// }
/// ```
pub trait CollectiveSource<T: NcclType>: sealed::Source<T> {
    /// The view NCCL reads.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a buffer that does not hold whole, aligned `T`s or is not
    /// device memory.
    fn source(&self) -> Result<View<'_>>;
}

/// Memory a collective writes (and, in place, reads): a [`DeviceSliceMut`] or a [`Buffer`]
/// (sealed, as [`CollectiveSource`]).
pub trait CollectiveTarget<T: NcclType>: CollectiveSource<T> + sealed::Target<T> {
    /// The view NCCL writes.
    ///
    /// # Errors
    ///
    /// As [`CollectiveSource::source`].
    fn target(&mut self) -> Result<View<'_>>;
}

impl<T: NcclType> CollectiveSource<T> for DeviceSlice<'_, T> {
    #[inline]
    fn source(&self) -> Result<View<'_>> {
        Ok(View {
            ptr: self.as_raw(),
            len: self.len(),
            stream: self.stream(),
            device: self.stream().device().ordinal(),
        })
    }
}

impl<T: NcclType> CollectiveSource<T> for DeviceSliceMut<'_, T> {
    #[inline]
    fn source(&self) -> Result<View<'_>> {
        Ok(View {
            ptr: self.as_raw(),
            len: self.len(),
            stream: self.stream(),
            device: self.stream().device().ordinal(),
        })
    }
}

impl<T: NcclType> CollectiveTarget<T> for DeviceSliceMut<'_, T> {
    #[inline]
    fn target(&mut self) -> Result<View<'_>> {
        CollectiveSource::<T>::source(self)
    }
}

impl<T: NcclType> CollectiveSource<T> for Buffer {
    #[inline]
    fn source(&self) -> Result<View<'_>> {
        if !self.is_device_accessible() {
            return Err(Error::invalid_argument(
                "NCCL works on device memory; this buffer is host memory",
            ));
        }
        let len = self.as_slice::<T>()?.len();
        let device = self
            .memory_resource()
            .device()
            .unwrap_or(*self.stream().device())
            .ordinal();
        Ok(View {
            ptr: self.as_raw(),
            len,
            stream: self.stream(),
            device,
        })
    }
}

impl<T: NcclType> CollectiveTarget<T> for Buffer {
    #[inline]
    fn target(&mut self) -> Result<View<'_>> {
        CollectiveSource::<T>::source(self)
    }
}

/// Refuses `len` unless it equals `expected`.
fn same_len(what: &str, len: usize, expected: usize) -> Result<()> {
    if len != expected {
        return Err(Error::invalid_argument(format!(
            "{what} holds {len} elements, expected {expected}"
        )));
    }
    Ok(())
}

/// Refuses `root` past the last rank.
fn check_root(what: &str, root: usize, ranks: usize) -> Result<()> {
    if root >= ranks {
        return Err(Error::invalid_argument(format!(
            "{what} of rank {root} in a communicator of {ranks} ranks"
        )));
    }
    Ok(())
}

/// `len` split in `ranks` equal parts: the part's length.
fn per_rank(what: &str, len: usize, ranks: usize) -> Result<usize> {
    if ranks == 0 || !len.is_multiple_of(ranks) {
        return Err(Error::invalid_argument(format!(
            "{what} of {len} elements does not split into {ranks} equal parts, one per rank"
        )));
    }
    Ok(len / ranks)
}

/// `value` as a C `int` (a rank).
fn c_rank(value: usize) -> Result<i32> {
    i32::try_from(value)
        .map_err(|_| Error::invalid_argument(format!("rank {value} is past i32::MAX")))
}

impl Communicator {
    /// Queues `call` (an NCCL function taking the communicator and the stream) on `stream`,
    /// after the checks every call makes: the views and the stream on this rank's device, a
    /// collective (`what`) matching the other ranks' of an all-GPU clique, and the views' own
    /// streams ordered around it as a launch's buffers are (at the group's end, inside one).
    #[inline]
    fn enqueue(
        &self,
        what: Option<Call>,
        stream: &Stream,
        views: &[View<'_>],
        call: impl FnOnce(ncclComm_t, cudaStream_t) -> Result<()>,
    ) -> Result<()> {
        let raw = self.handle()?;
        let inner = self.inner();
        let device = inner.device.ordinal();
        if stream.device().ordinal() != device || views.iter().any(|view| view.device != device) {
            return Err(wrong_device(device, stream, views));
        }
        if let (Some((clique, rank)), Some(what)) = (&inner.clique, what) {
            clique.check(*rank, what)?;
            if in_group() {
                note_clique(clique);
            }
        }
        let c_stream = stream.as_raw() as cudaStream_t;
        let foreign = ForeignStreams::any(stream, |each| {
            views.iter().for_each(|view| each(view.stream))
        });
        if !foreign {
            return call(raw, c_stream);
        }
        let others = ForeignStreams::gather(stream, |each| {
            views.iter().for_each(|view| each(view.stream))
        });
        others.before_launch(stream)?;
        call(raw, c_stream)?;
        if in_group() {
            let waiters = views
                .iter()
                .filter(|view| !view.stream.same_as(stream))
                .map(|view| view.stream.clone())
                .collect();
            defer_ordering(stream, waiters);
            Ok(())
        } else {
            others.after_launch(stream)
        }
    }

    /// All-reduce (`ncclAllReduce`): every rank's `recv` gets the reduction of every rank's
    /// `send`, element by element. `send` and `recv` hold the same number of elements on
    /// every rank.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for lengths that differ, memory or a stream of another
    /// device, or (all-GPU communicators) a call unlike the other ranks'; NCCL's error.
    #[doc(alias = "ncclAllReduce")]
    pub fn all_reduce<T: NcclType>(
        &self,
        send: &(impl CollectiveSource<T> + ?Sized),
        recv: &mut (impl CollectiveTarget<T> + ?Sized),
        op: ReduceOp,
        stream: &Stream,
    ) -> Result<()> {
        let send = send.source()?;
        let recv = recv.target()?;
        same_len("the all-reduce's receive buffer", recv.len, send.len)?;
        self.all_reduce_views::<T>(send, recv, op, stream)
    }

    /// All-reduce in place: `buffer` becomes the reduction of every rank's `buffer`.
    ///
    /// # Errors
    ///
    /// As [`all_reduce`](Self::all_reduce).
    #[doc(alias = "ncclAllReduce")]
    #[inline]
    pub fn all_reduce_in_place<T: NcclType>(
        &self,
        buffer: &mut (impl CollectiveTarget<T> + ?Sized),
        op: ReduceOp,
        stream: &Stream,
    ) -> Result<()> {
        let view = buffer.target()?;
        self.all_reduce_views::<T>(view, view, op, stream)
    }

    #[inline]
    fn all_reduce_views<T: NcclType>(
        &self,
        send: View<'_>,
        recv: View<'_>,
        op: ReduceOp,
        stream: &Stream,
    ) -> Result<()> {
        let what = Call {
            kind: "all-reduce",
            count: recv.len,
            data_type: T::DATA_TYPE.0,
            op: Some(op.as_raw().0),
            root: None,
        };
        let nccl = self.inner().nccl;
        self.enqueue(Some(what), stream, &[send, recv], |comm, c_stream| {
            // SAFETY: both views are device memory of this rank's device holding `len`
            // elements of `T`, alive and unaliased by the borrows for the call; NCCL's work
            // is ordered on `stream` before any later use or free of them.
            unsafe {
                nccl!(
                    nccl,
                    ncclAllReduce(
                        send.ptr(),
                        recv.ptr_mut(),
                        recv.len,
                        T::DATA_TYPE,
                        op.as_raw(),
                        comm,
                        c_stream
                    )
                )
            }
        })
    }

    /// Broadcast (`ncclBroadcast`): every rank's `recv` gets rank `root`'s `send` (only the
    /// root's `send` is read). `send` and `recv` hold the same number of elements.
    ///
    /// # Errors
    ///
    /// As [`all_reduce`](Self::all_reduce); [`Error::InvalidArgument`] for a root past the last
    /// rank.
    #[doc(alias = "ncclBroadcast")]
    pub fn broadcast<T: NcclType>(
        &self,
        send: &(impl CollectiveSource<T> + ?Sized),
        recv: &mut (impl CollectiveTarget<T> + ?Sized),
        root: usize,
        stream: &Stream,
    ) -> Result<()> {
        let send = send.source()?;
        let recv = recv.target()?;
        same_len("the broadcast's receive buffer", recv.len, send.len)?;
        self.broadcast_views::<T>(send, recv, root, stream)
    }

    /// Broadcast in place: every rank's `buffer` becomes rank `root`'s.
    ///
    /// # Errors
    ///
    /// As [`broadcast`](Self::broadcast).
    #[doc(alias = "ncclBroadcast")]
    pub fn broadcast_in_place<T: NcclType>(
        &self,
        buffer: &mut (impl CollectiveTarget<T> + ?Sized),
        root: usize,
        stream: &Stream,
    ) -> Result<()> {
        let view = buffer.target()?;
        self.broadcast_views::<T>(view, view, root, stream)
    }

    fn broadcast_views<T: NcclType>(
        &self,
        send: View<'_>,
        recv: View<'_>,
        root: usize,
        stream: &Stream,
    ) -> Result<()> {
        let ranks = self.size()?;
        check_root("a broadcast", root, ranks)?;
        let c_root = c_rank(root)?;
        let what = Call {
            kind: "broadcast",
            count: recv.len,
            data_type: T::DATA_TYPE.0,
            op: None,
            root: Some(root),
        };
        let nccl = self.inner().nccl;
        self.enqueue(Some(what), stream, &[send, recv], |comm, c_stream| {
            // SAFETY: as in all_reduce_views.
            unsafe {
                nccl!(
                    nccl,
                    ncclBroadcast(
                        send.ptr(),
                        recv.ptr_mut(),
                        recv.len,
                        T::DATA_TYPE,
                        c_root,
                        comm,
                        c_stream
                    )
                )
            }
        })
    }

    /// Reduce (`ncclReduce`): rank `root`'s `recv` gets the reduction of every rank's `send`
    /// (the other ranks' `recv` is untouched). `send` and `recv` hold the same number of
    /// elements.
    ///
    /// # Errors
    ///
    /// As [`broadcast`](Self::broadcast).
    #[doc(alias = "ncclReduce")]
    pub fn reduce<T: NcclType>(
        &self,
        send: &(impl CollectiveSource<T> + ?Sized),
        recv: &mut (impl CollectiveTarget<T> + ?Sized),
        op: ReduceOp,
        root: usize,
        stream: &Stream,
    ) -> Result<()> {
        let send = send.source()?;
        let recv = recv.target()?;
        same_len("the reduce's receive buffer", recv.len, send.len)?;
        self.reduce_views::<T>(send, recv, op, root, stream)
    }

    /// Reduce in place: rank `root`'s `buffer` becomes the reduction of every rank's.
    ///
    /// # Errors
    ///
    /// As [`broadcast`](Self::broadcast).
    #[doc(alias = "ncclReduce")]
    pub fn reduce_in_place<T: NcclType>(
        &self,
        buffer: &mut (impl CollectiveTarget<T> + ?Sized),
        op: ReduceOp,
        root: usize,
        stream: &Stream,
    ) -> Result<()> {
        let view = buffer.target()?;
        self.reduce_views::<T>(view, view, op, root, stream)
    }

    fn reduce_views<T: NcclType>(
        &self,
        send: View<'_>,
        recv: View<'_>,
        op: ReduceOp,
        root: usize,
        stream: &Stream,
    ) -> Result<()> {
        let ranks = self.size()?;
        check_root("a reduce", root, ranks)?;
        let c_root = c_rank(root)?;
        let what = Call {
            kind: "reduce",
            count: recv.len,
            data_type: T::DATA_TYPE.0,
            op: Some(op.as_raw().0),
            root: Some(root),
        };
        let nccl = self.inner().nccl;
        self.enqueue(Some(what), stream, &[send, recv], |comm, c_stream| {
            // SAFETY: as in all_reduce_views.
            unsafe {
                nccl!(
                    nccl,
                    ncclReduce(
                        send.ptr(),
                        recv.ptr_mut(),
                        recv.len,
                        T::DATA_TYPE,
                        op.as_raw(),
                        c_root,
                        comm,
                        c_stream
                    )
                )
            }
        })
    }

    /// All-gather (`ncclAllGather`): every rank's `recv` gets every rank's `send`, rank by
    /// rank; `recv` holds `send.len() * size()` elements.
    ///
    /// # Errors
    ///
    /// As [`all_reduce`](Self::all_reduce).
    #[doc(alias = "ncclAllGather")]
    pub fn all_gather<T: NcclType>(
        &self,
        send: &(impl CollectiveSource<T> + ?Sized),
        recv: &mut (impl CollectiveTarget<T> + ?Sized),
        stream: &Stream,
    ) -> Result<()> {
        let ranks = self.size()?;
        let send = send.source()?;
        let recv = recv.target()?;
        let expected = send.len.saturating_mul(ranks);
        same_len(
            "the all-gather's receive buffer (send length x ranks)",
            recv.len,
            expected,
        )?;
        self.all_gather_views::<T>(send, recv, stream)
    }

    /// All-gather in place: `buffer` holds one part per rank, and this rank's part (at
    /// `rank() * len / size()`) is gathered into every rank's `buffer`.
    ///
    /// # Errors
    ///
    /// As [`all_gather`](Self::all_gather); [`Error::InvalidArgument`] when the buffer does not
    /// split into equal parts.
    #[doc(alias = "ncclAllGather")]
    pub fn all_gather_in_place<T: NcclType>(
        &self,
        buffer: &mut (impl CollectiveTarget<T> + ?Sized),
        stream: &Stream,
    ) -> Result<()> {
        let (rank, ranks) = self.shape()?;
        let recv = buffer.target()?;
        let part = per_rank("an in-place all-gather's buffer", recv.len, ranks)?;
        let send = recv.part(rank * part, part, size_of::<T>());
        self.all_gather_views::<T>(send, recv, stream)
    }

    fn all_gather_views<T: NcclType>(
        &self,
        send: View<'_>,
        recv: View<'_>,
        stream: &Stream,
    ) -> Result<()> {
        let what = Call {
            kind: "all-gather",
            count: send.len,
            data_type: T::DATA_TYPE.0,
            op: None,
            root: None,
        };
        let nccl = self.inner().nccl;
        self.enqueue(Some(what), stream, &[send, recv], |comm, c_stream| {
            // SAFETY: as in all_reduce_views; `recv` holds `send.len` elements per rank.
            unsafe {
                nccl!(
                    nccl,
                    ncclAllGather(
                        send.ptr(),
                        recv.ptr_mut(),
                        send.len,
                        T::DATA_TYPE,
                        comm,
                        c_stream
                    )
                )
            }
        })
    }

    /// Reduce-scatter (`ncclReduceScatter`): the reduction of every rank's `send` is split in
    /// one part per rank, and rank i's `recv` gets part i; `send` holds `recv.len() * size()`
    /// elements.
    ///
    /// # Errors
    ///
    /// As [`all_reduce`](Self::all_reduce).
    #[doc(alias = "ncclReduceScatter")]
    pub fn reduce_scatter<T: NcclType>(
        &self,
        send: &(impl CollectiveSource<T> + ?Sized),
        recv: &mut (impl CollectiveTarget<T> + ?Sized),
        op: ReduceOp,
        stream: &Stream,
    ) -> Result<()> {
        let ranks = self.size()?;
        let send = send.source()?;
        let recv = recv.target()?;
        let expected = recv.len.saturating_mul(ranks);
        same_len(
            "the reduce-scatter's send buffer (receive length x ranks)",
            send.len,
            expected,
        )?;
        self.reduce_scatter_views::<T>(send, recv, op, stream)
    }

    /// Reduce-scatter in place: `buffer` is reduced across ranks, and this rank's part of the
    /// result lands at `rank() * len / size()` in its `buffer`.
    ///
    /// # Errors
    ///
    /// As [`all_gather_in_place`](Self::all_gather_in_place).
    #[doc(alias = "ncclReduceScatter")]
    pub fn reduce_scatter_in_place<T: NcclType>(
        &self,
        buffer: &mut (impl CollectiveTarget<T> + ?Sized),
        op: ReduceOp,
        stream: &Stream,
    ) -> Result<()> {
        let (rank, ranks) = self.shape()?;
        let send = buffer.target()?;
        let part = per_rank("an in-place reduce-scatter's buffer", send.len, ranks)?;
        let recv = send.part(rank * part, part, size_of::<T>());
        self.reduce_scatter_views::<T>(send, recv, op, stream)
    }

    fn reduce_scatter_views<T: NcclType>(
        &self,
        send: View<'_>,
        recv: View<'_>,
        op: ReduceOp,
        stream: &Stream,
    ) -> Result<()> {
        let what = Call {
            kind: "reduce-scatter",
            count: recv.len,
            data_type: T::DATA_TYPE.0,
            op: Some(op.as_raw().0),
            root: None,
        };
        let nccl = self.inner().nccl;
        self.enqueue(Some(what), stream, &[send, recv], |comm, c_stream| {
            // SAFETY: as in all_reduce_views; `send` holds `recv.len` elements per rank.
            unsafe {
                nccl!(
                    nccl,
                    ncclReduceScatter(
                        send.ptr(),
                        recv.ptr_mut(),
                        recv.len,
                        T::DATA_TYPE,
                        op.as_raw(),
                        comm,
                        c_stream
                    )
                )
            }
        })
    }

    /// Sends `send` to rank `peer` (`ncclSend`), which receives it with
    /// [`recv`](Self::recv) of the same length and type. A send and a receive that must
    /// progress together go inside one [`group`](super::group).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a peer past the last rank or memory of another device;
    /// NCCL's error.
    #[doc(alias = "ncclSend")]
    pub fn send<T: NcclType>(
        &self,
        send: &(impl CollectiveSource<T> + ?Sized),
        peer: usize,
        stream: &Stream,
    ) -> Result<()> {
        check_root("a send to a peer", peer, self.size()?)?;
        let c_peer = c_rank(peer)?;
        let view = send.source()?;
        let nccl = self.inner().nccl;
        self.enqueue(None, stream, &[view], |comm, c_stream| {
            // SAFETY: `view` is device memory of this rank's device holding `len` elements of
            // `T`, alive for the call and ordered on `stream` after it.
            unsafe {
                nccl!(
                    nccl,
                    ncclSend(view.ptr(), view.len, T::DATA_TYPE, c_peer, comm, c_stream)
                )
            }
        })
    }

    /// Receives into `recv` what rank `peer` sends (`ncclRecv`).
    ///
    /// # Errors
    ///
    /// As [`send`](Self::send).
    #[doc(alias = "ncclRecv")]
    pub fn recv<T: NcclType>(
        &self,
        recv: &mut (impl CollectiveTarget<T> + ?Sized),
        peer: usize,
        stream: &Stream,
    ) -> Result<()> {
        check_root("a receive from a peer", peer, self.size()?)?;
        let c_peer = c_rank(peer)?;
        let view = recv.target()?;
        let nccl = self.inner().nccl;
        self.enqueue(None, stream, &[view], |comm, c_stream| {
            // SAFETY: as in `send`; the receive buffer is borrowed exclusively.
            unsafe {
                nccl!(
                    nccl,
                    ncclRecv(
                        view.ptr_mut(),
                        view.len,
                        T::DATA_TYPE,
                        c_peer,
                        comm,
                        c_stream
                    )
                )
            }
        })
    }
}

/// The error for memory or a stream on another device than the communicator's.
#[cold]
fn wrong_device(device: usize, stream: &Stream, views: &[View<'_>]) -> Error {
    let stream_device = stream.device().ordinal();
    let other = views
        .iter()
        .map(|view| view.device)
        .find(|other| *other != device)
        .unwrap_or(stream_device);
    Error::invalid_argument(format!(
        "the communicator's rank runs on device {device}, but its {} is on device {other}",
        if stream_device != device {
            "stream"
        } else {
            "memory"
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_roots_and_parts_are_checked() {
        assert!(same_len("x", 4, 4).is_ok());
        let error = same_len("the all-gather's receive buffer", 6, 8).unwrap_err();
        assert!(
            error.to_string().contains("holds 6 elements, expected 8"),
            "{error}"
        );
        assert!(check_root("a broadcast", 1, 2).is_ok());
        assert!(check_root("a broadcast", 2, 2).is_err());
        assert_eq!(per_rank("b", 12, 4).unwrap(), 3);
        assert_eq!(per_rank("b", 0, 2).unwrap(), 0);
        assert!(per_rank("b", 13, 4).is_err());
        assert!(per_rank("b", 4, 0).is_err());
        assert!(c_rank(usize::MAX).is_err());
    }
}
