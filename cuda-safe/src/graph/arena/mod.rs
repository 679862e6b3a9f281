//! Graph arenas: memory a captured region allocates from whose addresses stay the same at
//! every replay, without the graph's memory nodes ([`GraphArena`]); the bookkeeping of its
//! ranges (`blocks`), what ties executables to it (`flight`), the gate its launches pass
//! (`gate`), captures that use it (`capture`), and its static buffers (`statics`).

mod blocks;
mod capture;
mod flight;
mod gate;
mod statics;

pub use statics::StaticBuffer;

pub(super) use capture::ArenaCapture;
pub(super) use flight::{ArenaUse, Binding};

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use blocks::{Blocks, Destination};
use flight::Flight;
use gate::LaunchGate;

use crate::abi;
use crate::device::Device;
use crate::error::{Error, Result, cu};
use crate::handle::assert_send_sync;
use crate::memory::vmm::{GrowableBuffer, VirtualMemoryResource};
use crate::memory::{Buffer, MemoryResource, forward_memory_resource, typed_allocations};
use crate::stream::Stream;
use cuda_sys::{CUdeviceptr, CUstreamCaptureMode, CUstreamCaptureStatus, Driver};

#[cfg(doc)]
use super::Capture;

/// Device memory for captured graphs, at the same addresses at every replay, without the
/// graph's memory nodes (PyTorch's private graph pools, as a [`MemoryResource`]). Cloning is
/// cheap and shares the arena. Allocate from it as from any resource
/// ([`allocate`](Self::allocate), [`Buffer::allocate_in`], a library handle's workspace), and
/// make a region's inputs and outputs with [`static_buffer`](Self::static_buffer).
///
/// An arena is one virtual memory reservation of the size asked, mapped at its start and
/// grown in place, chunk by chunk, as allocations reach further; it never moves, so every
/// address it gave out stays valid. Buffers allocated from it while a stream is captured
/// ([`GraphArena::capture`], or [`Capture::use_arena`]) are plain addresses to the captured
/// work: the graph has no allocation or free node, and each replay uses the addresses the
/// capture used. Memory the captured work freed is *held* for the graph (nothing else gets it)
/// until [`reset`](Self::reset); a later capture of the same work after a reset lands on the
/// same addresses, the allocator being deterministic. Outside a capture it serves plain
/// buffers too, freed once their stream has drained.
///
/// Why one reservation rather than a memory pool: a pool's allocations made under capture
/// become the graph's allocation and free nodes (what the arena exists to avoid), and a pool
/// cannot grow a range in place, so a sub-allocator over a pool would either take its largest
/// size up front or hand out addresses in several ranges; a reservation costs only address
/// space, maps physical memory as it is reached, and a replay touches no allocator at all.
///
/// An executable made from a graph captured in an arena keeps the arena alive and records an
/// event after each launch, so the arena refuses [`reset`](Self::reset) and
/// [`close`](Self::close) while a launch may still run ([`Error::ArenaBusy`]), and a launch of
/// a graph captured before a reset is refused. A launch holds the arena's launch gate from
/// that check until its event is recorded, so a reset on another thread waits for neither and
/// slips in between neither.
///
/// Two executables made from one capture (the graph instantiated, and a clone of it
/// instantiated too) replay the same addresses: their scratch memory is shared. Launch them
/// one after the other on one stream (or order their streams); launched concurrently, each
/// overwrites the other's temporaries. For concurrent replays, capture the work once per
/// executable: each capture gets its own memory.
///
/// ```no_run
/// use cuda_safe::{CaptureMode, Device, GraphArena, LaunchConfig, ObjectCode, launch};
///
/// let device = Device::new(0)?;
/// let stream = device.create_stream(Default::default())?;
/// let kernel = ObjectCode::from_file("scale.cubin")?.get_kernel("scale")?;
/// let arena = GraphArena::new(&stream, 1 << 30)?;
/// let input = arena.static_buffer::<f32>(1024, &stream)?;
/// let config = LaunchConfig::for_num_elements(1024, 256)?;
/// // SAFETY: scale(float*, float, size_t) updates 1024 floats of its buffer.
/// let graph = unsafe {
///     arena.capture(&stream, CaptureMode::ThreadLocal, |capture| {
///         let mut scratch = arena.allocate_array::<f32>(1024, capture.stream())?;
///         scratch.copy_from(input.buffer())?;
///         launch(capture.stream(), &config, &kernel, (&mut scratch, 2.0f32, 1024usize))?;
///         Ok(())
///     })?
/// };
/// let exec = graph.instantiate()?;
/// input.copy_in(&[1.0; 1024])?;
/// exec.launch(&stream)?; // the same addresses at every replay
/// # Ok::<(), cuda_safe::Error>(())
/// ```
#[derive(Clone)]
pub struct GraphArena {
    inner: Arc<ArenaInner>,
}

