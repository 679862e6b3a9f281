//! Composed operations: steps (an upload, launches, a download, copies, a graph launch, a
//! closure of the caller's on the stream) chained with [`DeviceOp::then`] into one value that
//! is submitted on its first poll, in order on one stream (a pool's pick, or one given), and
//! resolves once the GPU has passed all of it, keeping alive what it uses until then; or
//! recorded into a graph instead ([`DeviceOp::capture`]).
//!
//! ```no_run
//! use cuda_safe::{Device, LaunchConfig, ObjectCode};
//! use cuda_safe_async::{DeviceOp, PoolOptions, StreamPool, op};
//!
//! # async fn serve() -> cuda_safe::Result<()> {
//! let device = Device::new(0)?;
//! let pool = StreamPool::new(&device.context()?, PoolOptions::default())?;
//! let kernel = ObjectCode::from_file("twice.cubin")?.get_kernel("twice")?;
//! let config = LaunchConfig::for_num_elements(1024, 256)?;
//! let x = device.default_memory_resource()?.allocate_array::<f32>(1024, &pool.next())?;
//! let request = op::upload(x, vec![1.5f32; 1024])
//!     .then(move |x| {
//!         op::on_stream(x, move |x, s| {
//!             // SAFETY: twice(float*, size_t) doubles 1024 floats, which `x` holds.
//!             unsafe { s.launch(&config, &kernel, (&mut *x, 1024usize)) }
//!         })
//!     })
//!     .then(op::download::<f32>);
//! let (x, values) = request.run(&pool).await?; // nothing ran before this poll
//! assert_eq!(values.to_vec()?[0], 3.0);
//! # drop(x); Ok(()) }
//! ```

mod run;
mod steps;

use std::fmt;

use crate::shared::Core;
use crate::table::Keep;
use cuda_safe::{
    Capture, CaptureMode, Error, Graph, Kernel, KernelArgs, LaunchConfig, Result, Stream,
};

pub use run::OpFuture;
pub use steps::{
    Copy, Download, Fetched, GraphLaunch, OnStream, Upload, Value, copy, download, graph,
    on_stream, upload, value,
};

use crate::pool::StreamPool;
use run::Target;
use steps::Landing;

/// GPU work described before it is queued: submitted by [`run`](Self::run) (on a pool's
/// stream) or [`run_on`](Self::run_on) (on a stream given) at the returned future's first
/// poll, or recorded by [`capture`](Self::capture). The steps are in [`op`](crate::op);
/// [`then`](Self::then) chains them.
///
/// Every step of one operation runs in order on one stream: the buffers it is given move
/// onto that stream first ([`Buffer::set_stream`](cuda_safe::Buffer::set_stream), which
/// orders them after the work already queued on their old stream), so nothing in it needs a
/// wait of its own, and independent operations on a pool overlap.
pub trait DeviceOp: Send + Sized + 'static {
    /// What the operation resolves to: the buffers it was given, handed back, and what it
    /// brought to the host ([`Fetched`]).
    type Output: Send + 'static;

    /// Queues the operation's work on `cx`'s stream and returns its output (whose host data
    /// is readable only once the future has resolved). What the work uses goes into `cx`,
    /// which keeps it until the GPU has passed it. Called once, by the future or by
    /// [`capture`](Self::capture); a step that fails queues nothing.
    ///
    /// # Errors
    ///
    /// The step's error (checks before queuing, or the driver's).
    fn submit(self, cx: &mut Submit<'_>) -> Result<Self::Output>;

    /// This operation, then the one `next` makes of its output, on the same stream, in order:
    /// `next` runs when the operation is submitted (at the first poll), not when the GPU
    /// has finished the first part.
    fn then<B, F>(self, next: F) -> Then<Self, F>
    where
        B: DeviceOp,
        F: FnOnce(Self::Output) -> B + Send + 'static,
    {
        Then { first: self, next }
    }

    /// A future that submits the operation on the stream `pool` picks when it is first polled
    /// (nothing is queued before) and resolves to its output once the GPU has passed it.
    ///
    /// # Errors
    ///
    /// The future resolves to the first failing step's error (the steps before it stay
    /// queued, and what they use is kept until the stream has passed them: no thread waits);
    /// [`Error::InvalidArgument`] when the stream is being captured; as
    /// [`StreamExt::completion`](crate::StreamExt::completion).
    fn run(self, pool: &StreamPool) -> OpFuture<Self> {
        OpFuture::new(self, Target::Pool(pool.clone()))
    }

    /// As [`run`](Self::run), on `stream`.
    ///
    /// # Errors
    ///
    /// As [`run`](Self::run).
    fn run_on(self, stream: &Stream) -> OpFuture<Self> {
        OpFuture::new(self, Target::Stream(stream.clone()))
    }

    /// Records the operation into a new graph on `stream` instead of running it (a
    /// thread-local capture), and returns the graph and the operation's output. Launches are
    /// recorded as [`Capture::launch`] records them (the graph keeps each kernel loaded);
    /// uploads and downloads through staging memory are refused (copy from and into your own
    /// pinned buffers with [`op::copy`](copy)).
    ///
    #[doc = cuda_sys::api_doc!(cuStreamBeginCapture)]
    #[doc = cuda_sys::api_doc!(cuStreamEndCapture)]
    /// # Errors
    ///
    /// A step's error (the capture is discarded); [`Error::InvalidArgument`] for a staged
    /// upload or download; as [`Capture::begin`] and [`Capture::end`].
    ///
    /// # Safety
    ///
    /// As [`Capture::begin`]: every memory the recorded work touches (the buffers of the
    /// output among it) stays allocated while the graph, or an executable made of it, may run.
    #[doc(alias = "cuStreamBeginCapture", alias = "cuStreamEndCapture")]
    unsafe fn capture(self, stream: &Stream) -> Result<(Graph, Self::Output)> {
        // SAFETY: the caller's promise.
        let mut capture = unsafe { Capture::begin(stream, CaptureMode::ThreadLocal) }?;
        let reactor = crate::Reactor::shared();
        let mut cx = Submit::new(stream.clone(), Some(&mut capture), reactor.core);
        let output = self.submit(&mut cx)?;
        let kept = cx.into_parts().0;
        debug_assert!(kept.is_empty(), "a captured step kept a value");
        Ok((capture.end()?, output))
    }
}

