//! The completions of `cuda-safe`'s types: a stream's queued work, an event, a buffer's
//! download and upload, a graph launch and (feature `nccl`) a collective.

use bytemuck::Pod;

use crate::futures::{Completion, Download};
use crate::pinned::PinnedDownload;
use crate::shared::{Core, Mark, Reactor};
use crate::staging::Staging;
use crate::waiter::{Report, Waiter, refuse_capturing};
use cuda_safe::{Buffer, Error, Event, GraphExec, PinnedBlock, Result, Stream};
#[cfg(feature = "nccl")]
use cuda_safe_nccl::Communicator;

/// The completion futures of a stream: `stream.completion().await` (`use cuda_safe_async::StreamExt;`).
pub trait StreamExt: sealed::Sealed {
    /// A future that resolves once the work queued on this stream so far has finished: the
    /// awaitable [`sync`](cuda_safe::Stream::sync). No thread blocks meanwhile (see
    /// [the crate's documentation](crate) for how the wait is watched).
    ///
    #[doc = cuda_sys::api_doc!(cuEventRecord)]
    #[doc = cuda_sys::api_doc!(cuEventQuery)]
    /// # Errors
    ///
    /// The future resolves to: [`Error::InvalidArgument`] for a stream being captured (wait on
    /// the graph's launch instead); the driver's error (a kernel fault, another sticky
    /// error); [`Error::CallbackPanicked`] when a host function of the stream panicked, as
    /// `sync` reports it.
    #[doc(alias = "cuEventRecord", alias = "cuEventQuery")]
    fn completion(&self) -> Completion;

    /// As [`completion`](Self::completion), keeping `keep` alive until the work has finished
    /// and resolving to it: move the buffers a launch uses here, and dropping the future
    /// cannot free them while the GPU still uses them.
    ///
    /// ```no_run
    /// # use cuda_safe_async::StreamExt;
    /// # async fn run(stream: cuda_safe::Stream, x: cuda_safe::Buffer) -> cuda_safe::Result<()> {
    /// // ... queue kernels that use `x` on `stream` ...
    /// let x = stream.completion_with(x).await?; // handed back once the kernels are done
    /// # drop(x); Ok(()) }
    /// ```
    ///
    #[doc = cuda_sys::api_doc!(cuEventRecord)]
    #[doc = cuda_sys::api_doc!(cuEventQuery)]
    /// # Errors
    ///
    /// As [`completion`](Self::completion); `keep` is dropped then (or, when the failure says
    /// nothing of the GPU's progress, kept for the rest of the process and the leak logged).
    #[doc(alias = "cuEventRecord", alias = "cuEventQuery")]
    fn completion_with<T: Send + 'static>(&self, keep: T) -> Completion<T>;
}

impl sealed::Sealed for Stream {}

impl StreamExt for Stream {
    fn completion(&self) -> Completion {
        self.completion_with(())
    }

    fn completion_with<T: Send + 'static>(&self, keep: T) -> Completion<T> {
        let report = Report {
            stream: Some(self.clone()),
            graph: None,
        };
        Completion::new(
            Waiter::on_stream(Reactor::shared(), self, report, None, false),
            keep,
        )
    }
}

/// The completion futures of an event: `event.into_completion().await` (`use cuda_safe_async::EventExt;`).
pub trait EventExt: sealed::Sealed {
    /// A future that resolves, handing the event back, once the work before its last record
    /// has finished (at once if it was never recorded): the awaitable [`sync`](cuda_safe::Event::sync).
    ///
    #[doc = cuda_sys::api_doc!(cuEventQuery)]
    /// # Errors
    ///
    /// The future resolves to the driver's error (a kernel fault, another sticky error).
    #[doc(alias = "cuEventQuery")]
    fn into_completion(self) -> Completion<Event>;
}

impl sealed::Sealed for Event {}