/// What an arena's handles share.
struct ArenaInner {
    device: Device,
    driver: &'static Driver,
    /// The reservation's base address (it never moves).
    base: CUdeviceptr,
    /// Bumped by each reset: graphs captured before refuse to launch.
    generation: AtomicU64,
    /// What launches of its graphs pass from their generation check to their event record.
    gate: LaunchGate,
    state: Mutex<State>,
}

/// What changes, behind one lock.
struct State {
    blocks: Blocks,
    /// The reservation, mapped from its start as far as allocations reached.
    memory: GrowableBuffer,
    /// The flights of executables whose graphs were captured here.
    flights: Vec<Arc<Flight>>,
    /// The driver's ids of the captures recording into the arena now.
    captures: Vec<u64>,
    /// The static buffers made so far (each graph captured after keeps those alive).
    statics: Vec<Weak<Buffer>>,
}

/// How much memory an arena holds, in bytes ([`GraphArena::usage`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ArenaUsage {
    /// Address space reserved: the most the arena can ever hold.
    pub reserved: usize,
    /// Physical memory mapped into the reservation so far (never given back before the
    /// arena is freed).
    pub mapped: usize,
    /// What live buffers hold (each rounded up to 256 bytes).
    pub in_use: usize,
    /// What captured graphs hold: memory their work freed, which only a reset frees.
    pub held: usize,
    /// The most `in_use + held` has been.
    pub high_water: usize,
}

impl GraphArena {
    /// An arena of `reserve` bytes of address space on `stream`'s device, one granularity of
    /// physical memory mapped at its start; its mapping is released after `stream` drains.
    ///
    #[doc = cuda_sys::api_doc!(cuMemAddressReserve)]
    /// # Errors
    ///
    /// [`Error::Unsupported`] on a device without virtual memory management; as
    /// [`VirtualMemoryResource::growable`].
    #[doc(alias = "cuMemAddressReserve")]
    pub fn new(stream: &Stream, reserve: usize) -> Result<Self> {
        let vmm = VirtualMemoryResource::new(stream.device(), Default::default())?;
        Self::with_resource(&vmm, stream, reserve)
    }

    /// An arena of `reserve` bytes mapped by `vmm` (its location, access and peers).
    ///
    #[doc = cuda_sys::api_doc!(cuMemAddressReserve)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a `vmm` of another device than `stream`'s; as
    /// [`VirtualMemoryResource::growable`].
    #[doc(alias = "cuMemAddressReserve")]
    pub fn with_resource(
        vmm: &VirtualMemoryResource,
        stream: &Stream,
        reserve: usize,
    ) -> Result<Self> {
        let device = *stream.device();
        if *vmm.device() != device {
            return Err(Error::invalid_argument(format!(
                "the virtual memory resource is on device {}, the stream on device {}",
                vmm.device().ordinal(),
                device.ordinal()
            )));
        }
        let granularity = vmm.round_up(1)?;
        let memory = vmm.growable(granularity, reserve, stream)?;
        let base = memory.as_raw();
        let capacity = memory.capacity() as u64;
        Ok(Self {
            inner: Arc::new(ArenaInner {
                device,
                driver: stream.driver(),
                base,
                generation: AtomicU64::new(0),
                gate: LaunchGate::default(),
                state: Mutex::new(State {
                    blocks: Blocks::new(capacity),
                    memory,
                    flights: Vec::new(),
                    captures: Vec::new(),
                    statics: Vec::new(),
                }),
            }),
        })
    }

    /// The device whose memory the arena holds.
    pub fn device(&self) -> &Device {
        &self.inner.device
    }

    /// The reservation's base address: every allocation lies in `base..base + reserved`.
    pub fn base(&self) -> CUdeviceptr {
        self.inner.base
    }

