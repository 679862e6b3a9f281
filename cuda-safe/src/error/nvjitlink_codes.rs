//! nvJitLink's result codes by name and meaning (nvJitLink has no call that describes them),
//! and the link errors built from them.

use nvjitlink_sys::nvJitLinkResult;

/// The name and meaning of an nvJitLink result code, as `nvJitLink.h` gives them (the codes
/// from 10 on are CUDA 13's; a CUDA 12 library maps them onto older ones).
pub(super) fn nvjitlink_code(code: nvJitLinkResult) -> (&'static str, &'static str) {
    match code.0 {
        0 => ("NVJITLINK_SUCCESS", "success"),
        1 => ("NVJITLINK_ERROR_UNRECOGNIZED_OPTION", "unrecognized option"),
        2 => (
            "NVJITLINK_ERROR_MISSING_ARCH",
            "option -arch=sm_NN not given",
        ),
        3 => ("NVJITLINK_ERROR_INVALID_INPUT", "invalid input"),
        4 => ("NVJITLINK_ERROR_PTX_COMPILE", "PTX compilation failed"),
        5 => (
            "NVJITLINK_ERROR_NVVM_COMPILE",
            "NVVM (LTO) compilation failed",
        ),
        6 => ("NVJITLINK_ERROR_INTERNAL", "internal error"),
        7 => ("NVJITLINK_ERROR_THREADPOOL", "thread pool error"),
        8 => ("NVJITLINK_ERROR_UNRECOGNIZED_INPUT", "unrecognized input"),
        9 => ("NVJITLINK_ERROR_FINALIZE", "finalizer error"),
        10 => ("NVJITLINK_ERROR_NULL_INPUT", "null input"),
        11 => (
            "NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS",
            "incompatible options",
        ),
        12 => (
            "NVJITLINK_ERROR_INCORRECT_INPUT_TYPE",
            "incorrect input type",
        ),
        13 => ("NVJITLINK_ERROR_ARCH_MISMATCH", "architecture mismatch"),
        14 => (
            "NVJITLINK_ERROR_OUTDATED_LIBRARY",
            "nvJitLink is older than the input",
        ),
        15 => ("NVJITLINK_ERROR_MISSING_FATBIN", "missing fatbin"),
        16 => (
            "NVJITLINK_ERROR_UNRECOGNIZED_ARCH",
            "unrecognized -arch value",
        ),
        17 => (
            "NVJITLINK_ERROR_UNSUPPORTED_ARCH",
            "unsupported -arch value",
        ),
        18 => ("NVJITLINK_ERROR_LTO_NOT_ENABLED", "the input needs -lto"),
        _ => (
            "an unknown nvJitLink result code",
            "newer than these bindings",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::super::Error;
    use super::*;

    #[test]
    fn link_errors_name_the_code_and_carry_the_log() {
        let call = Error::nvjitlink(
            "nvJitLinkComplete",
            nvJitLinkResult::NVJITLINK_ERROR_PTX_COMPILE,
        );
        assert_eq!(
            call.to_string(),
            "nvJitLinkComplete failed: NVJITLINK_ERROR_PTX_COMPILE (PTX compilation failed)"
        );
        let unknown = Error::nvjitlink("nvJitLinkComplete", nvJitLinkResult(77));
        assert!(unknown.to_string().contains("unknown"), "{unknown}");
        let link = Error::Link {
            source: Box::new(call),
            log: "error   : Undefined reference to '_Z5scalef' in 'a.ltoir'\noptions: []".into(),
        };
        let text = link.to_string();
        assert!(text.starts_with("nvJitLinkComplete failed"), "{text}");
        assert!(text.contains("\nerror   : Undefined reference"), "{text}");
        assert!(link.link_log().unwrap().contains("Undefined reference"));
        assert!(std::error::Error::source(&link).is_some());
        assert!(!link.is_not_supported());
        let arch = Error::nvjitlink("nvJitLinkCreate", nvJitLinkResult(17));
        assert!(arch.is_not_supported());
        assert!(
            Error::Link {
                source: Box::new(arch),
                log: "".into()
            }
            .is_not_supported()
        );
    }
}
