//! Linking device code at run time, as `cuda.core`'s `Linker`: LTO-IR, PTX, CUBIN, fatbin,
//! objects and archives into one CUBIN (or PTX, or LTO-IR for a later link), in one step or
//! incrementally, with nvJitLink, falling back to the driver's linker where nvJitLink is absent
//! (or the crate is built without its `nvjitlink` feature).
//!
//! ```no_run
//! use cuda_safe::cache::InMemoryProgramCache;
//! use cuda_safe::{CodeKind, LinkInput, Linker, LinkerOptions, Program, ProgramOptions};
//!
//! // Two translation units as LTO-IR: `scale` is defined in one and called from the other.
//! let options = ProgramOptions::default().relocatable_device_code(true);
//! let library = Program::new("__device__ float scale(float x) { return 3.0f * x; }", options.clone())?
//!     .compile(CodeKind::LtoIr)?;
//! let kernel = Program::new(
//!     r#"__device__ float scale(float x);
//!        extern "C" __global__ void k(float* x) { x[threadIdx.x] = scale(x[threadIdx.x]); }"#,
//!     options,
//! )?
//! .compile(CodeKind::LtoIr)?;
//!
//! let mut linker = Linker::new(LinkerOptions::default().lto(true))?;
//! linker.add(LinkInput::from_compiled(library.code(), "library.ltoir")?);
//! linker.add(LinkInput::from_compiled(kernel.code(), "kernel.ltoir")?);
//! let cache = InMemoryProgramCache::new(64 << 20);
//! let linked = linker.link_cached(CodeKind::Cubin, &cache)?; // a second call is a hit
//! let k = linked.load()?.get_kernel("k")?;
//! # Ok::<(), cuda_safe::Error>(())
//! ```
//!
//! A failed link is [`Error::Link`]: the linker call's error as its source, and the linker's
//! error log, info log and the flags used as its log ([`Error::link_log`]).

mod devrt;
mod driver;
#[cfg(feature = "fatbin")]
mod fatbin;
mod input;
mod keying;
#[cfg(feature = "nvjitlink")]
mod nvjitlink;
// Without the `nvjitlink` feature: the backend's calls, each refusing as an absent nvJitLink.
#[cfg(not(feature = "nvjitlink"))]
#[path = "nvjitlink_absent.rs"]
mod nvjitlink;
mod options;
mod partial;

#[cfg(feature = "fatbin")]
#[cfg_attr(docsrs, doc(cfg(feature = "fatbin")))]
pub use fatbin::{FatbinBuilder, FatbinCompression, FatbinHost, FatbinOptions};
pub use input::{LinkInput, LinkInputKind};
#[cfg(feature = "nvjitlink")]
#[cfg_attr(docsrs, doc(cfg(feature = "nvjitlink")))]
pub use nvjitlink::nvjitlink_version;
pub use options::{LinkerBackend, LinkerOptions};

use crate::cache::{CacheKey, ProgramCache};
use crate::code::{CodeKind, CompiledCode};
use crate::error::{Error, Result};
#[cfg(feature = "nvjitlink")]
use crate::library_note::noted;
#[cfg(feature = "nvjitlink")]
use crate::library_note::search::Search;
use crate::program::{CompiledProgram, Toolchain};
use crate::trace::span;

/// What a backend returns: the linked bytes and its info log.
struct Linked {
    bytes: Vec<u8>,
    info_log: String,
}

/// A set of inputs and [`LinkerOptions`] to link into one CUBIN or PTX image.
///
/// Linking does not change it: it can be linked for both targets, from several threads.
#[derive(Debug, Clone)]
pub struct Linker {
    options: LinkerOptions,
    inputs: Vec<LinkInput>,
    lowered_names: Vec<(String, String)>,
}

/// The result of a link: now the same type as a compile's result.
#[deprecated(
    since = "0.2.0",
    note = "a link returns a `CompiledProgram`, the type a compile returns"
)]
pub type LinkedCode = CompiledProgram;

impl Linker {
    /// A linker with checked `options` and no inputs.
    ///
    /// # Errors
    ///
    /// As [`LinkerOptions::validate`].
    pub fn new(options: LinkerOptions) -> Result<Self> {
        options.validate()?;
        Ok(Self {
            options,
            inputs: Vec::new(),
            lowered_names: Vec::new(),
        })
    }

    /// Adds one input, after those already added.
    pub fn add(&mut self, input: LinkInput) -> &mut Self {
        self.inputs.push(input);
        self
    }

