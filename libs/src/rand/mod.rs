//! Random numbers on NVIDIA's cuRAND (feature `rand`; `libcurand.so.10` is loaded at run
//! time): a [`Generator`] bound to a [`Stream`] fills `cuda-safe`'s buffers with uniform,
//! normal, log-normal and Poisson numbers, or raw bits, queued on its stream.
//!
//! ```no_run
//! use cuda_safe_libs::rand::{Generator, RngKind};
//! use cuda_safe::Device;
//!
//! let device = Device::new(0)?;
//! device.set_current()?;
//! let stream = device.create_stream(Default::default())?;
//! let pool = device.default_memory_resource()?;
//! let mut noise = pool.allocate_zeroed::<f32>(1 << 20, &stream)?;
//! let mut generator = Generator::new(&stream, RngKind::Philox4x32_10)?;
//! generator.set_seed(42)?;
//! generator.normal::<f32>(&mut noise, 0.0, 1.0)?; // queued on `stream`
//! # Ok::<(), cuda_safe::Error>(())
//! ```
//!
//! Pseudorandom generators (Philox4x32-10, XORWOW, MRG32k3a) take a seed and an offset (how
//! many numbers to skip), quasirandom ones (Sobol, 32 or 64 bits, plain or scrambled) a number
//! of dimensions; what a kind does not take is [`Error::InvalidArgument`], as are lengths cuRAND
//! would refuse (normal numbers from a pseudorandom generator come in pairs; a quasirandom
//! generator fills whole points of its dimensions), before the call. Each generation is the one
//! cuRAND call it wraps, ordered with the buffer's own stream as a kernel launch is.

pub(crate) mod error;
mod fill;

use std::fmt;

pub use crate::operand::Operand;
pub use curand_sys;
pub use error::CurandError;
pub use fill::{Fill, Real};

use crate::rand::error::curand;
use cuda_safe::Stream;
use cuda_safe::handle::{Owned, Release};
use cuda_safe::{Error, Result};
use curand_sys::{Curand, curandGenerator_t, curandOrdering_t, curandRngType_t};

/// A cuRAND generator algorithm (`curandRngType_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RngKind {
    /// Philox4x32-10, a counter-based pseudorandom generator (what PyTorch uses on the GPU).
    Philox4x32_10,
    /// XORWOW, cuRAND's default pseudorandom generator.
    Xorwow,
    /// MRG32k3a, a combined multiple recursive pseudorandom generator.
    Mrg32k3a,
    /// Sobol, 32-bit quasirandom.
    Sobol32,
    /// Scrambled Sobol, 32-bit quasirandom.
    ScrambledSobol32,
    /// Sobol, 64-bit quasirandom ([`Generator::bits64`]).
    Sobol64,
    /// Scrambled Sobol, 64-bit quasirandom.
    ScrambledSobol64,
}

impl RngKind {
    /// The `curandRngType_t`.
    pub const fn as_raw(self) -> curandRngType_t {
        match self {
            Self::Philox4x32_10 => curandRngType_t::CURAND_RNG_PSEUDO_PHILOX4_32_10,
            Self::Xorwow => curandRngType_t::CURAND_RNG_PSEUDO_XORWOW,
            Self::Mrg32k3a => curandRngType_t::CURAND_RNG_PSEUDO_MRG32K3A,
            Self::Sobol32 => curandRngType_t::CURAND_RNG_QUASI_SOBOL32,
            Self::ScrambledSobol32 => curandRngType_t::CURAND_RNG_QUASI_SCRAMBLED_SOBOL32,
            Self::Sobol64 => curandRngType_t::CURAND_RNG_QUASI_SOBOL64,
            Self::ScrambledSobol64 => curandRngType_t::CURAND_RNG_QUASI_SCRAMBLED_SOBOL64,
        }
    }

    /// Whether it is quasirandom (Sobol).
    pub const fn is_quasi(self) -> bool {
        matches!(
            self,
            Self::Sobol32 | Self::ScrambledSobol32 | Self::Sobol64 | Self::ScrambledSobol64
        )
    }

    /// Whether it makes 64-bit numbers ([`Generator::bits64`]) rather than 32-bit ones.
    pub const fn is_64_bit(self) -> bool {
        matches!(self, Self::Sobol64 | Self::ScrambledSobol64)
    }
}

/// How a generator orders its results in memory (`curandOrdering_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RngOrdering {
    /// The fastest ordering for a pseudorandom generator (cuRAND's default).
    PseudoBest,
    /// The default thread sequence of a pseudorandom generator (the same as `PseudoBest`).
    PseudoDefault,
    /// A seeding pattern for fast, lower quality pseudorandom results.
    PseudoSeeded,
    /// The legacy sequence, the same in every cuRAND release.
    PseudoLegacy,
    /// An ordering adjusted to the device, for the best performance.
    PseudoDynamic,
    /// The n-dimensional ordering of a quasirandom generator.
    QuasiDefault,
}

