//! [`FatbinBuilder`]: CUBINs for several architectures, PTX and LTO-IR in one fatbin, built
//! with nvFatbin; the fatbin is compiled code of [`CodeKind::Fatbin`], which loads as any other
//! ([`ObjectCode::from_compiled`](crate::ObjectCode::from_compiled)).

mod nvfatbin;
mod options;
#[cfg(test)]
mod tests;

pub use options::{FatbinCompression, FatbinHost, FatbinOptions};

use std::ffi::CString;
use std::sync::Arc;

use crate::code::{CodeKind, CompiledCode};
use crate::error::{Error, Result};
use crate::ffi::to_c_string;
use crate::handle::assert_send_sync;
use crate::program::{CompiledProgram, Toolchain, arch};
use crate::trace::span;

/// The ELF machine of a CUBIN (`EM_CUDA`).
const EM_CUDA: u16 = 190;

/// Entries for one fatbin: CUBINs for several architectures, PTX the driver compiles for a
/// device none of them fits, LTO-IR, and a host object's relocatable PTX, with the
/// [`FatbinOptions`] to build them with. Each entry is checked when it is added (its
/// architecture, and that a CUBIN is a CUDA ELF file and PTX is text); nvFatbin runs only in
/// [`build`](Self::build), which can be called again (it changes nothing here).
///
/// The driver picks the entry that fits the device when the fatbin loads: the CUBIN of its
/// architecture, else PTX for an older one, compiled just in time.
///
/// ```no_run
/// use cuda_safe::{CodeKind, FatbinBuilder, FatbinOptions, Program, ProgramOptions};
///
/// let source = r#"extern "C" __global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }"#;
/// let compile = |arch: &str, target| {
///     let options = ProgramOptions::default().arch(arch);
///     Program::new(source, options)?.compile(target)
/// };
/// let mut fatbin = FatbinBuilder::new(FatbinOptions::default())?;
/// for arch in ["sm_80", "sm_90"] {
///     let cubin = compile(arch, CodeKind::Cubin)?;
///     fatbin.add_compiled(cubin.code(), arch, &format!("twice.{arch}.cubin"))?;
/// }
/// // For newer GPUs: PTX the driver compiles for them.
/// let ptx = compile("compute_90", CodeKind::Ptx)?;
/// fatbin.add_compiled(ptx.code(), "compute_90", "twice.ptx")?;
/// let built = fatbin.build()?; // CodeKind::Fatbin
/// let kernel = built.load()?.get_kernel("twice")?;
/// # Ok::<(), cuda_safe::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct FatbinBuilder {
    options: FatbinOptions,
    entries: Vec<Entry>,
    lowered_names: Vec<(String, String)>,
}

/// One entry, checked: its kind, the architecture's digits (`90`, `90a`; empty for a host
/// object), its name and its bytes (PTX with its NUL terminator).
#[derive(Clone)]
struct Entry {
    kind: EntryKind,
    arch: CString,
    name: CString,
    bytes: Arc<[u8]>,
}

/// An entry's kind, architecture, name and length: its bytes are no reading matter.
impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("kind", &self.kind)
            .field("arch", &self.arch)
            .field("name", &self.name)
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

/// What an entry holds, and so which nvFatbin call adds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EntryKind {
    Cubin,
    Ptx,
    LtoIr,
    Reloc,
}

impl Entry {
    /// The entry as an error names it: `the CUBIN "k.cubin" for sm_90`.
    fn describe(&self) -> String {
        let (what, prefix) = match self.kind {
            EntryKind::Cubin => ("CUBIN", "sm_"),
            EntryKind::Ptx => ("PTX", "compute_"),
            EntryKind::LtoIr => ("LTO-IR", "sm_"),
            EntryKind::Reloc => return "the host object's relocatable PTX".to_owned(),
        };
        format!(
            "the {what} {:?} for {prefix}{}",
            self.name.to_string_lossy(),
            self.arch.to_string_lossy()
        )
    }
}

impl FatbinBuilder {
    /// A builder with checked `options` and no entries.
    ///
    /// # Errors
    ///
    /// As [`FatbinOptions::validate`].
    pub fn new(options: FatbinOptions) -> Result<Self> {
        options.validate()?;
        Ok(Self {
            options,
            entries: Vec::new(),
            lowered_names: Vec::new(),
        })
    }

    /// Adds a CUBIN for `arch` (`sm_90`, `90`, `sm_90a`: the architecture it was compiled
    /// for) named `name` (what `cuobjdump` lists it as).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an architecture not of the form `sm_XX`, `compute_XX` or `XX`, a name with a
    /// NUL byte, or bytes that are not a CUDA ELF file (64-bit, little-endian, machine
    /// `EM_CUDA`), before nvFatbin sees them. nvFatbin itself refuses a CUBIN of another
    /// architecture than `arch` when the fatbin is built.
    pub fn add_cubin(
        &mut self,
        cubin: impl Into<Arc<[u8]>>,
        arch: &str,
        name: &str,
    ) -> Result<&mut Self> {
        let bytes = cubin.into();
        check_cubin(&bytes, name)?;
        self.push(EntryKind::Cubin, bytes, arch, name)
    }