    /// How much memory the arena holds now.
    pub fn usage(&self) -> ArenaUsage {
        let state = self.inner.lock();
        let figures = state.blocks.figures();
        let bytes = |value: u64| usize::try_from(value).unwrap_or(usize::MAX);
        ArenaUsage {
            reserved: bytes(state.blocks.capacity()),
            mapped: state.memory.len(),
            in_use: bytes(figures.in_use),
            held: bytes(figures.held),
            high_water: bytes(figures.high_water),
        }
    }

    /// Frees what captured graphs hold (the memory their work freed) for new allocations;
    /// live buffers keep theirs. Every graph captured in the arena before refuses to launch
    /// from now on (its memory may be another's): capture the work again (it lands on the
    /// same addresses) and update the executables from the new graph
    /// ([`GraphExec::update`](super::GraphExec::update)).
    ///
    #[doc = cuda_sys::api_doc!(cuEventQuery)]
    /// # Errors
    ///
    /// [`Error::ArenaBusy`] while a launch of a graph captured here is being made or may
    /// still run, or a capture records into the arena (nothing is freed); the driver's error
    /// from asking.
    #[doc(alias = "cuEventQuery")]
    pub fn reset(&self) -> Result<()> {
        let mut state = self.inner.lock();
        let closed = self
            .inner
            .gate
            .close()
            .map_err(|launching| Error::ArenaBusy {
                in_flight: launching,
                capturing: state.captures.len(),
                holders: 0,
            })?;
        state.refuse_if_busy(self.inner.driver, 0)?;
        state.blocks.reset();
        self.inner.generation.fetch_add(1, Ordering::AcqRel);
        drop(closed);
        Ok(())
    }

    /// Frees the arena now: unmaps and releases its memory, after its stream drains.
    ///
    #[doc = cuda_sys::api_doc!(cuMemUnmap)]
    #[doc = cuda_sys::api_doc!(cuMemAddressFree)]
    /// # Errors
    ///
    /// [`Error::ArenaBusy`], freeing nothing, while a launch may still run, a capture records
    /// into it, or anything else holds it (another handle, a buffer, a graph); the driver's
    /// error from the release.
    #[doc(alias = "cuMemUnmap", alias = "cuMemAddressFree")]
    pub fn close(self) -> Result<()> {
        let holders = Arc::strong_count(&self.inner) - 1;
        self.inner
            .lock()
            .refuse_if_busy(self.inner.driver, holders)?;
        match Arc::try_unwrap(self.inner) {
            Ok(inner) => inner
                .state
                .into_inner()
                .unwrap_or_else(PoisonError::into_inner)
                .memory
                .close(),
            Err(shared) => Err(Error::ArenaBusy {
                in_flight: 0,
                capturing: 0,
                holders: Arc::strong_count(&shared) - 1,
            }),
        }
    }

    /// Registers `flight` (once): a reset or close asks it first.
    fn register(&self, flight: &Arc<Flight>) {
        let mut state = self.inner.lock();
        if !state.flights.iter().any(|known| Arc::ptr_eq(known, flight)) {
            state.flights.push(Arc::clone(flight));
        }
    }

    /// Whether two handles share one arena.
    fn same_as(&self, other: &GraphArena) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl ArenaInner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The capture `stream` records into (0: none).
    fn capture_of(&self, stream: &Stream) -> Result<u64> {
        // SAFETY: a valid stream.
        let info = unsafe { abi::stream_capture_info(self.driver, stream.as_raw()) }?;
        Ok(match info.status {
            CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE => 0,
            _ => info.id,
        })
    }
}

impl State {
    /// [`Error::ArenaBusy`] while a registered flight may still run or a capture records;
    /// flights that are done and whose executable is gone are forgotten (a flight registered
    /// with several arenas too).
    fn refuse_if_busy(&mut self, driver: &'static Driver, holders: usize) -> Result<()> {
        let mut in_flight = 0;
        let mut asked = Ok(());
        self.flights.retain(|flight| {
            if asked.is_err() {
                return true;
            }
            match relaxed(driver, || flight.in_flight()) {
                Ok(true) => {
                    in_flight += 1;
                    true
                }
                // Done; forgotten once its executable is gone: nothing can launch it again.
                Ok(false) => flight.exec_alive(),
                Err(error) => {
                    asked = Err(error);
                    true
                }
            }
        });
        asked?;
        let capturing = self.captures.len();
        if in_flight > 0 || capturing > 0 || holders > 0 {
            return Err(Error::ArenaBusy {
                in_flight,
                capturing,
                holders,
            });
        }
        Ok(())
    }
}

