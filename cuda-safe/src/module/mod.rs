//! Loading code, through the context-independent `cuLibrary*` API: one loaded [`ObjectCode`]
//! serves every context of every device, green contexts included. Its kernels are
//! [`Kernel`](crate::Kernel)s (looked up by the kernel module, which stands above this one).
//!
//! ```no_run
//! use cuda_safe::{CodeKind, Device, ObjectCode, Program, ProgramOptions};
//!
//! let device = Device::new(0)?;
//! let from_disk = ObjectCode::from_file("saxpy.cubin")?;
//! let compiled = Program::new("extern \"C\" __global__ void k() {}", ProgramOptions::default())?
//!     .compile(CodeKind::Cubin)?;
//! let code = ObjectCode::from_compiled(compiled.code())?; // or `compiled.load()?`
//! let kernel = code.get_kernel("k")?;
//! println!("{} parameters", kernel.param_count().unwrap_or(0));
//! # Ok::<(), cuda_safe::Error>(())
//! ```

mod image;

use std::ffi::{CString, c_void};
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use crate::code::{CodeKind, CompiledCode};
use crate::context::Context;
use crate::driver::driver;
use crate::error::{Error, Result, cu};
use crate::ffi::to_c_string;
use crate::handle::{Owned, Release, assert_send_sync};
use crate::program::CompiledProgram;
use crate::trace::span;
use cuda_sys::{CUdeviceptr, CUlibrary, Driver};

/// Code loaded with `cuLibraryLoadData` / `cuLibraryLoadFromFile`; cloning is cheap. Kernels
/// keep it loaded.
#[derive(Clone)]
#[must_use = "loaded code is unloaded when its last handle and kernel are dropped"]
pub struct ObjectCode {
    inner: Arc<Owned<LoadedLibrary>>,
}

/// A loaded library and the name map its kernels are looked up through.
pub(crate) struct LoadedLibrary {
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

impl LoadedLibrary {
    /// The driver entry points.
    #[inline]
    pub(crate) fn driver(&self) -> &'static Driver {
        self.driver
    }

    /// The raw `CUlibrary`.
    #[inline]
    pub(crate) fn raw(&self) -> CUlibrary {
        self.raw
    }

    /// The symbol `name` stands for: the lowered name of a name expression, or `name` itself.
    pub(crate) fn symbol_of<'a>(&'a self, name: &'a str) -> &'a str {
        self.lowered_names
            .iter()
            .find(|(expression, _)| expression == name)
            .map_or(name, |(_, lowered)| lowered.as_str())
    }
}

impl ObjectCode {
    /// Loads a CUBIN image.
    ///
    /// The image is checked against the slice's length first (the driver trusts it to
    /// describe its own): its ELF header, section and program header tables, sections,
    /// segments, string and symbol tables and relocations must all lie within it.
    ///
    #[doc = cuda_sys::api_doc!(cuLibraryLoadData)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for anything that is not a complete CUBIN (an ELF64
    /// little-endian file for CUDA), naming what is wrong; the driver's error when it refuses
    /// the image.
    #[doc(alias = "cuLibraryLoadData")]
    pub fn from_cubin(cubin: &[u8]) -> Result<Self> {
        image::check(cubin, CodeKind::Cubin)?;
        Self::load_image(cubin, Some(CodeKind::Cubin), no_names())
    }

    /// Loads a fatbin image.
    ///
    /// The image is checked against the slice's length first: its header and every part
    /// must lie within it, and each uncompressed CUBIN part must be complete.
    ///
    #[doc = cuda_sys::api_doc!(cuLibraryLoadData)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for anything that is not a complete fatbin, naming what is
    /// wrong; the driver's error when it refuses the image.
    #[doc(alias = "cuLibraryLoadData")]
    pub fn from_fatbin(fatbin: &[u8]) -> Result<Self> {
        image::check_fatbin(fatbin)?;
        Self::load_image(fatbin, Some(CodeKind::Fatbin), no_names())
    }

    /// Loads PTX text, which the driver compiles for the device on first use.
    ///
    #[doc = cuda_sys::api_doc!(cuLibraryLoadData)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for text with a NUL byte before its end; the driver's error
    /// (with its JIT log's code) when it cannot compile it.
    #[doc(alias = "cuLibraryLoadData")]
    pub fn from_ptx(ptx: &str) -> Result<Self> {
        Self::load_ptx(ptx.as_bytes(), no_names())
    }

