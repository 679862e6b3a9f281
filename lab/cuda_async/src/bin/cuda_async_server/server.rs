//! The server's state and one request as cuda-async composes it: three steps chained with
//! `then`, so they run in order on the one stream the policy picks when the operation is
//! scheduled: the upload (a stream-ordered allocation from the device's default pool and a
//! copy from the request's pinned input), the launch of `infer`, and the download into the
//! request's pinned output. Each step registers what the GPU uses with its execution context
//! before queuing work, as cuda-async asks; nothing is queued before the first poll.

use std::sync::Arc;

use cuda_async::device_context::with_default_device_policy;
use cuda_async::device_operation::{DeviceOp, ExecutionContext};
use cuda_async::error::DeviceError;
use cuda_async::launch::AsyncKernelLaunchBuilder;
use cuda_async::scheduling_policies::{SingleStream, StreamPoolRoundRobin};
use cuda_async_lab::step::step;
use cuda_async_lab::{Result, device};
use cuda_core::{Context, Function, LaunchConfig, RawDeviceBuffer, Stream};

use crate::staging::{Lent, Staging, StagingCache};

/// Words per request's input and output.
pub const WORDS: usize = 256;
/// Streams the requests share (request `i` runs on stream `i % STREAMS`; the pool has as many).
pub const STREAMS: usize = 32;

/// Where a request's operation runs.
#[derive(Clone, Copy, Debug)]
pub enum Lane {
    /// Stream `id % STREAMS` (`SingleStream`), as our awaiting server maps requests.
    Fixed,
    /// The next stream of a shared round-robin pool of `STREAMS` (`StreamPoolRoundRobin`).
    Pool,
    /// The executor thread's default policy (cuda-async's round robin over 4 streams made for
    /// each thread), where `.await` on the operation sends it.
    ThreadDefault,
}

/// What every way shares: the kernel, the streams, the pool, the pinned staging.
#[derive(Clone)]
pub struct Server {
    kernel: Arc<Function>,
    streams: Arc<Vec<Arc<Stream>>>,
    pool: Arc<StreamPoolRoundRobin>,
    staging: Arc<StagingCache>,
}

/// Request `id`'s input, and the output the model must give for it (ours, word for word).
pub fn request(id: usize) -> (Vec<u32>, Vec<u32>) {
    let input: Vec<u32> = (0..WORDS as u32).map(|j| j ^ (id as u32)).collect();
    let output = input
        .iter()
        .map(|x| x.wrapping_mul(3).wrapping_add(id as u32))
        .collect();
    (input, output)
}

impl Server {
    /// The server of `kernel` on `context`: `STREAMS` streams, a pool of as many more.
    pub fn new(context: &Arc<Context>, kernel: Arc<Function>) -> Result<Self> {
        let streams = (0..STREAMS)
            .map(|_| device::stream(context))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            kernel,
            streams: Arc::new(streams),
            pool: Arc::new(StreamPoolRoundRobin::new(context, STREAMS)?),
            staging: Arc::new(StagingCache::new(context.clone())),
        })
    }

    fn stream(&self, id: usize) -> &Arc<Stream> {
        &self.streams[id % STREAMS]
    }

    /// Request `id` as one operation: upload, launch, download; it yields the staging.
    fn operation(&self, id: usize, lent: Lent) -> impl DeviceOp<Output = Arc<Staging>> + use<> {
        let kernel = self.kernel.clone();
        step(move |ctx| upload(ctx, lent))
            .then(move |(x, lent)| step(move |ctx| infer(ctx, &kernel, id, &x, lent)))
            .then(|(y, lent)| step(move |ctx| download(ctx, &y, lent)))
    }

    /// One request, awaited on `lane`.
    pub async fn serve(&self, id: usize, lane: Lane) -> Result<bool> {
        let (input, expected) = request(id);
        let operation = self.operation(id, self.staging.lend(&input)?);
        let staging = match lane {
            Lane::Fixed => {
                let policy = SingleStream::from_stream(self.stream(id).clone());
                operation.schedule(&policy)?.await?
            }
            Lane::Pool => operation.schedule(self.pool.as_ref())?.await?,
            // What `IntoFuture` does for `.await` (whose future type, behind `impl DeviceOp`, a
            // task cannot name as `Send`).
            Lane::ThreadDefault => {
                with_default_device_policy(|policy| operation.schedule(policy))??.await?
            }
        };
        Ok(self.check(staging, &expected))
    }

    /// One request, blocking: the same operation run by `sync_on` on stream `id % STREAMS`.
    pub fn serve_blocking(&self, id: usize) -> Result<bool> {
        let (input, expected) = request(id);
        let operation = self.operation(id, self.staging.lend(&input)?);
        let staging = operation.sync_on(self.stream(id))?;
        Ok(self.check(staging, &expected))
    }

    /// Copies the output into a `Vec` (as ours hands one back), gives the staging back and
    /// compares.
    fn check(&self, staging: Arc<Staging>, expected: &[u32]) -> bool {
        let output = staging.output.as_slice().to_vec();
        self.staging.give_back(staging);
        output == expected
    }
}

