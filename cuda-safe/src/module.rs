//! Loaded code and its kernels, through the context-independent `cuLibrary*` API: one loaded
//! [`ObjectCode`] serves every context of every device, green contexts included.
//!
//! ```no_run
//! use cuda_safe::{Device, ObjectCode};
//!
//! let device = Device::new(0)?;
//! let _context = device.set_current()?; // the parameter list is read in a current context
//! let code = ObjectCode::from_file("saxpy.cubin")?;
//! let kernel = code.get_kernel("saxpy")?;
//! let attributes = kernel.attributes(&device)?;
//! println!("{} registers, {:?} parameters", attributes.num_regs, kernel.param_count());
//! # Ok::<(), cuda_safe::Error>(())
//! ```

use std::ffi::{CStr, CString, c_void};
use std::fmt;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use crate::cache::{CachedProgram, CodeKind};
use crate::error::check;
use crate::sys::{
    CUdeviceptr, CUfunction, CUfunction_attribute, CUkernel, CUlibrary, CUresult, Driver,
};
use crate::system::text::to_c_string;
use crate::{Device, Error, Result};

/// Code loaded with `cuLibraryLoadData` / `cuLibraryLoadFromFile`; cloning is cheap. Kernels
/// keep it loaded.
#[derive(Clone)]
pub struct ObjectCode {
    inner: Arc<LoadedLibrary>,
}

struct LoadedLibrary {
    raw: CUlibrary,
    kind: Option<CodeKind>,
    lowered_names: Arc<[(String, String)]>,
    driver: &'static Driver,
}

// SAFETY: a CUlibrary is context-independent and may be used from any thread; the handle and
// the name map are immutable after loading.
unsafe impl Send for LoadedLibrary {}
// SAFETY: as above.
unsafe impl Sync for LoadedLibrary {}

/// One parameter of a kernel, from `cuKernelGetParamInfo`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamInfo {
    /// Byte offset in the parameter buffer.
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
}

/// A kernel of an [`ObjectCode`]; cloning is cheap and keeps the code loaded.
#[derive(Clone)]
pub struct Kernel {
    raw: CUkernel,
    name: Arc<str>,
    // Read on first use (the first checked launch), so loading a kernel costs one driver call;
    // shared by the clones, so each reads it at most once between them.
    params: Arc<OnceLock<Option<Arc<[ParamInfo]>>>>,
    library: Arc<LoadedLibrary>,
}

// SAFETY: a CUkernel is context-independent and may be used from any thread; it is immutable.
unsafe impl Send for Kernel {}
// SAFETY: as above.
unsafe impl Sync for Kernel {}

/// A kernel's resource use and limits on one device (`cuKernelGetAttribute`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct KernelAttributes {
    /// Registers per thread.
    pub num_regs: u32,
    /// Static shared memory per block, in bytes.
    pub shared_size_bytes: u32,
    /// Constant memory, in bytes.
    pub const_size_bytes: u32,
    /// Local memory per thread, in bytes.
    pub local_size_bytes: u32,
    /// The most threads a block of this kernel can have (limited by its registers).
    pub max_threads_per_block: u32,
    /// The PTX ISA version it was compiled for (`90` is 9.0).
    pub ptx_version: u32,
    /// The binary (SASS) version (`90` for sm_90).
    pub binary_version: u32,
    /// The dynamic shared memory a launch may ask for without raising the limit.
    pub max_dynamic_shared_size_bytes: u32,
}

impl ObjectCode {
    /// Loads a CUBIN image (an ELF file; anything else is [`Error::InvalidArgument`]).
    #[doc(alias = "cuLibraryLoadData")]
    pub fn from_cubin(cubin: &[u8]) -> Result<Self> {
        expect_magic(cubin, ELF_MAGIC, "a CUBIN (ELF)")?;
        Self::load_image(cubin, Some(CodeKind::Cubin), Arc::from([]))
    }

    /// Loads a fatbin image (anything without the fatbin magic is [`Error::InvalidArgument`]).
    #[doc(alias = "cuLibraryLoadData")]
    pub fn from_fatbin(fatbin: &[u8]) -> Result<Self> {
        expect_magic(fatbin, FATBIN_MAGIC, "a fatbin")?;
        Self::load_image(fatbin, None, Arc::from([]))
    }

    /// Loads PTX text, which the driver compiles for the device on first use.
    #[doc(alias = "cuLibraryLoadData")]
    pub fn from_ptx(ptx: &str) -> Result<Self> {
        Self::load_ptx(ptx.as_bytes(), Arc::from([]))
    }

