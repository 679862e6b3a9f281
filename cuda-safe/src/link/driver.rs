//! Linking with the driver's linker (`cuLinkCreate`, `cuLinkAddData`, `cuLinkComplete`,
//! `cuLinkDestroy`): the fallback where nvJitLink is absent. It links PTX, CUBIN, fatbin,
//! objects and archives into a CUBIN, without LTO.

use std::ffi::{CString, c_uint, c_void};

use super::input::LinkInput;
use super::options::LinkerOptions;
use super::{Linked, failure_log};
use crate::code::CodeKind;
use crate::context::Context;
use crate::device::Device;
use crate::driver::{cuda_driver_version, driver};
use crate::error::{Error, Result, cu};
use crate::ffi::to_c_string;
use crate::handle::{Owned, Release};
use cuda_sys::{
    CU_COMPUTE_ACCELERATED_TARGET_BASE, CU_COMPUTE_FAMILY_TARGET_BASE, CUjit_option, CUlinkState,
    Driver,
};

/// The size of each log buffer the driver fills.
const LOG_BYTES: usize = 64 << 10;

/// The driver's version as a cache key spells it (`"13.0"`).
pub(super) fn version() -> Result<String> {
    let version = cuda_driver_version()?;
    Ok(format!("{}.{}", version.major(), version.minor()))
}

/// `CU_JIT_TARGET`'s value for the architecture digits (`90` is 90, `90a` adds
/// `CU_COMPUTE_ACCELERATED_TARGET_BASE`, `100f` `CU_COMPUTE_FAMILY_TARGET_BASE`).
pub(super) fn jit_target(digits: &str) -> Result<u32> {
    let (number, base) = match digits.strip_suffix('a') {
        Some(number) => (number, CU_COMPUTE_ACCELERATED_TARGET_BASE),
        None => match digits.strip_suffix('f') {
            Some(number) => (number, CU_COMPUTE_FAMILY_TARGET_BASE),
            None => (digits, 0),
        },
    };
    let number: u32 = number
        .parse()
        .map_err(|_| Error::invalid_argument(format!("architecture {digits:?} has no number")))?;
    base.checked_add(number)
        .ok_or_else(|| Error::invalid_argument(format!("architecture {digits:?} is out of range")))
}

/// A `CUlinkState`, destroyed exactly once through [`Owned`].
struct State {
    raw: CUlinkState,
    driver: &'static Driver,
}

impl Release for State {
    const WHAT: &'static str = "driver link state";

    fn release(&mut self) -> Result<()> {
        // SAFETY: the state came from cuLinkCreate and is destroyed only here, once.
        unsafe { cu!(self.driver, cuLinkDestroy(self.raw)) }
    }
}

/// Links `inputs` into a CUBIN for the architecture `digits` with the options the driver has
/// (the caller checked that no other is set), in the current context or device 0's primary
/// one.
pub(super) fn link(
    inputs: &[LinkInput],
    options: &LinkerOptions,
    digits: &str,
    flags: &[String],
) -> Result<Linked> {
    let driver = driver()?;
    let primary = match Device::current()? {
        Some(_) => None,
        None => Some(Device::new(0)?.context()?),
    };
    let _current = primary.as_ref().map(Context::scoped).transpose()?;
    let names = inputs
        .iter()
        .map(|input| to_c_string("link input name", input.name()))
        .collect::<Result<Vec<CString>>>()?;

    // The log buffers and the option arrays outlive the state, which writes to them until it
    // is destroyed (declared after them, it is dropped first).
    let mut info_log = vec![0u8; LOG_BYTES];
    let mut error_log = vec![0u8; LOG_BYTES];
    let mut keys = vec![
        CUjit_option::CU_JIT_INFO_LOG_BUFFER,
        CUjit_option::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
        CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
        CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        CUjit_option::CU_JIT_TARGET,
    ];
    let mut values: Vec<*mut c_void> = vec![
        info_log.as_mut_ptr().cast(),
        LOG_BYTES as *mut c_void,
        error_log.as_mut_ptr().cast(),
        LOG_BYTES as *mut c_void,
        jit_target(digits)? as usize as *mut c_void,
    ];
    let mut scalar = |key: CUjit_option, value: usize| {
        keys.push(key);
        values.push(value as *mut c_void);
    };
    if let Some(level) = options.optimization_level {
        scalar(CUjit_option::CU_JIT_OPTIMIZATION_LEVEL, usize::from(level));
    }
    if options.debug {
        scalar(CUjit_option::CU_JIT_GENERATE_DEBUG_INFO, 1);
    }
    if options.lineinfo {
        scalar(CUjit_option::CU_JIT_GENERATE_LINE_INFO, 1);
    }
    if let Some(registers) = options.max_registers {
        scalar(CUjit_option::CU_JIT_MAX_REGISTERS, registers as usize);
    }
    if options.verbose {
        scalar(CUjit_option::CU_JIT_LOG_VERBOSE, 1);
    }
    let count = keys.len() as c_uint;
    let mut raw: CUlinkState = std::ptr::null_mut();
    // SAFETY: `keys` and `values` hold `count` entries: the log buffers (alive, of the sizes
    // given, until after the state is destroyed) and integers passed as pointer-sized values,
    // as the driver reads them; `raw` is a valid out-pointer.
    unsafe {
        cu!(
            driver,
            cuLinkCreate_v2(count, keys.as_mut_ptr(), values.as_mut_ptr(), &mut raw)
        )
    }?;
    let state = Owned::new(State { raw, driver });
    let outcome = add_and_complete(&state, inputs, &names);
    let logs = |buffer: &[u8]| {
        let end = buffer.iter().position(|&b| b == 0).unwrap_or(buffer.len());
        String::from_utf8_lossy(&buffer[..end]).into_owned()
    };
    match outcome {
        Ok(bytes) => {
            state.close()?;
            Ok(Linked {
                bytes,
                info_log: logs(&info_log),
            })
        }
        Err(error) => {
            drop(state);
            Err(Error::Link {
                source: Box::new(error),
                log: failure_log(&logs(&error_log), &logs(&info_log), flags).into_boxed_str(),
            })
        }
    }
}