impl EventExt for Event {
    fn into_completion(self) -> Completion<Event> {
        let reactor = Reactor::shared();
        let waiter = if self.is_recorded() {
            let mark = Mark::Borrowed {
                raw: self.as_raw(),
                context: self.context().clone(),
                driver: self.context().driver(),
            };
            // The completion keeps the event alive while the reactor watches it.
            Waiter::on_mark(reactor, mark)
        } else {
            Waiter::ready(reactor)
        };
        Completion::new(waiter, self)
    }
}

/// The completion futures of a buffer's download and upload: `buffer.to_vec_async::<f32>().await` (`use cuda_safe_async::BufferExt;`).
pub trait BufferExt: sealed::Sealed {
    /// A future that resolves to the buffer's contents as `T`s, copied once the work queued on
    /// its stream before has finished: the awaitable [`to_vec`](cuda_safe::Buffer::to_vec). The copy goes
    /// through pinned staging memory the reactor keeps for reuse, so that it never blocks the
    /// calling thread; the buffer may be dropped or reused at once (its free and later work
    /// come after the copy on its stream).
    ///
    #[doc = cuda_sys::api_doc!(cuMemcpyAsync)]
    #[doc = cuda_sys::api_doc!(cuMemHostAlloc)]
    /// # Errors
    ///
    /// The future resolves to: [`Error::InvalidArgument`] when the buffer's size is not a
    /// whole number of `T`s or its address is not aligned for `T`; the driver's error
    /// (pinned memory running out, a kernel fault); as [`Stream::completion`] for a captured
    /// stream.
    #[doc(alias = "cuMemcpyAsync", alias = "cuMemHostAlloc")]
    fn to_vec_async<T: Pod>(&self) -> Download<T>;

    /// A future that resolves to the buffer's contents as `T`s in `into`, pinned memory of the
    /// caller's ([`PinnedMemoryResource::allocate_block`](cuda_safe::PinnedMemoryResource::allocate_block)),
    /// copied there once the work queued on the buffer's stream before has finished: one copy,
    /// with no staging block and no second copy on the host. The future owns the block until
    /// the copy has finished (dropped before, it leaves the block to the reactor) and hands it
    /// back as [`PinnedValues`](crate::PinnedValues), for the next download. The buffer may be dropped or reused at
    /// once, as for [`to_vec_async`](Self::to_vec_async).
    ///
    /// ```no_run
    /// # use cuda_safe_async::BufferExt;
    /// # async fn run(x: cuda_safe::Buffer, pinned: cuda_safe::PinnedMemoryResource) -> cuda_safe::Result<()> {
    /// let block = pinned.allocate_block(x.len())?; // once, reused by every download
    /// let values = x.download_into::<f32>(block).await?;
    /// let first = values[0];
    /// let block = values.into_block(); // for the next one
    /// # drop((first, block)); Ok(()) }
    /// ```
    ///
    #[doc = cuda_sys::api_doc!(cuMemcpyAsync)]
    /// # Errors
    ///
    /// The future resolves to (the block dropped with the error): [`Error::InvalidArgument`]
    /// when the buffer's size is not a whole number of `T`s, the block holds fewer bytes than
    /// the buffer or is not aligned for `T`; the driver's error (a kernel fault); as
    /// [`Stream::completion`] for a captured stream.
    #[doc(alias = "cuMemcpyAsync")]
    fn download_into<T: Pod>(&self, into: PinnedBlock) -> PinnedDownload<T>;

    /// A future that resolves once `src`, copied at once into pinned staging memory, has been
    /// copied into the buffer (its size exactly `src`'s), in order on the buffer's stream:
    /// the asynchronous [`copy_from_host`](cuda_safe::Buffer::copy_from_host). `src` is free again as soon
    /// as this returns; awaiting the future is needed only to learn that the copy finished
    /// (dropping it is safe: the staging memory is kept until then).
    ///
    #[doc = cuda_sys::api_doc!(cuMemcpyAsync)]
    #[doc = cuda_sys::api_doc!(cuMemHostAlloc)]
    /// # Errors
    ///
    /// The future resolves to: [`Error::InvalidArgument`] when `src` holds another number of
    /// bytes than the buffer, or the buffer is not a whole number of aligned `T`s; the
    /// driver's error.
    #[doc(alias = "cuMemcpyAsync", alias = "cuMemHostAlloc")]
    fn upload_async<T: Pod>(&mut self, src: &[T]) -> Completion;
}

