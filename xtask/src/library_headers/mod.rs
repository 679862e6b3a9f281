//! Where the headers of the CUDA libraries versioned on their own come from: cuBLAS
//! (`cublas_v2.h`, `cublas_api.h`, `cublasLt.h`), cuRAND (`curand.h`), cuDNN (`cudnn.h` and the
//! headers it includes), cuFFT (`cufft.h`, `cufftXt.h`), cuSPARSE (`cusparse.h`) and cuSOLVER
//! (`cusolverDn.h`, `cusolver_common.h`), read out of their PyPI wheels piecewise, as `nccl.h`
//! is (see [`crate::nccl_header`]): the wheels are hundreds of MB, almost all of it the
//! libraries, and only the headers are fetched. Each header is pinned by its SHA-256, and kept
//! under `target/cuda-headers/<package>-<version>/`.
//!
//! Each library has the wheel its bindings are generated from, one per CUDA major, and for
//! each major a history: the wheel of every minor release on PyPI before the pinned one,
//! oldest first. The release that introduced an entry point is the first of the history (or
//! the pinned wheel) whose header declares it; those in the oldest are in every release the
//! bindings support and stay undated.

mod cublas;
mod cudnn;
mod cudnn_history;
mod cufft;
mod curand;
mod cusolver;
mod cusparse;

use std::fs;
use std::path::{Path, PathBuf};

pub use cublas::CUBLAS;
pub use cudnn::CUDNN;
pub use cufft::CUFFT;
pub use curand::CURAND;
pub use cusolver::CUSOLVER;
pub use cusparse::CUSPARSE;

use crate::nccl_header::{members_from_wheel, sha256_hex};

/// One wheel and the headers read out of it, each with its SHA-256.
#[derive(Debug)]
pub struct PinnedWheel {
    /// The PyPI package (`nvidia-cublas-cu12`).
    pub package: &'static str,
    /// The package's version (`12.9.1.4`).
    pub version: &'static str,
    /// The wheel's path under files.pythonhosted.org/packages/.
    pub path: &'static str,
    /// The headers read (file names under the wheel's `include/`), each pinned by a line as
    /// `sha256sum` prints it: the SHA-256 in hex, two spaces, the file name.
    pub headers: &'static [&'static str],
}

impl PinnedWheel {
    /// `package==version`, for messages and the generated files' preambles.
    pub fn source(&self) -> String {
        format!("{}=={}", self.package, self.version)
    }

    /// Each pinned header as (file name, SHA-256), in the table's order.
    pub fn pins(&self) -> Result<Vec<(&'static str, &'static str)>, String> {
        self.headers
            .iter()
            .map(|line| {
                line.split_once("  ")
                    .filter(|(sha256, name)| {
                        sha256.len() == 64
                            && sha256.bytes().all(|b| b.is_ascii_hexdigit())
                            && !name.is_empty()
                    })
                    .map(|(sha256, name)| (name, sha256))
                    .ok_or_else(|| {
                        format!(
                            "`{line}` of {} is no `<SHA-256>  <file name>` line",
                            self.source()
                        )
                    })
            })
            .collect()
    }

    /// Whether the wheel's pins include the header `name`.
    pub fn has(&self, name: &str) -> bool {
        self.headers.iter().any(|line| {
            line.split_once("  ")
                .is_some_and(|(_, pinned)| pinned == name)
        })
    }
}

/// A [`PinnedWheel`], written compactly in the tables.
const fn wheel(
    package: &'static str,
    version: &'static str,
    path: &'static str,
    headers: &'static [&'static str],
) -> PinnedWheel {
    PinnedWheel {
        package,
        version,
        path,
        headers,
    }
}

/// One library's pinned wheels: the bindings' wheel and the history, per CUDA major.
#[derive(Debug)]
pub struct LibraryWheels {
    /// The library, as errors and the needs lines name it (`cuBLAS`).
    pub name: &'static str,
    /// The wheels the CUDA 12 and CUDA 13 bindings are generated from.
    pub bindings: [PinnedWheel; 2],
    /// For each major, the wheel of every minor release on PyPI before the pinned one, oldest
    /// first (cuRAND: the oldest release alone; see [`CURAND`]).
    pub history: [&'static [PinnedWheel]; 2],
}

impl LibraryWheels {
    /// The bindings' wheel of CUDA major `major` (12 or 13).
    pub fn bindings_of(&self, major: u32) -> Result<&PinnedWheel, String> {
        self.bindings
            .iter()
            .find(|pinned| pinned.package.ends_with("-cu12") == (major == 12))
            .ok_or_else(|| format!("{} has no wheel for CUDA {major}", self.name))
    }

