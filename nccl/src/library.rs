//! Loading NCCL once, with its version checked.

use std::sync::OnceLock;

use crate::error::nccl;
use cuda_safe::{Error, Result};
use nccl_sys::{Nccl, NcclVersion, OLDEST_DATED_NCCL_VERSION};

/// The oldest NCCL this module runs on: the oldest whose header the bindings' entry points are
/// dated against (2.13), so every call it makes outside those dated ones exists.
pub const MIN_NCCL_VERSION: NcclVersion = NcclVersion(OLDEST_DATED_NCCL_VERSION);

/// The loaded NCCL and its version, checked once per process.
pub(crate) fn library() -> Result<&'static Nccl> {
    loaded().map(|(nccl, _)| nccl)
}

/// The version of the loaded NCCL (`ncclGetVersion`).
///
#[doc = nccl_sys::api_doc!(ncclGetVersion)]
/// # Errors
///
/// [`Error::Load`] when `libnccl.so.2` cannot be loaded; [`Error::Unsupported`] for an NCCL
/// older than [`MIN_NCCL_VERSION`] or of another major version.
#[doc(alias = "ncclGetVersion")]
pub fn version() -> Result<NcclVersion> {
    loaded().map(|(_, version)| version)
}

fn loaded() -> Result<(&'static Nccl, NcclVersion)> {
    static LOADED: OnceLock<Result<(&'static Nccl, NcclVersion)>> = OnceLock::new();
    LOADED
        .get_or_init(|| {
            let nccl = nccl_sys::nccl()?;
            let mut code = 0;
            // SAFETY: `code` is a valid place for an int.
            unsafe { nccl!(nccl, ncclGetVersion(&mut code))? };
            let version = NcclVersion(u32::try_from(code).unwrap_or(0));
            check_version(version)?;
            Ok((nccl, version))
        })
        .clone()
}

/// Refuses an NCCL this module cannot drive.
fn check_version(version: NcclVersion) -> Result<()> {
    if version.major() != 2 || version < MIN_NCCL_VERSION {
        return Err(Error::unsupported(
            "NCCL collectives",
            format!(
                "the loaded NCCL is {version}; cuda-safe needs NCCL 2.x from {MIN_NCCL_VERSION} on \
                 (set CUDA_SAFE_LIBNCCL to the absolute path of another libnccl.so.2)"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_checked() {
        assert!(check_version(NcclVersion::new(2, 28, 3)).is_ok());
        assert!(check_version(MIN_NCCL_VERSION).is_ok());
        let old = check_version(NcclVersion::new(2, 12, 12)).unwrap_err();
        assert!(
            old.is_not_supported() && old.to_string().contains("2.12.12"),
            "{old}"
        );
        assert!(check_version(NcclVersion::new(3, 0, 0)).is_err());
        assert!(check_version(NcclVersion::new(2, 7, 8)).is_err());
    }
}
