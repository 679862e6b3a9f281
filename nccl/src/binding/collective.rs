//! The collectives and point-to-point calls, on `cuda-safe`'s buffers and streams: each is
//! checked into a [`Prepared`] call, which a [`Communicator`] method makes at once and a
//! [`Group`](super::Group) method records for the group's end.

use std::ffi::c_void;

use super::clique::{Call, InGroup};
use super::comm::Communicator;
use super::types::{NcclType, ReduceOp};
use crate::error::nccl_queued;
use cuda_safe::Stream;
use cuda_safe::ordering::{self, wait_for};
use cuda_safe::{Buffer, DeviceSlice, DeviceSliceMut};
use cuda_safe::{Error, Result};

use nccl_sys::{cudaStream_t, ncclComm_t, ncclDataType_t, ncclRedOp_t};

/// Device memory a collective reads or writes, as NCCL sees it.
#[derive(Debug, Clone, Copy)]
pub struct View<'a> {
    /// The device address (a `CUdeviceptr`).
    ptr: u64,
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

/// Keeps the collective traits to `cuda-safe`'s memory types: a [`View`]'s length counts
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
/// use cuda_safe_nccl::{CollectiveSource, NcclType, View};
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

/// The view of `slice`'s memory.
#[inline]
fn slice_view<T: NcclType>(slice: DeviceSlice<'_, T>) -> View<'_> {
    View {
        ptr: slice.as_raw(),
        len: slice.len(),
        stream: slice.stream(),
        device: slice.home().unwrap_or(*slice.stream().device()).ordinal(),
    }
}

impl<T: NcclType> CollectiveSource<T> for DeviceSlice<'_, T> {
    #[inline]
    fn source(&self) -> Result<View<'_>> {
        Ok(slice_view(*self))
    }
}

impl<T: NcclType> CollectiveSource<T> for DeviceSliceMut<'_, T> {
    #[inline]
    fn source(&self) -> Result<View<'_>> {
        Ok(slice_view(self.as_slice()))
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

/// Which NCCL call a [`Prepared`] call makes, with the arguments only it takes.
#[derive(Debug, Clone, Copy)]
enum Op {
    AllReduce(ncclRedOp_t),
    Broadcast(i32),
    Reduce(ncclRedOp_t, i32),
    AllGather,
    ReduceScatter(ncclRedOp_t),
    Send(i32),
    Recv(i32),
}

/// One NCCL call, every check passed: the communicator, the stream it runs on, the memory it
/// reads (`send`) and writes (`recv`; for a send, the same view), the count and type NCCL is
/// given, and the call as the ranks of an all-GPU clique must agree on it (collectives only).
/// Made by the same functions for a [`Communicator`] method, which makes the call at once
/// ([`run`](Self::run)), and for a [`Group`](super::Group) method, which records it.
#[derive(Debug)]
pub(crate) struct Prepared<'a> {
    pub(crate) comm: &'a Communicator,
    pub(crate) stream: &'a Stream,
    send: View<'a>,
    recv: View<'a>,
    count: usize,
    data_type: ncclDataType_t,
    op: Op,
    what: Option<Call>,
}