impl RngOrdering {
    /// The `curandOrdering_t`.
    pub const fn as_raw(self) -> curandOrdering_t {
        match self {
            Self::PseudoBest => curandOrdering_t::CURAND_ORDERING_PSEUDO_BEST,
            Self::PseudoDefault => curandOrdering_t::CURAND_ORDERING_PSEUDO_DEFAULT,
            Self::PseudoSeeded => curandOrdering_t::CURAND_ORDERING_PSEUDO_SEEDED,
            Self::PseudoLegacy => curandOrdering_t::CURAND_ORDERING_PSEUDO_LEGACY,
            Self::PseudoDynamic => curandOrdering_t::CURAND_ORDERING_PSEUDO_DYNAMIC,
            Self::QuasiDefault => curandOrdering_t::CURAND_ORDERING_QUASI_DEFAULT,
        }
    }

    const fn is_quasi(self) -> bool {
        matches!(self, Self::QuasiDefault)
    }
}

/// The most dimensions a Sobol generator takes.
pub const MAX_DIMENSIONS: u32 = 20_000;

/// The largest lambda [`Generator::poisson`] takes.
pub const MAX_POISSON_LAMBDA: f64 = 400_000.0;

/// A cuRAND generator (`curandGenerator_t`) bound to a [`Stream`]: its numbers are generated
/// there, into device memory.
///
/// Generating takes `&mut self` (it advances the generator's state), so a generator is `Send`
/// and `Sync` without locks. cuRAND runs its kernels in the context current on the calling
/// thread: each fill makes the stream's context current for its duration (as cuBLAS's calls
/// do). Dropping it destroys it
/// (`curandDestroyGenerator`).
#[must_use = "a cuRAND generator is destroyed when dropped"]
pub struct Generator {
    inner: Owned<Handle>,
}

/// What a [`Generator`] owns.
struct Handle {
    raw: curandGenerator_t,
    curand: &'static Curand,
    stream: Stream,
    kind: RngKind,
    dimensions: u32,
}

// SAFETY: a cuRAND generator may be used from any thread, one at a time: every call that uses
// the handle takes `&mut Generator` (or `&mut Handle` on release).
unsafe impl Send for Handle {}
// SAFETY: as above; `&Generator` reads only the Rust-side fields.
unsafe impl Sync for Handle {}

impl Generator {
    /// A generator of `kind` on `stream` (cuRAND's default seed and offset, 0, and for Sobol
    /// one dimension).
    ///
    #[doc = curand_sys::api_doc!(curandCreateGenerator)]
    #[doc = curand_sys::api_doc!(curandSetStream)]
    /// # Errors
    ///
    /// [`Error::Load`] when cuRAND cannot be loaded; cuRAND's error.
    #[doc(alias = "curandCreateGenerator", alias = "curandSetStream")]
    pub fn new(stream: &Stream, kind: RngKind) -> Result<Self> {
        let curand = curand_sys::curand()?;
        let _current = stream.context().scoped()?;
        let mut raw: curandGenerator_t = std::ptr::null_mut();
        // SAFETY: a valid out-pointer and a generator type of cuRAND's.
        unsafe { curand!(curand, curandCreateGenerator(&mut raw, kind.as_raw())) }?;
        let generator = Self {
            inner: Owned::new(Handle {
                raw,
                curand,
                stream: stream.clone(),
                kind,
                dimensions: 1,
            }),
        };
        // SAFETY: a live generator and stream.
        unsafe { curand!(curand, curandSetStream(raw, stream.as_raw().cast())) }?;
        Ok(generator)
    }

    /// The generator's algorithm.
    pub fn kind(&self) -> RngKind {
        self.inner.kind
    }

    /// The stream its numbers are generated on.
    pub fn stream(&self) -> &Stream {
        &self.inner.stream
    }

    /// Moves the generator to `stream`: numbers generated from now on are queued there, after
    /// the work queued on the old stream (a pseudorandom generator keeps its state in device
    /// memory, so the next generation must follow the last one). Buffers being filled keep
    /// their own streams' order as every generation does.
    ///
    #[doc = curand_sys::api_doc!(curandSetStream)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a stream of another context; cuRAND's error.
    #[doc(alias = "curandSetStream")]
    pub fn set_stream(&mut self, stream: &Stream) -> Result<()> {
        if !self.inner.stream.context().same_as(stream.context()) {
            return Err(Error::invalid_argument(
                "a cuRAND generator moves only to a stream of its own context",
            ));
        }
        // The generator's state is written by the old stream's last generation.
        cuda_safe::ordering::hand_over(stream, &self.inner.stream)?;
        // SAFETY: a live generator and stream.
        unsafe {
            curand!(
                self.inner.curand,
                curandSetStream(self.inner.raw, stream.as_raw().cast())
            )
        }?;
        self.inner.stream = stream.clone();
        Ok(())
    }

