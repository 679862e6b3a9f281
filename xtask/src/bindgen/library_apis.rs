//! The recipes of the libraries versioned on their own (see [`super::libraries`]): which header
//! of which pinned wheels, the allowlists, how each entry point is dated and where NVIDIA
//! documents it.

use super::api::{Api, Location, Reference};
use super::sections::Titles;
use crate::library_headers::{CUBLAS, CUDNN, CUFFT, CURAND, CUSOLVER, CUSPARSE, LibraryWheels};

/// How a library's reference is published.
pub(super) enum LibraryReference {
    /// One page of hand-written sections (`cublas/index.html`), under the CUDA documentation
    /// the header set is documented in, and how its sections are titled.
    Sections(&'static str, Titles),
    /// doxygen-built pages.
    Doxygen(Reference),
    /// Hand-written pages outside the CUDA documentation, one per header, each function a
    /// section titled `name()` (cuDNN's).
    Pages(&'static Pages),
}

/// A reference of one page per header (cuDNN's: `api/cudnn-ops-library.html`).
pub(super) struct Pages {
    /// The address the pages are under, ending in `/`.
    pub(super) base: &'static str,
    /// The page of each header (`cudnn_ops.h`, `cudnn-ops-library.html`).
    pub(super) pages: &'static [(&'static str, &'static str)],
    /// The page a function of another header links to.
    pub(super) overview: &'static str,
    /// The macro standing between a declaration's return type and its name (`CUDNNWINAPI`),
    /// which tells a declaration from a mention.
    pub(super) declaration: &'static str,
}

/// One library header's recipe.
pub(super) struct LibraryApi {
    /// The header recipe the shared generator reads (crate, header, struct, allowlists).
    pub(super) api: Api,
    /// The headers declaring the functions (`cublas_api.h` for `cublas_v2.h`, which includes
    /// it and maps the API names to the `_v2` exports); a release of the history without one of
    /// them (an older cuDNN) is read without it.
    pub(super) declared_in: &'static [&'static str],
    /// The library's pinned wheels.
    pub(super) wheels: LibraryWheels,
    /// Other libraries whose headers of the same CUDA major the header includes (cuSOLVER's
    /// `cusolverDn.h` includes cuBLAS's `cublas_v2.h`).
    pub(super) includes: &'static [LibraryWheels],
    /// The header and macros giving the library's version (`cublas_api.h`,
    /// `CUBLAS_VER_MAJOR`, `CUBLAS_VER_MINOR`).
    pub(super) version: (&'static str, &'static str, &'static str),
    /// Where NVIDIA documents its functions.
    pub(super) reference: LibraryReference,
}

/// cuDNN's reference: the backend API's pages of the newest cuDNN (both ABIs pin cuDNN 9.28).
const CUDNN_PAGES: Pages = Pages {
    base: "https://docs.nvidia.com/deeplearning/cudnn/backend/latest/api/",
    pages: &[
        ("cudnn_graph.h", "cudnn-graph-library.html"),
        ("cudnn_ops.h", "cudnn-ops-library.html"),
        ("cudnn_cnn.h", "cudnn-cnn-library.html"),
        ("cudnn_adv.h", "cudnn-adv-library.html"),
    ],
    overview: "overview.html",
    declaration: "CUDNNWINAPI",
};

/// The recipes, one per header; each header of each CUDA major becomes `src/v<major>.rs` of
/// its crate.
pub(super) const LIBRARY_APIS: [LibraryApi; 7] = [
    LibraryApi {
        api: Api {
            crate_dir: "cublas-sys",
            header: "cublas_v2.h",
            struct_name: "Cublas",
            library: "cuBLAS (`libcublas`)",
            prefix: "cublas",
            functions: "cublas[A-Z].*",
            types: "(cublas|cuda)[A-Za-z0-9_]*",
            vars: "CUBLAS_[A-Za-z0-9_]*",
            reference: None,
        },
        declared_in: &["cublas_api.h"],
        wheels: CUBLAS,
        includes: &[],
        version: ("cublas_api.h", "CUBLAS_VER_MAJOR", "CUBLAS_VER_MINOR"),
        reference: LibraryReference::Sections("cublas/index.html", Titles::Cublas),
    },
    LibraryApi {
        api: Api {
            crate_dir: "cublaslt-sys",
            header: "cublasLt.h",
            struct_name: "CublasLt",
            library: "cuBLASLt (`libcublasLt`)",
            prefix: "cublasLt",
            functions: "cublasLt[A-Z].*",
            // The cuBLAS types its attributes hold (`cublasOperation_t` for the transposes),
            // which no function of the header names.
            types: "cublasLt[A-Za-z0-9_]*|cublas(Status|ComputeType|Operation|PointerMode|FillMode)_t|cuda[A-Za-z0-9_]*",
            vars: "CUBLASLT_[A-Za-z0-9_]*",
            reference: None,
        },
        declared_in: &["cublasLt.h"],
        wheels: CUBLAS,
        includes: &[],
        version: ("cublas_api.h", "CUBLAS_VER_MAJOR", "CUBLAS_VER_MINOR"),
        reference: LibraryReference::Sections("cublas/index.html", Titles::Cublas),
    },
    LibraryApi {
        api: Api {
            crate_dir: "curand-sys",
            header: "curand.h",
            struct_name: "Curand",
            library: "cuRAND (`libcurand`)",
            prefix: "curand",
            functions: "curand[A-Z].*",
            types: "curand[A-Za-z0-9_]*",
            vars: "CURAND_[A-Za-z0-9_]*",
            reference: None,
        },
        declared_in: &["curand.h"],
        wheels: CURAND,
        includes: &[],
        version: ("curand.h", "CURAND_VER_MAJOR", "CURAND_VER_MINOR"),
        // docs.nvidia.com/cuda/curand/group__HOST.html#group__HOST_1g<hash>; the build keeps
        // `CURANDAPI` in the types.
        reference: LibraryReference::Doxygen(Reference {
            location: Location::Toolkit("curand/"),
            one_page: None,
            member_prefix: "g",
            ignored_macros: &[],
        }),
    },
    LibraryApi {
        api: Api {
            crate_dir: "cudnn-sys",
            header: "cudnn.h",
            struct_name: "Cudnn",
            library: "cuDNN (`libcudnn`)",
            prefix: "cudnn",
            functions: "cudnn[A-Z].*",
            types: "(cudnn|cuda)[A-Za-z0-9_]*",
            vars: "CUDNN_[A-Za-z0-9_]*",
            reference: None,
        },
        declared_in: &[
            "cudnn_graph.h",
            "cudnn_ops.h",
            "cudnn_cnn.h",
            "cudnn_adv.h",
            "cudnn_subquadratic_ops.h",
            "cudnn_gnn_ops.h",
        ],
        wheels: CUDNN,
        includes: &[],
        version: ("cudnn_version.h", "CUDNN_MAJOR", "CUDNN_MINOR"),
        reference: LibraryReference::Pages(&CUDNN_PAGES),
    },
    LibraryApi {
        api: Api {
            crate_dir: "cufft-sys",
            // `cufftXt.h` includes `cufft.h` (the plans and transforms) and `cudalibxt.h` (the
            // multi-GPU descriptors its functions take).
            header: "cufftXt.h",
            struct_name: "Cufft",
            library: "cuFFT (`libcufft`)",
            prefix: "cufft",
            functions: "cufft[A-Z].*",
            types: "(cufft|cuda)[A-Za-z0-9_]*|libFormat(_t)?",
            vars: "(CUFFT|MAX_CUFFT|MAX_SHIM|MAX_CUDA_DESCRIPTOR|CUDA_XT)[A-Za-z0-9_]*",
            reference: None,
        },
        declared_in: &["cufft.h", "cufftXt.h"],
        wheels: CUFFT,
        includes: &[],
        version: ("cufft.h", "CUFFT_VER_MAJOR", "CUFFT_VER_MINOR"),
        // docs.nvidia.com/cuda/cufft/index.html#c.cufftPlanMany: the ids of Sphinx's C domain.
        reference: LibraryReference::Sections("cufft/index.html", Titles::CDomain),
    },
    LibraryApi {
        api: Api {
            crate_dir: "cusparse-sys",
            header: "cusparse.h",
            struct_name: "Cusparse",
            library: "cuSPARSE (`libcusparse`)",
            prefix: "cusparse",
            functions: "cusparse[A-Z].*",
            types: "(cusparse|cuda)[A-Za-z0-9_]*",
            vars: "CUSPARSE_[A-Za-z0-9_]*",
            reference: None,
        },
        declared_in: &["cusparse.h"],
        wheels: CUSPARSE,
        includes: &[],
        version: ("cusparse.h", "CUSPARSE_VER_MAJOR", "CUSPARSE_VER_MINOR"),
        // docs.nvidia.com/cuda/cusparse/index.html#cusparsespmv, #cusparse-t-bsrsv2-buffersize.
        reference: LibraryReference::Sections(
            "cusparse/index.html",
            Titles::Typed {
                prefix: "cusparse",
                merged_suffixes: &[],
                complex_stems: &[],
            },
        ),
    },
    LibraryApi {
        api: Api {
            crate_dir: "cusolver-sys",
            header: "cusolverDn.h",
            struct_name: "Cusolver",
            library: "cuSOLVER (`libcusolver`)",
            prefix: "cusolver",
            // The dense API and the library's own (`cusolverGetVersion`).
            functions: "cusolver(Dn)?[A-Z].*",
            // The cuBLAS enums its dense functions take (`cublasFillMode_t`).
            types: "cusolver[A-Za-z0-9_]*|cublas(FillMode|Operation|SideMode|DiagType)_t|cuda[A-Za-z0-9_]*",
            vars: "CUSOLVER_[A-Za-z0-9_]*",
            reference: None,
        },
        declared_in: &["cusolverDn.h", "cusolver_common.h"],
        wheels: CUSOLVER,
        includes: &[CUBLAS],
        version: (
            "cusolver_common.h",
            "CUSOLVER_VER_MAJOR",
            "CUSOLVER_VER_MINOR",
        ),
        // docs.nvidia.com/cuda/cusolver/index.html#cusolverdn-t-getrf: one section for a
        // routine of every type and its `_bufferSize`, the complex `he`/`un` routines in their
        // real `sy`/`or` twin's (`cusolverDnZhegvd` under `#cusolverdn-t-sygvd`).
        reference: LibraryReference::Sections(
            "cusolver/index.html",
            Titles::Typed {
                prefix: "cusolverDn",
                merged_suffixes: &["_bufferSize"],
                complex_stems: &[("he", "sy"), ("un", "or")],
            },
        ),
    },
];