    /// Loads a CUBIN, PTX or fatbin file (the driver tells them apart).
    #[doc(alias = "cuLibraryLoadFromFile")]
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let name = CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| {
            Error::invalid_argument(format!("path {} holds a NUL byte", path.display()))
        })?;
        Self::load_with(
            None,
            Arc::from([]),
            "cuLibraryLoadFromFile",
            |driver, raw| {
                // SAFETY: valid out-pointer and NUL-terminated path; no options.
                unsafe {
                    driver.cuLibraryLoadFromFile(
                        raw,
                        name.as_ptr(),
                        std::ptr::null_mut(),
                        std::ptr::null_mut(),
                        0,
                        std::ptr::null_mut(),
                        std::ptr::null_mut(),
                        0,
                    )
                }
            },
        )
    }

    /// Loads compiled code (from [`Program`](crate::Program) or a program cache), keeping its
    /// name-expression map so [`get_kernel`](Self::get_kernel) resolves templated kernels.
    ///
    /// LTO-IR cannot be loaded directly: it must be linked first.
    #[doc(alias = "cuLibraryLoadData")]
    pub fn load(program: &CachedProgram) -> Result<Self> {
        let names = program.lowered_names.clone();
        match program.kind {
            CodeKind::LtoIr => Err(Error::unsupported(
                "loading LTO-IR",
                "LTO-IR must be linked into a CUBIN (nvJitLink) before it can be loaded",
            )),
            CodeKind::Ptx => Self::load_ptx(&program.code, names),
            CodeKind::Cubin => {
                expect_magic(&program.code, ELF_MAGIC, "a CUBIN (ELF)")?;
                Self::load_image(&program.code, Some(CodeKind::Cubin), names)
            }
        }
    }

    /// Loads PTX, adding the terminating NUL the driver needs when it is missing.
    fn load_ptx(ptx: &[u8], lowered_names: Arc<[(String, String)]>) -> Result<Self> {
        if ptx.last() == Some(&0) {
            return Self::load_image(ptx, Some(CodeKind::Ptx), lowered_names);
        }
        let text = CString::new(ptx)
            .map_err(|_| Error::invalid_argument("PTX text holds a NUL byte before its end"))?;
        Self::load_image(text.as_bytes_with_nul(), Some(CodeKind::Ptx), lowered_names)
    }

    fn load_image(
        image: &[u8],
        kind: Option<CodeKind>,
        lowered_names: Arc<[(String, String)]>,
    ) -> Result<Self> {
        if image.is_empty() {
            return Err(Error::invalid_argument("an empty image cannot be loaded"));
        }
        Self::load_with(kind, lowered_names, "cuLibraryLoadData", |driver, raw| {
            // SAFETY: valid out-pointer; the image is a complete buffer the driver copies (PTX
            // is NUL-terminated by the callers); no options.
            unsafe {
                driver.cuLibraryLoadData(
                    raw,
                    image.as_ptr().cast::<c_void>(),
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    0,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    0,
                )
            }
        })
    }

    /// Runs one of the `cuLibraryLoad*` calls and wraps the library it made.
    fn load_with(
        kind: Option<CodeKind>,
        lowered_names: Arc<[(String, String)]>,
        api: &'static str,
        load: impl FnOnce(
            &'static Driver,
            *mut CUlibrary,
        ) -> std::result::Result<CUresult, crate::sys::LoadError>,
    ) -> Result<Self> {
        let driver = crate::driver::driver()?;
        let mut raw: CUlibrary = std::ptr::null_mut();
        check(api, load(driver, &mut raw))?;
        Ok(Self {
            inner: Arc::new(LoadedLibrary {
                raw,
                kind,
                lowered_names,
                driver,
            }),
        })
    }

    /// Unloads the code now if this is the last handle (no kernel of it alive), returning the
    /// driver's error (dropping does the same and only logs).
    #[doc(alias = "cuLibraryUnload")]
    pub fn close(self) -> Result<()> {
        match Arc::try_unwrap(self.inner) {
            Ok(mut library) => {
                let result = library.unload();
                library.raw = std::ptr::null_mut(); // unloaded: the drop skips it
                result
            }
            Err(_) => Ok(()),
        }
    }

    /// A global variable of the code (`__device__` or `__constant__`) in `context`: its
    /// device address and size in bytes.
    #[doc(alias = "cuLibraryGetGlobal")]
    pub fn get_global(&self, name: &str, context: &crate::Context) -> Result<(CUdeviceptr, usize)> {
        let c_name = to_c_string("variable name", name)?;
        let _current = context.scoped()?;
        let (mut address, mut bytes) = (0, 0);
        // SAFETY: valid out-pointers, loaded library and NUL-terminated name; the context the
        // address is for is current.
        check("cuLibraryGetGlobal", unsafe {
            self.inner.driver.cuLibraryGetGlobal(
                &mut address,
                &mut bytes,
                self.inner.raw,
                c_name.as_ptr(),
            )
        })?;
        Ok((address, bytes))
    }

    /// Every kernel of the code, named by its symbol (CUDA 12.4 drivers on).
    #[doc(alias = "cuLibraryEnumerateKernels")]
    pub fn kernels(&self) -> Result<Vec<Kernel>> {
        let driver = self.inner.driver;
        let mut count = 0;
        // SAFETY: valid out-pointer and library.
        check("cuLibraryGetKernelCount", unsafe {
            driver.cuLibraryGetKernelCount(&mut count, self.inner.raw)
        })?;
        let mut raws: Vec<CUkernel> = vec![std::ptr::null_mut(); count as usize];
        // SAFETY: `raws` holds `count` handles.
        check("cuLibraryEnumerateKernels", unsafe {
            driver.cuLibraryEnumerateKernels(raws.as_mut_ptr(), count, self.inner.raw)
        })?;
        raws.into_iter()
            .map(|raw| {
                let mut kernel = Kernel {
                    raw,
                    name: Arc::from(""),
                    params: Arc::default(),
                    library: self.inner.clone(),
                };
                kernel.name = Arc::from(kernel.symbol()?);
                Ok(kernel)
            })
            .collect()
    }

    /// The raw `CUlibrary`, valid while this code (or a kernel of it) lives.
    pub fn as_raw(&self) -> CUlibrary {
        self.inner.raw
    }

    /// What was loaded, when known (`None` for fatbins and files).
    pub fn kind(&self) -> Option<CodeKind> {
        self.inner.kind
    }

    /// The kernel called `name`: a name expression given to the program before compiling
    /// (`"scale<float>"`), or the kernel's symbol (`"saxpy"` for an `extern "C"` kernel).
    #[doc(alias = "cuLibraryGetKernel")]
    pub fn get_kernel(&self, name: &str) -> Result<Kernel> {
        let symbol = self
            .inner
            .lowered_names
            .iter()
            .find(|(expression, _)| expression == name)
            .map_or(name, |(_, lowered)| lowered.as_str());
        let c_symbol = to_c_string("kernel name", symbol)?;
        let mut raw: CUkernel = std::ptr::null_mut();
        // SAFETY: valid out-pointer, loaded library and NUL-terminated name.
        check("cuLibraryGetKernel", unsafe {
            self.inner
                .driver
                .cuLibraryGetKernel(&mut raw, self.inner.raw, c_symbol.as_ptr())
        })?;
        Ok(Kernel {
            raw,
            name: Arc::from(name),
            params: Arc::default(),
            library: self.inner.clone(),
        })
    }
}

