//! [`ProgramOptions::render`]: the options as NVRTC's exact flags, in the order of the table
//! on [`ProgramOptions`].

use super::ProgramOptions;
use crate::code::CodeKind;
use crate::program::arch;

impl ProgramOptions {
    /// The flags for `target`, the architecture `digits` and the resolved flags of
    /// [`cuda_headers`](Self::cuda_headers) (`headers`); the options must be valid.
    pub(in crate::program) fn render(
        &self,
        target: CodeKind,
        digits: &str,
        headers: &[String],
    ) -> Vec<String> {
        let mut flags = Vec::with_capacity(8 + headers.len() + self.variable_flag_count());
        flags.push(format!(
            "--gpu-architecture={}",
            arch::for_target(target, digits)
        ));
        if target == CodeKind::LtoIr {
            flags.push("-dlto".to_owned());
        }
        if let Some(std) = self.std {
            flags.push(std.flag().to_owned());
        }
        for (on, flag) in [
            (
                self.relocatable_device_code,
                "--relocatable-device-code=true",
            ),
            (self.debug, "--device-debug"),
            (self.lineinfo, "--generate-line-info"),
            (self.fast_math, "--use_fast_math"),
        ] {
            if on {
                flags.push(flag.to_owned());
            }
        }
        for (value, name) in [
            (self.ftz, "--ftz"),
            (self.prec_div, "--prec-div"),
            (self.prec_sqrt, "--prec-sqrt"),
            (self.fma, "--fmad"),
        ] {
            if let Some(value) = value {
                flags.push(format!("{name}={value}"));
            }
        }
        if let Some(count) = self.max_registers {
            flags.push(format!("--maxrregcount={count}"));
        }
        flags.extend(self.defines.iter().map(|(name, value)| match value {
            Some(value) => format!("-D{name}={value}"),
            None => format!("-D{name}"),
        }));
        flags.extend(self.undefines.iter().map(|name| format!("-U{name}")));
        flags.extend(
            self.include_paths
                .iter()
                .map(|dir| format!("--include-path={dir}")),
        );
        flags.extend(headers.iter().cloned());
        flags.extend(
            self.pre_includes
                .iter()
                .map(|header| format!("--pre-include={header}")),
        );
        if let Some(pch) = &self.pch {
            flags.push(pch.flag());
        }
        if let Some(dir) = &self.pch_dir {
            flags.push(format!("--pch-dir={dir}"));
        }
        for (value, name) in [
            (self.pch_messages, "--pch-messages"),
            (self.pch_verbose, "--pch-verbose"),
            (
                self.instantiate_templates_in_pch,
                "--instantiate-templates-in-pch",
            ),
        ] {
            if let Some(value) = value {
                flags.push(format!("{name}={value}"));
            }
        }
        flags.extend(self.extra_options.iter().cloned());
        flags
    }

    fn variable_flag_count(&self) -> usize {
        self.defines.len()
            + self.undefines.len()
            + self.include_paths.len()
            + self.pre_includes.len()
            + self.extra_options.len()
    }
}
