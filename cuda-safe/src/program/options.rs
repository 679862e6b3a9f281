//! [`ProgramOptions`]: NVRTC's compile options as typed fields, and their exact flags
//! ([`render`]).

mod render;

use super::arch;
use super::headers::{CudaHeaders, Resolved};
use super::pch::Pch;
use crate::code::CodeKind;
use crate::device::Device;
use crate::error::{Error, Result};

/// The C++ dialect (`--std=`). NVRTC's default, when none is given, is C++17.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CppStandard {
    /// `--std=c++03`.
    Cpp03,
    /// `--std=c++11`.
    Cpp11,
    /// `--std=c++14`.
    Cpp14,
    /// `--std=c++17`.
    Cpp17,
    /// `--std=c++20`.
    Cpp20,
    /// `--std=c++23` (NVRTC 13 and later).
    Cpp23,
}

impl CppStandard {
    /// The flag that selects this dialect (`--std=c++17`).
    pub fn flag(self) -> &'static str {
        match self {
            CppStandard::Cpp03 => "--std=c++03",
            CppStandard::Cpp11 => "--std=c++11",
            CppStandard::Cpp14 => "--std=c++14",
            CppStandard::Cpp17 => "--std=c++17",
            CppStandard::Cpp20 => "--std=c++20",
            CppStandard::Cpp23 => "--std=c++23",
        }
    }
}