/// The first bytes of an ELF file, which a CUBIN is.
const ELF_MAGIC: &[u8] = b"\x7fELF";
/// The first bytes of a fatbin (`0xBA55ED50`, little-endian).
const FATBIN_MAGIC: &[u8] = &[0x50, 0xed, 0x55, 0xba];

/// Refuses an image that does not start with `magic`: the driver may accept garbage lazily
/// and fail only at the first kernel lookup.
fn expect_magic(image: &[u8], magic: &[u8], what: &str) -> Result<()> {
    if image.starts_with(magic) {
        Ok(())
    } else {
        Err(Error::invalid_argument(format!(
            "the image ({} bytes) is not {what}: it does not start with {magic:02x?}",
            image.len()
        )))
    }
}

/// What reading a kernel's parameter list gave.
enum ParamRead {
    /// The list.
    Known(Arc<[ParamInfo]>),
    /// The driver cannot tell (before CUDA 12.4): no checks.
    Unknowable,
    /// No context was current, or the driver failed for now: a later read may succeed.
    NotYet,
}

/// The most parameters a kernel can have (its parameters fit in 32,764 bytes), bounding the
/// read whatever a driver answers.
const MAX_PARAMS: usize = 32_764;

/// Reads the kernel's parameter list (`cuKernelGetParamInfo`, which needs a current context).
#[cold]
fn param_info(driver: &'static Driver, kernel: CUkernel) -> ParamRead {
    let mut params = Vec::new();
    while params.len() <= MAX_PARAMS {
        let (mut offset, mut size) = (0usize, 0usize);
        // SAFETY: valid out-pointers and kernel; an index past the end is an error code.
        match unsafe { driver.cuKernelGetParamInfo(kernel, params.len(), &mut offset, &mut size) } {
            Ok(CUresult::CUDA_SUCCESS) => params.push(ParamInfo { offset, size }),
            Ok(CUresult::CUDA_ERROR_INVALID_VALUE) => return ParamRead::Known(params.into()),
            // The driver cannot tell, now or later.
            Ok(CUresult::CUDA_ERROR_NOT_SUPPORTED) => return ParamRead::Unknowable,
            Err(crate::sys::LoadError::SymbolMissing { .. }) => return ParamRead::Unknowable,
            // No context, or a transient error: unknown for now, asked again next time.
            Ok(_) | Err(_) => return ParamRead::NotYet,
        }
    }
    ParamRead::Unknowable
}