    /// Adds compiled code ([`Program::compile`](crate::Program::compile)'s output) named
    /// `name`, and keeps its name-expression map, so the linked image resolves templated
    /// kernels by the expression ([`ObjectCode::get_kernel`](crate::ObjectCode::get_kernel)).
    ///
    /// # Errors
    ///
    /// As [`LinkInput::from_compiled`].
    pub fn add_compiled(&mut self, code: &CompiledCode, name: &str) -> Result<&mut Self> {
        let input = LinkInput::from_compiled(code, name)?;
        for pair in code.lowered_names() {
            if !self.lowered_names.contains(pair) {
                self.lowered_names.push(pair.clone());
            }
        }
        Ok(self.add(input))
    }

    /// The options.
    pub fn options(&self) -> &LinkerOptions {
        &self.options
    }

    /// The inputs, in the order added.
    pub fn inputs(&self) -> &[LinkInput] {
        &self.inputs
    }

    /// The backend a link would use now: the one the options ask for, or under
    /// [`LinkerBackend::Auto`] nvJitLink when `libnvJitLink` loads and exports the plain entry
    /// points this crate calls (12.3 on), else the driver linker.
    pub fn backend(&self) -> LinkerBackend {
        match self.options.backend {
            LinkerBackend::Auto if nvjitlink_usable() => LinkerBackend::NvJitLink,
            LinkerBackend::Auto => LinkerBackend::Driver,
            chosen => chosen,
        }
    }