/// How to compile a [`Program`](super::Program): NVRTC's options as typed fields.
///
/// [`ProgramOptions::to_flags`] renders them to NVRTC's flags, always in this order (a field
/// left at its default adds nothing):
///
/// | # | field | flag |
/// |---|---|---|
/// | 1 | `arch` (or the device's) | `--gpu-architecture=compute_90` for PTX, `--gpu-architecture=sm_90` for CUBIN and LTO-IR |
/// | 2 | (target LTO-IR) | `-dlto` |
/// | 3 | `std` | `--std=c++17` |
/// | 4 | `relocatable_device_code` | `--relocatable-device-code=true` |
/// | 5 | `debug` | `--device-debug` |
/// | 6 | `lineinfo` | `--generate-line-info` |
/// | 7 | `fast_math` | `--use_fast_math` |
/// | 8 | `ftz` | `--ftz=true` / `--ftz=false` |
/// | 9 | `prec_div` | `--prec-div=true` / `--prec-div=false` |
/// | 10 | `prec_sqrt` | `--prec-sqrt=true` / `--prec-sqrt=false` |
/// | 11 | `fma` | `--fmad=true` / `--fmad=false` |
/// | 12 | `max_registers` | `--maxrregcount=N` |
/// | 13 | `defines`, in order | `-DNAME`, `-DNAME=VALUE` |
/// | 14 | `undefines`, in order | `-UNAME` |
/// | 15 | `include_paths`, in order | `--include-path=DIR` |
/// | 16 | `cuda_headers` | `--use-bundled-headers=DIR`, or `--include-path=DIR` per toolkit folder |
/// | 17 | `pre_includes`, in order | `--pre-include=HEADER` |
/// | 18 | `pch` | `--pch`, `--create-pch=FILE` or `--use-pch=FILE` |
/// | 19 | `pch_dir` | `--pch-dir=DIR` |
/// | 20 | `pch_messages`, `pch_verbose`, `instantiate_templates_in_pch` | `--pch-messages=true`, `--pch-verbose=false`, ... |
/// | 21 | `extra_options`, in order | each verbatim |
///
/// All defines come before all undefines. `name`, `headers` and `caller_digest` are not flags:
/// the name and the in-memory headers go to `nvrtcCreateProgram`, the digest into the cache key.
///
/// Every string is checked before it reaches NVRTC ([`ProgramOptions::validate`]): an empty
/// one, or one with a NUL byte, is [`Error::InvalidArgument`].
///
/// ```
/// use cuda_safe::{CodeKind, CppStandard, ProgramOptions};
///
/// let options = ProgramOptions::default()
///     .arch("sm_90")
///     .std(CppStandard::Cpp17)
///     .fast_math(true)
///     .define_as("BLOCK", "256");
/// assert_eq!(
///     options.to_flags(CodeKind::Ptx)?,
///     ["--gpu-architecture=compute_90", "--std=c++17", "--use_fast_math", "-DBLOCK=256"],
/// );
/// assert_eq!(options.to_flags(CodeKind::LtoIr)?[..2], ["--gpu-architecture=sm_90", "-dlto"]);
/// # Ok::<(), cuda_safe::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProgramOptions {
    /// The program's name, given to `nvrtcCreateProgram`: it appears in the log and in
    /// `__FILE__`. Default `"program.cu"`.
    pub name: String,
    /// The architecture (`"sm_90"`, `"compute_90"` or `"90"`, optionally with an `a` or `f`
    /// suffix); `None` compiles for the current context's device (device 0's when no context
    /// is current). The target decides the prefix.
    pub arch: Option<String>,
    /// The C++ dialect; `None` leaves NVRTC's default (C++17).
    pub std: Option<CppStandard>,
    /// Macros to define: `(name, None)` gives `-DNAME`, `(name, Some(value))` gives
    /// `-DNAME=VALUE`. The name may be function-like (`SQ(x)`).
    pub defines: Vec<(String, Option<String>)>,
    /// Macros to undefine (`-UNAME`).
    pub undefines: Vec<String>,
    /// Directories searched for headers after the in-memory ones (`--include-path=`). The
    /// cache key cannot see their files: caching needs a `caller_digest`.
    pub include_paths: Vec<String>,
    /// Headers included before the source (`--pre-include=`). Caching needs a
    /// `caller_digest`.
    pub pre_includes: Vec<String>,
    /// CUDA's own headers (`cuda_fp16.h`, `cuda/std/...`): NVRTC's bundled copy (NVRTC
    /// 13.3) or the toolkit's include folder, searched after `include_paths`; `None` adds
    /// none.
    pub cuda_headers: Option<CudaHeaders>,
    /// A precompiled header to create or use, or automatic PCH (NVRTC 12.8); what became of
    /// one to create is [`CompiledProgram::pch_status`](super::CompiledProgram::pch_status).
    pub pch: Option<Pch>,
    /// The folder of automatic PCH files, and of a relative `Pch::Create` or `Pch::Use` file
    /// (`--pch-dir=`); needs `pch`.
    pub pch_dir: Option<String>,
    /// Whether the log says when a PCH was created or used (`--pch-messages=`; NVRTC's
    /// default: true); needs `pch`.
    pub pch_messages: Option<bool>,
    /// Whether the log says why automatic PCH could not use a PCH (`--pch-verbose=`; default
    /// true); needs `pch`.
    pub pch_verbose: Option<bool>,
    /// Whether templates are instantiated before a PCH is created
    /// (`--instantiate-templates-in-pch=`; default true: larger PCHs, faster uses); needs
    /// `pch`.
    pub instantiate_templates_in_pch: Option<bool>,
    /// In-memory headers, `(name, contents)`: `#include "name"` finds them. Names are unique.
    pub headers: Vec<(String, String)>,
    /// Generate relocatable device code (`--relocatable-device-code=true`).
    pub relocatable_device_code: bool,
    /// Generate debug information, turning optimisation off (`--device-debug`).
    pub debug: bool,
    /// Generate line-number information (`--generate-line-info`).
    pub lineinfo: bool,
    /// Fast math: implies `ftz`, no precise division or square root, and FMA
    /// (`--use_fast_math`).
    pub fast_math: bool,
    /// Flush single-precision denormals to zero (`--ftz=`); `None` leaves NVRTC's default.
    pub ftz: Option<bool>,
    /// IEEE round-to-nearest single-precision division (`--prec-div=`).
    pub prec_div: Option<bool>,
    /// IEEE round-to-nearest single-precision square root (`--prec-sqrt=`).
    pub prec_sqrt: Option<bool>,
    /// Contract multiplies and adds into fused multiply-adds (`--fmad=`).
    pub fma: Option<bool>,
    /// The most registers a thread may use (`--maxrregcount=`); must be at least 1.
    pub max_registers: Option<u32>,
    /// Further NVRTC options, appended verbatim and in order.
    pub extra_options: Vec<String>,
    /// A digest the caller computed over whatever the output depends on that the cache key
    /// cannot see (the files under `include_paths`, the `pre_includes`); required for caching
    /// when those are used.
    pub caller_digest: Option<Vec<u8>>,
}

