//! The steps an operation is made of, and their constructors.

use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use bytemuck::Pod;

use super::{DeviceOp, Submit};
use crate::methods::{start_download, start_upload};
use crate::shared::lock;
use crate::staging::Staging;
use cuda_safe::{Buffer, Error, GraphExec, Result};

/// Copies `values` into `buffer` (its size exactly theirs) through pinned staging memory; the
/// operation's output is the buffer. The values are kept by the operation until it is
/// submitted, then staged.
///
#[doc = cuda_sys::api_doc!(cuMemcpyAsync)]
/// # Errors
///
/// At submission: [`Error::InvalidArgument`] when the sizes differ, the buffer is not a whole
/// number of aligned `T`s, or the operation is being captured; the driver's error.
#[doc(alias = "cuMemcpyAsync")]
pub fn upload<T: Pod + Send>(buffer: Buffer, values: impl Into<Vec<T>>) -> Upload<T> {
    Upload {
        buffer,
        values: values.into(),
    }
}

/// Copies `buffer`'s contents, as `T`s, to the host through pinned staging memory; the
/// output is the buffer and the [`Fetched`] values, readable once the operation has resolved.
///
#[doc = cuda_sys::api_doc!(cuMemcpyAsync)]
/// # Errors
///
/// At submission: [`Error::InvalidArgument`] when the buffer is not a whole number of aligned
/// `T`s, or the operation is being captured; the driver's error.
#[doc(alias = "cuMemcpyAsync")]
pub fn download<T: Pod>(buffer: Buffer) -> Download<T> {
    Download {
        buffer,
        _elements: PhantomData,
    }
}

/// Copies `src` into `dst` (of the same size: device, pinned or managed memory); the output
/// is both. With a pinned `dst` this is a download into memory of the caller's, with a pinned
/// `src` an upload from it, with no staging.
///
#[doc = cuda_sys::api_doc!(cuMemcpyAsync)]
/// # Errors
///
/// At submission: [`Error::InvalidArgument`] when the sizes differ; the driver's error.
#[doc(alias = "cuMemcpyAsync")]
pub fn copy(dst: Buffer, src: Buffer) -> Copy {
    Copy { dst, src }
}

/// Launches `exec` ([`GraphExec::launch`]); the output is the executable. A host node's panic
/// is reported by its next launch, as `launch` reports it.
///
#[doc = cuda_sys::api_doc!(cuGraphLaunch)]
/// # Errors
///
/// At submission: as [`GraphExec::launch`].
#[doc(alias = "cuGraphLaunch")]
pub fn graph(exec: GraphExec) -> GraphLaunch {
    GraphLaunch { exec }
}

/// Runs `queue` at submission with `held` and the [`Submit`] (its stream, its checked
/// [`launch`](Submit::launch)); the output is `held`, kept alive by the operation until the GPU
/// has passed it. Kernel launches, library calls, collectives: whatever `queue` queues on the
/// stream is ordered with the operation's other steps.
pub fn on_stream<H, F>(held: H, queue: F) -> OnStream<H, F>
where
    H: Send + 'static,
    F: FnOnce(&mut H, &mut Submit<'_>) -> Result<()> + Send + 'static,
{
    OnStream { held, queue }
}

/// An operation that queues nothing and outputs `value` (to start a chain, or end one).
pub fn value<T: Send + 'static>(value: T) -> Value<T> {
    Value(value)
}

/// An upload step ([`upload`]).
#[must_use = "an operation does nothing until it is run or captured"]
pub struct Upload<T> {
    buffer: Buffer,
    values: Vec<T>,
}

/// A download step ([`download`]).
#[must_use = "an operation does nothing until it is run or captured"]
pub struct Download<T> {
    buffer: Buffer,
    _elements: PhantomData<fn() -> T>,
}

/// A device-to-device (or pinned) copy step ([`copy`]).
#[must_use = "an operation does nothing until it is run or captured"]
pub struct Copy {
    dst: Buffer,
    src: Buffer,
}

/// A graph launch step ([`graph`]).
#[must_use = "an operation does nothing until it is run or captured"]
pub struct GraphLaunch {
    exec: GraphExec,
}

/// A step of the caller's ([`on_stream`]).
#[must_use = "an operation does nothing until it is run or captured"]
pub struct OnStream<H, F> {
    held: H,
    queue: F,
}

/// A step that queues nothing ([`value`]).
#[must_use = "an operation does nothing until it is run or captured"]
pub struct Value<T>(T);

/// Values a download brings to the host: readable once the operation that made them has
/// resolved successfully. Their pinned staging memory is held until the GPU has passed the
/// copy, even when this value is dropped before.
pub struct Fetched<T> {
    landing: Arc<Landing>,
    _elements: PhantomData<fn() -> T>,
}

/// A download's staging block, and whether the copy into it is known finished.
pub(crate) struct Landing {
    staging: Mutex<Option<Staging>>,
    len: usize,
    landed: AtomicBool,
}