    /// Links every input into a `target` image: CUBIN, or with `lto` PTX or LTO-IR (nvJitLink
    /// 13.3), the last an input of a later link. With [`LinkerOptions::incremental`] (nvJitLink
    /// 13.2) the CUBIN or LTO-IR is relocatable and may keep unresolved device references:
    /// link it again ([`Linker::add_compiled`]) with what resolves them.
    ///
    #[cfg_attr(feature = "nvjitlink", doc = nvjitlink_sys::api_doc!(nvJitLinkCreate))]
    #[cfg_attr(feature = "nvjitlink", doc = nvjitlink_sys::api_doc!(nvJitLinkAddData))]
    #[cfg_attr(feature = "nvjitlink", doc = nvjitlink_sys::api_doc!(nvJitLinkComplete))]
    #[cfg_attr(feature = "nvjitlink", doc = nvjitlink_sys::api_doc!(nvJitLinkGetLinkedCubin))]
    #[cfg_attr(feature = "nvjitlink", doc = nvjitlink_sys::api_doc!(nvJitLinkGetLinkedPtx))]
    ///
    /// Calls [`nvJitLinkGetLinkedLTOIRSize` and
    /// `nvJitLinkGetLinkedLTOIR`](https://docs.nvidia.com/cuda/nvjitlink/index.html#group__linking_1ga4c3898e62ed328d88a9320fa86fd2059)
    /// for LTO-IR output (nvJitLink 13.3; in the CUDA 13 headers only).
    #[cfg_attr(feature = "nvjitlink", doc = nvjitlink_sys::api_doc!(nvJitLinkVersion))]
    #[cfg_attr(feature = "nvjitlink", doc = nvjitlink_sys::api_doc!(nvJitLinkGetErrorLog))]
    #[cfg_attr(feature = "nvjitlink", doc = nvjitlink_sys::api_doc!(nvJitLinkGetInfoLog))]
    #[cfg_attr(feature = "nvjitlink", doc = nvjitlink_sys::api_doc!(nvJitLinkDestroy))]
    #[doc = cuda_sys::api_doc!(cuLinkCreate)]
    #[doc = cuda_sys::api_doc!(cuLinkAddData)]
    #[doc = cuda_sys::api_doc!(cuLinkComplete)]
    #[doc = cuda_sys::api_doc!(cuLinkDestroy)]
    /// # Errors
    ///
    /// - [`Error::InvalidArgument`] with no inputs, for LTO-IR inputs without `lto`, for PTX
    ///   or CUBIN inputs of an LTO-IR link (they carry no IR, and nvJitLink would drop them),
    ///   and as [`LinkerOptions::to_flags`];
    /// - [`Error::Unsupported`] when the driver linker would link (nvJitLink is absent, or
    ///   [`LinkerBackend::Driver`]) and the link needs what it lacks: LTO-IR, PTX or LTO-IR
    ///   output, or an nvJitLink-only option (named); when the loaded nvJitLink is older than
    ///   an incremental link (13.2) or LTO-IR output (13.3) needs, naming both versions; for
    ///   LTO-IR output from a build of the CUDA 12 ABI, whose bindings lack the getter;
    /// - [`Error::Link`] when the linker refuses an option or an input or fails to link
    ///   (undefined symbols, an architecture mismatch): the call's error, with the error
    ///   log, the info log and the flags;
    /// - [`Error::Load`] when [`LinkerBackend::NvJitLink`] is asked for and cannot be loaded.
    #[doc(alias(
        "nvJitLinkCreate",
        "nvJitLinkAddData",
        "nvJitLinkComplete",
        "nvJitLinkGetLinkedCubin",
        "nvJitLinkGetLinkedPtx",
        "nvJitLinkGetLinkedLTOIR",
        "nvJitLinkVersion",
        "nvJitLinkGetErrorLog",
        "nvJitLinkGetInfoLog",
        "nvJitLinkDestroy",
        "cuLinkCreate",
        "cuLinkAddData",
        "cuLinkComplete",
        "cuLinkDestroy"
    ))]
    pub fn link(&self, target: CodeKind) -> Result<CompiledProgram> {
        let plan = self.plan(target)?;
        self.link_with(target, &plan)
    }

    /// The key a cache stores this link to `target` under: the backend and its version
    /// (nvJitLink's, or the driver's for its linker), the target and architecture, the exact
    /// flags, and a digest of every input (kind, name, bytes, in order) and of the name map.
    ///
    /// # Errors
    ///
    /// As [`Linker::link`] before any linking; [`Error::Load`] when the backend cannot be
    /// loaded to ask its version.
    pub fn cache_key(&self, target: CodeKind) -> Result<CacheKey> {
        let plan = self.plan(target)?;
        self.key_for(target, &plan, &plan.version()?)
    }

    /// Links to `target` through `cache`: a hit returns the stored image (with an empty info
    /// log, [`CompiledProgram::from_cache`] true) and links nothing, in this process or another
    /// one sharing a file cache; a miss links and stores. A cache that fails to read or write
    /// is logged and treated as a miss; a failed link is never stored.
    ///
    /// The key names the backend's version. A fresh process learns nvJitLink's from `cache`'s
    /// note on the nvJitLink library file the loader would open, without loading it (a hit
    /// then loads no nvJitLink); where there is no such note, or anything it names changed,
    /// nvJitLink is loaded and asked, and the note written. A miss checks the note first. As
    /// with [`Program::compile_cached`](crate::Program::compile_cached), a cache that keeps
    /// noted entries is given an nvJitLink link's image a second time with the note inside, so
    /// a fresh process's first link hit reads one file.
    ///
    /// # Errors
    ///
    /// As [`Linker::cache_key`], then as [`Linker::link`].
    pub fn link_cached(
        &self,
        target: CodeKind,
        cache: &dyn ProgramCache,
    ) -> Result<CompiledProgram> {
        // Made before anything loads nvJitLink, so that it describes the search that would.
        let search = keying::fresh_search(self.options.backend);
        // Every key of this call is made from one pass over the inputs.
        let digest = self.inputs_digest();
        #[cfg(feature = "nvjitlink")]
        if let Some(search) = &search
            && let Some(hit) = self.noted_hit(target, cache, search, &digest)?
        {
            return Ok(hit);
        }
        let keying = keying::keying(self.options.backend, cache, search.as_ref())?;
        let (linked, key) = self.fetch_or_link(target, cache, keying, &digest)?;
        #[cfg(feature = "nvjitlink")]
        if search.is_some() && linked.from_cache() {
            // A driver-linked image's key is no nvJitLink key: `noted::store` stores nothing.
            let plan = self.plan_for(target, LinkerBackend::NvJitLink)?;
            self.store_noted(target, &plan, cache, linked.code(), (&key, &digest));
        }
        // Without nvJitLink there are no noted entries to find or store.
        #[cfg(not(feature = "nvjitlink"))]
        let _ = key;
        Ok(linked)
    }

    /// The noted entry of `cache` for this link (the image with the note on nvJitLink inside,
    /// read in one go: [`noted`]), if its note holds for `search`.
    #[cfg(feature = "nvjitlink")]
    fn noted_hit(
        &self,
        target: CodeKind,
        cache: &dyn ProgramCache,
        search: &Search,
        digest: &InputsDigest,
    ) -> Result<Option<CompiledProgram>> {
        let plan = self.plan_for(target, LinkerBackend::NvJitLink)?;
        let key = self.key_with(target, &plan, &noted::label(search), digest)?;
        let Some((note, version, code)) = noted::lookup(cache, &key, search, target) else {
            return Ok(None);
        };
        if !keying::NVJITLINK.recall(search, &note, version) {
            return Ok(None);
        }
        Ok(Some(CompiledProgram::cached(
            code,
            plan.flags,
            Toolchain::NvJitLink,
        )))
    }

    /// Stores `code`, found or linked under `key` (made with the inputs' `digest`), in `cache`
    /// as this link's noted entry, if `plan` links with nvJitLink and this process has a note
    /// on nvJitLink naming the version `key` names ([`noted::store`]: best effort).
    #[cfg(feature = "nvjitlink")]
    fn store_noted(
        &self,
        target: CodeKind,
        plan: &Plan,
        cache: &dyn ProgramCache,
        code: &CompiledCode,
        (key, digest): (&CacheKey, &InputsDigest),
    ) {
        if plan.backend == LinkerBackend::NvJitLink {
            keying::NVJITLINK.store_noted(cache, code, key, |field| {
                self.key_with(target, plan, field, digest)
            });
        }
    }

    /// The entry for this link keyed with `keying` (and the inputs' `digest`) from `cache`,
    /// or, on a miss, the link, stored there; with the key it is stored under.
    fn fetch_or_link(
        &self,
        target: CodeKind,
        cache: &dyn ProgramCache,
        keying: keying::LinkKeying,
        digest: &InputsDigest,
    ) -> Result<(CompiledProgram, CacheKey)> {
        let mut plan = self.plan_for(target, keying.backend)?;
        let mut key = self.key_with(target, &plan, &keying.version, digest)?;
        if let Some(hit) = lookup(cache, &key, target) {
            let toolchain = plan.backend.toolchain();
            return Ok((CompiledProgram::cached(hit, plan.flags, toolchain), key));
        }
        if keying.recalled
            && let Some(actual) = keying::check_recalled(self.options.backend, cache, &keying)?
        {
            plan = self.plan_for(target, actual.backend)?;
            key = self.key_with(target, &plan, &actual.version, digest)?;
            if let Some(hit) = lookup(cache, &key, target) {
                let toolchain = plan.backend.toolchain();
                return Ok((CompiledProgram::cached(hit, plan.flags, toolchain), key));
            }
        }
        let linked = self.link_with(target, &plan)?;
        if let Err(error) = cache.put(&key, linked.code()) {
            log::warn!("cuda-safe: storing program cache entry {key} failed: {error}");
        }
        #[cfg(feature = "nvjitlink")]
        self.store_noted(target, &plan, cache, linked.code(), (&key, digest));
        Ok((linked, key))
    }

    /// Which backend, architecture and flags a link to `target` uses, every check made.
    fn plan(&self, target: CodeKind) -> Result<Plan> {
        self.plan_for(target, self.backend())
    }

    /// [`Linker::plan`] with the backend resolved already.
    fn plan_for(&self, target: CodeKind, backend: LinkerBackend) -> Result<Plan> {
        if self.inputs.is_empty() {
            return Err(Error::invalid_argument("a link needs at least one input"));
        }
        if !self.options.lto
            && let Some(input) = self
                .inputs
                .iter()
                .find(|i| i.kind() == LinkInputKind::LtoIr)
        {
            return Err(Error::invalid_argument(format!(
                "{} is LTO-IR: set LinkerOptions::lto to link it",
                input.name()
            )));
        }
        partial::check_inputs(&self.inputs, target)?;
        let digits = self.options.resolve_arch()?;
        let flags = self.options.render(target, &digits)?;
        if backend == LinkerBackend::Driver
            && let Some(refusal) = driver::refusal(&self.options, &self.inputs, target)
        {
            return Err(refusal);
        }
        Ok(Plan {
            digits,
            flags,
            backend,
        })
    }

    /// Links with a plan made by [`Linker::plan`].
    fn link_with(&self, target: CodeKind, plan: &Plan) -> Result<CompiledProgram> {
        let _span =
            span!(DEBUG, "link", %target, backend = ?plan.backend, inputs = self.inputs.len());
        let linked = match plan.backend {
            LinkerBackend::Driver => {
                driver::link(&self.inputs, &self.options, &plan.digits, &plan.flags)?
            }
            _ => {
                if !partial::needs(&self.options, target).is_empty() {
                    partial::check(&self.options, target, &nvjitlink::version()?)?;
                }
                nvjitlink::link(&self.inputs, &plan.flags, target)?
            }
        };
        Ok(CompiledProgram::made(
            CompiledCode::new(target, linked.bytes, self.lowered_names.clone()),
            linked.info_log,
            plan.flags.clone(),
            plan.backend.toolchain(),
        ))
    }

    /// The cache key for `plan`, with the backend's version given.
    fn key_for(&self, target: CodeKind, plan: &Plan, version: &str) -> Result<CacheKey> {
        self.key_with(target, plan, version, &self.inputs_digest())
    }

    /// The digest of every input (kind, name, bytes, in order) and of the name map, which
    /// every key of this link covers.
    fn inputs_digest(&self) -> InputsDigest {
        input::digest(&self.inputs, &self.lowered_names)
    }

    /// [`Linker::key_for`] with the inputs' digest made already.
    fn key_with(
        &self,
        target: CodeKind,
        plan: &Plan,
        version: &str,
        digest: &InputsDigest,
    ) -> Result<CacheKey> {
        let arch = format!("sm_{}", plan.digits);
        CacheKey::builder("")
            .compiler(plan.backend.name(), version)
            .target(target, &arch)
            .program_name("link")
            .options(&plan.flags)
            .caller_digest(digest)
            .build()
    }
}