    /// Adds PTX for `arch` (`compute_90`, `sm_90`, `90`), which the driver compiles for a
    /// device of that architecture or a newer one when the fatbin loads, with the options'
    /// [`ptx_options`](FatbinOptions::ptx_options). A terminating NUL byte is added when the
    /// text has none.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an architecture not of the form `sm_XX`, `compute_XX` or `XX`, a name with a
    /// NUL byte, or PTX that is empty, is not UTF-8 text or holds a NUL byte before its end.
    pub fn add_ptx(&mut self, ptx: impl AsRef<[u8]>, arch: &str, name: &str) -> Result<&mut Self> {
        let bytes = ptx_text(ptx.as_ref(), name)?;
        self.push(EntryKind::Ptx, bytes, arch, name)
    }

    /// Adds LTO-IR for `arch` (NVRTC's [`CodeKind::LtoIr`]), kept in the fatbin for a later
    /// link-time-optimised link, with the options'
    /// [`ltoir_options`](FatbinOptions::ltoir_options).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an architecture not of the form `sm_XX`, `compute_XX` or `XX`, a name with a
    /// NUL byte, or no bytes.
    pub fn add_ltoir(
        &mut self,
        ltoir: impl Into<Arc<[u8]>>,
        arch: &str,
        name: &str,
    ) -> Result<&mut Self> {
        let bytes = ltoir.into();
        if bytes.is_empty() {
            return Err(invalid(format!("the LTO-IR {name:?} is empty")));
        }
        self.push(EntryKind::LtoIr, bytes, arch, name)
    }

    /// Adds the relocatable PTX of a host object (`nvcc -rdc=true -c` output), each entry under
    /// the name and options the object gives it, so the driver's JIT linker finds it (a
    /// `libnvfatbin` without `nvFatbinAddReloc` fails the build with [`Error::Load`]).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for no bytes.
    pub fn add_reloc(&mut self, host_object: impl Into<Arc<[u8]>>) -> Result<&mut Self> {
        let bytes = host_object.into();
        if bytes.is_empty() {
            return Err(invalid("the host object is empty"));
        }
        self.entries.push(Entry {
            kind: EntryKind::Reloc,
            arch: CString::default(),
            name: CString::default(),
            bytes,
        });
        Ok(self)
    }

    /// Adds compiled code ([`Program::compile`](crate::Program::compile)'s output) for `arch`
    /// as the entry of its kind (CUBIN, PTX or LTO-IR), and keeps its name-expression map, so
    /// the fatbin resolves templated kernels by the expression
    /// ([`ObjectCode::get_kernel`](crate::ObjectCode::get_kernel)).
    ///
    /// # Errors
    ///
    /// As [`add_cubin`](Self::add_cubin), [`add_ptx`](Self::add_ptx) and
    /// [`add_ltoir`](Self::add_ltoir); [`Error::InvalidArgument`] for a fatbin, which is no
    /// entry of another.
    pub fn add_compiled(
        &mut self,
        code: &CompiledCode,
        arch: &str,
        name: &str,
    ) -> Result<&mut Self> {
        match code.kind() {
            CodeKind::Cubin => self.add_cubin(code.bytes(), arch, name)?,
            CodeKind::Ptx => self.add_ptx(code.bytes(), arch, name)?,
            CodeKind::LtoIr => self.add_ltoir(code.bytes(), arch, name)?,
            CodeKind::Fatbin => {
                return Err(invalid(format!(
                    "{name:?} is a fatbin, which is no entry of another: add its CUBINs, PTX \
                     and LTO-IR"
                )));
            }
        };
        for pair in code.lowered_names() {
            if !self.lowered_names.contains(pair) {
                self.lowered_names.push(pair.clone());
            }
        }
        Ok(self)
    }

    /// The options.
    pub fn options(&self) -> &FatbinOptions {
        &self.options
    }

    /// The flags `nvFatbinCreate` gets ([`FatbinOptions::to_flags`]).
    pub fn flags(&self) -> Vec<String> {
        self.options.render()
    }

