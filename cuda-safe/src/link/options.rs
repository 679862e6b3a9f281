//! [`LinkerOptions`]: typed link options, rendered to nvJitLink's exact flags in a fixed order
//! ([`render`]).

mod render;

use crate::code::CodeKind;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::program::arch;

/// Which linker [`Linker::link`](super::Linker::link) uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LinkerBackend {
    /// nvJitLink when it loads, else the driver's linker (the default).
    #[default]
    Auto,
    /// nvJitLink (`libnvJitLink`) only: every input kind, LTO, PTX output.
    NvJitLink,
    /// The driver's linker (`cuLinkCreate` and friends) only: PTX, CUBIN, fatbin, objects and
    /// archives into a CUBIN, without LTO.
    Driver,
}

impl LinkerBackend {
    /// The backend's name, as cache keys and logs spell it (`nvJitLink`, `cuLink`, `auto`).
    pub fn name(self) -> &'static str {
        match self {
            LinkerBackend::Auto => "auto",
            LinkerBackend::NvJitLink => "nvJitLink",
            LinkerBackend::Driver => "cuLink",
        }
    }
}

/// How to link, as typed fields; [`LinkerOptions::to_flags`] renders them to nvJitLink's
/// flags, and the driver linker takes the subset it has (the others are refused by name).
///
/// ```
/// use cuda_safe::{CodeKind, LinkerOptions};
///
/// let options = LinkerOptions::default()
///     .arch("sm_90")
///     .lto(true)
///     .optimization_level(3)
///     .max_registers(64)
///     .ftz(true);
/// assert_eq!(
///     options.to_flags(CodeKind::Cubin)?,
///     ["-arch=sm_90", "-lto", "-O3", "-maxrregcount=64", "-ftz=1"]
/// );
/// # Ok::<(), cuda_safe::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LinkerOptions {
    /// The architecture (`sm_90`, `90`, `sm_90a`); `None` for the current device's (device 0's
    /// when no context is current). Rendered `-arch=sm_XX`.
    pub arch: Option<String>,
    /// Link-time optimisation of LTO-IR inputs (`-lto`); needed for LTO-IR inputs, and for PTX
    /// and LTO-IR output.
    pub lto: bool,
    /// An incremental (relocatable) link (`-r`; nvJitLink 13.2 and newer): the output is a
    /// relocatable CUBIN, or with [`CodeKind::LtoIr`] as the target LTO-IR, that may keep
    /// unresolved device references, an input of a later link. Not with PTX output.
    pub incremental: bool,
    /// Optimisation level (`-O0` or `-O3`, the two nvJitLink accepts).
    pub optimization_level: Option<u8>,
    /// Device debug information (`-g`).
    pub debug: bool,
    /// Line information (`-lineinfo`).
    pub lineinfo: bool,
    /// Register limit per thread (`-maxrregcount=N`, 1 to 255).
    pub max_registers: Option<u32>,
    /// Flush denormals to zero in LTO code (`-ftz=1` / `-ftz=0`).
    pub ftz: Option<bool>,
    /// IEEE-precise division in LTO code (`-prec-div=1` / `0`).
    pub prec_div: Option<bool>,
    /// IEEE-precise square root in LTO code (`-prec-sqrt=1` / `0`).
    pub prec_sqrt: Option<bool>,
    /// Fused multiply-add contraction in LTO code (`-fma=1` / `0`).
    pub fma: Option<bool>,
    /// Threads for split compilation (`-split-compile=N`; 0: every processor, 1: off).
    pub split_compile: Option<u32>,
    /// Threads for extended split compilation in LTO (`-split-compile-extended=N`).
    pub split_compile_extended: Option<u32>,
    /// Kernels that are used; the others may be removed (`-kernels-used=NAME`, each).
    pub kernels_used: Vec<String>,
    /// Variables that are used; the others may be removed (`-variables-used=NAME`, each).
    pub variables_used: Vec<String>,
    /// Remove variables device code does not reference (`-optimize-unused-variables`).
    pub optimize_unused_variables: bool,
    /// Options passed to ptxas (`-Xptxas=OPT`, each).
    pub ptxas_options: Vec<String>,
    /// Timing information in the info log (`-time`).
    pub time: bool,
    /// Verbose messages in the info log (`-verbose`).
    pub verbose: bool,
    /// No caching of nvJitLink's intermediate steps (`-no-cache`).
    pub no_cache: bool,
    /// Raw nvJitLink flags, appended after the typed ones exactly as given.
    pub extra: Vec<String>,
    /// Which linker to use.
    pub backend: LinkerBackend,
}