/// A new stream-ordered allocation of `WORDS` words on `ctx`'s stream, freed on that stream
/// once the last use registered with a context has finished.
fn allocate(ctx: &ExecutionContext) -> std::result::Result<RawDeviceBuffer, DeviceError> {
    let bytes = WORDS * size_of::<u32>();
    // SAFETY: the context's stream lives as long as the context.
    let pointer = unsafe { ctx.alloc_async(bytes) }?;
    // SAFETY: `pointer` is a fresh allocation of `bytes` made on this stream, owned by nothing
    // else; the buffer frees it on the same stream.
    Ok(unsafe {
        RawDeviceBuffer::from_raw_parts_async(pointer, bytes, ctx.get_cuda_stream().clone())
    })
}

/// The upload: `x` allocated and filled from the staging's input.
fn upload(
    ctx: &ExecutionContext,
    lent: Lent,
) -> std::result::Result<(RawDeviceBuffer, Lent), DeviceError> {
    let x = allocate(ctx)?;
    ctx.retain_buffer(x.clone(), true)?;
    ctx.retain(lent.staging.clone())?;
    // SAFETY: `x` holds WORDS words and the pinned input as many; both are retained until the
    // stream has passed the copy.
    unsafe {
        cuda_core::memcpy_htod_async(
            x.cu_deviceptr(),
            lent.staging.input.as_ptr(),
            WORDS,
            ctx.get_cuda_stream(),
        )
    }?;
    Ok((x, lent))
}

/// The launch: `y` allocated, `infer(x, y, 3, id, WORDS)` queued.
fn infer(
    ctx: &ExecutionContext,
    kernel: &Arc<Function>,
    id: usize,
    x: &RawDeviceBuffer,
    lent: Lent,
) -> std::result::Result<(RawDeviceBuffer, Lent), DeviceError> {
    let y = allocate(ctx)?;
    let mut launch = AsyncKernelLaunchBuilder::new(kernel.clone());
    launch.retain_buffer(x.clone(), false);
    launch.retain_buffer(y.clone(), true);
    // SAFETY: `infer` takes the input's and the output's addresses first; both allocations hold
    // WORDS words and are retained by the launch until the stream has passed it.
    unsafe { launch.push_device_ptr(x.cu_deviceptr()) };
    // SAFETY: as above.
    unsafe { launch.push_device_ptr(y.cu_deviceptr()) };
    launch.push_args((3u32, id as u32, WORDS as u64));
    let config = LaunchConfig::for_num_elems(WORDS as u32);
    // SAFETY: `(const unsigned*, unsigned*, unsigned, unsigned, size_t)` is what was pushed, in
    // order; one block of 256 threads covers WORDS words and `infer` checks `i < n`; the
    // kernel was loaded into the context every stream here belongs to.
    let launch = unsafe { launch.finalize_unchecked(config) };
    // SAFETY: the launch registers its buffers with `ctx` before queuing, and `ctx` is the
    // execution context the caller's future completes.
    unsafe { DeviceOp::execute(launch, ctx) }?;
    Ok((y, lent))
}

/// The download: `y` copied into the staging's output.
fn download(
    ctx: &ExecutionContext,
    y: &RawDeviceBuffer,
    lent: Lent,
) -> std::result::Result<Arc<Staging>, DeviceError> {
    ctx.retain_buffer(y.clone(), false)?;
    ctx.retain(lent.staging.clone())?;
    // SAFETY: `lent.output` is the address of the staging's pinned output of WORDS words,
    // retained until the stream has passed the copy and read only after the future resolved;
    // `y` holds WORDS words and is retained as long.
    unsafe {
        cuda_core::memcpy_dtoh_async(
            lent.output as *mut u32,
            y.cu_deviceptr(),
            WORDS,
            ctx.get_cuda_stream(),
        )
    }?;
    Ok(lent.staging)
}