/// Where an operation is being submitted: its stream, and what its queued work uses, kept
/// until the GPU has passed it. Handed to [`DeviceOp::submit`] and to the closures of
/// [`op::on_stream`](on_stream).
pub struct Submit<'a> {
    stream: Stream,
    capture: Option<&'a mut Capture>,
    core: &'static Core,
    keep: Vec<Keep>,
    landings: Vec<std::sync::Arc<Landing>>,
}

impl<'a> Submit<'a> {
    fn new(stream: Stream, capture: Option<&'a mut Capture>, core: &'static Core) -> Self {
        Self {
            stream,
            capture,
            core,
            keep: Vec::new(),
            landings: Vec::new(),
        }
    }

    /// The stream the operation runs on (or is captured from): queue its work here.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// Whether the operation is being captured into a graph rather than run.
    pub fn is_capturing(&self) -> bool {
        self.capture.is_some()
    }

    /// Launches `kernel` on the operation's stream, as [`launch`](cuda_safe::launch) does
    /// (its checks included); the operation keeps the kernel loaded until the GPU has passed
    /// it. While capturing, records the launch as [`Capture::launch`] does.
    ///
    #[doc = cuda_sys::api_doc!(cuLaunchKernel)]
    /// # Errors
    ///
    /// As [`launch`](cuda_safe::launch) (nothing is queued).
    ///
    /// # Safety
    ///
    /// As [`launch`](cuda_safe::launch) for the arguments and what the kernel touches; the
    /// memory it uses must be the operation's (moved into it) or outlive its completion.
    #[doc(alias = "cuLaunchKernel")]
    pub unsafe fn launch<A: KernelArgs>(
        &mut self,
        config: &LaunchConfig,
        kernel: &Kernel,
        args: A,
    ) -> Result<()> {
        match self.capture.as_deref_mut() {
            // SAFETY: the caller's promise, as `Capture::launch`'s.
            Some(capture) => unsafe { capture.launch(config, kernel, args) }.map(drop),
            None => {
                // SAFETY: the caller's promise; the kernel stays loaded (kept below).
                unsafe { cuda_safe::launch(&self.stream, config, kernel, args) }?;
                self.keep.push(Box::new(kernel.clone()));
                Ok(())
            }
        }
    }

    /// Keeps `value` until the GPU has passed the operation's work.
    pub(super) fn keep<T: Send + 'static>(&mut self, value: T) {
        self.keep.push(Box::new(value));
    }

    /// The reactor's state (its staging cache).
    pub(super) fn core(&self) -> &'static Core {
        self.core
    }

    /// Refuses a step that needs staging memory while capturing.
    pub(super) fn refuse_staging(&self, what: &str) -> Result<()> {
        if self.is_capturing() {
            return Err(Error::invalid_argument(format!(
                "a staged {what} cannot be captured (its staging memory would have to outlive \
                 the graph): copy through a pinned buffer of yours with op::copy"
            )));
        }
        Ok(())
    }

    /// Notes a download whose data lands when the operation has finished.
    pub(super) fn land(&mut self, landing: std::sync::Arc<Landing>) {
        self.keep.push(Box::new(std::sync::Arc::clone(&landing)));
        self.landings.push(landing);
    }

    /// What the work uses, and the downloads to mark landed on success.
    fn into_parts(self) -> (Vec<Keep>, Vec<std::sync::Arc<Landing>>) {
        (self.keep, self.landings)
    }
}

impl fmt::Debug for Submit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Submit")
            .field("stream", &self.stream)
            .field("capturing", &self.is_capturing())
            .field("kept", &self.keep.len())
            .finish()
    }
}

/// An operation, then the one made of its output ([`DeviceOp::then`]).
#[must_use = "an operation does nothing until it is run or captured"]
pub struct Then<A, F> {
    first: A,
    next: F,
}

impl<A, B, F> DeviceOp for Then<A, F>
where
    A: DeviceOp,
    B: DeviceOp,
    F: FnOnce(A::Output) -> B + Send + 'static,
{
    type Output = B::Output;

    fn submit(self, cx: &mut Submit<'_>) -> Result<B::Output> {
        let first = self.first.submit(cx)?;
        (self.next)(first).submit(cx)
    }
}

impl<A, F> fmt::Debug for Then<A, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Then")
            .field("first", &std::any::type_name::<A>())
            .finish()
    }
}
