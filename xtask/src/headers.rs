//! Where the CUDA headers come from: pinned PyPI wheels, or a local toolkit.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

/// The headers every generation reads, by file name.
pub const CUDA_H: &str = "cuda.h";
/// `cudaTypedefs.h`: its `PFN_<name>_v<version>` typedefs tell which CUDA version added a symbol.
pub const CUDA_TYPEDEFS_H: &str = "cudaTypedefs.h";
/// The NVRTC header.
pub const NVRTC_H: &str = "nvrtc.h";
/// The NVML header.
pub const NVML_H: &str = "nvml.h";
/// The nvJitLink header.
pub const NVJITLINK_H: &str = "nvJitLink.h";
/// The nvFatbin header.
pub const NVFATBIN_H: &str = "nvFatbin.h";
/// The CUDA runtime's `library_types.h` (`cudaDataType`, `libraryPropertyType`), which the
/// cuBLAS headers include.
pub const LIBRARY_TYPES_H: &str = "library_types.h";

/// Every header a set holds.
const ALL_HEADERS: [&str; 7] = [
    CUDA_H,
    CUDA_TYPEDEFS_H,
    NVRTC_H,
    NVML_H,
    NVJITLINK_H,
    NVFATBIN_H,
    LIBRARY_TYPES_H,
];

/// One set of headers of one CUDA major version, gathered in one include directory.
#[derive(Debug)]
pub struct HeaderSet {
    /// The CUDA major version (12 or 13), from `CUDA_VERSION` in `cuda.h`.
    pub major: u32,
    /// `CUDA_VERSION` from `cuda.h` (`13050`).
    pub cuda_version: u32,
    /// The directory holding `cuda.h`, `cudaTypedefs.h`, `nvrtc.h`, `nvml.h`, `nvJitLink.h`,
    /// `nvFatbin.h` and `library_types.h`.
    pub include_dir: PathBuf,
    /// Where each header came from, by header file name, for the generated files' preamble.
    pub sources: Vec<(&'static str, String)>,
    /// The CUDA documentation these headers are documented in, ending in `/`: the archived
    /// documentation of their release when it is known, else the current documentation.
    pub docs_root: String,
}

impl HeaderSet {
    /// The path of one header of this set.
    pub fn header(&self, name: &str) -> PathBuf {
        self.include_dir.join(name)
    }

    /// Where the header `name` came from.
    pub fn source_of(&self, name: &str) -> &str {
        self.sources
            .iter()
            .find(|(header, _)| *header == name)
            .map_or("unknown source", |(_, source)| source.as_str())
    }
}

/// A pinned PyPI wheel that carries some of the headers.
struct Wheel {
    name: &'static str,
    version: &'static str,
    file_name: &'static str,
    sha256: &'static str,
    headers: &'static [&'static str],
}

/// The CUDA 12.9 header wheels.
const WHEELS_12: &[Wheel] = &[
    Wheel {
        name: "nvidia-cuda-runtime-cu12",
        version: "12.9.79",
        file_name: "nvidia_cuda_runtime_cu12-12.9.79-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
        sha256: "25bba2dfb01d48a9b59ca474a1ac43c6ebf7011f1b0b8cc44f54eb6ac48a96c3",
        headers: &[CUDA_H, CUDA_TYPEDEFS_H, LIBRARY_TYPES_H],
    },
    Wheel {
        name: "nvidia-cuda-nvrtc-cu12",
        version: "12.9.86",
        file_name: "nvidia_cuda_nvrtc_cu12-12.9.86-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl",
        sha256: "210cf05005a447e29214e9ce50851e83fc5f4358df8b453155d5e1918094dcb4",
        headers: &[NVRTC_H],
    },
    Wheel {
        name: "nvidia-nvml-dev-cu12",
        version: "12.9.79",
        file_name: "nvidia_nvml_dev_cu12-12.9.79-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
        sha256: "8bb367913c62cb65be9ae386c58dbf573f1f9e2f01cae54abb87bf5f63c6069e",
        headers: &[NVML_H],
    },
    Wheel {
        name: "nvidia-nvjitlink-cu12",
        version: "12.9.86",
        file_name: "nvidia_nvjitlink_cu12-12.9.86-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl",
        sha256: "e3f1171dbdc83c5932a45f0f4c99180a70de9bd2718c1ab77d14104f6d7147f9",
        headers: &[NVJITLINK_H],
    },
    Wheel {
        name: "nvidia-nvfatbin-cu12",
        version: "12.9.82",
        file_name: "nvidia_nvfatbin_cu12-12.9.82-py3-none-manylinux1_x86_64.manylinux_2_5_x86_64.whl",
        sha256: "16cbfbd12287508212f22f42dff6ff51cf9b528b906f57f615b080da16dea1ea",
        headers: &[NVFATBIN_H],
    },
];