    /// The history of CUDA major `major`.
    pub fn history_of(&self, major: u32) -> &'static [PinnedWheel] {
        self.history[usize::from(major != 12)]
    }
}

/// The folder holding a pinned wheel's headers: from the cache under `target/cuda-headers/`
/// when every header is there with its pinned hash, otherwise read out of the wheel (and
/// cached).
pub fn fetch(workspace: &Path, pinned: &PinnedWheel) -> Result<PathBuf, String> {
    let pins = pinned.pins()?;
    let dir = workspace
        .join("target")
        .join("cuda-headers")
        .join(format!("{}-{}", pinned.package, pinned.version));
    let cached = pins.iter().all(|(name, sha256)| {
        fs::read(dir.join(name)).is_ok_and(|bytes| sha256_hex(&bytes) == *sha256)
    });
    if cached {
        return Ok(dir);
    }
    eprintln!(
        "xtask: reading {} headers out of {}",
        pins.len(),
        pinned.source()
    );
    let url = format!("https://files.pythonhosted.org/packages/{}", pinned.path);
    let suffixes: Vec<String> = pins
        .iter()
        .map(|(name, _)| format!("/include/{name}"))
        .collect();
    let suffixes: Vec<&str> = suffixes.iter().map(String::as_str).collect();
    let members = members_from_wheel(&url, &suffixes)?;
    fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    for ((name, sha256), bytes) in pins.iter().zip(members) {
        let actual = sha256_hex(&bytes);
        if actual != *sha256 {
            return Err(format!(
                "{name} of {} has SHA-256 {actual}, expected {sha256}",
                pinned.source()
            ));
        }
        let path = dir.join(name);
        fs::write(&path, &bytes).map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `major.minor` of a package version (`12.9` of `12.9.1.4`).
    fn minor(version: &str) -> (u32, u32) {
        let mut parts = version.split('.').map(|part| part.parse::<u32>().unwrap());
        (parts.next().unwrap(), parts.next().unwrap())
    }

    #[test]
    fn histories_are_one_wheel_per_minor_oldest_first_before_the_pin() {
        for library in [CUBLAS, CURAND, CUDNN, CUFFT, CUSPARSE, CUSOLVER] {
            for major in [12, 13] {
                let pinned = library.bindings_of(major).unwrap();
                let history = library.history_of(major);
                assert!(!history.is_empty(), "{} {major}", library.name);
                for pair in history.windows(2) {
                    assert!(minor(pair[0].version) < minor(pair[1].version));
                }
                let last = minor(history[history.len() - 1].version);
                if library.name == "cuRAND" {
                    assert_eq!(history.len(), 1);
                    assert_eq!(last, minor(pinned.version));
                } else {
                    assert!(last < minor(pinned.version));
                }
                for wheel in history.iter().chain([pinned]) {
                    assert_eq!(wheel.package, pinned.package);
                    assert!(wheel.path.contains(wheel.version), "{}", wheel.path);
                    let pins = wheel.pins().unwrap();
                    assert!(!pins.is_empty(), "{}", wheel.source());
                    assert!(pins.iter().all(|(name, _)| wheel.has(name)));
                }
            }
        }
    }

    #[test]
    fn a_pin_is_a_sha256sum_line() {
        let good = wheel(
            "p",
            "1.0",
            "x/p-1.0.whl",
            &["5acce9788285680587c08a3d46ed9717adf9d70aef47de3a17f59a23f7cc7547  curand.h"],
        );
        assert_eq!(
            good.pins().unwrap(),
            [(
                "curand.h",
                "5acce9788285680587c08a3d46ed9717adf9d70aef47de3a17f59a23f7cc7547"
            )]
        );
        assert!(good.has("curand.h") && !good.has("cufft.h"));
        const NO_NAME: &str = "5acce9788285680587c08a3d46ed9717adf9d70aef47de3a17f59a23f7cc7547  ";
        const NOT_HEX: &str =
            "5acce9788285680587c08a3d46ed9717adf9d70aef47de3a17f59a23f7cc754x  curand.h";
        for bad in [
            &["5acce97  curand.h"][..],
            &["curand.h"],
            &[NO_NAME],
            &[NOT_HEX],
        ] {
            assert!(wheel("p", "1.0", "p", bad).pins().is_err(), "{bad:?}");
        }
    }
}
