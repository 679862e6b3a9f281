//! [`LinkerOptions`]: typed link options, rendered to nvJitLink's exact flags in a fixed order.

use crate::code::CodeKind;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::program::arch;

/// Which linker [`Linker::link`](super::Linker::link) uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
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
/// let options = LinkerOptions {
///     arch: Some("sm_90".into()),
///     lto: true,
///     optimization_level: Some(3),
///     max_registers: Some(64),
///     ftz: Some(true),
///     ..Default::default()
/// };
/// assert_eq!(
///     options.to_flags(CodeKind::Cubin)?,
///     ["-arch=sm_90", "-lto", "-O3", "-maxrregcount=64", "-ftz=1"]
/// );
/// # Ok::<(), cuda_safe::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkerOptions {
    /// The architecture (`sm_90`, `90`, `sm_90a`); `None` for the current device's (device 0's
    /// when no context is current). Rendered `-arch=sm_XX`.
    pub arch: Option<String>,
    /// Link-time optimisation of LTO-IR inputs (`-lto`); needed for LTO-IR and PTX output.
    pub lto: bool,
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

    /// The flags a link to `target` (CUBIN or PTX) uses, in a fixed order: `-arch`, `-ptx`,
    /// `-lto`, `-O`, `-g`, `-lineinfo`, `-maxrregcount`, `-ftz`, `-prec-div`, `-prec-sqrt`,
    /// `-fma`, `-split-compile`, `-split-compile-extended`, `-kernels-used`,
    /// `-variables-used`, `-optimize-unused-variables`, `-Xptxas`, `-time`, `-verbose`,
    /// `-no-cache`, then `extra`.
    ///
    /// # Errors
    ///
    /// As [`validate`](Self::validate); [`Error::InvalidArgument`] for a target other than
    /// CUBIN or PTX, or PTX without `lto` (nvJitLink emits PTX only from LTO); without an
    /// `arch`, the errors of asking the current device for its own.
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

    /// The flags for `target` and the architecture `digits`; the options must be valid.
    pub(super) fn render(&self, target: CodeKind, digits: &str) -> Result<Vec<String>> {
        match target {
            CodeKind::Cubin => {}
            CodeKind::Ptx if self.lto => {}
            CodeKind::Ptx => {
                return Err(invalid(
                    "PTX output needs lto: nvJitLink emits PTX only from link-time optimisation",
                ));
            }
            CodeKind::LtoIr => {
                return Err(invalid("a link produces CUBIN or PTX, not LTO-IR"));
            }
        }
        let mut flags = vec![format!("-arch=sm_{digits}")];
        let switches = [(target == CodeKind::Ptx, "-ptx"), (self.lto, "-lto")];
        flags.extend(
            switches
                .iter()
                .filter(|(on, _)| *on)
                .map(|(_, f)| f.to_string()),
        );
        if let Some(level) = self.optimization_level {
            flags.push(format!("-O{level}"));
        }
        let switches = [(self.debug, "-g"), (self.lineinfo, "-lineinfo")];
        flags.extend(
            switches
                .iter()
                .filter(|(on, _)| *on)
                .map(|(_, f)| f.to_string()),
        );
        if let Some(registers) = self.max_registers {
            flags.push(format!("-maxrregcount={registers}"));
        }
        for (name, value) in [
            ("ftz", self.ftz),
            ("prec-div", self.prec_div),
            ("prec-sqrt", self.prec_sqrt),
            ("fma", self.fma),
        ] {
            if let Some(on) = value {
                flags.push(format!("-{name}={}", u8::from(on)));
            }
        }
        if let Some(threads) = self.split_compile {
            flags.push(format!("-split-compile={threads}"));
        }
        if let Some(threads) = self.split_compile_extended {
            flags.push(format!("-split-compile-extended={threads}"));
        }
        flags.extend(
            self.kernels_used
                .iter()
                .map(|n| format!("-kernels-used={n}")),
        );
        flags.extend(
            self.variables_used
                .iter()
                .map(|n| format!("-variables-used={n}")),
        );
        if self.optimize_unused_variables {
            flags.push("-optimize-unused-variables".to_owned());
        }
        flags.extend(self.ptxas_options.iter().map(|o| format!("-Xptxas={o}")));
        let switches = [
            (self.time, "-time"),
            (self.verbose, "-verbose"),
            (self.no_cache, "-no-cache"),
        ];
        flags.extend(
            switches
                .iter()
                .filter(|(on, _)| *on)
                .map(|(_, f)| f.to_string()),
        );
        flags.extend(self.extra.iter().cloned());
        Ok(flags)
    }

    /// The name of the first option the driver linker lacks, if any is set.
    pub(super) fn driver_lacks(&self) -> Option<&'static str> {
        [
            (self.lto, "lto"),
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
mod tests {
    use super::*;

    fn sm90() -> LinkerOptions {
        LinkerOptions {
            arch: Some("sm_90".into()),
            ..Default::default()
        }
    }

    fn flags(options: LinkerOptions) -> Vec<String> {
        options.to_flags(CodeKind::Cubin).unwrap()
    }

    #[test]
    fn each_field_renders_its_exact_flag() {
        let cases: Vec<(LinkerOptions, &[&str])> = vec![
            (sm90(), &[]),
            (
                LinkerOptions {
                    lto: true,
                    ..sm90()
                },
                &["-lto"],
            ),
            (
                LinkerOptions {
                    optimization_level: Some(0),
                    ..sm90()
                },
                &["-O0"],
            ),
            (
                LinkerOptions {
                    optimization_level: Some(3),
                    ..sm90()
                },
                &["-O3"],
            ),
            (
                LinkerOptions {
                    debug: true,
                    ..sm90()
                },
                &["-g"],
            ),
            (
                LinkerOptions {
                    lineinfo: true,
                    ..sm90()
                },
                &["-lineinfo"],
            ),
            (
                LinkerOptions {
                    max_registers: Some(32),
                    ..sm90()
                },
                &["-maxrregcount=32"],
            ),
            (
                LinkerOptions {
                    ftz: Some(true),
                    ..sm90()
                },
                &["-ftz=1"],
            ),
            (
                LinkerOptions {
                    ftz: Some(false),
                    ..sm90()
                },
                &["-ftz=0"],
            ),
            (
                LinkerOptions {
                    prec_div: Some(false),
                    ..sm90()
                },
                &["-prec-div=0"],
            ),
            (
                LinkerOptions {
                    prec_sqrt: Some(true),
                    ..sm90()
                },
                &["-prec-sqrt=1"],
            ),
            (
                LinkerOptions {
                    fma: Some(false),
                    ..sm90()
                },
                &["-fma=0"],
            ),
            (
                LinkerOptions {
                    split_compile: Some(0),
                    ..sm90()
                },
                &["-split-compile=0"],
            ),
            (
                LinkerOptions {
                    split_compile_extended: Some(4),
                    ..sm90()
                },
                &["-split-compile-extended=4"],
            ),
            (
                LinkerOptions {
                    kernels_used: vec!["a".into(), "b".into()],
                    ..sm90()
                },
                &["-kernels-used=a", "-kernels-used=b"],
            ),
            (
                LinkerOptions {
                    variables_used: vec!["v".into()],
                    ..sm90()
                },
                &["-variables-used=v"],
            ),
            (
                LinkerOptions {
                    optimize_unused_variables: true,
                    ..sm90()
                },
                &["-optimize-unused-variables"],
            ),
            (
                LinkerOptions {
                    ptxas_options: vec!["-v".into()],
                    ..sm90()
                },
                &["-Xptxas=-v"],
            ),
            (
                LinkerOptions {
                    time: true,
                    ..sm90()
                },
                &["-time"],
            ),
            (
                LinkerOptions {
                    verbose: true,
                    ..sm90()
                },
                &["-verbose"],
            ),
            (
                LinkerOptions {
                    no_cache: true,
                    ..sm90()
                },
                &["-no-cache"],
            ),
            (
                LinkerOptions {
                    extra: vec!["-nvvm-latest".into()],
                    ..sm90()
                },
                &["-nvvm-latest"],
            ),
        ];
        for (options, expected) in cases {
            let rendered = flags(options.clone());
            assert_eq!(rendered[0], "-arch=sm_90", "{options:?}");
            assert_eq!(&rendered[1..], expected, "{options:?}");
        }
    }

    #[test]
    fn every_flag_comes_in_the_fixed_order() {
        let all = LinkerOptions {
            arch: Some("90a".into()),
            lto: true,
            optimization_level: Some(3),
            debug: true,
            lineinfo: true,
            max_registers: Some(128),
            ftz: Some(true),
            prec_div: Some(false),
            prec_sqrt: Some(false),
            fma: Some(true),
            split_compile: Some(8),
            split_compile_extended: Some(2),
            kernels_used: vec!["k".into()],
            variables_used: vec!["v".into()],
            optimize_unused_variables: true,
            ptxas_options: vec!["-O2".into()],
            time: true,
            verbose: true,
            no_cache: true,
            extra: vec!["-jump-table-density=50".into()],
            backend: LinkerBackend::NvJitLink,
        };
        assert_eq!(
            all.to_flags(CodeKind::Ptx).unwrap(),
            [
                "-arch=sm_90a",
                "-ptx",
                "-lto",
                "-O3",
                "-g",
                "-lineinfo",
                "-maxrregcount=128",
                "-ftz=1",
                "-prec-div=0",
                "-prec-sqrt=0",
                "-fma=1",
                "-split-compile=8",
                "-split-compile-extended=2",
                "-kernels-used=k",
                "-variables-used=v",
                "-optimize-unused-variables",
                "-Xptxas=-O2",
                "-time",
                "-verbose",
                "-no-cache",
                "-jump-table-density=50",
            ]
        );
        assert_eq!(all.driver_lacks(), Some("lto"));
    }

    #[test]
    fn bad_values_are_refused_before_any_linker() {
        for bad in [
            LinkerOptions {
                arch: Some("sm90".into()),
                ..Default::default()
            },
            LinkerOptions {
                optimization_level: Some(2),
                ..sm90()
            },
            LinkerOptions {
                max_registers: Some(0),
                ..sm90()
            },
            LinkerOptions {
                max_registers: Some(256),
                ..sm90()
            },
            LinkerOptions {
                kernels_used: vec![String::new()],
                ..sm90()
            },
            LinkerOptions {
                extra: vec!["-a\0b".into()],
                ..sm90()
            },
        ] {
            let error = bad.validate().unwrap_err();
            assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
        }
    }

    #[test]
    fn ptx_needs_lto_and_ltoir_is_no_link_output() {
        let error = sm90().to_flags(CodeKind::Ptx).unwrap_err();
        assert!(error.to_string().contains("needs lto"), "{error}");
        let error = sm90().to_flags(CodeKind::LtoIr).unwrap_err();
        assert!(error.to_string().contains("not LTO-IR"), "{error}");
    }

    #[test]
    fn the_driver_linker_lacks_the_lto_options_only() {
        let plain = LinkerOptions {
            optimization_level: Some(3),
            debug: true,
            lineinfo: true,
            max_registers: Some(64),
            verbose: true,
            ..sm90()
        };
        assert_eq!(plain.driver_lacks(), None);
        let ftz = LinkerOptions {
            ftz: Some(true),
            ..sm90()
        };
        assert_eq!(ftz.driver_lacks(), Some("ftz"));
        assert_eq!(LinkerBackend::Driver.name(), "cuLink");
        assert_eq!(LinkerBackend::default(), LinkerBackend::Auto);
    }
}