crate::setters::setters! {
    impl ProgramOptions {
        pch_messages: some bool,
        pch_verbose: some bool,
        instantiate_templates_in_pch: some bool,
        defines: items (String, Option<String>),
        undefines: list String,
        include_paths: list String,
        pre_includes: list String,
        headers: items (String, String),
        extra_options: list String,
    }
}

impl Default for ProgramOptions {
    fn default() -> Self {
        Self {
            name: "program.cu".to_owned(),
            arch: None,
            std: None,
            defines: Vec::new(),
            undefines: Vec::new(),
            include_paths: Vec::new(),
            pre_includes: Vec::new(),
            cuda_headers: None,
            pch: None,
            pch_dir: None,
            pch_messages: None,
            pch_verbose: None,
            instantiate_templates_in_pch: None,
            headers: Vec::new(),
            relocatable_device_code: false,
            debug: false,
            lineinfo: false,
            fast_math: false,
            ftz: None,
            prec_div: None,
            prec_sqrt: None,
            fma: None,
            max_registers: None,
            extra_options: Vec::new(),
            caller_digest: None,
        }
    }
}

impl ProgramOptions {
    /// Options named `name` (as `nvrtcCreateProgram` gets it), the rest default.
    pub fn new(name: impl Into<String>) -> Self {
        Self::default().name(name)
    }

    /// Sets [`name`](Self::name): the program's name in the log and in `__FILE__`.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Sets [`arch`](Self::arch): `"sm_90"`, `"compute_90"` or `"90"` (checked by
    /// [`validate`](Self::validate) before any compile).
    pub fn arch(mut self, arch: impl Into<String>) -> Self {
        self.arch = Some(arch.into());
        self
    }

    /// Sets the C++ dialect ([`std`](Self::std), `--std=`).
    pub fn std(mut self, std: CppStandard) -> Self {
        self.std = Some(std);
        self
    }

    /// Sets [`relocatable_device_code`](Self::relocatable_device_code) (`-rdc`), which LTO-IR
    /// for linking and device-side launches need.
    pub fn relocatable_device_code(mut self, on: bool) -> Self {
        self.relocatable_device_code = on;
        self
    }

    /// Sets [`debug`](Self::debug): device debug information, optimisation off (`-G`).
    pub fn debug(mut self, on: bool) -> Self {
        self.debug = on;
        self
    }

    /// Sets [`lineinfo`](Self::lineinfo): line numbers for profilers and debuggers (`-lineinfo`).
    pub fn lineinfo(mut self, on: bool) -> Self {
        self.lineinfo = on;
        self
    }

    /// Sets [`fast_math`](Self::fast_math) (`--use_fast_math`).
    pub fn fast_math(mut self, on: bool) -> Self {
        self.fast_math = on;
        self
    }

    /// Sets [`ftz`](Self::ftz) (`--ftz=`).
    pub fn ftz(mut self, on: bool) -> Self {
        self.ftz = Some(on);
        self
    }

    /// Sets [`prec_div`](Self::prec_div) (`--prec-div=`).
    pub fn prec_div(mut self, on: bool) -> Self {
        self.prec_div = Some(on);
        self
    }

    /// Sets [`prec_sqrt`](Self::prec_sqrt) (`--prec-sqrt=`).
    pub fn prec_sqrt(mut self, on: bool) -> Self {
        self.prec_sqrt = Some(on);
        self
    }

    /// Sets [`fma`](Self::fma) (`--fmad=`).
    pub fn fma(mut self, on: bool) -> Self {
        self.fma = Some(on);
        self
    }

    /// Sets [`max_registers`](Self::max_registers) (`--maxrregcount=`).
    pub fn max_registers(mut self, registers: u32) -> Self {
        self.max_registers = Some(registers);
        self
    }

    /// Sets [`caller_digest`](Self::caller_digest): what the cache key cannot see (files
    /// under the include paths, pre-included headers), digested by the caller.
    pub fn caller_digest(mut self, digest: impl Into<Vec<u8>>) -> Self {
        self.caller_digest = Some(digest.into());
        self
    }

    /// Adds `-DNAME` (the macro defined as `1`).
    pub fn define(mut self, name: impl Into<String>) -> Self {
        self.defines.push((name.into(), None));
        self
    }

