//! What an incremental link ([`LinkerOptions::incremental`], nvJitLink's `-r`) and LTO-IR
//! output ([`CodeKind::LtoIr`] as the target) need: nvJitLink 13.2 for the one and 13.3 for
//! the other (refused by name and version before anything links), a build whose nvJitLink
//! bindings have the LTO-IR getter (the CUDA 13 ABI), and for LTO-IR output inputs that carry
//! LTO-IR.

use super::input::{LinkInput, LinkInputKind};
use super::options::LinkerOptions;
use crate::abi;
use crate::code::CodeKind;
use crate::error::{Error, Result};

/// A feature of a link and the nvJitLink release that added it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Need {
    /// What the link asks for, as the refusal names it.
    pub(super) feature: &'static str,
    /// The first nvJitLink that has it, `(major, minor)`.
    pub(super) since: (u32, u32),
}

/// nvJitLink's `-r` (its documentation and `nvJitLink.h` from 13.2 on).
const INCREMENTAL: Need = Need {
    feature: "an incremental link (LinkerOptions::incremental, nvJitLink's -r)",
    since: (13, 2),
};

/// `nvJitLinkGetLinkedLTOIR` and `nvJitLinkGetLinkedLTOIRSize` (nvJitLink 13.3).
const LTOIR_OUTPUT: Need = Need {
    feature: "LTO-IR link output (nvJitLinkGetLinkedLTOIR)",
    since: (13, 3),
};

/// What a link to `target` with `options` needs of nvJitLink beyond 12.3, newest first.
pub(super) fn needs(options: &LinkerOptions, target: CodeKind) -> Vec<Need> {
    let mut needs = Vec::new();
    if target == CodeKind::LtoIr {
        needs.push(LTOIR_OUTPUT);
    }
    if options.incremental {
        needs.push(INCREMENTAL);
    }
    needs
}

/// Refuses what the loaded nvJitLink, of `loaded` (`"13.0"`, as [`super::nvjitlink::version`]
/// spells it), or this build lacks for a link to `target` with `options`.
///
/// # Errors
///
/// [`Error::Unsupported`] naming the feature, the nvJitLink it needs and the one loaded; for
/// LTO-IR output on a new enough nvJitLink under the CUDA 12 ABI, naming the build.
pub(super) fn check(options: &LinkerOptions, target: CodeKind, loaded: &str) -> Result<()> {
    let needs = needs(options, target);
    if needs.is_empty() {
        return Ok(());
    }
    let version = parse(loaded)
        .ok_or_else(|| Error::unexpected("nvJitLinkVersion", format!("a version {loaded:?}")))?;
    for need in &needs {
        if version < need.since {
            let (major, minor) = need.since;
            return Err(Error::unsupported(
                need.feature,
                format!("it needs nvJitLink {major}.{minor}, and nvJitLink {loaded} is loaded"),
            ));
        }
    }
    if target == CodeKind::LtoIr && !abi::NVJITLINK_HAS_LINKED_LTOIR {
        return Err(Error::unsupported(
            LTOIR_OUTPUT.feature,
            format!(
                "nvJitLink {loaded} has it, but this build's CUDA 12 bindings do not declare \
                 it: build cuda-safe with the cuda-13 feature"
            ),
        ));
    }
    Ok(())
}

/// Refuses inputs that carry no LTO-IR when the target is LTO-IR: nvJitLink would leave
/// PTX and CUBIN inputs out of the linked IR without a word.
///
/// # Errors
///
/// [`Error::InvalidArgument`] naming the first such input.
pub(super) fn check_inputs(inputs: &[LinkInput], target: CodeKind) -> Result<()> {
    if target != CodeKind::LtoIr {
        return Ok(());
    }
    match inputs
        .iter()
        .find(|input| matches!(input.kind(), LinkInputKind::Ptx | LinkInputKind::Cubin))
    {
        Some(input) => Err(Error::invalid_argument(format!(
            "{} is {}, which carries no LTO-IR: LTO-IR output links LTO-IR (or fatbins, objects \
             and archives holding it) only, and nvJitLink would leave it out",
            input.name(),
            input.kind().name()
        ))),
        None => Ok(()),
    }
}

/// `"13.2"` as `(13, 2)`.
fn parse(version: &str) -> Option<(u32, u32)> {
    let (major, minor) = version.split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lto() -> LinkerOptions {
        LinkerOptions {
            arch: Some("sm_90".into()),
            lto: true,
            ..Default::default()
        }
    }

    #[test]
    fn each_feature_names_the_version_it_needs_and_the_one_loaded() {
        let incremental = LinkerOptions {
            incremental: true,
            ..lto()
        };
        assert!(check(&lto(), CodeKind::Cubin, "12.3").is_ok());
        let error = check(&incremental, CodeKind::Cubin, "13.0").unwrap_err();
        assert!(error.is_not_supported(), "{error}");
        let text = error.to_string();
        assert!(
            text.contains("-r") && text.contains("nvJitLink 13.2"),
            "{text}"
        );
        assert!(text.contains("nvJitLink 13.0 is loaded"), "{text}");
        assert!(check(&incremental, CodeKind::Cubin, "13.2").is_ok());
        assert!(check(&incremental, CodeKind::Cubin, "14.0").is_ok());

        // LTO-IR output needs 13.3; the newest need is named first.
        let error = check(&incremental, CodeKind::LtoIr, "13.2").unwrap_err();
        let text = error.to_string();
        assert!(text.contains("nvJitLinkGetLinkedLTOIR"), "{text}");
        assert!(
            text.contains("needs nvJitLink 13.3, and nvJitLink 13.2"),
            "{text}"
        );
        let error = check(&lto(), CodeKind::LtoIr, "12.9").unwrap_err();
        assert!(error.to_string().contains("13.3"), "{error}");
        let on_13_3 = check(&incremental, CodeKind::LtoIr, "13.3");
        if abi::NVJITLINK_HAS_LINKED_LTOIR {
            assert!(on_13_3.is_ok(), "{on_13_3:?}");
        } else {
            let error = on_13_3.unwrap_err();
            assert!(error.to_string().contains("cuda-13 feature"), "{error}");
        }
        let error = check(&incremental, CodeKind::Cubin, "x").unwrap_err();
        assert!(matches!(error, Error::UnexpectedAnswer { .. }), "{error}");
    }

    #[test]
    fn ltoir_output_refuses_inputs_without_ir() {
        let input = |kind, name: &str| LinkInput::from_bytes(kind, name, vec![1, 2]).unwrap();
        let ir = input(LinkInputKind::LtoIr, "a.ltoir");
        let fatbin = input(LinkInputKind::Fatbin, "b.fatbin");
        assert!(check_inputs(&[ir.clone(), fatbin], CodeKind::LtoIr).is_ok());
        for kind in [LinkInputKind::Ptx, LinkInputKind::Cubin] {
            let plain = input(kind, "c");
            let error = check_inputs(&[ir.clone(), plain.clone()], CodeKind::LtoIr).unwrap_err();
            assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
            assert!(error.to_string().contains("c is"), "{error}");
            assert!(check_inputs(&[plain], CodeKind::Cubin).is_ok());
        }
    }
}