/// Adds every input, completes the link and copies the CUBIN out of the state.
fn add_and_complete(state: &State, inputs: &[LinkInput], names: &[CString]) -> Result<Vec<u8>> {
    for (input, name) in inputs.iter().zip(names) {
        let Some(kind) = input.kind().driver() else {
            return Err(Error::unsupported(
                "linking LTO-IR with the driver linker",
                "LTO-IR needs nvJitLink (libnvJitLink), which could not be used",
            ));
        };
        // SAFETY: the state is live; the bytes (which the driver only reads, whatever the
        // pointer's mutability says) and the NUL-terminated name live until the call returns;
        // no per-input options.
        unsafe {
            cu!(
                state.driver,
                cuLinkAddData_v2(
                    state.raw,
                    kind,
                    input.bytes().as_ptr().cast_mut().cast::<c_void>(),
                    input.bytes().len(),
                    name.as_ptr(),
                    0,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                )
            )
        }?;
    }
    let mut cubin: *mut c_void = std::ptr::null_mut();
    let mut size = 0usize;
    // SAFETY: the state is live; both out-pointers are valid.
    unsafe {
        cu!(
            state.driver,
            cuLinkComplete(state.raw, &mut cubin, &mut size)
        )
    }?;
    if cubin.is_null() || size == 0 {
        return Err(Error::unexpected("cuLinkComplete", "an empty CUBIN"));
    }
    // SAFETY: the driver's CUBIN of `size` bytes, owned by the state, which is still live.
    Ok(unsafe { std::slice::from_raw_parts(cubin.cast::<u8>(), size) }.to_vec())
}

/// Why the driver linker cannot do this link, if it cannot.
pub(super) fn refusal(
    options: &LinkerOptions,
    inputs: &[LinkInput],
    target: CodeKind,
) -> Option<Error> {
    if target != CodeKind::Cubin {
        return Some(Error::unsupported(
            "PTX or LTO-IR output from the driver linker",
            format!("the driver linker emits CUBIN only; {target} output needs nvJitLink"),
        ));
    }
    if let Some(option) = options.driver_lacks() {
        return Some(Error::unsupported(
            "a linker option of nvJitLink's with the driver linker",
            format!("the driver linker has no `{option}`; it needs nvJitLink"),
        ));
    }
    inputs
        .iter()
        .find(|input| input.kind().driver().is_none())
        .map(|input| {
            Error::unsupported(
                "linking LTO-IR with the driver linker",
                format!("{} is LTO-IR, which needs nvJitLink", input.name()),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::input::LinkInputKind;

    #[test]
    fn jit_targets_follow_the_header_bases() {
        assert_eq!(jit_target("90").unwrap(), 90);
        assert_eq!(jit_target("90a").unwrap(), 65_536 + 90);
        assert_eq!(jit_target("100f").unwrap(), 131_072 + 100);
        assert!(jit_target("x").is_err());
        let error = jit_target("4294967000a").unwrap_err();
        assert!(error.to_string().contains("out of range"), "{error}");
    }

    #[test]
    fn the_driver_linker_refuses_what_it_lacks_by_name() {
        let ptx = LinkInput::from_bytes(LinkInputKind::Ptx, "a.ptx", b"x".to_vec()).unwrap();
        let lto = LinkInput::from_bytes(LinkInputKind::LtoIr, "b.ltoir", vec![1]).unwrap();
        let plain = LinkerOptions::default();
        assert!(refusal(&plain, std::slice::from_ref(&ptx), CodeKind::Cubin).is_none());
        let error = refusal(&plain, &[ptx.clone(), lto], CodeKind::Cubin).unwrap();
        assert!(error.to_string().contains("b.ltoir"), "{error}");
        assert!(error.is_not_supported());
        for target in [CodeKind::Ptx, CodeKind::LtoIr] {
            let error = refusal(&plain, std::slice::from_ref(&ptx), target).unwrap();
            assert!(error.to_string().contains("CUBIN only"), "{error}");
        }
        let incremental = LinkerOptions {
            incremental: true,
            ..Default::default()
        };
        let error = refusal(&incremental, std::slice::from_ref(&ptx), CodeKind::Cubin).unwrap();
        assert!(error.to_string().contains("`incremental`"), "{error}");
        let split = LinkerOptions {
            split_compile: Some(4),
            ..Default::default()
        };
        let error = refusal(&split, &[ptx], CodeKind::Cubin).unwrap();
        assert!(error.to_string().contains("split_compile"), "{error}");
    }
}