/// The CUDA 12 release whose archived documentation the CUDA 12 bindings link to: the release
/// [`WHEELS_12`] come from (its runtime is 12.9.79, its NVRTC 12.9.86). Generation fails when
/// its major and minor differ from the headers' `CUDA_VERSION`.
const DOCS_RELEASE_12: &str = "12.9.1";

/// The current CUDA documentation, which the CUDA 13 bindings (the newest headers) link to.
const CURRENT_DOCS: &str = "https://docs.nvidia.com/cuda/";

/// The newest CUDA 13 header wheels on PyPI when the bindings were generated.
const WHEELS_13: &[Wheel] = &[
    Wheel {
        name: "nvidia-cuda-runtime",
        version: "13.5.37",
        file_name: "nvidia_cuda_runtime-13.5.37-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
        sha256: "df2b79a8852f10d1fef8c848489c49eebb5754051bf870202a862831412b179d",
        headers: &[CUDA_H, CUDA_TYPEDEFS_H, LIBRARY_TYPES_H],
    },
    Wheel {
        name: "nvidia-cuda-nvrtc",
        version: "13.5.37",
        file_name: "nvidia_cuda_nvrtc-13.5.37-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl",
        sha256: "86b4d68058807988b7d9af5b44917a0601e9c337f35ccd657bfb3c759ff8d8bc",
        headers: &[NVRTC_H],
    },
    Wheel {
        name: "nvidia-nvml-dev",
        version: "13.4.92",
        file_name: "nvidia_nvml_dev-13.4.92-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
        sha256: "90b65cebefd02a1e695675177c9d7886f48322906ce5c03398e8cb27cc5ad2d6",
        headers: &[NVML_H],
    },
    Wheel {
        name: "nvidia-nvjitlink",
        version: "13.5.37",
        file_name: "nvidia_nvjitlink-13.5.37-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl",
        sha256: "280d7cb9649704145f074b8dbde500de04ce02d0872e066e20a83c17bcaa93eb",
        headers: &[NVJITLINK_H],
    },
    Wheel {
        name: "nvidia-nvfatbin",
        version: "13.5.37",
        file_name: "nvidia_nvfatbin-13.5.37-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl",
        sha256: "35e17e8abcfc1fb5ffe08746ca6bc4e497e9305beab28b17d722a8f2f50f7581",
        headers: &[NVFATBIN_H],
    },
];