    /// The largest file [`from_file`](Self::from_file) reads: 1 GiB (far above any kernel
    /// image); [`from_file_with_max_bytes`](Self::from_file_with_max_bytes) takes another cap.
    pub const DEFAULT_MAX_FILE_BYTES: u64 = crate::user_file::DEFAULT_MAX_FILE_BYTES;

    /// Loads a CUBIN, PTX or fatbin file, told apart by its first bytes, of at most
    /// [`DEFAULT_MAX_FILE_BYTES`](Self::DEFAULT_MAX_FILE_BYTES).
    ///
    /// The file is read here and checked as [`from_cubin`](Self::from_cubin),
    /// [`from_fatbin`](Self::from_fatbin) or [`from_ptx`](Self::from_ptx) check their images
    /// (`cuLibraryLoadFromFile` would trust a truncated file as `cuLibraryLoadData` trusts a
    /// truncated slice), then loaded with `cuLibraryLoadData`.
    ///
    #[doc = cuda_sys::api_doc!(cuLibraryLoadFromFile)]
    /// # Errors
    ///
    /// As [`from_file_with_max_bytes`](Self::from_file_with_max_bytes).
    #[doc(alias = "cuLibraryLoadFromFile")]
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self> {
        Self::from_file_with_max_bytes(path, Self::DEFAULT_MAX_FILE_BYTES)
    }

    /// [`from_file`](Self::from_file) for a file of at most `max_bytes`: a larger one is
    /// refused from its size (`fstat`), before anything is read. The file is read once (a PTX
    /// text is terminated in place, not copied).
    ///
    #[doc = cuda_sys::api_doc!(cuLibraryLoadFromFile)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] naming the file for one that cannot be read (with the
    /// system's reason), is not a regular file (a FIFO, a device, a directory), is larger than
    /// `max_bytes`, is empty or changed size while it was read, all before the driver is
    /// asked; [`Error::InvalidArgument`] for a file that is not a complete image; the driver's
    /// error when it refuses the image.
    #[doc(alias = "cuLibraryLoadFromFile")]
    pub fn from_file_with_max_bytes(path: impl AsRef<Path>, max_bytes: u64) -> Result<Self> {
        let path = path.as_ref();
        let mut bytes = crate::user_file::read_regular(path, max_bytes)?;
        match image::Format::of(&bytes) {
            image::Format::Cubin => Self::from_cubin(&bytes),
            image::Format::Fatbin => Self::from_fatbin(&bytes),
            image::Format::Ptx => {
                if bytes.last() != Some(&0) {
                    if bytes.contains(&0) {
                        return Err(ptx_holds_nul());
                    }
                    // Into the spare byte `read_regular` reserves: the text is not copied (as
                    // `load_ptx` copies a borrowed text to terminate it).
                    bytes.push(0);
                }
                Self::load_ptx(&bytes, no_names())
            }
        }
    }

    /// Loads compiled code (from [`Program::compile`](crate::Program::compile) or a program
    /// cache), keeping its name-expression map so [`get_kernel`](Self::get_kernel) resolves
    /// templated kernels.
    ///
    #[doc = cuda_sys::api_doc!(cuLibraryLoadData)]
    /// # Errors
    ///
    /// [`Error::Unsupported`] for LTO-IR, which must be linked first
    /// ([`Linker`](crate::Linker), whose output loads here);
    /// [`Error::InvalidArgument`] for bytes that are not a complete image of the kind they
    /// claim (checked as [`from_cubin`](Self::from_cubin), [`from_fatbin`](Self::from_fatbin)
    /// and [`from_ptx`](Self::from_ptx) check), as from a damaged cache entry.
    ///
    /// The check runs once per image: code that passed it (this code or a clone of it, or an
    /// on-disk cache entry stored after it and read back against its checksum) loads without
    /// walking it again.
    #[doc(alias = "cuLibraryLoadData")]
    pub fn from_compiled(code: &CompiledCode) -> Result<Self> {
        let names = code.shared_lowered_names();
        match code.kind() {
            CodeKind::LtoIr => Err(Error::unsupported(
                "loading LTO-IR",
                "LTO-IR must be linked into a CUBIN first (Linker, with LinkerOptions::lto)",
            )),
            CodeKind::Ptx => Self::load_ptx(code.bytes(), names),
            CodeKind::Cubin | CodeKind::Fatbin => {
                check_compiled(code)?;
                Self::load_image(code.bytes(), Some(code.kind()), names)
            }
        }
    }

