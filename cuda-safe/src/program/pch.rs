//! Precompiled headers (NVRTC 12.8 and newer): [`Pch`], which a compile creates or uses;
//! [`PchStatus`], what became of one it was to create; and the process's PCH heap
//! ([`nvrtc_pch_heap_size`], [`nvrtc_set_pch_heap_size`]).
//!
//! NVRTC keeps the PCHs it makes in one heap per process. A compile that creates a PCH
//! finishes even when the heap is too small ([`PchStatus::HeapExhausted`], with the size it
//! needs); grow the heap and compile again to have the PCH. A resize waits for this crate's
//! compiles that create or use a PCH, and holds the next ones back until it is done.
//!
//! ```no_run
//! use cuda_safe::{CodeKind, Pch, PchStatus, Program, ProgramOptions, nvrtc_set_pch_heap_size};
//!
//! let options = ProgramOptions::default()
//!     .pch(Pch::Create("common.pch".into()))
//!     .pch_dir("/tmp/my-pch")
//!     .header("common.h", "#pragma once\ntemplate <class T> __device__ T twice(T x) { return 2 * x; }\n");
//! let program = Program::new("#include \"common.h\"\n__global__ void k(float* x) { *x = twice(*x); }", options)?;
//! let mut compiled = program.compile(CodeKind::Cubin)?;
//! if let Some(PchStatus::HeapExhausted { required }) = compiled.pch_status() {
//!     nvrtc_set_pch_heap_size(required)?;
//!     compiled = program.compile(CodeKind::Cubin)?;
//! }
//! assert_eq!(compiled.pch_status(), Some(PchStatus::Created));
//! # Ok::<(), cuda_safe::Error>(())
//! ```

use std::sync::{RwLock, RwLockReadGuard};

use super::version::require_nvrtc;
use crate::error::{Error, Result, nvrtc};

/// The NVRTC that added precompiled headers and their heap.
pub(super) const PCH_SINCE: (u32, u32) = (12, 8);

/// What [`ProgramOptions::pch`](super::ProgramOptions::pch) asks: a precompiled header NVRTC
/// makes by itself, or one file created or used. The file's folder is
/// [`ProgramOptions::pch_dir`](super::ProgramOptions::pch_dir) when the name is relative.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Pch {
    /// `--pch`: NVRTC creates a PCH of the headers a source includes first, in `pch_dir` (the
    /// working directory without one), and uses it in later compiles that start alike. Its
    /// files change no output: cached compiles are keyed as without them.
    Automatic,
    /// `--create-pch=FILE`: create `FILE` from the headers the source includes. A cache hit
    /// compiles nothing and would create nothing, so
    /// [`Program::compile_cached`](super::Program::compile_cached) refuses it: create the
    /// file with [`Program::compile`](super::Program::compile).
    Create(String),
    /// `--use-pch=FILE`: use a PCH an earlier compile created. A cache key cannot see the
    /// file: caching needs a [`caller_digest`](super::ProgramOptions::caller_digest).
    Use(String),
}

impl Pch {
    /// The flag (`--pch`, `--create-pch=FILE`, `--use-pch=FILE`).
    pub fn flag(&self) -> String {
        match self {
            Pch::Automatic => "--pch".to_owned(),
            Pch::Create(file) => format!("--create-pch={file}"),
            Pch::Use(file) => format!("--use-pch={file}"),
        }
    }

    /// Whether a compile with it may create a PCH (and so has a [`PchStatus`]).
    pub(super) fn creates(&self) -> bool {
        matches!(self, Pch::Automatic | Pch::Create(_))
    }
}

/// What became of the precompiled header a compile was to create
/// ([`CompiledProgram::pch_status`](super::CompiledProgram::pch_status)), as
/// `nvrtcGetPCHCreateStatus` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PchStatus {
    /// The PCH was created.
    Created,
    /// None was created: automatic PCH chose not to (nothing to precompile, or a usable PCH
    /// exists already).
    NotAttempted,
    /// The PCH heap was too small: `required` bytes are needed. The compile's code is good;
    /// [`nvrtc_set_pch_heap_size`] then a new compile creates the PCH.
    HeapExhausted {
        /// The heap size the PCH needs, in bytes (`nvrtcGetPCHHeapSizeRequired`).
        required: usize,
    },
    /// An error kept the PCH from being created (the log may say which).
    Failed,
}

/// Held (shared) by every compile that creates or uses a PCH, and alone by a heap resize.
static HEAP: RwLock<()> = RwLock::new(());

/// Shares the PCH heap with other compiles for as long as the guard lives.
pub(super) fn share_heap() -> RwLockReadGuard<'static, ()> {
    HEAP.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The size of NVRTC's PCH heap, in bytes (0 before anything allocated it).
///
#[doc = nvrtc_sys::api_doc!(nvrtcGetPCHHeapSize)]
/// # Errors
///
/// [`Error::Unsupported`] before NVRTC 12.8 (naming the loaded one); [`Error::Load`] without
/// NVRTC.
#[doc(alias = "nvrtcGetPCHHeapSize")]
pub fn nvrtc_pch_heap_size() -> Result<usize> {
    require_nvrtc("the PCH heap (nvrtcGetPCHHeapSize)", PCH_SINCE)?;
    let nvrtc = nvrtc_sys::nvrtc()?;
    let mut size = 0usize;
    // SAFETY: `size` is a valid place for a size_t.
    unsafe { nvrtc!(nvrtc, nvrtcGetPCHHeapSize(&mut size)) }?;
    Ok(size)
}

/// Sets the size of NVRTC's PCH heap to `bytes` (NVRTC may round it up to a page), freeing
/// the heap and every PCH in it: it waits for this crate's compiles that create or use a PCH,
/// and holds the next ones back until it returns.
///
#[doc = nvrtc_sys::api_doc!(nvrtcSetPCHHeapSize)]
/// # Errors
///
/// [`Error::InvalidArgument`] for 0 bytes; [`Error::Unsupported`] before NVRTC 12.8;
/// [`Error::Nvrtc`] when NVRTC refuses the size.
#[doc(alias = "nvrtcSetPCHHeapSize")]
pub fn nvrtc_set_pch_heap_size(bytes: usize) -> Result<()> {
    if bytes == 0 {
        return Err(Error::invalid_argument(
            "a PCH heap of 0 bytes holds no precompiled header",
        ));
    }
    require_nvrtc("the PCH heap (nvrtcSetPCHHeapSize)", PCH_SINCE)?;
    let nvrtc = nvrtc_sys::nvrtc()?;
    let _alone = HEAP
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    // SAFETY: no argument is a pointer; no compile of this crate uses the heap meanwhile.
    unsafe { nvrtc!(nvrtc, nvrtcSetPCHHeapSize(bytes)) }
}