/// Runs `f` with the thread in relaxed capture mode, so that a call the driver would refuse
/// while a capture runs (mapping memory, querying an event) is made: neither is stream work,
/// and neither touches a capture.
fn relaxed<T>(driver: &'static Driver, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let mut mode = CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
    // SAFETY: a valid out-pointer; the thread's mode is restored below.
    unsafe { cu!(driver, cuThreadExchangeStreamCaptureMode(&mut mode)) }?;
    let done = f();
    // SAFETY: as above; `mode` holds the thread's previous mode.
    let restored = unsafe { cu!(driver, cuThreadExchangeStreamCaptureMode(&mut mode)) };
    let done = done?;
    restored?;
    Ok(done)
}

forward_memory_resource!(GraphArena);
typed_allocations!(GraphArena, cuMemMap "cuMemMap");

// SAFETY: every allocation is a range of the reservation no live buffer or held graph
// memory overlaps (`Blocks`), mapped before it is returned; it stays mapped until the arena
// is freed, which its buffers (holding the inner `Arc`) outlive. Device memory only.
unsafe impl MemoryResource for ArenaInner {
    fn allocate_raw(&self, size: usize, stream: &Stream) -> Result<CUdeviceptr> {
        if *stream.device() != self.device {
            return Err(Error::invalid_argument(format!(
                "the stream belongs to device {}, the graph arena to device {}",
                stream.device().ordinal(),
                self.device.ordinal()
            )));
        }
        let capture = self.capture_of(stream)?;
        let mut state = self.lock();
        if capture != 0 && !state.captures.contains(&capture) {
            return Err(Error::invalid_argument(
                "a graph arena allocates inside a capture only when the capture uses it \
                 (GraphArena::capture, or Capture::use_arena): the graph must keep it",
            ));
        }
        let key = stream.as_raw() as usize;
        let Some((offset, len)) = state.blocks.allocate(size as u64, key, capture) else {
            let figures = state.blocks.figures();
            return Err(Error::ArenaFull {
                requested: size,
                reserved: usize::try_from(state.blocks.capacity()).unwrap_or(usize::MAX),
                in_use: usize::try_from(figures.in_use).unwrap_or(usize::MAX),
                held: usize::try_from(figures.held).unwrap_or(usize::MAX),
            });
        };
        let end = usize::try_from(offset + len).unwrap_or(usize::MAX);
        if end > state.memory.len() {
            let grown = relaxed(self.driver, || state.memory.grow(end));
            if let Err(error) = grown {
                state.blocks.undo(offset);
                return Err(error);
            }
        }
        Ok(self.base + offset)
    }

    unsafe fn deallocate_raw(&self, ptr: CUdeviceptr, _size: usize, stream: &Stream) -> Result<()> {
        let offset = ptr.checked_sub(self.base).ok_or_else(|| {
            Error::unexpected(
                "GraphArena::deallocate_raw",
                format!("{ptr:#x} lies before the arena's base {:#x}", self.base),
            )
        })?;
        let capture = self.capture_of(stream)?;
        let key = stream.as_raw() as usize;
        let destination = self.lock().blocks.destination(offset, capture);
        if destination == Some(Destination::Free) {
            // Not stream-ordered: wait until nothing queued on the stream can touch it.
            if let Err(error) = stream.drain() {
                self.lock().blocks.hold(offset);
                return Err(error);
            }
        }
        match self.lock().blocks.free(offset, key, capture) {
            Some(_) => Ok(()),
            None => Err(Error::unexpected(
                "GraphArena::deallocate_raw",
                format!("{ptr:#x} is not a live allocation of the arena"),
            )),
        }
    }

    fn is_device_accessible(&self) -> bool {
        true
    }

    fn is_host_accessible(&self) -> bool {
        false
    }

    fn device(&self) -> Option<Device> {
        Some(self.device)
    }

    fn copies_need_current_context(&self) -> bool {
        true
    }
}

impl fmt::Debug for ArenaInner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GraphArena")
            .field("device", &self.device.ordinal())
            .field("base", &format_args!("{:#x}", self.base))
            .field("generation", &self.generation.load(Ordering::Relaxed))
            .finish()
    }
}

impl fmt::Debug for GraphArena {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}

assert_send_sync!(GraphArena);