crate::setters::setters! {
    impl LinkerOptions {
        arch: some_into String,
        lto: value bool,
        incremental: value bool,
        optimization_level: some u8,
        debug: value bool,
        lineinfo: value bool,
        max_registers: some u32,
        ftz: some bool,
        prec_div: some bool,
        prec_sqrt: some bool,
        fma: some bool,
        split_compile: some u32,
        split_compile_extended: some u32,
        kernels_used: list String,
        variables_used: list String,
        optimize_unused_variables: value bool,
        ptxas_options: list String,
        time: value bool,
        verbose: value bool,
        no_cache: value bool,
        extra: list String,
        backend: value LinkerBackend,
    }
}

impl LinkerOptions {
    /// Checks every field; [`Linker::new`](super::Linker::new) does.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a malformed architecture, an optimisation level other
    /// than 0 or 3, a register limit outside 1 to 255, or an empty name, ptxas option or raw
    /// flag (or one with a NUL byte).
    pub fn validate(&self) -> Result<()> {
        if let Some(given) = &self.arch {
            arch::digits(given)?;
        }
        if let Some(level) = self.optimization_level
            && level != 0
            && level != 3
        {
            return Err(invalid(format!(
                "optimization level {level}: nvJitLink accepts 0 and 3"
            )));
        }
        if let Some(registers) = self.max_registers
            && !(1..=255).contains(&registers)
        {
            return Err(invalid(format!(
                "max_registers {registers}: a thread has 1 to 255 registers"
            )));
        }
        let lists = [
            ("kernels_used name", &self.kernels_used),
            ("variables_used name", &self.variables_used),
            ("ptxas option", &self.ptxas_options),
            ("extra flag", &self.extra),
        ];
        for (what, list) in lists {
            for value in list {
                if value.is_empty() || value.contains('\0') {
                    return Err(invalid(format!(
                        "the {what} {value:?} is empty or holds a NUL byte"
                    )));
                }
            }
        }
        Ok(())
    }

    /// The flags a link to `target` (CUBIN, PTX or LTO-IR) uses, in a fixed order: `-arch`,
    /// `-ptx`, `-lto`, `-r`, `-O`, `-g`, `-lineinfo`, `-maxrregcount`, `-ftz`, `-prec-div`,
    /// `-prec-sqrt`, `-fma`, `-split-compile`, `-split-compile-extended`, `-kernels-used`,
    /// `-variables-used`, `-optimize-unused-variables`, `-Xptxas`, `-time`, `-verbose`,
    /// `-no-cache`, then `extra`. LTO-IR output has no flag of its own: nvJitLink keeps the
    /// optimised IR of an `-lto` link, which the link reads back.
    ///
    /// # Errors
    ///
    /// As [`validate`](Self::validate); [`Error::InvalidArgument`] for PTX or LTO-IR output
    /// without `lto` (nvJitLink makes both only from link-time optimisation), or PTX output
    /// of an `incremental` link; without an `arch`, the errors of asking the current device
    /// for its own.
    pub fn to_flags(&self, target: CodeKind) -> Result<Vec<String>> {
        self.validate()?;
        let digits = self.resolve_arch()?;
        self.render(target, &digits)
    }

    /// The architecture's digits (`90`, `90a`): the given one, or the current device's.
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

    /// The name of the first option the driver linker lacks, if any is set.
    pub(super) fn driver_lacks(&self) -> Option<&'static str> {
        [
            (self.lto, "lto"),
            (self.incremental, "incremental"),
            (self.ftz.is_some(), "ftz"),
            (self.prec_div.is_some(), "prec_div"),
            (self.prec_sqrt.is_some(), "prec_sqrt"),
            (self.fma.is_some(), "fma"),
            (self.split_compile.is_some(), "split_compile"),
            (
                self.split_compile_extended.is_some(),
                "split_compile_extended",
            ),
            (!self.kernels_used.is_empty(), "kernels_used"),
            (!self.variables_used.is_empty(), "variables_used"),
            (self.optimize_unused_variables, "optimize_unused_variables"),
            (!self.ptxas_options.is_empty(), "ptxas_options"),
            (self.time, "time"),
            (self.no_cache, "no_cache"),
            (!self.extra.is_empty(), "extra"),
        ]
        .into_iter()
        .find_map(|(set, name)| set.then_some(name))
    }
}

fn invalid(what: impl Into<String>) -> Error {
    Error::invalid_argument(format!("linker options: {}", what.into()))
}

#[cfg(test)]
mod tests;