    /// Seeds a pseudorandom generator.
    ///
    #[doc = curand_sys::api_doc!(curandSetPseudoRandomGeneratorSeed)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a quasirandom generator; cuRAND's error.
    #[doc(alias = "curandSetPseudoRandomGeneratorSeed")]
    pub fn set_seed(&mut self, seed: u64) -> Result<()> {
        if self.inner.kind.is_quasi() {
            return Err(Error::invalid_argument(
                "a quasirandom (Sobol) generator takes no seed",
            ));
        }
        // SAFETY: a live generator.
        unsafe {
            curand!(
                self.inner.curand,
                curandSetPseudoRandomGeneratorSeed(self.inner.raw, seed)
            )
        }
    }

    /// Skips `offset` numbers of the sequence (for a pseudorandom generator, numbers; for a
    /// quasirandom one, points).
    ///
    #[doc = curand_sys::api_doc!(curandSetGeneratorOffset)]
    /// # Errors
    ///
    /// cuRAND's error.
    #[doc(alias = "curandSetGeneratorOffset")]
    pub fn set_offset(&mut self, offset: u64) -> Result<()> {
        // SAFETY: a live generator.
        unsafe {
            curand!(
                self.inner.curand,
                curandSetGeneratorOffset(self.inner.raw, offset)
            )
        }
    }

    /// The number of dimensions of a quasirandom generator (1 to [`MAX_DIMENSIONS`]): every
    /// generation then fills whole points, a multiple of this many numbers.
    ///
    #[doc = curand_sys::api_doc!(curandSetQuasiRandomGeneratorDimensions)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a pseudorandom generator or a count out of range;
    /// cuRAND's error.
    #[doc(alias = "curandSetQuasiRandomGeneratorDimensions")]
    pub fn set_dimensions(&mut self, dimensions: u32) -> Result<()> {
        if !self.inner.kind.is_quasi() {
            return Err(Error::invalid_argument(
                "only a quasirandom (Sobol) generator has dimensions",
            ));
        }
        if !(1..=MAX_DIMENSIONS).contains(&dimensions) {
            return Err(Error::invalid_argument(format!(
                "a Sobol generator takes 1 to {MAX_DIMENSIONS} dimensions, not {dimensions}"
            )));
        }
        // SAFETY: a live generator; the count is in cuRAND's range.
        unsafe {
            curand!(
                self.inner.curand,
                curandSetQuasiRandomGeneratorDimensions(self.inner.raw, dimensions)
            )
        }?;
        self.inner.dimensions = dimensions;
        Ok(())
    }

    /// How the results are ordered in memory.
    ///
    #[doc = curand_sys::api_doc!(curandSetGeneratorOrdering)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a pseudorandom ordering on a quasirandom generator or
    /// the other way round; cuRAND's error.
    #[doc(alias = "curandSetGeneratorOrdering")]
    pub fn set_ordering(&mut self, ordering: RngOrdering) -> Result<()> {
        if ordering.is_quasi() != self.inner.kind.is_quasi() {
            return Err(Error::invalid_argument(format!(
                "{ordering:?} is not an ordering of a {:?} generator",
                self.inner.kind
            )));
        }
        // SAFETY: a live generator.
        unsafe {
            curand!(
                self.inner.curand,
                curandSetGeneratorOrdering(self.inner.raw, ordering.as_raw())
            )
        }
    }

    /// The raw generator, valid while this `Generator` lives.
    pub fn as_raw(&self) -> curandGenerator_t {
        self.inner.raw
    }

    /// Destroys the generator now, returning cuRAND's error.
    pub fn close(self) -> Result<()> {
        self.inner.close()
    }
}

/// The loaded cuRAND's version (`CURAND_VERSION`'s encoding: 10405 is 10.4.5).
///
#[doc = curand_sys::api_doc!(curandGetVersion)]
/// # Errors
///
/// [`Error::Load`] when cuRAND cannot be loaded; cuRAND's error.
#[doc(alias = "curandGetVersion")]
pub fn version() -> Result<u32> {
    let curand = curand_sys::curand()?;
    let mut version = 0;
    // SAFETY: a valid out-pointer.
    unsafe { curand!(curand, curandGetVersion(&mut version)) }?;
    Ok(u32::try_from(version).unwrap_or(0))
}

impl Release for Handle {
    const WHAT: &'static str = "cuRAND generator";

    fn release(&mut self) -> Result<()> {
        // SAFETY: created by curandCreateGenerator and destroyed once (by `Owned`).
        unsafe { curand!(self.curand, curandDestroyGenerator(self.raw)) }
    }
}

impl fmt::Debug for Generator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Generator")
            .field("kind", &self.inner.kind)
            .field("stream", &self.inner.stream)
            .field("dimensions", &self.inner.dimensions)
            .finish()
    }
}

cuda_safe::assert_send_sync!(Generator);