/// Downloads (once; kept under `target/cuda-headers/wheels`) and unpacks the pinned wheels of
/// both CUDA majors, checking each wheel's SHA-256.
pub fn from_wheels(workspace: &Path) -> Result<Vec<HeaderSet>, String> {
    let cache = workspace.join("target").join("cuda-headers");
    let wheel_dir = cache.join("wheels");
    fs::create_dir_all(&wheel_dir).map_err(|e| format!("creating {}: {e}", wheel_dir.display()))?;
    [
        (12, WHEELS_12, Some(DOCS_RELEASE_12)),
        (13, WHEELS_13, None),
    ]
    .into_iter()
    .map(|(major, wheels, docs_release)| {
        let include_dir = cache.join(format!("cuda-{major}")).join("include");
        fs::create_dir_all(&include_dir)
            .map_err(|e| format!("creating {}: {e}", include_dir.display()))?;
        let mut sources = Vec::new();
        for wheel in wheels {
            let path = fetch_wheel(wheel, &wheel_dir)?;
            extract_headers(&path, wheel.headers, &include_dir)?;
            for header in wheel.headers {
                sources.push((
                    *header,
                    format!("PyPI wheel {}=={}", wheel.name, wheel.version),
                ));
            }
        }
        let set = header_set(include_dir, sources, docs_release)?;
        if set.major != major {
            return Err(format!(
                "the CUDA {major} wheels hold a cuda.h of CUDA {}",
                set.major
            ));
        }
        Ok(set)
    })
    .collect()
}

/// The headers of a local toolkit (`DIR/include`); its release, for the documentation links,
/// from its `version.json` when it has one.
pub fn from_toolkit(cuda_home: &Path) -> Result<HeaderSet, String> {
    let include_dir = cuda_home.join("include");
    let source = format!("the CUDA toolkit at {}", cuda_home.display());
    let sources = ALL_HEADERS
        .into_iter()
        .map(|header| (header, source.clone()))
        .collect();
    let release = fs::read_to_string(cuda_home.join("version.json"))
        .ok()
        .and_then(|text| toolkit_release(&text));
    header_set(include_dir, sources, release.as_deref())
}

/// The toolkit release (`12.9.1`) a toolkit's `version.json` gives as `cuda.version`.
fn toolkit_release(version_json: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(version_json).ok()?;
    Some(value.get("cuda")?.get("version")?.as_str()?.to_owned())
}

/// The documentation root of `release` (`12.9.1`): its archived documentation, after checking
/// that it is the release of `cuda_version`; the current documentation for `None`.
fn docs_root(release: Option<&str>, cuda_version: u32) -> Result<String, String> {
    let Some(release) = release else {
        return Ok(CURRENT_DOCS.to_owned());
    };
    let expected = format!("{}.{}.", cuda_version / 1000, (cuda_version % 1000) / 10);
    if !release.starts_with(&expected) {
        return Err(format!(
            "the documentation release {release} is not the release of CUDA_VERSION \
             {cuda_version}"
        ));
    }
    Ok(format!("https://docs.nvidia.com/cuda/archive/{release}/"))
}

/// Checks that every header is present and reads `CUDA_VERSION`; `docs_release` is the
/// release whose archived documentation the bindings link to (`None`: the current one).
fn header_set(
    include_dir: PathBuf,
    sources: Vec<(&'static str, String)>,
    docs_release: Option<&str>,
) -> Result<HeaderSet, String> {
    for header in ALL_HEADERS {
        let path = include_dir.join(header);
        if !path.is_file() {
            return Err(format!("{} is missing", path.display()));
        }
    }
    let cuda_h = include_dir.join(CUDA_H);
    let text =
        fs::read_to_string(&cuda_h).map_err(|e| format!("reading {}: {e}", cuda_h.display()))?;
    let cuda_version = cuda_version(&text)
        .ok_or_else(|| format!("{} defines no CUDA_VERSION", cuda_h.display()))?;
    Ok(HeaderSet {
        major: cuda_version / 1000,
        cuda_version,
        include_dir,
        sources,
        docs_root: docs_root(docs_release, cuda_version)?,
    })
}

/// The value of `#define CUDA_VERSION <n>` in `cuda.h`.
pub fn cuda_version(cuda_h: &str) -> Option<u32> {
    cuda_h.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        match (words.next(), words.next(), words.next()) {
            (Some("#define"), Some("CUDA_VERSION"), Some(value)) => value.parse().ok(),
            _ => None,
        }
    })
}

