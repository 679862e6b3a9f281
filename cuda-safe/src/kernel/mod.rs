//! Kernels of loaded code: the handle, its parameter list (read once, shared by clones), its
//! attributes ([`Kernel::attributes`]) and occupancy queries ([`Kernel::occupancy`]).
//!
//! ```no_run
//! use cuda_safe::{Device, ObjectCode};
//!
//! let device = Device::new(0)?;
//! let kernel = ObjectCode::from_file("saxpy.cubin")?.get_kernel("saxpy")?;
//! let attributes = kernel.attributes(&device)?;
//! let blocks = kernel.occupancy(&device).max_active_blocks_per_multiprocessor(256, 0)?;
//! println!("{} registers, {blocks} blocks of 256 per SM", attributes.num_regs);
//! # Ok::<(), cuda_safe::Error>(())
//! ```

mod attributes;
mod lookup;
mod occupancy;
mod params;

pub use attributes::KernelAttributes;
pub use occupancy::KernelOccupancy;
pub use params::ParamInfo;
pub(crate) use params::Params;

use std::ffi::CStr;
use std::fmt;
use std::sync::{Arc, OnceLock};

use crate::context::Context;
use crate::error::{Error, Result, cu};
use crate::handle::{Owned, assert_send_sync};
use crate::module::{LoadedLibrary, ObjectCode};
use cuda_sys::{CUkernel, Driver};
use params::ParamRead;

/// A kernel of an [`ObjectCode`]; cloning is cheap and keeps the code loaded.
#[derive(Clone)]
pub struct Kernel {
    raw: CUkernel,
    name: Arc<str>,
    // Read on first use (the first checked launch), so loading a kernel costs one driver call;
    // shared by the clones, so each reads it at most once between them.
    params: Arc<OnceLock<Option<Params>>>,
    library: Arc<Owned<LoadedLibrary>>,
}

// SAFETY: a CUkernel is context-independent and may be used from any thread; it is immutable.
unsafe impl Send for Kernel {}
// SAFETY: as above.
unsafe impl Sync for Kernel {}

impl Kernel {
    /// Wraps `raw`, a kernel of `library`, looked up as `name`.
    pub(crate) fn new(raw: CUkernel, name: Arc<str>, library: Arc<Owned<LoadedLibrary>>) -> Self {
        Self {
            raw,
            name,
            params: Arc::default(),
            library,
        }
    }

    /// The raw `CUkernel`.
    #[inline]
    pub fn as_raw(&self) -> CUkernel {
        self.raw
    }

    /// The name the kernel was looked up with.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The parameter list, read from the driver once. The driver needs a current context for
    /// it: with none, this returns `None` and reads again next time ([`launch`](crate::launch)
    /// reads it in the stream's context).
    ///
    /// `None` for good, and nothing logged, when the driver predates `cuKernelGetParamInfo`
    /// (CUDA 12.4: the symbol is missing) or answers `CUDA_ERROR_NOT_SUPPORTED`. `None` for
    /// good, too, when the driver fails otherwise: the failure is logged once for the kernel
    /// (at error level, naming the call and its error; its clones share the read), never read
    /// again, and launches then check the parameters read before the failure
    /// ([`launch`](crate::launch) says how).
    #[doc = cuda_sys::api_doc!(cuKernelGetParamInfo)]
    #[doc(alias = "cuKernelGetParamInfo")]
    #[inline]
    pub fn params(&self) -> Option<&[ParamInfo]> {
        match self.params.get() {
            Some(known) => known.as_ref(),
            None => self.read_params(),
        }
        .filter(|params| params.complete())
        .map(Params::list)
    }

    /// The parameter list, read in `context` (made current for the read) the first time.
    #[inline]
    pub(crate) fn params_in(&self, context: &Context) -> Option<&Params> {
        if let Some(known) = self.params.get() {
            return known.as_ref();
        }
        let _current = context.scoped().ok()?;
        self.read_params()
    }

    /// The parameter list (a prefix when the driver failed partway), read now: kept for the
    /// clones, and a failure logged by the one reader whose answer is kept.
    #[cold]
    fn read_params(&self) -> Option<&Params> {
        match params::read(self.driver(), self.raw) {
            ParamRead::Known(list) => self.params.get_or_init(|| Some(list)).as_ref(),
            ParamRead::Unknowable => self.params.get_or_init(|| None).as_ref(),
            ParamRead::NotYet => None,
            ParamRead::Failed { known, error } => {
                let read = known.list().len();
                let mut kept = false;
                let params = self.params.get_or_init(|| {
                    kept = true;
                    Some(known)
                });
                if kept {
                    let checked = match read {
                        0 => "its launches' arguments go unchecked".to_owned(),
                        _ => format!(
                            "its launches check only that the first {read} arguments have the \
                             sizes of its first {read} parameters"
                        ),
                    };
                    log::error!(
                        "cuda-safe: reading the parameters of kernel `{}` failed at parameter \
                         {read}: {error}; {checked}",
                        self.name
                    );
                }
                params.as_ref()
            }
        }
    }

    /// The number of parameters, when known (see [`params`](Self::params)).
    pub fn param_count(&self) -> Option<usize> {
        self.params().map(<[ParamInfo]>::len)
    }

    /// The code this kernel belongs to.
    pub fn object_code(&self) -> ObjectCode {
        ObjectCode::from_library(self.library.clone())
    }

    /// The driver's name for the kernel (its mangled symbol).
    ///
    #[doc = cuda_sys::api_doc!(cuKernelGetName)]
    /// # Errors
    ///
    /// The driver's error; [`Error::UnexpectedAnswer`] if it reports success with no name.
    #[doc(alias = "cuKernelGetName")]
    pub fn symbol(&self) -> Result<String> {
        let mut name = std::ptr::null();
        // SAFETY: valid out-pointer and kernel.
        unsafe { cu!(self.driver(), cuKernelGetName(&mut name, self.raw)) }?;
        if name.is_null() {
            return Err(Error::unexpected("cuKernelGetName", "a null kernel name"));
        }
        // SAFETY: the driver returns a NUL-terminated string owned by the library, alive while
        // `self` keeps the library loaded.
        Ok(unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned())
    }

    #[inline]
    pub(crate) fn driver(&self) -> &'static Driver {
        self.library.driver()
    }
}

impl fmt::Debug for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kernel")
            .field("name", &self.name)
            .field("raw", &self.raw)
            .field(
                "params",
                &self
                    .params
                    .get()
                    .map(|known| known.as_ref().map(Params::list)),
            )
            .finish()
    }
}

assert_send_sync!(Kernel);
