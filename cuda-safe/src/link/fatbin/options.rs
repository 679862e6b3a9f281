//! [`FatbinOptions`]: typed nvFatbin options, rendered to its exact flags in a fixed order.

use crate::error::{Error, Result};

/// How nvFatbin compresses the entries (`-compress-mode=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FatbinCompression {
    /// nvFatbin's default trade-off (`default`).
    Default,
    /// The smallest fatbin (`size`).
    Size,
    /// The fastest decompression when the driver loads it (`speed`).
    Speed,
    /// Between size and speed (`balance`).
    Balance,
    /// No compression (`none`; wins over `compress: Some(true)`).
    Off,
}

impl FatbinCompression {
    /// The value nvFatbin's `-compress-mode=` takes.
    pub fn name(self) -> &'static str {
        match self {
            FatbinCompression::Default => "default",
            FatbinCompression::Size => "size",
            FatbinCompression::Speed => "speed",
            FatbinCompression::Balance => "balance",
            FatbinCompression::Off => "none",
        }
    }
}

/// The host operating system a fatbin's entries are marked for (`-host=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FatbinHost {
    /// Linux (`linux`).
    Linux,
    /// Windows (`windows`).
    Windows,
}

impl FatbinHost {
    /// The value nvFatbin's `-host=` takes.
    pub fn name(self) -> &'static str {
        match self {
            FatbinHost::Linux => "linux",
            FatbinHost::Windows => "windows",
        }
    }
}

/// How to build a fatbin, as typed fields; [`FatbinOptions::to_flags`] renders them to the
/// options `nvFatbinCreate` takes. Every field left at its default leaves nvFatbin's own
/// default (64-bit entries for the host it runs on, compressed where it pays).
///
/// ```
/// use cuda_safe::{FatbinCompression, FatbinHost, FatbinOptions};
///
/// let options = FatbinOptions::default()
///     .address_bits(64)
///     .compression(FatbinCompression::Size)
///     .host(FatbinHost::Linux);
/// assert_eq!(
///     options.to_flags()?,
///     ["-64", "-compress-mode=size", "-host=linux"]
/// );
/// # Ok::<(), cuda_safe::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FatbinOptions {
    /// Entries marked 32-bit or 64-bit (`-32`, `-64`); 32 or 64.
    pub address_bits: Option<u32>,
    /// Compression on or off (`-compress=true`, `-compress=false`).
    pub compress: Option<bool>,
    /// Compress every entry, even a small one (`-compress-all`).
    pub compress_all: bool,
    /// How to compress (`-compress-mode=`).
    pub compression: Option<FatbinCompression>,
    /// The host operating system (`-host=`).
    pub host: Option<FatbinHost>,
    /// Debug information (`-g`).
    pub debug: bool,
    /// Options for the JIT compilation of every PTX entry (ptxas options, as nvcc passes
    /// them: `-O3`, `-maxrregcount=64`), given to `nvFatbinAddPTX` joined by spaces.
    pub ptx_options: Vec<String>,
    /// Options for the JIT compilation of every LTO-IR entry (`-O3`, `-ftz=1`, `-lineinfo`),
    /// given to `nvFatbinAddLTOIR` joined by spaces.
    pub ltoir_options: Vec<String>,
    /// Raw nvFatbin options, appended after the typed ones exactly as given.
    pub extra: Vec<String>,
}

crate::setters::setters! {
    impl FatbinOptions {
        address_bits: some u32,
        compress: some bool,
        compress_all: value bool,
        compression: some FatbinCompression,
        host: some FatbinHost,
        debug: value bool,
        ptx_options: list String,
        ltoir_options: list String,
        extra: list String,
    }
}

impl FatbinOptions {
    /// Checks every field; [`FatbinBuilder::new`](super::FatbinBuilder::new) does.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for address bits other than 32 or 64, and for an empty raw
    /// option or JIT option, one with a NUL byte, or a JIT option with white space (they are
    /// joined by spaces).
    pub fn validate(&self) -> Result<()> {
        if let Some(bits) = self.address_bits
            && bits != 32
            && bits != 64
        {
            return Err(invalid(format!(
                "address_bits {bits}: nvFatbin marks entries 32-bit or 64-bit"
            )));
        }
        for option in &self.extra {
            if option.is_empty() || option.contains('\0') {
                return Err(invalid(format!(
                    "the extra option {option:?} is empty or holds a NUL byte"
                )));
            }
        }
        let jit = [
            ("ptx_options", &self.ptx_options),
            ("ltoir_options", &self.ltoir_options),
        ];
        for (field, options) in jit {
            for option in options {
                if option.is_empty() || option.contains(|c: char| c == '\0' || c.is_whitespace()) {
                    return Err(invalid(format!(
                        "the {field} entry {option:?} is empty or holds a NUL byte or white \
                         space (the options are joined by spaces)"
                    )));
                }
            }
        }
        Ok(())
    }