/// The wheel's path in `dir`, downloading it with pip when it is not there or fails its hash.
fn fetch_wheel(wheel: &Wheel, dir: &Path) -> Result<PathBuf, String> {
    let path = dir.join(wheel.file_name);
    if path.is_file() && sha256_of(&path)? == wheel.sha256 {
        return Ok(path);
    }
    eprintln!("xtask: downloading {}=={}", wheel.name, wheel.version);
    let status = Command::new("python3")
        .args([
            "-m",
            "pip",
            "download",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .args(["--no-deps", "--only-binary=:all:"])
        .args([
            "--platform",
            "manylinux_2_17_x86_64",
            "--platform",
            "manylinux2014_x86_64",
        ])
        .args([
            "--platform",
            "manylinux_2_12_x86_64",
            "--platform",
            "manylinux2010_x86_64",
        ])
        .arg("--dest")
        .arg(dir)
        .arg(format!("{}=={}", wheel.name, wheel.version))
        .status()
        .map_err(|e| format!("running `python3 -m pip` (needed to fetch header wheels): {e}"))?;
    if !status.success() {
        return Err(format!(
            "pip could not download {}=={}",
            wheel.name, wheel.version
        ));
    }
    let actual = sha256_of(&path)?;
    if actual != wheel.sha256 {
        return Err(format!(
            "{} has SHA-256 {actual}, expected {}",
            path.display(),
            wheel.sha256
        ));
    }
    Ok(path)
}

/// The lowercase hex SHA-256 of a file.
fn sha256_of(path: &Path) -> Result<String, String> {
    let bytes = fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    Ok(Sha256::digest(&bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect())
}

/// Copies the named headers out of a wheel's `.../include/` folder into `include_dir`.
fn extract_headers(wheel: &Path, headers: &[&str], include_dir: &Path) -> Result<(), String> {
    let file = fs::File::open(wheel).map_err(|e| format!("opening {}: {e}", wheel.display()))?;
    let mut archive =
        zip::ZipArchive::new(file).map_err(|e| format!("reading {}: {e}", wheel.display()))?;
    for header in headers {
        let suffix = format!("/include/{header}");
        let entry_name = archive
            .file_names()
            .filter_map(Result::ok)
            .find(|name| name.ends_with(&suffix))
            .map(|name| name.into_owned())
            .ok_or_else(|| format!("{} holds no {header}", wheel.display()))?;
        let mut contents = Vec::new();
        archive
            .by_name(&entry_name)
            .and_then(|mut entry| entry.read_to_end(&mut contents).map_err(Into::into))
            .map_err(|e| format!("unpacking {entry_name} from {}: {e}", wheel.display()))?;
        let target = include_dir.join(header);
        fs::write(&target, contents).map_err(|e| format!("writing {}: {e}", target.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{CURRENT_DOCS, DOCS_RELEASE_12, cuda_version, docs_root, toolkit_release};

    #[test]
    fn documentation_roots_follow_the_release() {
        assert_eq!(
            docs_root(Some(DOCS_RELEASE_12), 12090).unwrap(),
            "https://docs.nvidia.com/cuda/archive/12.9.1/"
        );
        assert_eq!(docs_root(None, 13050).unwrap(), CURRENT_DOCS);
        assert!(docs_root(Some("12.8.1"), 12090).is_err());
        assert!(docs_root(Some("12.90.1"), 12090).is_err());
        let json = r#"{"cuda": {"name": "CUDA SDK", "version": "13.0.2"}, "cuda_cudart": {}}"#;
        assert_eq!(toolkit_release(json).as_deref(), Some("13.0.2"));
        assert_eq!(toolkit_release("{}"), None);
    }

    #[test]
    fn reads_cuda_version() {
        let header = "#ifndef __cuda_cuda_h__\n#define CUDA_VERSION 13050\n#endif\n";
        assert_eq!(cuda_version(header), Some(13050));
        assert_eq!(cuda_version("#define CUDA_VERSION_X 1\n"), None);
    }
}
