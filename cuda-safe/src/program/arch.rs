//! GPU architecture names, as [`ProgramOptions::arch`](super::ProgramOptions::arch) takes them
//! and as NVRTC's `--gpu-architecture` wants them.
//!
//! An architecture is its compute-capability digits and an optional feature suffix (`90`,
//! `90a`, `100f`). It may be written `sm_90`, `compute_90` or `90`; the prefix given does not
//! matter, because the code produced decides it: PTX is compiled for the virtual architecture
//! (`compute_90`), CUBIN and LTO-IR for the real one (`sm_90`).

use crate::code::CodeKind;
use crate::error::{Error, Result};

/// The digits and suffix of `arch` (`"90a"` for `"sm_90a"`), or an error saying what is wrong.
pub(crate) fn digits(arch: &str) -> Result<&str> {
    let bare = arch
        .strip_prefix("sm_")
        .or_else(|| arch.strip_prefix("compute_"))
        .unwrap_or(arch);
    let number = bare.strip_suffix(['a', 'f']).unwrap_or(bare);
    if number.len() >= 2 && number.bytes().all(|byte| byte.is_ascii_digit()) {
        Ok(bare)
    } else {
        Err(Error::invalid_argument(format!(
            "program options: architecture {arch:?} is not of the form sm_XX, compute_XX or XX \
             (compute-capability digits, optionally followed by `a` or `f`: sm_90, 90a, \
             compute_100f)"
        )))
    }
}

/// The architecture name NVRTC compiles `target` for: `compute_<digits>` for PTX, `sm_<digits>`
/// for CUBIN and LTO-IR (and a fatbin, which [`nvrtc_output`] refuses first).
pub(super) fn for_target(target: CodeKind, digits: &str) -> String {
    match target {
        CodeKind::Ptx => format!("compute_{digits}"),
        CodeKind::Cubin | CodeKind::LtoIr | CodeKind::Fatbin => format!("sm_{digits}"),
    }
}

/// Refuses a target NVRTC does not compile to: a fatbin.
pub(super) fn nvrtc_output(target: CodeKind) -> Result<()> {
    if target == CodeKind::Fatbin {
        return Err(Error::invalid_argument(
            "NVRTC compiles to PTX, CUBIN or LTO-IR, not a fatbin: build one from those with \
             FatbinBuilder",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_gives_the_same_digits() {
        for (arch, expected) in [
            ("sm_90", "90"),
            ("compute_90", "90"),
            ("90", "90"),
            ("sm_90a", "90a"),
            ("compute_100f", "100f"),
            ("75", "75"),
            ("sm_121a", "121a"),
        ] {
            assert_eq!(digits(arch).unwrap(), expected, "{arch}");
        }
    }

    #[test]
    fn malformed_architectures_are_refused() {
        for arch in [
            "", "sm_", "sm90", "9", "sm_9", "sm_90x", "SM_90", "gfx90", "sm_90aa", "compute_", "a",
            "90 ", " 90", "sm_9a0", "lto_90",
        ] {
            let error = digits(arch).unwrap_err();
            assert!(
                matches!(error, Error::InvalidArgument(_)),
                "{arch}: {error}"
            );
            assert!(error.to_string().contains("sm_XX"), "{error}");
        }
    }

    #[test]
    fn the_target_decides_the_prefix() {
        assert_eq!(for_target(CodeKind::Ptx, "90"), "compute_90");
        assert_eq!(for_target(CodeKind::Cubin, "90"), "sm_90");
        assert_eq!(for_target(CodeKind::LtoIr, "90a"), "sm_90a");
        assert!(nvrtc_output(CodeKind::Ptx).is_ok());
        let error = nvrtc_output(CodeKind::Fatbin).unwrap_err();
        assert!(error.to_string().contains("FatbinBuilder"), "{error}");
    }
}