    /// Loads PTX, adding the terminating NUL the driver needs when it is missing.
    fn load_ptx(ptx: &[u8], lowered_names: Arc<[(String, String)]>) -> Result<Self> {
        if ptx.last() == Some(&0) {
            image::check(ptx, CodeKind::Ptx)?;
            return Self::load_image(ptx, Some(CodeKind::Ptx), lowered_names);
        }
        let text = CString::new(ptx).map_err(|_| ptx_holds_nul())?;
        Self::load_image(text.as_bytes_with_nul(), Some(CodeKind::Ptx), lowered_names)
    }

    /// Loads an image the callers checked (complete, of its kind; PTX NUL-terminated).
    fn load_image(
        image: &[u8],
        kind: Option<CodeKind>,
        lowered_names: Arc<[(String, String)]>,
    ) -> Result<Self> {
        if image.is_empty() {
            return Err(Error::invalid_argument("an empty image cannot be loaded"));
        }
        let _span = span!(DEBUG, "module_load", ?kind, bytes = image.len());
        let driver = driver()?;
        let mut raw: CUlibrary = std::ptr::null_mut();
        // SAFETY: valid out-pointer; the image is a complete buffer the driver copies, checked
        // by the callers (`image::check`, `image::check_fatbin`) so that everything it points
        // to lies within its length; no options.
        unsafe {
            cu!(
                driver,
                cuLibraryLoadData(
                    &mut raw,
                    image.as_ptr().cast::<c_void>(),
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    0,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    0,
                )
            )
        }?;
        Ok(Self::wrap(raw, kind, lowered_names, driver))
    }

    fn wrap(
        raw: CUlibrary,
        kind: Option<CodeKind>,
        lowered_names: Arc<[(String, String)]>,
        driver: &'static Driver,
    ) -> Self {
        Self {
            inner: Arc::new(Owned::new(LoadedLibrary {
                raw,
                kind,
                lowered_names,
                driver,
            })),
        }
    }

    /// The handle a kernel keeps its library loaded with.
    pub(crate) fn from_library(inner: Arc<Owned<LoadedLibrary>>) -> Self {
        Self { inner }
    }

    /// Unloads the code now if this is the last handle (no kernel of it alive), returning the
    /// driver's error (dropping does the same and only logs).
    #[doc = cuda_sys::api_doc!(cuLibraryUnload)]
    #[doc(alias = "cuLibraryUnload")]
    pub fn close(self) -> Result<()> {
        Arc::try_unwrap(self.inner).map_or(Ok(()), Owned::close)
    }

    /// A global variable of the code (`__device__` or `__constant__`) in `context`: its
    /// device address and size in bytes.
    ///
    #[doc = cuda_sys::api_doc!(cuLibraryGetGlobal)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a name with a NUL byte; the driver's
    /// `CUDA_ERROR_NOT_FOUND` when the code has no such variable.
    #[doc(alias = "cuLibraryGetGlobal")]
    pub fn get_global(&self, name: &str, context: &Context) -> Result<(CUdeviceptr, usize)> {
        let c_name = to_c_string("variable name", name)?;
        let _current = context.scoped()?;
        let (mut address, mut bytes) = (0, 0);
        // SAFETY: valid out-pointers, loaded library and NUL-terminated name; the context the
        // address is for is current.
        unsafe {
            cu!(
                self.inner.driver,
                cuLibraryGetGlobal(&mut address, &mut bytes, self.inner.raw, c_name.as_ptr())
            )
        }?;
        Ok((address, bytes))
    }

    /// The raw `CUlibrary`, valid while this code (or a kernel of it) lives.
    pub fn as_raw(&self) -> CUlibrary {
        self.inner.raw
    }

    /// What was loaded ([`CodeKind::Fatbin`] for a fatbin, from
    /// [`from_fatbin`](Self::from_fatbin), a file or compiled code).
    pub fn kind(&self) -> Option<CodeKind> {
        self.inner.kind
    }