impl sealed::Sealed for Buffer {}

impl BufferExt for Buffer {
    fn to_vec_async<T: Pod>(&self) -> Download<T> {
        let reactor = Reactor::shared();
        match start_download::<T>(self, reactor.core) {
            Ok((len, None)) => Download::new(Waiter::ready(reactor), len),
            Ok((len, Some(staging))) => Download::new(
                Waiter::on_stream(
                    reactor,
                    self.stream(),
                    Report::default(),
                    Some(staging),
                    true,
                ),
                len,
            ),
            Err(error) => Download::new(Waiter::failed(reactor, error, None), 0),
        }
    }

    fn download_into<T: Pod>(&self, into: PinnedBlock) -> PinnedDownload<T> {
        PinnedDownload::new(self, into)
    }

    fn upload_async<T: Pod>(&mut self, src: &[T]) -> Completion {
        let reactor = Reactor::shared();
        match start_upload(self, reactor.core, src) {
            Ok(None) => Completion::new(Waiter::ready(reactor), ()),
            Ok(Some(staging)) => Completion::new(
                Waiter::on_stream(
                    reactor,
                    self.stream(),
                    Report::default(),
                    Some(staging),
                    true,
                ),
                (),
            ),
            Err(error) => Completion::new(Waiter::failed(reactor, error, None), ()),
        }
    }
}

/// The completion futures of a graph launch: `exec.launch_async(&stream).await` (`use cuda_safe_async::GraphExecExt;`).
pub trait GraphExecExt: sealed::Sealed {
    /// Launches the graph on `stream` ([`launch`](cuda_safe::GraphExec::launch)) and returns a future that
    /// resolves once the launch (and the work queued on `stream` before it) has finished;
    /// it reports a host node's panic then, rather than at the next launch.
    ///
    #[doc = cuda_sys::api_doc!(cuGraphLaunch)]
    #[doc = cuda_sys::api_doc!(cuEventQuery)]
    /// # Errors
    ///
    /// The future resolves to: [`launch`](cuda_safe::GraphExec::launch)'s errors (nothing was launched); the
    /// driver's error from the wait; [`Error::CallbackPanicked`] when a host node panicked.
    #[doc(alias = "cuGraphLaunch", alias = "cuEventQuery")]
    fn launch_async(&self, stream: &Stream) -> Completion;
}

impl sealed::Sealed for GraphExec {}

impl GraphExecExt for GraphExec {
    fn launch_async(&self, stream: &Stream) -> Completion {
        let reactor = Reactor::shared();
        if let Err(error) = self.launch(stream) {
            return Completion::new(Waiter::failed(reactor, error, None), ());
        }
        let report = Report {
            stream: None,
            graph: Some(self.panic_slot().clone()),
        };
        Completion::new(Waiter::on_stream(reactor, stream, report, None, false), ())
    }
}

#[cfg(feature = "nccl")]
#[cfg_attr(docsrs, doc(cfg(feature = "nccl")))]
/// The completion futures of an NCCL communicator's collectives on a stream: `comm.completion(&stream).await` (`use cuda_safe_async::CommunicatorExt;`).
pub trait CommunicatorExt: sealed::Sealed {
    /// A future that resolves once `stream`'s queued work, this communicator's collectives on
    /// it included, has finished: the awaitable end of a collective. The communicator's
    /// asynchronous error is checked first (on one, it is aborted, as
    /// [`async_error`](cuda_safe_nccl::Communicator::async_error) does).
    ///
    /// A collective whose peer died never finishes, so neither does its future: race it
    /// against a timer of the runtime (`tokio::time::timeout`) and [`abort`](cuda_safe_nccl::Communicator::abort) the
    /// communicator when the time runs out; its kernels then stop and the stream drains.
    ///
    #[doc = cuda_sys::api_doc!(cuEventQuery)]
    /// # Errors
    ///
    /// The future resolves to: [`Error::InvalidArgument`] inside
    /// [`group`](cuda_safe_nccl::group)'s closure (its calls are made when it returns: wait after
    /// it); [`NcclError::Async`](cuda_safe_nccl::NcclError::Async) when the communicator has failed; as
    /// [`Stream::completion`].
    #[doc(alias = "cuEventQuery")]
    fn completion(&self, stream: &Stream) -> Completion;
}

