//! The collective set, described once: each collective's arguments, its NCCL call and the
//! [`Request`] it makes, from which [`collectives!`] writes both the [`Communicator`] method that makes
//! the call at once and the [`Group`] method that records it.

use super::collective::{CollectiveSource, CollectiveTarget, Prepared, Request};
use super::comm::Communicator;
use super::group::Group;
use super::state::refuse_in_group;
use super::types::{NcclType, ReduceOp};
use cuda_safe::Result;
use cuda_safe::Stream;

/// Writes, for each collective, `Communicator::NAME` (refused inside a group; prepares the
/// call, then makes it) and `Group::NAME` (prepares it, then records it). An argument is
/// `source` (memory read: `&impl CollectiveSource<T>`), `target` (memory written:
/// `&mut impl CollectiveTarget<T>`) or a plain type; every method ends with the stream. The
/// part after `=>` is the [`Request`] variant and what it is given.
macro_rules! collectives {
    ($(
        $(#[doc = $doc:literal])*
        fn $name:ident($($arg:ident: $kind:tt),* $(,)?) = $c:ident $alias:literal
            => $request:ident($($pass:expr),* $(,)?);
    )*) => {
        impl Communicator {$(
            $(#[doc = $doc])*
            #[doc = nccl_sys::api_doc!($c)]
            #[doc(alias = $alias)]
            pub fn $name<T: NcclType>(
                &self,
                $($arg: collectives!(@borrowed $kind),)*
                stream: &Stream,
            ) -> Result<()> {
                refuse_in_group(stringify!($name))?;
                $(let $arg = collectives!(@view $kind $arg);)*
                Prepared::new::<T>(self, Request::$request($($pass),*), stream)?.run()
            }
        )*}

        impl<'env> Group<'env> {$(
            #[doc = concat!(
                "Records [`Communicator::", stringify!($name), "`] (`", $alias, "`) in the group, ",
                "on `comm`: the same arguments, checked now, and for the communicators of ",
                "[`Communicator::init_all`] against the other ranks' calls at the same place ",
                "in the group. Everything it uses stays borrowed until the group ends.\n\n",
                "# Errors\n\n",
                "As [`Communicator::", stringify!($name), "`] (an aborted communicator ",
                "included); nothing is recorded then.",
            )]
            #[doc(alias = $alias)]
            pub fn $name<T: NcclType>(
                &self,
                comm: &'env Communicator,
                $($arg: collectives!(@kept $kind),)*
                stream: &'env Stream,
            ) -> Result<()> {
                $(let $arg = collectives!(@view $kind $arg);)*
                self.record(Prepared::new::<T>(comm, Request::$request($($pass),*), stream)?)
            }
        )*}
    };
    (@borrowed source) => { &(impl CollectiveSource<T> + ?Sized) };
    (@borrowed target) => { &mut (impl CollectiveTarget<T> + ?Sized) };
    (@borrowed $value:ty) => { $value };
    (@kept source) => { &'env (impl CollectiveSource<T> + ?Sized) };
    (@kept target) => { &'env mut (impl CollectiveTarget<T> + ?Sized) };
    (@kept $value:ty) => { $value };
    (@view source $arg:ident) => { $arg.source()? };
    (@view target $arg:ident) => { $arg.target()? };
    (@view $value:tt $arg:ident) => { $arg };
}

collectives! {
    /// All-reduce (`ncclAllReduce`): every rank's `recv` gets the reduction of every rank's `send`,
    /// element by element. `send` and `recv` hold the same number of elements on every rank.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`](cuda_safe::Error::InvalidArgument) for lengths that differ, memory or
    /// a stream of another device, (all-GPU communicators) a call unlike the other ranks', or
    /// inside a [`group`](super::group::group) (use
    /// [`Group::all_reduce`](super::group::Group::all_reduce) there); NCCL's error; on a
    /// non-blocking communicator, as [`wait_with_timeout`](Self::wait_with_timeout) while NCCL
    /// queues the call.
    fn all_reduce(send: source, recv: target, op: ReduceOp) = ncclAllReduce "ncclAllReduce"
        => AllReduce(send, recv, op);

    /// All-reduce in place: `buffer` becomes the reduction of every rank's `buffer`.
    ///
    /// # Errors
    ///
    /// As [`all_reduce`](Self::all_reduce).
    fn all_reduce_in_place(buffer: target, op: ReduceOp) = ncclAllReduce "ncclAllReduce"
        => AllReduce(buffer, buffer, op);

    /// Broadcast (`ncclBroadcast`): every rank's `recv` gets rank `root`'s `send` (only the root's
    /// `send` is read). `send` and `recv` hold the same number of elements.
    ///
    /// # Errors
    ///
    /// As [`all_reduce`](Self::all_reduce);
    /// [`Error::InvalidArgument`](cuda_safe::Error::InvalidArgument) for a root past the last rank.
    fn broadcast(send: source, recv: target, root: usize) = ncclBroadcast "ncclBroadcast"
        => Broadcast(send, recv, root);

    /// Broadcast in place: every rank's `buffer` becomes rank `root`'s.
    ///
    /// # Errors
    ///
    /// As [`broadcast`](Self::broadcast).
    fn broadcast_in_place(buffer: target, root: usize) = ncclBroadcast "ncclBroadcast"
        => Broadcast(buffer, buffer, root);

    /// Reduce (`ncclReduce`): rank `root`'s `recv` gets the reduction of every rank's `send` (the
    /// other ranks' `recv` is untouched). `send` and `recv` hold the same number of elements.
    ///
    /// # Errors
    ///
    /// As [`broadcast`](Self::broadcast).
    fn reduce(send: source, recv: target, op: ReduceOp, root: usize) = ncclReduce "ncclReduce"
        => Reduce(send, recv, op, root);

    /// Reduce in place: rank `root`'s `buffer` becomes the reduction of every rank's.
    ///
    /// # Errors
    ///
    /// As [`broadcast`](Self::broadcast).
    fn reduce_in_place(buffer: target, op: ReduceOp, root: usize) = ncclReduce "ncclReduce"
        => Reduce(buffer, buffer, op, root);

    /// All-gather (`ncclAllGather`): every rank's `recv` gets every rank's `send`, rank by rank;
    /// `recv` holds `send.len() * size()` elements.
    ///
    /// # Errors
    ///
    /// As [`all_reduce`](Self::all_reduce).
    fn all_gather(send: source, recv: target) = ncclAllGather "ncclAllGather"
        => AllGather(send, recv);

    /// All-gather in place: `buffer` holds one part per rank, and this rank's part (at `rank() *
    /// len / size()`) is gathered into every rank's `buffer`.
    ///
    /// # Errors
    ///
    /// As [`all_gather`](Self::all_gather);
    /// [`Error::InvalidArgument`](cuda_safe::Error::InvalidArgument) when the buffer does not split
    /// into equal parts.
    fn all_gather_in_place(buffer: target) = ncclAllGather "ncclAllGather"
        => AllGatherInPlace(buffer);

    /// Reduce-scatter (`ncclReduceScatter`): the reduction of every rank's `send` is split in one
    /// part per rank, and rank i's `recv` gets part i; `send` holds `recv.len() * size()` elements.
    ///
    /// # Errors
    ///
    /// As [`all_reduce`](Self::all_reduce).
    fn reduce_scatter(send: source, recv: target, op: ReduceOp) = ncclReduceScatter "ncclReduceScatter"
        => ReduceScatter(send, recv, op);

    /// Reduce-scatter in place: `buffer` is reduced across ranks, and this rank's part of the
    /// result lands at `rank() * len / size()` in its `buffer`.
    ///
    /// # Errors
    ///
    /// As [`all_gather_in_place`](Self::all_gather_in_place).
    fn reduce_scatter_in_place(buffer: target, op: ReduceOp) = ncclReduceScatter "ncclReduceScatter"
        => ReduceScatterInPlace(buffer, op);

    /// Sends `send` to rank `peer` (`ncclSend`), which receives it with [`recv`](Self::recv) of the
    /// same length and type. A send and a receive that must progress together are recorded in one
    /// [`group`](super::group::group) ([`Group::send`](super::group::Group::send),
    /// [`Group::recv`](super::group::Group::recv)).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`](cuda_safe::Error::InvalidArgument) for a peer past the last rank,
    /// memory of another device, or inside a group; NCCL's error.
    fn send(send: source, peer: usize) = ncclSend "ncclSend"
        => Send(send, peer);

    /// Receives into `recv` what rank `peer` sends (`ncclRecv`).
    ///
    /// # Errors
    ///
    /// As [`send`](Self::send).
    fn recv(recv: target, peer: usize) = ncclRecv "ncclRecv"
        => Recv(recv, peer);
}