    /// Adds `-DNAME=VALUE`.
    pub fn define_as(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.defines.push((name.into(), Some(value.into())));
        self
    }

    /// Adds `-UNAME`.
    pub fn undefine(mut self, name: impl Into<String>) -> Self {
        self.undefines.push(name.into());
        self
    }

    /// Adds `--include-path=DIR`.
    pub fn include_path(mut self, dir: impl Into<String>) -> Self {
        self.include_paths.push(dir.into());
        self
    }

    /// Adds `--pre-include=HEADER`.
    pub fn pre_include(mut self, header: impl Into<String>) -> Self {
        self.pre_includes.push(header.into());
        self
    }

    /// Sets [`cuda_headers`](Self::cuda_headers): NVRTC's bundled copy or the toolkit's.
    pub fn cuda_headers(mut self, headers: CudaHeaders) -> Self {
        self.cuda_headers = Some(headers);
        self
    }

    /// Sets [`pch`](Self::pch): automatic PCH, or one file to create or use.
    pub fn pch(mut self, pch: Pch) -> Self {
        self.pch = Some(pch);
        self
    }

    /// Sets [`pch_dir`](Self::pch_dir) (`--pch-dir=`).
    pub fn pch_dir(mut self, dir: impl Into<String>) -> Self {
        self.pch_dir = Some(dir.into());
        self
    }

    /// Adds an in-memory header that `#include "name"` finds.
    pub fn header(mut self, name: impl Into<String>, contents: impl Into<String>) -> Self {
        self.headers.push((name.into(), contents.into()));
        self
    }

    /// Appends a raw NVRTC option, verbatim.
    pub fn option(mut self, option: impl Into<String>) -> Self {
        self.extra_options.push(option.into());
        self
    }

    /// Checks every field.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for the first problem found: an empty name, architecture,
    /// macro name, include path, pre-include, header name, PCH file or folder, or extra
    /// option; a NUL byte anywhere; an architecture not of the form `sm_XX`, `compute_XX` or
    /// `XX`; a macro name with `=`, whitespace, or a leading digit or `-`; a macro value with a
    /// line break (NVRTC would cut the definition there); two headers with one name;
    /// `max_registers` of 0; a bundled-headers folder that is not absolute; `pch_dir` or a PCH
    /// switch without `pch`.
    pub fn validate(&self) -> Result<()> {
        text("program name", &self.name)?;
        if let Some(arch) = &self.arch {
            arch::digits(arch)?;
        }
        for (name, value) in &self.defines {
            macro_name("define", name)?;
            if let Some(value) = value {
                no_nul("define value", value)?;
                if value.contains(['\n', '\r']) {
                    return Err(invalid(format!(
                        "the value of macro {name:?} has a line break, where NVRTC would cut it"
                    )));
                }
            }
        }
        for name in &self.undefines {
            macro_name("undefine", name)?;
        }
        for dir in &self.include_paths {
            text("include path", dir)?;
        }
        for header in &self.pre_includes {
            text("pre-include", header)?;
        }
        for (index, (name, contents)) in self.headers.iter().enumerate() {
            text("in-memory header name", name)?;
            no_nul("in-memory header contents", contents)?;
            if self
                .headers
                .iter()
                .take(index)
                .any(|(other, _)| other == name)
            {
                return Err(invalid(format!("two in-memory headers are named {name:?}")));
            }
        }
        if self.max_registers == Some(0) {
            return Err(invalid("max_registers must be at least 1"));
        }
        if let Some(headers) = &self.cuda_headers {
            headers.validate()?;
        }
        self.validate_pch()?;
        for option in &self.extra_options {
            text("extra option", option)?;
            let flag = option.trim_start_matches('-');
            if PCH_FLAGS.iter().any(|pch| flag.starts_with(pch)) {
                return Err(invalid(format!(
                    "the extra option {option:?} is a precompiled-header switch: set \
                     ProgramOptions::pch (and pch_dir, pch_messages, pch_verbose, \
                     instantiate_templates_in_pch), which the PCH heap's lock, pch_status and \
                     the program cache follow"
                )));
            }
        }
        Ok(())
    }