    /// The loaded library, for the kernels looked up in it to keep.
    pub(crate) fn library(&self) -> &Arc<Owned<LoadedLibrary>> {
        &self.inner
    }
}

/// The refusal of PTX text with a NUL byte before its end (the driver would read it only up
/// to there).
fn ptx_holds_nul() -> Error {
    Error::invalid_argument("PTX text holds a NUL byte before its end")
}

/// The empty name map, shared (a load of bare bytes allocates none).
fn no_names() -> Arc<[(String, String)]> {
    static NONE: std::sync::OnceLock<Arc<[(String, String)]>> = std::sync::OnceLock::new();
    NONE.get_or_init(|| Arc::from([])).clone()
}

/// Checks compiled code as [`ObjectCode::from_compiled`] would before loading it, and marks it
/// checked (so a cache stores that, and a load does not walk it again).
///
/// # Errors
///
/// [`Error::InvalidArgument`] for a CUBIN or fatbin that is not a complete image.
pub(crate) fn check_compiled(code: &CompiledCode) -> Result<()> {
    let walked = matches!(code.kind(), CodeKind::Cubin | CodeKind::Fatbin);
    if walked && !code.image_checked() {
        image::check(code.bytes(), code.kind())?;
        code.mark_image_checked();
    }
    Ok(())
}

impl CompiledProgram {
    /// Loads the code ([`ObjectCode::from_compiled`]), keeping its name map.
    ///
    #[doc = cuda_sys::api_doc!(cuLibraryLoadData)]
    /// # Errors
    ///
    /// As [`ObjectCode::from_compiled`].
    #[doc(alias = "cuLibraryLoadData")]
    pub fn load(&self) -> Result<ObjectCode> {
        ObjectCode::from_compiled(self.code())
    }
}

impl CompiledCode {
    /// Loads this code: [`ObjectCode::from_compiled`].
    ///
    /// # Errors
    ///
    /// As [`ObjectCode::from_compiled`].
    pub fn load(&self) -> Result<ObjectCode> {
        ObjectCode::from_compiled(self)
    }
}

impl Release for LoadedLibrary {
    const WHAT: &'static str = "library";

    fn release(&mut self) -> Result<()> {
        // SAFETY: the library is owned, and no kernel of it is alive (they hold this value);
        // it is unloaded once (by `Owned`).
        unsafe { cu!(self.driver, cuLibraryUnload(self.raw)) }
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

assert_send_sync!(ObjectCode);

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::{ObjectCode, check_compiled};
    use crate::code::{CodeKind, CompiledCode};

    const CUBIN: &[u8] = include_bytes!("image/testdata/saxpy_sm90.cubin");

    /// A sparse file of 4 GiB used to be read whole (47 s, 8.2 GB of memory) before its image
    /// check; now its size refuses it at once.
    #[test]
    fn a_file_over_the_cap_is_refused_before_it_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("huge.cubin");
        std::fs::File::create(&path)
            .unwrap()
            .set_len(4 << 30)
            .unwrap();
        let started = Instant::now();
        let error = ObjectCode::from_file(&path).unwrap_err().to_string();
        assert!(started.elapsed() < Duration::from_millis(500));
        assert!(error.contains("over the cap of 1073741824"), "{error}");
        std::fs::write(&path, CUBIN).unwrap();
        let error = ObjectCode::from_file_with_max_bytes(&path, 100)
            .unwrap_err()
            .to_string();
        assert!(error.contains("over the cap of 100"), "{error}");
    }

    #[test]
    fn an_image_is_checked_once_and_a_bad_one_never_marked() {
        let code = CompiledCode::new(CodeKind::Cubin, CUBIN.to_vec(), Vec::new());
        let clone = code.clone();
        assert!(!code.image_checked());
        check_compiled(&code).unwrap();
        assert!(
            clone.image_checked(),
            "the clones share the bytes and the mark"
        );
        let truncated = CompiledCode::new(
            CodeKind::Cubin,
            CUBIN[..CUBIN.len() - 1].to_vec(),
            Vec::new(),
        );
        assert!(check_compiled(&truncated).is_err());
        assert!(!truncated.image_checked());
        assert!(ObjectCode::from_compiled(&truncated).is_err());
    }
}