/// [`Linker::inputs_digest`]: SHA-256 over a link's inputs.
type InputsDigest = [u8; 32];

/// One link's resolved choices.
struct Plan {
    digits: String,
    flags: Vec<String>,
    backend: LinkerBackend,
}

impl Plan {
    /// The backend's version, as a cache key spells it.
    fn version(&self) -> Result<String> {
        match self.backend {
            LinkerBackend::Driver => driver::version(),
            _ => nvjitlink::version(),
        }
    }
}

impl LinkerBackend {
    /// The tool this backend links with (`Auto` resolved as [`Linker::backend`] would).
    fn toolchain(self) -> Toolchain {
        match self {
            LinkerBackend::Driver => Toolchain::DriverLinker,
            LinkerBackend::NvJitLink | LinkerBackend::Auto => Toolchain::NvJitLink,
        }
    }
}

/// The names a linked image had before it became a [`CompiledProgram`].
impl CompiledProgram {
    /// The linker's info log.
    #[deprecated(since = "0.2.0", note = "use `CompiledProgram::log`")]
    pub fn info_log(&self) -> &str {
        self.log()
    }

    /// The backend that linked the image (for NVRTC's code, [`LinkerBackend::Auto`]).
    #[deprecated(since = "0.2.0", note = "use `CompiledProgram::toolchain`")]
    pub fn backend(&self) -> LinkerBackend {
        match self.toolchain() {
            Toolchain::NvJitLink => LinkerBackend::NvJitLink,
            Toolchain::DriverLinker => LinkerBackend::Driver,
            _ => LinkerBackend::Auto,
        }
    }
}

