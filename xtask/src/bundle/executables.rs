//! Building one kind of executables of one package and copying them into the bundle.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use super::PROFILE;
use super::args::Args;
use super::cargo::{parse_artifact, run_cargo};
use super::files::{make_executable, mib};
use super::metadata::Package;
use super::plan::{Abi, Kind, optional_feature_args};

/// Builds `kind` of `package` for `abi` and copies each executable `selection` keeps into the
/// bundle; `copied` maps each bundle path written so far to its source, to catch clashing names.
pub(super) fn build_and_copy(
    root: &Path,
    cargo: &str,
    abi: &Abi,
    (kind, package): (Kind, &Package),
    out: &Path,
    selection: &Args,
    copied: &mut BTreeMap<PathBuf, PathBuf>,
) -> Result<(), String> {
    let mut args: Vec<&str> = kind.cargo_args().to_vec();
    args.extend(["--profile", PROFILE, "-p", &package.name]);
    args.extend(abi.cargo_args);
    args.extend(optional_feature_args(package));
    args.push("--message-format=json-render-diagnostics");
    let lines = run_cargo(root, cargo, &args)?;

    let dir = out.join(abi.name).join(kind.dir());
    fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    for artifact in lines.iter().filter_map(|line| parse_artifact(line, kind)) {
        if !selection.keeps(&format!("{}/{}/{}", abi.name, kind.dir(), artifact.name)) {
            continue;
        }
        let dest = dir.join(&artifact.name);
        if let Some(earlier) = copied.get(&dest) {
            if *earlier == artifact.executable {
                continue;
            }
            return Err(format!(
                "two executables would be {}: {} and {}",
                dest.display(),
                earlier.display(),
                artifact.executable.display()
            ));
        }
        let size = fs::copy(&artifact.executable, &dest).map_err(|e| {
            format!(
                "copying {} to {}: {e}",
                artifact.executable.display(),
                dest.display()
            )
        })?;
        make_executable(&dest)?;
        println!(
            "gpu-bundle: {}/{}/{} ({})",
            abi.name,
            kind.dir(),
            artifact.name,
            mib(size)
        );
        copied.insert(dest, artifact.executable);
    }
    Ok(())
}
