//! [`Fft`]: the plans of one stream, cached by description and bounded (least recently used
//! first out).

use std::collections::HashMap;
use std::fmt;

use super::desc::FftDesc;
use super::plan::FftPlan;
use cuda_safe::{DeviceMemoryResource, Stream};
use cuda_safe::{Error, Result};

/// How many plans [`Fft::new`] keeps. Each keeps its work area (the size cuFFT asks for the
/// plan, which grows with the transform), so the default is modest.
pub const DEFAULT_PLAN_CACHE: usize = 64;

/// The cuFFT plans of one [`Stream`], by description: [`plan`](Self::plan) makes a plan the
/// first time a description is asked for (its work area from this handle's memory pool) and
/// returns the same plan after, so a loop over one shape plans once. At most
/// [`capacity`](Self::capacity) plans are kept; a new one past it destroys the plan used
/// least recently.
///
/// ```no_run
/// use cuda_safe::Device;
/// use cuda_safe_libs::fft::{Complex32, Fft, FftDesc};
///
/// let device = Device::new(0)?;
/// device.set_current()?;
/// let stream = device.create_stream(Default::default())?;
/// let pool = device.default_memory_resource()?;
/// let mut fft = Fft::new(&stream)?;
/// let desc = FftDesc::r2c::<f32>(1024).batch(4096);
/// let signal = pool.allocate_zeroed::<f32>(desc.input_len()?, &stream)?;
/// let mut spectrum = pool.allocate_zeroed::<Complex32>(desc.output_len()?, &stream)?;
/// for _ in 0..10 {
///     fft.plan(&desc)?.r2c::<f32>(&signal, &mut spectrum)?; // planned once
/// }
/// # Ok::<(), cuda_safe::Error>(())
/// ```
///
/// A plan destroyed by eviction or [`clear`](Self::clear) frees its work area: a graph that
/// captured one of its executions must not run after. Capture executions of plans made
/// before the capture (a plan cannot be made while its stream captures) and kept for the
/// graph's life: a cache large enough, or an [`FftPlan`] of your own.
///
/// `Send`, not `Sync`, as its plans.
#[must_use = "the plans are destroyed when the cache is dropped"]
pub struct Fft {
    stream: Stream,
    pool: DeviceMemoryResource,
    capacity: usize,
    /// The plans and when each was last used (`clock`'s value then).
    plans: HashMap<FftDesc, (FftPlan, u64)>,
    clock: u64,
}

impl Fft {
    /// A cache of up to [`DEFAULT_PLAN_CACHE`] plans on `stream`, their work areas from the
    /// device's default memory pool.
    ///
    /// # Errors
    ///
    /// The driver's error getting the pool.
    pub fn new(stream: &Stream) -> Result<Self> {
        let pool = stream.device().default_memory_resource()?;
        Self::with_memory_resource(stream, pool, DEFAULT_PLAN_CACHE)
    }

    /// A cache of up to `capacity` plans on `stream`, their work areas from `pool` (allocated
    /// on `stream`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a capacity of 0.
    pub fn with_memory_resource(
        stream: &Stream,
        pool: DeviceMemoryResource,
        capacity: usize,
    ) -> Result<Self> {
        check_capacity(capacity)?;
        Ok(Self {
            stream: stream.clone(),
            pool,
            capacity,
            plans: HashMap::new(),
            clock: 0,
        })
    }

    /// The plan for `desc`: the cached one, or a new one (made with [`FftPlan::with_work_area`]
    /// on this handle's stream and pool), which may evict the plan used least recently.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the plan is not cached and the stream is capturing (cuFFT
    /// allocates and copies its tables when it plans: make the plan before the capture); as
    /// [`FftPlan::with_work_area`].
    pub fn plan(&mut self, desc: &FftDesc) -> Result<&FftPlan> {
        self.clock += 1;
        let now = self.clock;
        if self.plans.contains_key(desc) {
            let (plan, used) = self
                .plans
                .get_mut(desc)
                .ok_or_else(|| Error::unexpected("Fft::plan", "a cached plan vanished"))?;
            *used = now;
            return Ok(plan);
        }
        self.insert(desc, now)
    }

    /// Makes and caches the plan for `desc`, evicting the least recently used one if full.
    #[cold]
    fn insert(&mut self, desc: &FftDesc, now: u64) -> Result<&FftPlan> {
        if self.stream.is_capturing()? {
            return Err(Error::invalid_argument(format!(
                "the FFT {desc} has no cached plan and its stream is capturing: cuFFT cannot \
                 plan inside a capture, so make the plan (Fft::plan) before capturing"
            )));
        }
        let (stream, pool) = (&self.stream, &self.pool);
        let plan = FftPlan::with_work_area(stream, desc, |bytes| pool.allocate(bytes, stream))?;
        self.shrink_to(self.capacity - 1);
        let (plan, _) = self.plans.entry(*desc).or_insert((plan, now));
        Ok(plan)
    }

    /// Destroys the least recently used plans until at most `len` remain.
    fn shrink_to(&mut self, len: usize) {
        while self.plans.len() > len {
            let oldest = self
                .plans
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(desc, _)| *desc);
            match oldest {
                Some(desc) => drop(self.plans.remove(&desc)),
                None => break,
            }
        }
    }

    /// Whether a plan for `desc` is cached (asking does not count as a use).
    pub fn contains(&self, desc: &FftDesc) -> bool {
        self.plans.contains_key(desc)
    }

    /// How many plans are cached.
    pub fn len(&self) -> usize {
        self.plans.len()
    }

    /// Whether no plan is cached.
    pub fn is_empty(&self) -> bool {
        self.plans.is_empty()
    }

    /// The most plans kept.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Keeps at most `capacity` plans from now on, destroying the least recently used ones
    /// past it.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a capacity of 0.
    pub fn set_capacity(&mut self, capacity: usize) -> Result<()> {
        check_capacity(capacity)?;
        self.capacity = capacity;
        self.shrink_to(capacity);
        Ok(())
    }

    /// Destroys every cached plan.
    pub fn clear(&mut self) {
        self.plans.clear();
    }

    /// The stream every plan runs on.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }
}

/// Refuses a cache that could hold no plan.
fn check_capacity(capacity: usize) -> Result<()> {
    if capacity == 0 {
        return Err(Error::invalid_argument(
            "an FFT plan cache holds at least one plan",
        ));
    }
    Ok(())
}

impl fmt::Debug for Fft {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fft")
            .field("stream", &self.stream)
            .field("plans", &self.plans.len())
            .field("capacity", &self.capacity)
            .finish()
    }
}

/// Asserts at compile time that a cache moves between threads.
const _: () = {
    const fn assert_send<T: Send>() {}
    assert_send::<Fft>();
};
