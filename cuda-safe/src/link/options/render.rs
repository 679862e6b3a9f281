//! [`LinkerOptions::render`]: the options as nvJitLink's exact flags, in their fixed order.

use super::{LinkerOptions, invalid};
use crate::code::CodeKind;
use crate::error::Result;

impl LinkerOptions {
    /// The flags for `target` and the architecture `digits`; the options must be valid.
    pub(in crate::link) fn render(&self, target: CodeKind, digits: &str) -> Result<Vec<String>> {
        match target {
            CodeKind::Cubin => {}
            CodeKind::Ptx if self.incremental => {
                return Err(invalid(
                    "an incremental link produces CUBIN or LTO-IR, not PTX (nvJitLink's -r has \
                     no PTX output)",
                ));
            }
            CodeKind::Ptx if self.lto => {}
            CodeKind::Ptx => {
                return Err(invalid(
                    "PTX output needs lto: nvJitLink emits PTX only from link-time optimisation",
                ));
            }
            CodeKind::LtoIr if self.lto => {}
            CodeKind::LtoIr => {
                return Err(invalid(
                    "LTO-IR output needs lto: nvJitLink keeps LTO-IR only from link-time \
                     optimisation",
                ));
            }
            CodeKind::Fatbin => {
                return Err(invalid(
                    "a link produces CUBIN, PTX or LTO-IR, not a fatbin (FatbinBuilder builds one)",
                ));
            }
        }
        let mut flags = vec![format!("-arch=sm_{digits}")];
        let switches = [
            (target == CodeKind::Ptx, "-ptx"),
            (self.lto, "-lto"),
            (self.incremental, "-r"),
        ];
        push_switches(&mut flags, &switches);
        if let Some(level) = self.optimization_level {
            flags.push(format!("-O{level}"));
        }
        push_switches(
            &mut flags,
            &[(self.debug, "-g"), (self.lineinfo, "-lineinfo")],
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
        push_switches(&mut flags, &switches);
        flags.extend(self.extra.iter().cloned());
        Ok(flags)
    }
}

/// Appends the flag of each switch that is on, in order.
fn push_switches(flags: &mut Vec<String>, switches: &[(bool, &str)]) {
    flags.extend(
        switches
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, flag)| (*flag).to_owned()),
    );
}