/// The entry under `key` if it is code of kind `target`; `None` for a miss, another kind, or a
/// cache that failed to read (logged).
fn lookup(cache: &dyn ProgramCache, key: &CacheKey, target: CodeKind) -> Option<CompiledCode> {
    match cache.get(key) {
        Ok(Some(code)) if code.kind() == target => Some(code),
        Ok(_) => None,
        Err(error) => {
            log::warn!("cuda-safe: reading program cache entry {key} failed, linking: {error}");
            None
        }
    }
}

/// A failed link's log: the error log, the info log (each when not empty), then the flags.
fn failure_log(error_log: &str, info_log: &str, flags: &[String]) -> String {
    let mut log = String::new();
    for part in [error_log.trim_end(), info_log.trim_end()] {
        if !part.is_empty() {
            log.push_str(part);
            log.push('\n');
        }
    }
    log.push_str(&format!("options: {flags:?}"));
    log
}

/// Whether `libnvJitLink` loads and exports the plain `nvJitLinkCreate` and `nvJitLinkVersion`:
/// nvJitLink 12.0 to 12.2 export only the versioned names (`__nvJitLinkCreate_12_0`), so
/// [`LinkerBackend::Auto`] links through the driver there instead of failing at the first call.
#[cfg(feature = "nvjitlink")]
fn nvjitlink_usable() -> bool {
    nvjitlink_sys::nvjitlink().is_ok_and(|nvjitlink| {
        let library = nvjitlink.library();
        ["nvJitLinkCreate", "nvJitLinkVersion"]
            .iter()
            .all(|wanted| {
                library
                    .entry_points()
                    .iter()
                    .position(|entry| entry.name() == *wanted)
                    .is_some_and(|index| library.has(index))
            })
    })
}

/// Without the `nvjitlink` feature nvJitLink is never usable: [`LinkerBackend::Auto`] links
/// through the driver.
#[cfg(not(feature = "nvjitlink"))]
fn nvjitlink_usable() -> bool {
    false
}

#[cfg(test)]
mod tests;