    /// How many entries were added.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no entry was added yet ([`build`](Self::build) refuses that).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Builds the fatbin: every entry, in the order added, with the options. The result is a
    /// [`CompiledProgram`] of [`CodeKind::Fatbin`] ([`Toolchain::NvFatbin`], its options the
    /// flags, no log), which loads as any compiled code and can be stored in a program cache.
    ///
    #[doc = nvfatbin_sys::api_doc!(nvFatbinCreate)]
    #[doc = nvfatbin_sys::api_doc!(nvFatbinAddCubin)]
    #[doc = nvfatbin_sys::api_doc!(nvFatbinAddPTX)]
    #[doc = nvfatbin_sys::api_doc!(nvFatbinAddLTOIR)]
    #[doc = nvfatbin_sys::api_doc!(nvFatbinAddReloc)]
    #[doc = nvfatbin_sys::api_doc!(nvFatbinSize)]
    #[doc = nvfatbin_sys::api_doc!(nvFatbinGet)]
    #[doc = nvfatbin_sys::api_doc!(nvFatbinDestroy)]
    #[doc = nvfatbin_sys::api_doc!(nvFatbinGetErrorString)]
    /// # Errors
    ///
    /// - [`Error::InvalidArgument`] with no entries;
    /// - [`Error::NvFatbin`] when nvFatbin refuses an option (`detail` lists them) or an entry
    ///   (`detail` names it: a CUBIN of another architecture than the one given, PTX for an
    ///   architecture its `.target` does not allow, an architecture this nvFatbin does not
    ///   know), with the code's name and nvFatbin's message for it;
    /// - [`Error::Load`] when `libnvfatbin` cannot be loaded (every path tried is listed) or
    ///   lacks a function the build needs.
    #[doc(alias(
        "nvFatbinCreate",
        "nvFatbinAddCubin",
        "nvFatbinAddPTX",
        "nvFatbinAddLTOIR",
        "nvFatbinAddReloc",
        "nvFatbinSize",
        "nvFatbinGet",
        "nvFatbinDestroy",
        "nvFatbinGetErrorString"
    ))]
    pub fn build(&self) -> Result<CompiledProgram> {
        if self.entries.is_empty() {
            return Err(invalid(
                "a fatbin needs at least one entry: add a CUBIN, PTX or LTO-IR first",
            ));
        }
        let _span = span!(DEBUG, "fatbin_build", entries = self.entries.len());
        let flags = self.options.render();
        let bytes = nvfatbin::build(
            &self.entries,
            &flags,
            &self.options.ptx_command_line(),
            &self.options.ltoir_command_line(),
        )?;
        Ok(CompiledProgram::made(
            CompiledCode::new(CodeKind::Fatbin, bytes, self.lowered_names.clone()),
            String::new(),
            flags,
            Toolchain::NvFatbin,
        ))
    }

    /// Adds an entry of `kind` after checking its architecture and name.
    fn push(
        &mut self,
        kind: EntryKind,
        bytes: Arc<[u8]>,
        arch: &str,
        name: &str,
    ) -> Result<&mut Self> {
        let digits = arch::digits(arch).map_err(|_| {
            invalid(format!(
                "the architecture {arch:?} of {name:?} is not of the form sm_XX, compute_XX or \
                 XX (compute-capability digits, optionally followed by `a` or `f`)"
            ))
        })?;
        self.entries.push(Entry {
            kind,
            arch: to_c_string("fatbin entry architecture", digits)?,
            name: to_c_string("fatbin entry name", name)?,
            bytes,
        });
        Ok(self)
    }
}

assert_send_sync!(FatbinBuilder);

/// Checks that `cubin` is a CUDA ELF file: the header of a 64-bit little-endian ELF file whose
/// machine is `EM_CUDA` (the loader walks the rest when the fatbin loads).
fn check_cubin(cubin: &[u8], name: &str) -> Result<()> {
    let refuse = |why: String| invalid(format!("the CUBIN {name:?} is refused: {why}"));
    let Some(header) = cubin.first_chunk::<64>() else {
        return Err(refuse(format!(
            "{} bytes are too few for an ELF64 header",
            cubin.len()
        )));
    };
    if !header.starts_with(b"\x7fELF") {
        return Err(refuse("it is not an ELF file".to_owned()));
    }
    if header[4] != 2 || header[5] != 1 {
        return Err(refuse(
            "it is not a 64-bit little-endian ELF file".to_owned(),
        ));
    }
    let machine = u16::from_le_bytes([header[18], header[19]]);
    if machine != EM_CUDA {
        return Err(refuse(format!(
            "its ELF machine is {machine}, not {EM_CUDA} (EM_CUDA): it is no CUDA binary"
        )));
    }
    Ok(())
}

/// `ptx` as nvFatbin takes it: UTF-8 text with one NUL byte, its last (added when missing).
fn ptx_text(ptx: &[u8], name: &str) -> Result<Arc<[u8]>> {
    let text = ptx.strip_suffix(&[0]).unwrap_or(ptx);
    let refuse = |why: String| invalid(format!("the PTX {name:?} is refused: {why}"));
    if text.is_empty() {
        return Err(refuse("it is empty".to_owned()));
    }
    if let Some(at) = text.iter().position(|&byte| byte == 0) {
        return Err(refuse(format!(
            "it holds a NUL byte at byte {at}, before its end"
        )));
    }
    if let Err(error) = std::str::from_utf8(text) {
        return Err(refuse(format!("it is not UTF-8 text ({error})")));
    }
    let mut bytes = Vec::with_capacity(text.len() + 1);
    bytes.extend_from_slice(text);
    bytes.push(0);
    Ok(bytes.into())
}

fn invalid(what: impl Into<String>) -> Error {
    Error::invalid_argument(format!("fatbin: {}", what.into()))
}
