//! FFTs on NVIDIA's cuFFT (feature `fft`; `libcufft` is loaded at run time): plans on
//! `cuda-safe`'s streams, executed on its buffers and views, capturable into its graphs.
//!
//! - [`FftDesc`]: what a plan transforms. 1-D, 2-D or 3-D ([`FftShape`]); complex to complex,
//!   real to complex or complex to real ([`FftKind`]); f32, f64, and f16 with the feature
//!   `half` ([`FftPrecision`]); a batch of transforms, each side in cuFFT's advanced layout
//!   ([`FftLayout`]: embedding, stride, distance) if asked; in place or out of place. It is
//!   `Hash + Eq`, and says how long its input and output must be.
//! - [`FftPlan`]: one cuFFT plan for a description, bound to a stream, with cuFFT's automatic
//!   allocation off and its work area a buffer of this crate (from a memory pool, ordered on
//!   the stream). Its executions ([`FftPlan::c2c`], [`FftPlan::r2c`], [`FftPlan::c2r`] and the
//!   in-place forms) check the operands' element types, lengths and alignment first.
//! - [`Fft`]: the plans of one stream cached by description, least recently used out first.
//!
//! ```no_run
//! use cuda_safe::Device;
//! use cuda_safe_libs::fft::{Complex32, Fft, FftDesc, FftDirection};
//!
//! let device = Device::new(0)?;
//! device.set_current()?;
//! let stream = device.create_stream(Default::default())?;
//! let pool = device.default_memory_resource()?;
//! let mut fft = Fft::new(&stream)?;
//! let desc = FftDesc::c2c::<Complex32>([64, 64]);
//! let signal = vec![Complex32::new(1.0, 0.0); 64 * 64];
//! let x = pool.allocate_from_host(&signal, &stream)?;
//! let mut y = pool.allocate_zeroed::<Complex32>(64 * 64, &stream)?;
//! let mut back = pool.allocate_zeroed::<Complex32>(64 * 64, &stream)?;
//! fft.plan(&desc)?.c2c::<Complex32>(&x, &mut y, FftDirection::Forward)?;
//! fft.plan(&desc)?.c2c::<Complex32>(&y, &mut back, FftDirection::Inverse)?; // cached
//! // cuFFT does not normalize: the round trip is the input times the number of points.
//! assert_eq!(back.to_vec::<Complex32>()?[0], Complex32::new(4096.0, 0.0));
//! # Ok::<(), cuda_safe::Error>(())
//! ```
//!
//! An execution is the one cuFFT call it wraps, queued on the plan's stream (operands on other
//! streams are ordered as a kernel launch orders its buffers), so it can be captured into a
//! graph: make the plan before the capture and keep it while the graph lives. cuFFT's
//! refusals are [`CufftError`] inside [`Error::Library`](cuda_safe::Error::Library); a
//! missing `libcufft` or entry point is [`Error::Load`](cuda_safe::Error::Load).
//! `docs/fft.md` in the repository has the recipes. NVIDIA's documentation:
//! <https://docs.nvidia.com/cuda/cufft/>.

mod cache;
mod desc;
mod elements;
pub(crate) mod error;
mod exec;
mod plan;

pub use cache::{DEFAULT_PLAN_CACHE, Fft};
pub use desc::{FftDesc, FftDirection, FftKind, FftLayout, FftShape};
#[cfg(feature = "half")]
#[cfg_attr(docsrs, doc(cfg(feature = "half")))]
pub use elements::ComplexF16;
pub use elements::{Complex32, Complex64, FftComplex, FftPrecision, FftReal};
pub use error::CufftError;
pub use plan::FftPlan;

pub use crate::operand::{Input, Operand, Output};
pub use cufft_sys;

use crate::fft::error::cufft;
use cuda_safe::Result;

/// The loaded cuFFT's version (`CUFFT_VERSION`'s encoding: 11401 is 11.4.1).
///
#[doc = cufft_sys::api_doc!(cufftGetVersion)]
/// # Errors
///
/// [`Error::Load`](cuda_safe::Error::Load) when cuFFT cannot be loaded; cuFFT's error.
#[doc(alias = "cufftGetVersion")]
pub fn version() -> Result<u32> {
    let cufft = cufft_sys::cufft()?;
    let mut version = 0;
    // SAFETY: a valid out-pointer.
    unsafe { cufft!(cufft, cufftGetVersion(&mut version)) }?;
    Ok(u32::try_from(version).unwrap_or(0))
}