/// A call as a [`Communicator`] or [`Group`](super::Group) method asks for it, before any
/// check: the views it reads and writes, and the arguments only it takes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Request<'a> {
    /// All-reduce of `send` into `recv` (of the same length).
    AllReduce(View<'a>, View<'a>, ReduceOp),
    /// Broadcast of rank `root`'s `send` into every rank's `recv` (of the same length).
    Broadcast(View<'a>, View<'a>, usize),
    /// Reduce of every rank's `send` into rank `root`'s `recv` (of the same length): the
    /// reduction, then the root.
    Reduce(View<'a>, View<'a>, ReduceOp, usize),
    /// All-gather of every rank's `send` into `recv` (`send` x ranks long).
    AllGather(View<'a>, View<'a>),
    /// All-gather in place: this rank's part of the buffer (at `rank x len / ranks`) gathered
    /// into every rank's buffer.
    AllGatherInPlace(View<'a>),
    /// Reduce-scatter of every rank's `send` (`recv` x ranks long) into `recv`.
    ReduceScatter(View<'a>, View<'a>, ReduceOp),
    /// Reduce-scatter in place: this rank's part of the reduction lands at `rank x len /
    /// ranks` in the buffer.
    ReduceScatterInPlace(View<'a>, ReduceOp),
    /// A send of the view to rank `peer`.
    Send(View<'a>, usize),
    /// A receive into the view from rank `peer`.
    Recv(View<'a>, usize),
}

impl<'a> Request<'a> {
    /// What NCCL is given once the request's own checks pass on `comm`: the views it reads
    /// and writes (a send's and a receive's the same one), the count, and the call. `element`
    /// (the size of a `T`) places an in-place call's part of its buffer.
    #[inline]
    fn checked(self, comm: &Communicator, element: usize) -> Result<(View<'a>, View<'a>, Op)> {
        let same = |what, send: View<'a>, recv: View<'a>| {
            same_len(what, recv.len, send.len).map(|()| (send, recv))
        };
        Ok(match self {
            Self::AllReduce(send, recv, op) => {
                let (send, recv) = same("the all-reduce's receive buffer", send, recv)?;
                (send, recv, Op::AllReduce(op.as_raw()))
            }
            Self::Broadcast(send, recv, root) => {
                let (send, recv) = same("the broadcast's receive buffer", send, recv)?;
                (
                    send,
                    recv,
                    Op::Broadcast(rank_in("a broadcast", root, comm)?),
                )
            }
            Self::Reduce(send, recv, op, root) => {
                let (send, recv) = same("the reduce's receive buffer", send, recv)?;
                let root = rank_in("a reduce", root, comm)?;
                (send, recv, Op::Reduce(op.as_raw(), root))
            }
            Self::AllGather(send, recv) => {
                let what = "the all-gather's receive buffer (send length x ranks)";
                same_len(what, recv.len, send.len.saturating_mul(comm.size()?))?;
                (send, recv, Op::AllGather)
            }
            Self::AllGatherInPlace(buffer) => {
                let own = own_part("an in-place all-gather's buffer", buffer, comm, element)?;
                (own, buffer, Op::AllGather)
            }
            Self::ReduceScatter(send, recv, op) => {
                let what = "the reduce-scatter's send buffer (receive length x ranks)";
                same_len(what, send.len, recv.len.saturating_mul(comm.size()?))?;
                (send, recv, Op::ReduceScatter(op.as_raw()))
            }
            Self::ReduceScatterInPlace(buffer, op) => {
                let own = own_part("an in-place reduce-scatter's buffer", buffer, comm, element)?;
                (buffer, own, Op::ReduceScatter(op.as_raw()))
            }
            Self::Send(view, peer) => (
                view,
                view,
                Op::Send(rank_in("a send to a peer", peer, comm)?),
            ),
            Self::Recv(view, peer) => (
                view,
                view,
                Op::Recv(rank_in("a receive from a peer", peer, comm)?),
            ),
        })
    }
}

/// `rank` as NCCL takes it, refused past `comm`'s last rank.
fn rank_in(what: &str, rank: usize, comm: &Communicator) -> Result<i32> {
    check_root(what, rank, comm.size()?)?;
    c_rank(rank)
}

/// This rank's part of `buffer` split in one equal part per rank of `comm` (of `element`-byte
/// elements).
fn own_part<'a>(
    what: &str,
    buffer: View<'a>,
    comm: &Communicator,
    element: usize,
) -> Result<View<'a>> {
    let (rank, ranks) = comm.shape()?;
    let part = per_rank(what, buffer.len, ranks)?;
    Ok(buffer.part(rank * part, part, element))
}

impl<'a> Prepared<'a> {
    /// The call `request` asks for, on `T`s, after its own checks and those every call makes:
    /// the communicator not aborted, the views and the stream on its device.
    #[inline]
    pub(crate) fn new<T: NcclType>(
        comm: &'a Communicator,
        request: Request<'a>,
        stream: &'a Stream,
    ) -> Result<Self> {
        let (send, recv, op) = request.checked(comm, size_of::<T>())?;
        // The count NCCL is given: the part one rank sends or receives.
        let count = match op {
            Op::AllGather => send.len,
            _ => recv.len,
        };
        comm.handle()?;
        let device = comm.device().ordinal();
        if stream.device().ordinal() != device || send.device != device || recv.device != device {
            return Err(wrong_device(device, stream, &[send, recv]));
        }
        let call = |kind, op: Option<ncclRedOp_t>, root: Option<i32>| Call {
            kind,
            count,
            data_type: T::DATA_TYPE.0,
            op: op.map(|op| op.0),
            root: root.map(|root| root as usize),
        };
        let what = match op {
            Op::AllReduce(reduce) => Some(call("all-reduce", Some(reduce), None)),
            Op::Broadcast(root) => Some(call("broadcast", None, Some(root))),
            Op::Reduce(reduce, root) => Some(call("reduce", Some(reduce), Some(root))),
            Op::AllGather => Some(call("all-gather", None, None)),
            Op::ReduceScatter(reduce) => Some(call("reduce-scatter", Some(reduce), None)),
            Op::Send(_) | Op::Recv(_) => None,
        };
        Ok(Self {
            comm,
            stream,
            send,
            recv,
            count,
            data_type: T::DATA_TYPE,
            op,
            what,
        })
    }

    /// The call as a group checks it against the other ranks of its all-GPU clique.
    pub(crate) fn in_group(&self) -> Option<InGroup<'_>> {
        let (clique, rank) = self.comm.inner().clique.as_ref()?;
        Some(InGroup {
            clique,
            rank: *rank,
            call: self.what?,
        })
    }

    /// Makes the call now, alone: checked against the other ranks of an all-GPU clique, and
    /// ordered with the views' own streams as a launch is (it waits for their queued work,
    /// and their later work waits for it). On a non-blocking communicator, the call is waited
    /// for until NCCL has queued it, before the streams are ordered after it.
    #[inline]
    pub(crate) fn run(self) -> Result<()> {
        if let (Some((clique, rank)), Some(what)) = (&self.comm.inner().clique, self.what) {
            clique.check(*rank, what)?;
        }
        let raw = self.comm.handle()?;
        // The views' streams are ordered after the call even when the wait failed: the
        // communicator was then aborted, so NCCL queues nothing more on the stream. A refused
        // call queued nothing.
        ordering::ordered(
            self.stream,
            [Some(self.send.stream), Some(self.recv.stream)],
            || self.call_and_settle(raw),
        )
    }

    /// The NCCL call, and on `ncclInProgress` (a non-blocking communicator) the wait until
    /// NCCL has queued it ([`Communicator::settle`], which aborts the communicator when it
    /// fails).
    #[inline]
    fn call_and_settle(&self, raw: ncclComm_t) -> Result<()> {
        if self.call(raw)? {
            self.comm.settle()?;
        }
        Ok(())
    }

    /// Makes the call's stream wait for the views' own streams' queued work, before the call.
    pub(crate) fn order_before(&self) -> Result<()> {
        wait_for(self.stream, self.send.stream)?;
        wait_for(self.stream, self.recv.stream)
    }

    /// Makes the views' own streams' later work wait for the call, once NCCL has queued it.
    pub(crate) fn order_after(&self) -> Result<()> {
        wait_for(self.send.stream, self.stream)?;
        wait_for(self.recv.stream, self.stream)
    }

    /// The NCCL call on `raw` (this call's communicator's handle): `Ok(true)` when NCCL
    /// answered `ncclInProgress` (a non-blocking communicator, or inside a group of one).
    pub(crate) fn call(&self, raw: ncclComm_t) -> Result<bool> {
        let nccl = self.comm.inner().nccl;
        let stream = self.stream.as_raw() as cudaStream_t;
        let (send, recv) = (self.send.ptr(), self.recv.ptr_mut());
        let (count, data_type) = (self.count, self.data_type);
        // SAFETY: `send` and `recv` are device memory of the communicator's device holding
        // what the call reads and writes (`count` elements of the type, times the ranks for
        // all-gather's `recv` and reduce-scatter's `send`: checked when prepared), borrowed
        // (`recv` exclusively) until the call is ordered before any later use or free of them:
        // for `'a` by the caller of a Communicator method, for the whole group by a Group's.
        unsafe {
            match self.op {
                Op::AllReduce(op) => nccl_queued!(
                    nccl,
                    ncclAllReduce(send, recv, count, data_type, op, raw, stream)
                ),
                Op::Broadcast(root) => nccl_queued!(
                    nccl,
                    ncclBroadcast(send, recv, count, data_type, root, raw, stream)
                ),
                Op::Reduce(op, root) => nccl_queued!(
                    nccl,
                    ncclReduce(send, recv, count, data_type, op, root, raw, stream)
                ),
                Op::AllGather => nccl_queued!(
                    nccl,
                    ncclAllGather(send, recv, count, data_type, raw, stream)
                ),
                Op::ReduceScatter(op) => nccl_queued!(
                    nccl,
                    ncclReduceScatter(send, recv, count, data_type, op, raw, stream)
                ),
                Op::Send(peer) => {
                    nccl_queued!(nccl, ncclSend(send, count, data_type, peer, raw, stream))
                }
                Op::Recv(peer) => {
                    nccl_queued!(nccl, ncclRecv(recv, count, data_type, peer, raw, stream))
                }
            }
        }
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