impl Kernel {
    /// The raw `CUkernel`.
    #[inline]
    pub fn as_raw(&self) -> CUkernel {
        self.raw
    }

    /// The name the kernel was looked up with.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The parameter list (`None` when the driver predates `cuKernelGetParamInfo`, CUDA 12.4),
    /// read from the driver once. The driver needs a current context for it: with none, this
    /// returns `None` and reads again next time ([`launch`](crate::launch) reads it in the
    /// stream's context).
    #[doc(alias = "cuKernelGetParamInfo")]
    #[inline]
    pub fn params(&self) -> Option<&[ParamInfo]> {
        match self.params.get() {
            Some(known) => known.as_deref(),
            None => self.read_params(),
        }
    }

    /// The parameter list, read in `context` (made current for the read) the first time.
    #[inline]
    pub(crate) fn params_in(&self, context: &crate::Context) -> Option<&[ParamInfo]> {
        if let Some(known) = self.params.get() {
            return known.as_deref();
        }
        let _current = context.scoped().ok()?;
        self.read_params()
    }

    #[cold]
    fn read_params(&self) -> Option<&[ParamInfo]> {
        match param_info(self.library.driver, self.raw) {
            ParamRead::Known(list) => self.params.get_or_init(|| Some(list)).as_deref(),
            ParamRead::Unknowable => self.params.get_or_init(|| None).as_deref(),
            ParamRead::NotYet => None,
        }
    }

    /// The number of parameters, when known.
    pub fn param_count(&self) -> Option<usize> {
        self.params().map(<[ParamInfo]>::len)
    }

    /// The code this kernel belongs to.
    pub fn object_code(&self) -> ObjectCode {
        ObjectCode {
            inner: self.library.clone(),
        }
    }

    /// One raw attribute on `device`.
    #[doc(alias = "cuKernelGetAttribute")]
    pub fn attribute(&self, attribute: CUfunction_attribute, device: &Device) -> Result<i32> {
        let mut value = 0;
        // SAFETY: valid out-pointer, kernel and device.
        check("cuKernelGetAttribute", unsafe {
            self.library.driver.cuKernelGetAttribute(
                &mut value,
                attribute,
                self.raw,
                device.as_raw(),
            )
        })?;
        Ok(value)
    }