    /// The flags `nvFatbinCreate` gets, in a fixed order: `-32`/`-64`, `-compress=`,
    /// `-compress-all`, `-compress-mode=`, `-host=`, `-g`, then `extra`.
    ///
    /// # Errors
    ///
    /// As [`validate`](Self::validate).
    pub fn to_flags(&self) -> Result<Vec<String>> {
        self.validate()?;
        Ok(self.render())
    }

    /// The flags; the options must be valid.
    pub(super) fn render(&self) -> Vec<String> {
        let mut flags = Vec::with_capacity(6 + self.extra.len());
        if let Some(bits) = self.address_bits {
            flags.push(format!("-{bits}"));
        }
        if let Some(on) = self.compress {
            flags.push(format!("-compress={on}"));
        }
        if self.compress_all {
            flags.push("-compress-all".to_owned());
        }
        if let Some(mode) = self.compression {
            flags.push(format!("-compress-mode={}", mode.name()));
        }
        if let Some(host) = self.host {
            flags.push(format!("-host={}", host.name()));
        }
        if self.debug {
            flags.push("-g".to_owned());
        }
        flags.extend(self.extra.iter().cloned());
        flags
    }

    /// The `optionsCmdLine` of a PTX entry.
    pub(super) fn ptx_command_line(&self) -> String {
        self.ptx_options.join(" ")
    }

    /// The `optionsCmdLine` of an LTO-IR entry.
    pub(super) fn ltoir_command_line(&self) -> String {
        self.ltoir_options.join(" ")
    }
}

fn invalid(what: impl Into<String>) -> Error {
    Error::invalid_argument(format!("fatbin options: {}", what.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_field_renders_its_exact_flag_in_order() {
        assert!(FatbinOptions::default().to_flags().unwrap().is_empty());
        let every = FatbinOptions {
            address_bits: Some(32),
            compress: Some(false),
            compress_all: true,
            compression: Some(FatbinCompression::Off),
            host: Some(FatbinHost::Windows),
            debug: true,
            ptx_options: vec!["-O3".into(), "-maxrregcount=32".into()],
            ltoir_options: vec!["-ftz=1".into()],
            extra: vec!["-cuda".into()],
        };
        assert_eq!(
            every.to_flags().unwrap(),
            [
                "-32",
                "-compress=false",
                "-compress-all",
                "-compress-mode=none",
                "-host=windows",
                "-g",
                "-cuda"
            ]
        );
        assert_eq!(every.ptx_command_line(), "-O3 -maxrregcount=32");
        assert_eq!(every.ltoir_command_line(), "-ftz=1");
        for (mode, name) in [
            (FatbinCompression::Default, "default"),
            (FatbinCompression::Size, "size"),
            (FatbinCompression::Speed, "speed"),
            (FatbinCompression::Balance, "balance"),
        ] {
            assert_eq!(mode.name(), name);
        }
        assert_eq!(FatbinHost::Linux.name(), "linux");
    }

    #[test]
    fn bad_fields_are_refused_by_name() {
        let cases = [
            FatbinOptions {
                address_bits: Some(16),
                ..Default::default()
            },
            FatbinOptions {
                extra: vec![String::new()],
                ..Default::default()
            },
            FatbinOptions {
                extra: vec!["-g\0".into()],
                ..Default::default()
            },
            FatbinOptions {
                ptx_options: vec!["-O3 -g".into()],
                ..Default::default()
            },
            FatbinOptions {
                ltoir_options: vec![String::new()],
                ..Default::default()
            },
        ];
        for bad in cases {
            let error = bad.to_flags().unwrap_err();
            assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
            assert!(error.to_string().contains("fatbin options:"), "{error}");
        }
    }
}