    /// The exact NVRTC flags for compiling to `target`, in the order of the table above.
    ///
    /// With `arch` unset this asks the current (or first) device for its architecture (so it
    /// needs a GPU); with it set, it needs nothing. [`CudaHeaders::Toolkit`] searches for the
    /// toolkit's folder now.
    ///
    /// # Errors
    ///
    /// As [`ProgramOptions::validate`]; [`Error::InvalidArgument`] for [`CodeKind::Fatbin`],
    /// which NVRTC does not compile to; with `arch` unset, the errors of [`Device::new`] when no
    /// device can be asked; [`Error::Unsupported`] when [`CudaHeaders::Toolkit`] finds no
    /// folder (naming each one tried).
    pub fn to_flags(&self, target: CodeKind) -> Result<Vec<String>> {
        self.validate()?;
        arch::nvrtc_output(target)?;
        let headers = self.resolve_headers()?;
        Ok(self.render(target, &self.resolve_arch()?, &headers.flags))
    }

    /// The flags of [`cuda_headers`](Self::cuda_headers), found now, and the digest of the
    /// toolkit's files.
    pub(super) fn resolve_headers(&self) -> Result<Resolved> {
        match &self.cuda_headers {
            Some(headers) => headers.resolve(),
            None => Ok(Resolved::default()),
        }
    }

    /// Checks the PCH fields: the file or folder named, and nothing PCH-only without `pch`.
    fn validate_pch(&self) -> Result<()> {
        match &self.pch {
            Some(Pch::Create(file)) => text("PCH file", file)?,
            Some(Pch::Use(file)) => text("PCH file", file)?,
            Some(_) => {}
            None => {
                let set = [
                    (self.pch_dir.is_some(), "pch_dir"),
                    (self.pch_messages.is_some(), "pch_messages"),
                    (self.pch_verbose.is_some(), "pch_verbose"),
                    (
                        self.instantiate_templates_in_pch.is_some(),
                        "instantiate_templates_in_pch",
                    ),
                ];
                if let Some((_, name)) = set.iter().find(|(on, _)| *on) {
                    return Err(invalid(format!(
                        "{name} has no effect without pch (set ProgramOptions::pch)"
                    )));
                }
            }
        }
        if let Some(dir) = &self.pch_dir {
            text("PCH folder", dir)?;
        }
        Ok(())
    }

    /// The architecture's digits (`"90"`): `arch`'s, or the current device's when it is unset.
    pub(super) fn resolve_arch(&self) -> Result<String> {
        match &self.arch {
            Some(given) => Ok(arch::digits(given)?.to_owned()),
            None => {
                let device = match Device::current()? {
                    Some(device) => device,
                    None => Device::new(0)?,
                };
                let digits = device.arch()?;
                arch::digits(&digits)?;
                Ok(digits)
            }
        }
    }
}

/// NVRTC's precompiled-header switches (without their dashes), which only
/// [`ProgramOptions::pch`] and its fields may set.
const PCH_FLAGS: [&str; 4] = [
    "pch",
    "create-pch",
    "use-pch",
    "instantiate-templates-in-pch",
];

fn invalid(what: impl std::fmt::Display) -> Error {
    Error::invalid_argument(format!("program options: {what}"))
}

/// Checks that `value` has no NUL byte (C strings end at the first).
pub(super) fn no_nul(what: &str, value: &str) -> Result<()> {
    if value.contains('\0') {
        return Err(invalid(format!("the {what} {value:?} contains a NUL byte")));
    }
    Ok(())
}

/// Checks that `value` is non-empty and has no NUL byte.
pub(super) fn text(what: &str, value: &str) -> Result<()> {
    if value.is_empty() {
        return Err(invalid(format!("the {what} is empty")));
    }
    no_nul(what, value)
}

fn macro_name(what: &str, name: &str) -> Result<()> {
    text(&format!("{what} macro name"), name)?;
    let starts_badly = name.starts_with(|first: char| first.is_ascii_digit() || first == '-');
    if starts_badly || name.contains(|c: char| c == '=' || c.is_whitespace()) {
        return Err(invalid(format!(
            "{name:?} is not a macro name (no `=`, no whitespace, no leading digit or `-`; \
             give the value separately)"
        )));
    }
    Ok(())
}