impl Landing {
    /// Notes that the operation's work has finished: the data may be read.
    pub(crate) fn mark_landed(&self) {
        self.landed.store(true, Ordering::Release);
    }
}

impl<T: Pod> Fetched<T> {
    /// How many elements were fetched.
    pub fn len(&self) -> usize {
        self.landing.len
    }

    /// Whether no element was fetched.
    pub fn is_empty(&self) -> bool {
        self.landing.len == 0
    }

    /// The values, copied out of the staging memory.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] before the operation has resolved successfully (inside a
    /// [`then`](DeviceOp::then) closure, or after it failed).
    pub fn to_vec(&self) -> Result<Vec<T>> {
        if !self.landing.landed.load(Ordering::Acquire) {
            return Err(Error::invalid_argument(
                "fetched values were read before their operation resolved",
            ));
        }
        let staging = lock(&self.landing.staging);
        Ok(match staging.as_ref() {
            Some(block) => {
                // SAFETY: the block holds the `len` elements the finished copy wrote (sized
                // for them, page-aligned, initialized), and nothing writes it any more.
                let values = unsafe {
                    std::slice::from_raw_parts(
                        block.as_ptr().cast::<T>().cast_const(),
                        self.landing.len,
                    )
                };
                values.to_vec()
            }
            None => Vec::new(),
        })
    }
}

impl<T: Pod + Send> DeviceOp for Upload<T> {
    type Output = Buffer;

    fn submit(self, cx: &mut Submit<'_>) -> Result<Buffer> {
        cx.refuse_staging("upload")?;
        let Self { mut buffer, values } = self;
        buffer.set_stream(cx.stream())?;
        if let Some(staging) = start_upload(&mut buffer, cx.core(), &values)? {
            cx.keep(staging);
        }
        Ok(buffer)
    }
}

impl<T: Pod> DeviceOp for Download<T> {
    type Output = (Buffer, Fetched<T>);

    fn submit(self, cx: &mut Submit<'_>) -> Result<(Buffer, Fetched<T>)> {
        cx.refuse_staging("download")?;
        let mut buffer = self.buffer;
        buffer.set_stream(cx.stream())?;
        let (len, staging) = start_download::<T>(&buffer, cx.core())?;
        let landing = Arc::new(Landing {
            staging: Mutex::new(staging),
            len,
            landed: AtomicBool::new(false),
        });
        cx.land(Arc::clone(&landing));
        Ok((
            buffer,
            Fetched {
                landing,
                _elements: PhantomData,
            },
        ))
    }
}

impl DeviceOp for Copy {
    type Output = (Buffer, Buffer);

    fn submit(self, cx: &mut Submit<'_>) -> Result<(Buffer, Buffer)> {
        let Self { mut dst, mut src } = self;
        dst.set_stream(cx.stream())?;
        src.set_stream(cx.stream())?;
        dst.copy_from(&src)?;
        Ok((dst, src))
    }
}

impl DeviceOp for GraphLaunch {
    type Output = GraphExec;

    fn submit(self, cx: &mut Submit<'_>) -> Result<GraphExec> {
        self.exec.launch(cx.stream())?;
        Ok(self.exec)
    }
}

impl<H, F> DeviceOp for OnStream<H, F>
where
    H: Send + 'static,
    F: FnOnce(&mut H, &mut Submit<'_>) -> Result<()> + Send + 'static,
{
    type Output = H;

    fn submit(self, cx: &mut Submit<'_>) -> Result<H> {
        let Self { mut held, queue } = self;
        queue(&mut held, cx)?;
        Ok(held)
    }
}

impl<T: Send + 'static> DeviceOp for Value<T> {
    type Output = T;

    fn submit(self, _: &mut Submit<'_>) -> Result<T> {
        Ok(self.0)
    }
}

impl<T> fmt::Debug for Fetched<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fetched")
            .field("len", &self.landing.len)
            .field("landed", &self.landing.landed.load(Ordering::Relaxed))
            .finish()
    }
}

/// `Debug` for the steps: their kind and sizes.
macro_rules! step_debug {
    ($($ty:ident [$($generics:tt)*] |$this:ident, $f:ident| $body:expr;)*) => {$(
        impl<$($generics)*> fmt::Debug for $ty<$($generics)*> {
            fn fmt(&self, $f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let $this = self;
                $body
            }
        }
    )*};
}

step_debug! {
    Upload [T] |this, f| f.debug_struct("Upload").field("bytes", &(this.values.len() * size_of::<T>())).finish();
    Download [T] |this, f| f.debug_struct("Download").field("bytes", &this.buffer.len()).finish();
    OnStream [H, F] |_this, f| f.debug_struct("OnStream").field("held", &std::any::type_name::<H>()).finish();
    Value [T] |_this, f| f.debug_struct("Value").field("type", &std::any::type_name::<T>()).finish();
}

impl fmt::Debug for Copy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Copy")
            .field("bytes", &self.dst.len())
            .finish()
    }
}

impl fmt::Debug for GraphLaunch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GraphLaunch")
            .field("exec", &self.exec)
            .finish()
    }
}