    /// The kernel's resource use and limits on `device`.
    pub fn attributes(&self, device: &Device) -> Result<KernelAttributes> {
        use CUfunction_attribute as A;
        let get = |attribute| Ok::<u32, Error>(self.attribute(attribute, device)?.max(0) as u32);
        Ok(KernelAttributes {
            num_regs: get(A::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
            shared_size_bytes: get(A::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
            const_size_bytes: get(A::CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES)?,
            local_size_bytes: get(A::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
            max_threads_per_block: get(A::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            ptx_version: get(A::CU_FUNC_ATTRIBUTE_PTX_VERSION)?,
            binary_version: get(A::CU_FUNC_ATTRIBUTE_BINARY_VERSION)?,
            max_dynamic_shared_size_bytes: get(A::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)?,
        })
    }

    /// Sets a settable attribute on `device` (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`,
    /// `..._PREFERRED_SHARED_MEMORY_CARVEOUT`, `..._NON_PORTABLE_CLUSTER_SIZE_ALLOWED`, ...).
    #[doc(alias = "cuKernelSetAttribute")]
    pub fn set_attribute(
        &self,
        attribute: CUfunction_attribute,
        value: i32,
        device: &Device,
    ) -> Result<()> {
        // SAFETY: valid kernel and device; the driver checks the attribute and value.
        check("cuKernelSetAttribute", unsafe {
            self.library
                .driver
                .cuKernelSetAttribute(attribute, value, self.raw, device.as_raw())
        })
    }

    /// Allows launches on `device` to ask for up to `bytes` of dynamic shared memory.
    pub fn set_max_dynamic_shared_memory(&self, bytes: u32, device: &Device) -> Result<()> {
        let value = i32::try_from(bytes)
            .map_err(|_| Error::invalid_argument(format!("{bytes} bytes of shared memory")))?;
        self.set_attribute(
            CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            value,
            device,
        )
    }

    /// Runs an occupancy query `query` with the kernel as a function of `device`'s primary
    /// context, current for the query only.
    fn with_function<T>(
        &self,
        device: &Device,
        query: impl FnOnce(CUfunction) -> Result<T>,
    ) -> Result<T> {
        let context = device.context()?;
        let _current = context.scoped()?;
        let mut function: CUfunction = std::ptr::null_mut();
        // SAFETY: valid out-pointer and kernel; the context is current.
        check("cuKernelGetFunction", unsafe {
            self.library
                .driver
                .cuKernelGetFunction(&mut function, self.raw)
        })?;
        query(function)
    }

    /// How many blocks of `block_size` threads (with `dynamic_shared` bytes of dynamic shared
    /// memory each) fit on one SM of `device` at once.
    #[doc(alias = "cuOccupancyMaxActiveBlocksPerMultiprocessor")]
    pub fn max_active_blocks_per_multiprocessor(
        &self,
        device: &Device,
        block_size: u32,
        dynamic_shared: usize,
    ) -> Result<u32> {
        let block = i32::try_from(block_size)
            .map_err(|_| Error::invalid_argument(format!("block size {block_size}")))?;
        self.with_function(device, |function| {
            let mut blocks = 0;
            // SAFETY: valid out-pointer and function; the context is current.
            check("cuOccupancyMaxActiveBlocksPerMultiprocessor", unsafe {
                self.library
                    .driver
                    .cuOccupancyMaxActiveBlocksPerMultiprocessor(
                        &mut blocks,
                        function,
                        block,
                        dynamic_shared,
                    )
            })?;
            Ok(blocks.max(0) as u32)
        })
    }

    /// The block size that maximises occupancy on `device`, and the smallest grid that fills
    /// the device with it: `(min_grid_size, block_size)`.
    #[doc(alias = "cuOccupancyMaxPotentialBlockSize")]
    pub fn max_potential_block_size(
        &self,
        device: &Device,
        dynamic_shared: usize,
    ) -> Result<(u32, u32)> {
        self.with_function(device, |function| {
            let (mut grid, mut block) = (0, 0);
            // SAFETY: valid out-pointers and function; no per-block-size callback; the context
            // is current.
            check("cuOccupancyMaxPotentialBlockSize", unsafe {
                self.library.driver.cuOccupancyMaxPotentialBlockSize(
                    &mut grid,
                    &mut block,
                    function,
                    None,
                    dynamic_shared,
                    0,
                )
            })?;
            Ok((grid.max(0) as u32, block.max(0) as u32))
        })
    }

    /// The driver's name for the kernel (its mangled symbol).
    #[doc(alias = "cuKernelGetName")]
    pub fn symbol(&self) -> Result<String> {
        let mut name = std::ptr::null();
        // SAFETY: valid out-pointer and kernel.
        check("cuKernelGetName", unsafe {
            self.library.driver.cuKernelGetName(&mut name, self.raw)
        })?;
        if name.is_null() {
            return Err(Error::invalid_argument(
                "the driver returned no kernel name",
            ));
        }
        // SAFETY: the driver returns a NUL-terminated string owned by the library, alive while
        // `self` keeps the library loaded.
        Ok(unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned())
    }

    #[inline]
    pub(crate) fn driver(&self) -> &'static Driver {
        self.library.driver
    }
}

impl LoadedLibrary {
    /// Unloads the library (once: a null handle was unloaded already).
    fn unload(&self) -> Result<()> {
        if self.raw.is_null() {
            return Ok(());
        }
        // SAFETY: the library is owned, and no kernel of it is alive (they hold this value).
        check("cuLibraryUnload", unsafe {
            self.driver.cuLibraryUnload(self.raw)
        })
    }
}

impl Drop for LoadedLibrary {
    fn drop(&mut self) {
        if let Err(error) = self.unload() {
            crate::log_drop_error("library", &error);
        }
    }
}

impl fmt::Debug for ObjectCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectCode")
            .field("raw", &self.inner.raw)
            .field("kind", &self.inner.kind)
            .field("name_expressions", &self.inner.lowered_names.len())
            .finish()
    }
}

impl fmt::Debug for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kernel")
            .field("name", &self.name)
            .field("raw", &self.raw)
            .field("params", &self.params.get())
            .finish()
    }
}

crate::assert_send_sync!(ObjectCode, Kernel);
