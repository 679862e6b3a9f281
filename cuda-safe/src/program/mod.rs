//! Run-time compilation of CUDA C++ with NVRTC: [`Program`], [`ProgramOptions`] and
//! [`CompiledProgram`].
//!
//! A [`Program`] holds the source, its options and its name expressions; each
//! [`Program::compile`] creates a fresh `nvrtcProgram`, compiles it to PTX, CUBIN or LTO-IR
//! ([`CodeKind`]), copies out the code, the log and the lowered names, and destroys it.
//! [`ProgramOptions`] renders typed options to NVRTC's exact flags, in a fixed order
//! ([`ProgramOptions::to_flags`]); [`Program::compile_cached`] goes through a
//! [`ProgramCache`](crate::cache::ProgramCache) keyed by [`Program::cache_key`]. CUDA's own
//! headers come from NVRTC's bundled copy or the toolkit ([`CudaHeaders`]); precompiled
//! headers ([`Pch`]) make repeated compiles of heavy headers faster.
//!
//! ```no_run
//! use cuda_safe::cache::InMemoryProgramCache;
//! use cuda_safe::{CodeKind, CppStandard, Program, ProgramOptions};
//!
//! let source = r#"
//! #include "config.h"
//! template <class T>
//! __global__ void saxpy(T a, const T* x, T* y, size_t n) {
//!     size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
//!     if (i < n) y[i] = a * x[i] + y[i];
//! }
//! "#;
//! // arch: the current device's
//! let options = ProgramOptions::default()
//!     .std(CppStandard::Cpp17)
//!     .fast_math(true)
//!     .define_as("BLOCK", "256")
//!     .header("config.h", "#pragma once\n");
//! let mut program = Program::new(source, options)?;
//! program.add_name_expression("saxpy<float>")?;
//!
//! let compiled = program.compile(CodeKind::Cubin)?;
//! assert!(compiled.bytes().starts_with(b"\x7fELF"));
//! println!("flags: {}", compiled.options().join(" "));
//! println!("saxpy<float> is {:?}", compiled.lowered_name("saxpy<float>"));
//! if !compiled.log().is_empty() {
//!     println!("warnings:\n{}", compiled.log());
//! }
//! let kernel = compiled.load()?.get_kernel("saxpy<float>")?; // loaded in one step
//!
//! // Through a cache: the second call compiles nothing.
//! let cache = InMemoryProgramCache::new(64 << 20);
//! let cold = program.compile_cached(CodeKind::Cubin, &cache)?;
//! let hit = program.compile_cached(CodeKind::Cubin, &cache)?;
//! assert_eq!(cold.bytes(), hit.bytes());
//!
//! // A compile error carries NVRTC's log and the flags used.
//! let broken = Program::new("__global__ void k() { oops }", ProgramOptions::default())?;
//! if let Err(cuda_safe::Error::Nvrtc { log: Some(log), .. }) = broken.compile(CodeKind::Ptx) {
//!     eprintln!("{log}");
//! }
//! # Ok::<(), cuda_safe::Error>(())
//! ```

pub(crate) mod arch;
mod cached;
mod compile;
mod compiled;
mod compiler;
mod headers;
mod options;
mod pch;
mod raw;
mod version;

pub(crate) use cached::Keying;
#[cfg(test)]
pub(crate) use cached::counted;
pub use compile::Program;
pub use compiled::{CompiledProgram, Toolchain};
pub use headers::CudaHeaders;
pub use options::{CppStandard, ProgramOptions};
pub use pch::{Pch, PchStatus, nvrtc_pch_heap_size, nvrtc_set_pch_heap_size};
pub use version::{nvrtc_supported_archs, nvrtc_version};
