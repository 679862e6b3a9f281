//! [`Program`]: CUDA C++ source, its options and name expressions, compiled with NVRTC.

use std::ffi::CString;
use std::sync::OnceLock;

use super::arch;
use super::compiled::{CompiledProgram, Toolchain};
use super::compiler::NVRTC;
use super::headers::{BUNDLED_SINCE, CudaHeaders, Resolved};
use super::options::{ProgramOptions, text};
use super::pch::{PCH_SINCE, share_heap};
use super::raw::NvrtcProgram;
use super::version::require_nvrtc;
use crate::cache::CacheKey;
use crate::code::{CodeKind, CompiledCode};
use crate::error::{Error, Result};
use crate::ffi::to_c_string as c_string;
use crate::trace::span;

/// CUDA C++ source to compile at run time with NVRTC, with its [`ProgramOptions`] and name
/// expressions. Compiling does not change it: it can be compiled for several targets, from
/// several threads.
#[derive(Debug, Clone)]
pub struct Program {
    source: String,
    options: ProgramOptions,
    name_expressions: Vec<String>,
    /// The architecture's digits, resolved on first use (the current device's when the options
    /// name none).
    arch: OnceLock<String>,
    /// The flags of the options' `cuda_headers` and the digest of the toolkit's files, found
    /// on first use.
    headers: OnceLock<Resolved>,
    /// The cache key of each target with the compiler version it was made for, computed on
    /// first use (see [`Program::cache_key`]).
    pub(super) keys: [OnceLock<(String, CacheKey)>; 4],
}

/// What one compile will be: the architecture name and the flags.
#[derive(Debug)]
pub(crate) struct Plan {
    /// `sm_90` or `compute_90`, as in the `--gpu-architecture` flag.
    pub(super) arch: String,
    /// The flags, in order.
    pub(super) flags: Vec<String>,
}

impl Program {
    /// A program from `source` and `options`, both checked. Nothing is compiled yet.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for options [`ProgramOptions::validate`] refuses, or a NUL
    /// byte in the source.
    pub fn new(source: &str, options: ProgramOptions) -> Result<Self> {
        options.validate()?;
        super::options::no_nul("source", source)?;
        Ok(Self {
            source: source.to_owned(),
            options,
            name_expressions: Vec::new(),
            arch: OnceLock::new(),
            headers: OnceLock::new(),
            keys: Default::default(),
        })
    }

    /// Asks every compile to lower `expression` (`"saxpy<float>"`, `"&scale<double>"`), so
    /// [`CompiledProgram::lowered_name`] gives its mangled name. Adding one twice is a no-op.
    ///
    #[doc = nvrtc_sys::api_doc!(nvrtcAddNameExpression)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an empty expression, or one with a NUL byte.
    #[doc(alias = "nvrtcAddNameExpression")]
    pub fn add_name_expression(&mut self, expression: &str) -> Result<()> {
        text("name expression", expression)?;
        if !self
            .name_expressions
            .iter()
            .any(|known| known == expression)
        {
            self.name_expressions.push(expression.to_owned());
            self.keys = Default::default(); // the keys cover the name expressions
        }
        Ok(())
    }

    /// The source.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The options.
    pub fn options(&self) -> &ProgramOptions {
        &self.options
    }

    /// The name expressions, in the order added.
    pub fn name_expressions(&self) -> &[String] {
        &self.name_expressions
    }

    /// The exact flags a compile for `target` uses (see [`ProgramOptions::to_flags`]).
    pub fn flags(&self, target: CodeKind) -> Result<Vec<String>> {
        Ok(self.plan(target)?.flags)
    }

