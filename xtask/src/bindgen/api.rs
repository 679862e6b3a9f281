//! The headers generated and how: one recipe per header.

use super::links::Doxygen;
use crate::headers::{self, HeaderSet};

/// One header's generation recipe.
pub(super) struct Api {
    /// The crate the output belongs to.
    pub(super) crate_dir: &'static str,
    /// The header file name.
    pub(super) header: &'static str,
    /// The struct holding the entry points.
    pub(super) struct_name: &'static str,
    /// What the struct's doc calls the library.
    pub(super) library: &'static str,
    /// Prefix of the header's functions and function macros.
    pub(super) prefix: &'static str,
    /// bindgen's allowlist of functions.
    pub(super) functions: &'static str,
    /// bindgen's allowlist of types.
    pub(super) types: &'static str,
    /// bindgen's allowlist of variables.
    pub(super) vars: &'static str,
    /// Where NVIDIA publishes the header's doxygen-built reference (`None`: NCCL, whose
    /// reference is written by hand; see `nccl.rs`).
    pub(super) reference: Option<Reference>,
}

/// A doxygen-built reference of a header, as NVIDIA publishes it.
pub(super) struct Reference {
    /// Where its pages are.
    pub(super) location: Location,
    /// `None` for one page per group; `Some(page)` when the groups are sections of one page.
    pub(super) one_page: Option<&'static str>,
    /// What stands between `_1` and the hash in an entry's anchor (see [`Doxygen`]).
    pub(super) member_prefix: &'static str,
    /// The macros its doxygen build defines away.
    pub(super) ignored_macros: &'static [&'static str],
}

/// Where a reference's pages are.
pub(super) enum Location {
    /// A folder of the CUDA documentation the header set is documented in (`nvrtc/`).
    Toolkit(&'static str),
    /// A fixed address, ending in `/` (NVML's reference follows the driver, not the toolkit).
    Fixed(&'static str),
}

impl Reference {
    /// The reference of the headers of `set`.
    pub(super) fn of(&self, set: &HeaderSet) -> Doxygen {
        let base = match self.location {
            Location::Toolkit(folder) => format!("{}{folder}", set.docs_root),
            Location::Fixed(address) => address.to_owned(),
        };
        Doxygen {
            base,
            one_page: self.one_page,
            member_prefix: self.member_prefix,
            ignored_macros: self.ignored_macros,
        }
    }
}

/// The recipes, one per header; each header of each CUDA major becomes `src/v<major>.rs` of
/// its crate.
pub(super) const APIS: [Api; 5] = [
    Api {
        crate_dir: "cuda-sys",
        header: headers::CUDA_H,
        struct_name: "Driver",
        library: "the CUDA driver API (`libcuda`)",
        prefix: "cu",
        functions: "cu[A-Z].*",
        types: "(CU|cu)[A-Za-z0-9_]*",
        vars: "(CU|CUDA|cu)[A-Za-z0-9_]*",
        // docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html#group__CUDA__MEM_1g<hash>
        reference: Some(Reference {
            location: Location::Toolkit("cuda-driver-api/"),
            one_page: None,
            member_prefix: "g",
            ignored_macros: &["CUDAAPI"],
        }),
    },
    Api {
        crate_dir: "nvrtc-sys",
        header: headers::NVRTC_H,
        struct_name: "Nvrtc",
        library: "NVRTC (`libnvrtc`)",
        prefix: "nvrtc",
        functions: "nvrtc[A-Z].*",
        types: "nvrtc[A-Za-z0-9_]*",
        vars: "NVRTC_[A-Za-z0-9_]*",
        // docs.nvidia.com/cuda/nvrtc/index.html#group__compilation_1ga<hash>: the Sphinx page
        // built from doxygen's XML, as nvJitLink's.
        reference: Some(Reference {
            location: Location::Toolkit("nvrtc/"),
            one_page: Some("index.html"),
            member_prefix: "ga",
            ignored_macros: &[],
        }),
    },
    Api {
        crate_dir: "nvml-sys",
        header: headers::NVML_H,
        struct_name: "Nvml",
        library: "NVML (`libnvidia-ml`)",
        prefix: "nvml",
        functions: "nvml[A-Z].*",
        types: "nvml[A-Za-z0-9_]*",
        vars: "(NVML|nvml)[A-Za-z0-9_]*",
        // docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html#group__..._1g<hash>;
        // the build keeps `DECLDIR` in the types.
        reference: Some(Reference {
            location: Location::Fixed("https://docs.nvidia.com/deploy/nvml-api/"),
            one_page: None,
            member_prefix: "g",
            ignored_macros: &[],
        }),
    },
    Api {
        crate_dir: "nvjitlink-sys",
        header: headers::NVJITLINK_H,
        struct_name: "NvJitLink",
        library: "nvJitLink (`libnvJitLink`)",
        prefix: "nvJitLink",
        // The header's versioned exports (`__nvJitLinkCreate_13_5`) are read too: they carry
        // the signatures its inline wrappers forward to.
        functions: "(__)?nvJitLink[A-Z].*",
        types: "nvJitLink[A-Za-z0-9_]*",
        vars: "NVJITLINK_[A-Za-z0-9_]*",
        // docs.nvidia.com/cuda/nvjitlink/index.html#group__linking_1ga<hash>
        reference: Some(Reference {
            location: Location::Toolkit("nvjitlink/"),
            one_page: Some("index.html"),
            member_prefix: "ga",
            ignored_macros: &[],
        }),
    },
    Api {
        crate_dir: "nvfatbin-sys",
        header: headers::NVFATBIN_H,
        struct_name: "NvFatbin",
        library: "nvFatbin (`libnvfatbin`)",
        prefix: "nvFatbin",
        functions: "nvFatbin[A-Z].*",
        types: "nvFatbin[A-Za-z0-9_]*",
        vars: "NVFATBIN_[A-Za-z0-9_]*",
        // docs.nvidia.com/cuda/nvfatbin/index.html#group__creation_1ga<hash>, the Sphinx page
        // built from doxygen's XML, as nvJitLink's.
        reference: Some(Reference {
            location: Location::Toolkit("nvfatbin/"),
            one_page: Some("index.html"),
            member_prefix: "ga",
            ignored_macros: &[],
        }),
    },
];