#[cfg(feature = "nccl")]
impl sealed::Sealed for Communicator {}

#[cfg(feature = "nccl")]
impl CommunicatorExt for Communicator {
    fn completion(&self, stream: &Stream) -> Completion {
        if cuda_safe_nccl::in_group() {
            let error = Error::invalid_argument(
                "Communicator::completion inside nccl::group: the group's calls are made when \
                 its closure returns, so make the completion after nccl::group",
            );
            return Completion::new(Waiter::failed(Reactor::shared(), error, None), ());
        }
        if let Err(error) = self.async_error() {
            return Completion::new(Waiter::failed(Reactor::shared(), error, Some(stream)), ());
        }
        stream.completion()
    }
}

/// Queues the copy of the contents into a staging block; the element count and the block
/// (none for an empty buffer). Nothing is queued on an error.
pub(crate) fn start_download<T: Pod>(
    buffer: &Buffer,
    core: &'static Core,
) -> Result<(usize, Option<Staging>)> {
    let source = buffer.as_slice::<T>()?;
    let len = source.len();
    if len == 0 {
        return Ok((0, None));
    }
    refuse_capturing(buffer.stream())?;
    let staging = Staging::take(core, buffer.len(), buffer.stream())?;
    // SAFETY: the block holds at least the buffer's bytes, is page-aligned (so aligned for
    // `T`) and initialized; the host does not touch it until the copy has finished (the
    // download holds it, or the reactor once the download is dropped).
    let target = unsafe { std::slice::from_raw_parts_mut(staging.as_ptr().cast::<T>(), len) };
    // SAFETY: as above: `target` stays alive and untouched until the stream has passed the
    // copy, which the download's event, recorded right after it, tells.
    unsafe { source.copy_to_host_async(target) }?;
    Ok((len, Some(staging)))
}

/// Stages `src` and queues its copy into the buffer; the block (none for nothing to copy).
/// Nothing is queued on an error.
pub(crate) fn start_upload<T: Pod>(
    buffer: &mut Buffer,
    core: &'static Core,
    src: &[T],
) -> Result<Option<Staging>> {
    let bytes = size_of_val(src);
    if bytes != buffer.len() {
        return Err(Error::invalid_argument(format!(
            "an upload of {bytes} bytes into a buffer of {} bytes",
            buffer.len()
        )));
    }
    buffer.as_slice::<T>()?;
    if bytes == 0 {
        return Ok(None);
    }
    refuse_capturing(buffer.stream())?;
    let staging = Staging::take(core, bytes, buffer.stream())?;
    // SAFETY: the block holds at least `bytes` bytes, owned by this upload; `src` is a
    // valid slice of `bytes` bytes, and the two cannot overlap (the block is the
    // reactor's).
    unsafe {
        std::ptr::copy_nonoverlapping(src.as_ptr().cast::<u8>(), staging.as_ptr(), bytes);
    }
    // SAFETY: the block holds `src.len()` initialized `T`s, page-aligned.
    let staged =
        unsafe { std::slice::from_raw_parts(staging.as_ptr().cast::<T>().cast_const(), src.len()) };
    // SAFETY: the block stays alive and unchanged until the stream has passed the copy,
    // which the upload's event, recorded right after it, tells (the future holds the
    // block, or the reactor once the future is dropped).
    unsafe { buffer.as_mut_slice::<T>()?.copy_from_host_async(staged) }?;
    Ok(Some(staging))
}

/// Keeps the extension traits to the types this crate knows.
mod sealed {
    /// The types with completion futures.
    pub trait Sealed {}
}