    /// Compiles to `target` with a fresh `nvrtcProgram`, destroyed before returning.
    ///
    /// On success: the code exactly as NVRTC returns it, the lowered name of every name
    /// expression, the log (warnings) and the flags.
    ///
    #[doc = nvrtc_sys::api_doc!(nvrtcCreateProgram)]
    #[doc = nvrtc_sys::api_doc!(nvrtcCompileProgram)]
    #[doc = nvrtc_sys::api_doc!(nvrtcGetProgramLog)]
    #[doc = nvrtc_sys::api_doc!(nvrtcGetPTX)]
    #[doc = nvrtc_sys::api_doc!(nvrtcGetCUBIN)]
    #[doc = nvrtc_sys::api_doc!(nvrtcGetLTOIR)]
    #[doc = nvrtc_sys::api_doc!(nvrtcGetLoweredName)]
    #[doc = nvrtc_sys::api_doc!(nvrtcDestroyProgram)]
    /// # Errors
    ///
    /// - [`Error::Nvrtc`] from `nvrtcCompileProgram` for a compile error, whose `log` holds
    ///   NVRTC's full log followed by a line listing the flags used;
    /// - [`Error::InvalidArgument`] for [`CodeKind::Fatbin`] (NVRTC compiles to no fatbin), and
    ///   when NVRTC produced no output of the target's kind (an extra option contradicts it),
    ///   or the bundled headers' folder cannot be made;
    /// - [`Error::Unsupported`] for a [`pch`](ProgramOptions::pch) before NVRTC 12.8 and
    ///   [`CudaHeaders::Bundled`] before NVRTC 13.3 (naming the loaded one), and when
    ///   [`CudaHeaders::Toolkit`] finds no folder (naming each one tried);
    /// - [`Error::Load`] when NVRTC cannot be loaded; with no `arch` in the options, the errors
    ///   of [`Device::new`](crate::Device::new) when no device can be asked for its
    ///   architecture.
    #[doc(alias(
        "nvrtcCreateProgram",
        "nvrtcCompileProgram",
        "nvrtcGetProgramLog",
        "nvrtcGetPTX",
        "nvrtcGetCUBIN",
        "nvrtcGetLTOIR",
        "nvrtcGetLoweredName",
        "nvrtcDestroyProgram"
    ))]
    pub fn compile(&self, target: CodeKind) -> Result<CompiledProgram> {
        let plan = self.plan(target)?;
        self.compile_with(target, plan.flags)
    }

    /// Compiles to `target` with `flags` (already rendered from these options).
    pub(super) fn compile_with(
        &self,
        target: CodeKind,
        flags: Vec<String>,
    ) -> Result<CompiledProgram> {
        let _span = span!(DEBUG, "nvrtc_compile", program = %self.options.name, %target);
        // A key made from a note (`cache_key`) is checked now that NVRTC loads anyway.
        NVRTC.confirm();
        let nvrtc = nvrtc_sys::nvrtc()?;
        self.check_toolchain(&flags)?;
        let source = c_string("source", &self.source)?;
        let name = c_string("program name", &self.options.name)?;
        let headers = self
            .options
            .headers
            .iter()
            .map(|(name, contents)| {
                Ok((
                    c_string("in-memory header name", name)?,
                    c_string("in-memory header contents", contents)?,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let expressions = self
            .name_expressions
            .iter()
            .map(|expression| c_string("name expression", expression))
            .collect::<Result<Vec<_>>>()?;
        let c_flags = flags
            .iter()
            .map(|flag| c_string("compile option", flag))
            .collect::<Result<Vec<CString>>>()?;

        // Declared before the program, so the heap stays shared until it is destroyed.
        let _pch_heap = self.options.pch.as_ref().map(|_| share_heap());
        // Declared after the strings it was made from, so it is destroyed before them.
        let program = NvrtcProgram::create(nvrtc, &source, &name, &headers)?;
        for expression in &expressions {
            program.add_name_expression(expression)?;
        }
        if let Err(mut error) = program.compile(&c_flags) {
            if let Error::Nvrtc { log: slot, .. } = &mut error {
                let log = program
                    .log()
                    .unwrap_or_else(|error| format!("(the log could not be read: {error})"));
                *slot = Some(failure_log(&log, &flags).into_boxed_str());
            }
            return Err(error);
        }
        let log = program.log()?;
        let code = program.code(target)?;
        if code.is_empty() {
            return Err(Error::invalid_argument(format!(
                "NVRTC produced no {target} output with options {flags:?} (an extra option \
                 contradicts the target?)"
            )));
        }
        let lowered = self
            .name_expressions
            .iter()
            .zip(&expressions)
            .map(|(expression, c_expression)| {
                Ok((expression.clone(), program.lowered_name(c_expression)?))
            })
            .collect::<Result<Vec<_>>>()?;
        let pch = match &self.options.pch {
            Some(pch) if pch.creates() => Some(program.pch_status()?),
            _ => None,
        };
        Ok(CompiledProgram::made(
            CompiledCode::new(target, code, lowered),
            log,
            flags,
            Toolchain::Nvrtc,
        )
        .with_pch(pch))
    }

    /// Refuses what the loaded NVRTC lacks (PCH before 12.8, bundled headers before 13.3) and
    /// makes the bundled headers' folder, before anything is created.
    fn check_toolchain(&self, flags: &[String]) -> Result<()> {
        if self.options.pch.is_some() {
            require_nvrtc("precompiled headers (ProgramOptions::pch)", PCH_SINCE)?;
        }
        if let Some(dir) = CudaHeaders::bundled_dir(flags) {
            require_nvrtc(
                "NVRTC's bundled headers (CudaHeaders::Bundled, --use-bundled-headers)",
                BUNDLED_SINCE,
            )?;
            std::fs::create_dir_all(dir).map_err(|error| {
                Error::invalid_argument(format!(
                    "the bundled headers' folder {dir} cannot be made: {error}"
                ))
            })?;
        }
        Ok(())
    }

    /// The architecture name and flags for compiling to `target`.
    pub(super) fn plan(&self, target: CodeKind) -> Result<Plan> {
        #[cfg(test)]
        super::cached::counted::bump(&super::cached::counted::PLANS);
        arch::nvrtc_output(target)?;
        let digits = self.arch_digits()?;
        let headers = self.resolved_headers()?;
        Ok(Plan {
            arch: arch::for_target(target, digits),
            flags: self.options.render(target, digits, &headers.flags),
        })
    }

    /// The options' `cuda_headers`, resolved on first use.
    pub(super) fn resolved_headers(&self) -> Result<&Resolved> {
        if let Some(resolved) = self.headers.get() {
            return Ok(resolved);
        }
        let resolved = self.options.resolve_headers()?;
        Ok(self.headers.get_or_init(|| resolved))
    }

    fn arch_digits(&self) -> Result<&str> {
        if let Some(digits) = self.arch.get() {
            return Ok(digits);
        }
        let resolved = self.options.resolve_arch()?;
        Ok(self.arch.get_or_init(|| resolved))
    }
}

/// NVRTC's log of a failed compile, then a line with the flags used.
fn failure_log(log: &str, flags: &[String]) -> String {
    let log = log.trim_end();
    if log.is_empty() {
        format!("options: {flags:?}")
    } else {
        format!("{log}\noptions: {flags:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> ProgramOptions {
        ProgramOptions {
            arch: Some("sm_90".into()),
            ..Default::default()
        }
    }

    #[test]
    fn the_failure_log_ends_with_the_options() {
        let flags = vec!["--gpu-architecture=sm_90".to_owned(), "-DN=4".to_owned()];
        assert_eq!(
            failure_log("p.cu(3): error: expected a \";\"\n\n", &flags),
            "p.cu(3): error: expected a \";\"\noptions: [\"--gpu-architecture=sm_90\", \"-DN=4\"]"
        );
        assert_eq!(failure_log("", &flags).lines().count(), 1);
    }

    #[test]
    fn new_refuses_bad_input_before_nvrtc() {
        let error = Program::new("__global__ void k() {}\0", options()).unwrap_err();
        assert!(error.to_string().contains("NUL"), "{error}");
        let bad_arch = ProgramOptions {
            arch: Some("sm90".into()),
            ..Default::default()
        };
        assert!(matches!(
            Program::new("", bad_arch),
            Err(Error::InvalidArgument(_))
        ));
    }

    #[test]
    fn name_expressions_are_checked_and_deduplicated() {
        let mut program = Program::new("", options()).unwrap();
        program.add_name_expression("k<float>").unwrap();
        program.add_name_expression("k<int>").unwrap();
        program.add_name_expression("k<float>").unwrap();
        assert_eq!(program.name_expressions(), ["k<float>", "k<int>"]);
        for bad in ["", "k<\0>"] {
            assert!(matches!(
                program.add_name_expression(bad),
                Err(Error::InvalidArgument(_))
            ));
        }
        assert_eq!(program.name_expressions().len(), 2);
    }

    #[test]
    fn the_plan_uses_the_given_arch_without_a_device() {
        let program = Program::new("", options().define("X")).unwrap();
        let plan = program.plan(CodeKind::Ptx).unwrap();
        assert_eq!(plan.arch, "compute_90");
        assert_eq!(plan.flags, ["--gpu-architecture=compute_90", "-DX"]);
        assert_eq!(program.plan(CodeKind::Cubin).unwrap().arch, "sm_90");
        assert_eq!(
            program.flags(CodeKind::LtoIr).unwrap(),
            ["--gpu-architecture=sm_90", "-dlto", "-DX"]
        );
    }

    /// The toolkit's folders, once found, are flags after the include paths, and the key
    /// covers their files' digest without a caller digest.
    #[test]
    fn toolkit_folders_are_flags_and_their_digest_is_keyed() {
        let with = |digest: u8| {
            let program = Program::new("", options().include_path("/mine")).unwrap();
            let found = Resolved {
                flags: vec!["--include-path=/cuda/include".to_owned()],
                digest: Some([digest; 32]),
            };
            program.headers.set(found).unwrap();
            program
        };
        let program = with(1);
        assert_eq!(
            program.flags(CodeKind::Cubin).unwrap(),
            [
                "--gpu-architecture=sm_90",
                "--include-path=/mine",
                "--include-path=/cuda/include"
            ]
        );
        // The user's own include path still needs a caller digest.
        let error = program
            .cache_key_for_compiler(CodeKind::Cubin, "13.0")
            .unwrap_err();
        assert!(error.to_string().contains("/mine"), "{error}");
        let digested = |digest: u8| {
            let program = with(digest);
            let options = program.options().clone().caller_digest(b"mine".to_vec());
            let keyed = Program::new("", options).unwrap();
            keyed
                .headers
                .set(program.headers.get().unwrap().clone())
                .unwrap();
            keyed
                .cache_key_for_compiler(CodeKind::Cubin, "13.0")
                .unwrap()
        };
        assert_eq!(digested(1), digested(1));
        assert_ne!(digested(1), digested(2));
    }

    #[test]
    fn programs_are_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Program>();
        assert_send_sync::<CompiledProgram>();
    }
}
