//! The bundle as one compressed archive beside its folder (`gpu-bundle.tar.gz`): the form a
//! GPU run carries. Rust executables compress about 2.3x with gzip, so the whole bundle travels
//! within the device tool's 64 MiB where the folder alone would not.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Packs the folder `out` into `<out>.tar.gz` beside it (its top entry named as the folder),
/// with the system's `tar`, and returns the archive's path and size in bytes.
pub(super) fn pack(out: &Path) -> Result<(PathBuf, u64), String> {
    let parent = out
        .parent()
        .ok_or_else(|| format!("{} has no parent folder", out.display()))?;
    let name = out
        .file_name()
        .ok_or_else(|| format!("{} has no name", out.display()))?;
    let mut archive_name = name.to_os_string();
    archive_name.push(".tar.gz");
    let archive = parent.join(archive_name);
    let status = Command::new("tar")
        .arg("-czf")
        .arg(&archive)
        .arg("-C")
        .arg(parent)
        .arg(name)
        .status()
        .map_err(|e| format!("running tar to pack {}: {e}", out.display()))?;
    if !status.success() {
        return Err(format!(
            "tar could not pack {} into {} ({status})",
            out.display(),
            archive.display()
        ));
    }
    let size = std::fs::metadata(&archive)
        .map_err(|e| format!("{}: {e}", archive.display()))?
        .len();
    Ok((archive, size))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::testing::scratch;

    #[test]
    fn the_archive_unpacks_to_the_folder() {
        let dir = scratch("archive");
        let out = dir.join("gpu-bundle");
        std::fs::create_dir_all(out.join("cuda-12")).unwrap();
        std::fs::write(out.join("cuda-12/a"), vec![7u8; 4096]).unwrap();
        let (archive, size) = pack(&out).unwrap();
        assert_eq!(archive, dir.join("gpu-bundle.tar.gz"));
        assert!(size > 0 && size < 4096, "{size}");
        let unpacked = dir.join("unpacked");
        std::fs::create_dir_all(&unpacked).unwrap();
        let status = Command::new("tar")
            .arg("-xzf")
            .arg(&archive)
            .arg("-C")
            .arg(&unpacked)
            .status()
            .unwrap();
        assert!(status.success());
        assert_eq!(
            std::fs::read(unpacked.join("gpu-bundle/cuda-12/a")).unwrap(),
            vec![7u8; 4096]
        );
    }
}
