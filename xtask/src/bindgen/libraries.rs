//! The CUDA libraries versioned on their own: cuBLAS (`cublas_v2.h`), cuBLASLt (`cublasLt.h`),
//! cuRAND (`curand.h`), cuDNN (`cudnn.h`), cuFFT (`cufftXt.h` and the `cufft.h` it includes),
//! cuSPARSE (`cusparse.h`) and cuSOLVER (`cusolverDn.h`), one set of bindings per CUDA major,
//! from their pinned PyPI wheels (see [`crate::library_headers`]; the recipes are in
//! [`super::library_apis`]).
//!
//! Their headers include a few CUDA runtime headers, of which they take `cudaStream_t`,
//! `cudaGraph_t`, the complex types, `__half` and `__nv_bfloat16` (stubbed here with the same
//! layout, as `nccl.h`'s runtime headers are) and `library_types.h` (`cudaDataType`, taken from
//! the CUDA headers of the same major); cuSOLVER's include cuBLAS's, of the same major. Each
//! entry point is dated by the first header of its library's history declaring it (`Needs
//! cuBLAS 12.5.`); each method links to NVIDIA's reference: the pages of sections of cuBLAS,
//! cuBLASLt, cuFFT, cuSPARSE and cuSOLVER (see [`super::sections`]), cuRAND's doxygen pages,
//! cuDNN's page of each header.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use proc_macro2::Literal;
use quote::quote;
use regex::Regex;

use super::entry_points::{Dating, api_docs, entry_point_struct, entry_point_table};
use super::format::format_file;
use super::generate::{BINDGEN_VERSION, bindgen_items_with, read};
use super::library_apis::{LibraryApi, LibraryReference, Pages};
use super::links::{Links, api_doc_macro};
use super::scan::function_macros;
use crate::headers::HeaderSet;
use crate::library_headers::{self, PinnedWheel};

/// The CUDA runtime headers the libraries' headers include, as stubs of the same layout (each
/// guarded: cuSOLVER's headers include cuBLAS's, and both include `cuComplex.h`); the real
/// `library_types.h` comes from the CUDA headers of the same major.
const STUB_HEADERS: [(&str, &str); 6] = [
    (
        "cuda_runtime.h",
        "#ifndef STUB_CUDA_RUNTIME_H\n#define STUB_CUDA_RUNTIME_H\n#include <stddef.h>\n\
         #include \"driver_types.h\"\n#include \"library_types.h\"\n#endif\n",
    ),
    (
        "driver_types.h",
        "#ifndef STUB_DRIVER_TYPES_H\n#define STUB_DRIVER_TYPES_H\n#include <stddef.h>\n\
         typedef struct CUstream_st *cudaStream_t;\n#endif\n",
    ),
    (
        "cuda_runtime_api.h",
        "#ifndef STUB_CUDA_RUNTIME_API_H\n#define STUB_CUDA_RUNTIME_API_H\n#include <stddef.h>\n\
         #include \"driver_types.h\"\ntypedef struct CUgraph_st *cudaGraph_t;\n#endif\n",
    ),
    (
        "cuComplex.h",
        "#ifndef STUB_CUCOMPLEX_H\n#define STUB_CUCOMPLEX_H\n\
         typedef struct __attribute__((aligned(8))) float2 { float x; float y; } float2;\n\
         typedef struct __attribute__((aligned(16))) double2 { double x; double y; } double2;\n\
         typedef float2 cuFloatComplex;\ntypedef double2 cuDoubleComplex;\n\
         typedef cuFloatComplex cuComplex;\n#endif\n",
    ),
    (
        "cuda_fp16.h",
        "#ifndef STUB_CUDA_FP16_H\n#define STUB_CUDA_FP16_H\n\
         typedef struct __attribute__((aligned(2))) __half { unsigned short __x; } __half;\n\
         #endif\n",
    ),
    (
        "cuda_bf16.h",
        "#ifndef STUB_CUDA_BF16_H\n#define STUB_CUDA_BF16_H\n\
         typedef struct __attribute__((aligned(2))) __nv_bfloat16 { unsigned short __x; } \
         __nv_bfloat16;\n#endif\n",
    ),
];

/// The stub include folder of the libraries' generation, written fresh.
fn stub_include(workspace: &Path) -> Result<PathBuf, String> {
    let stubs = workspace
        .join("target")
        .join("cuda-headers")
        .join("libraries")
        .join("stub-include");
    fs::create_dir_all(&stubs).map_err(|e| format!("creating {}: {e}", stubs.display()))?;
    for (name, text) in STUB_HEADERS {
        let path = stubs.join(name);
        fs::write(&path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    Ok(stubs)
}

/// The (major, minor) version `header` gives with its `#define`s `major` and `minor`.
fn version_of(header: &str, major: &str, minor: &str) -> Option<(u32, u32)> {
    let define = |name: &str| -> Option<u32> {
        header.lines().find_map(|line| {
            let mut words = line.split_whitespace();
            match (words.next(), words.next(), words.next()) {
                (Some("#define"), Some(found), Some(value)) if found == name => value.parse().ok(),
                _ => None,
            }
        })
    };
    Some((define(major)?, define(minor)?))
}

/// Every `<prefix>Xxx(` a header declares or mentions as a call.
fn declared_functions(header: &str, prefix: &str) -> Result<BTreeSet<String>, String> {
    let regex =
        Regex::new(&format!(r"\b({prefix}[A-Z][A-Za-z0-9_]*)\s*\(")).map_err(|e| e.to_string())?;
    Ok(regex
        .captures_iter(header)
        .map(|captures| captures[1].to_owned())
        .collect())
}

/// The release that introduced each function: the first of `history` (oldest first)
/// declaring it, or the pinned header's release when none does; those the oldest header has
/// stay undated.
fn introduced(
    names: &[String],
    history: &[((u32, u32), BTreeSet<String>)],
    pinned: (u32, u32),
) -> BTreeMap<String, (u32, u32)> {
    names
        .iter()
        .filter_map(|name| {
            match history
                .iter()
                .position(|(_, declared)| declared.contains(name))
            {
                Some(0) => None,
                Some(index) => Some((name.clone(), history[index].0)),
                None => Some((name.clone(), pinned)),
            }
        })
        .collect()
}

/// The functions the headers `names` of the wheel in `dir` declare or mention, each header the
/// wheel has (an older release lacks the newer headers).
fn declared_in(
    dir: &Path,
    wheel: &PinnedWheel,
    names: &[&str],
    prefix: &str,
) -> Result<BTreeSet<String>, String> {
    let mut declared = BTreeSet::new();
    for name in names.iter().filter(|name| wheel.has(name)) {
        declared.extend(declared_functions(&read(&dir.join(name))?, prefix)?);
    }
    Ok(declared)
}

/// The header of `headers` (name, text) declaring each function: where the `declaration` macro
/// stands before its name (`CUDNNWINAPI cudnnCreate(`).
fn declaring_headers<'a>(
    headers: &[(&'a str, String)],
    declaration: &str,
    prefix: &str,
) -> Result<BTreeMap<String, &'a str>, String> {
    let regex = Regex::new(&format!(r"\b{declaration}\s+({prefix}[A-Za-z0-9_]*)\s*\("))
        .map_err(|e| e.to_string())?;
    let mut found = BTreeMap::new();
    for (name, text) in headers {
        for captures in regex.captures_iter(text) {
            found.entry(captures[1].to_owned()).or_insert(*name);
        }
    }
    Ok(found)
}

/// The links of a reference of one page per header ([`Pages`]): each function's section,
/// `<page>#<name in lower case>`, on the page of the header declaring it; a function of a header
/// without a page (or none found) links to the overview.
fn page_links(
    pages: &Pages,
    headers: &[(&str, String)],
    prefix: &str,
    symbols: &[String],
) -> Result<Links, String> {
    let declared = declaring_headers(headers, pages.declaration, prefix)?;
    let overview = format!("{}{}", pages.base, pages.overview);
    Ok(symbols
        .iter()
        .map(|symbol| {
            let page = declared.get(symbol).and_then(|header| {
                pages
                    .pages
                    .iter()
                    .find(|(name, _)| name == header)
                    .map(|(_, page)| page)
            });
            let link = match page {
                Some(page) => Ok(format!(
                    "{}{page}#{}",
                    pages.base,
                    symbol.to_ascii_lowercase().replace('_', "-")
                )),
                None => Err(overview.clone()),
            };
            (symbol.clone(), (symbol.clone(), link))
        })
        .collect())
}

/// Generates `<crate>/src/v<major>.rs` of one library header for the CUDA major of `set`.
pub(super) fn generate_library(
    library: &LibraryApi,
    set: &HeaderSet,
    workspace: &Path,
) -> Result<String, String> {
    let api = &library.api;
    let pinned = library.wheels.bindings_of(set.major)?;
    let dir = library_headers::fetch(workspace, pinned)?;
    let stubs = stub_include(workspace)?;
    let mut include_dirs = vec![stubs, dir.clone()];
    for other in library.includes {
        include_dirs.push(library_headers::fetch(
            workspace,
            other.bindings_of(set.major)?,
        )?);
    }
    include_dirs.push(set.include_dir.clone());
    let include_dirs: Vec<&Path> = include_dirs.iter().map(PathBuf::as_path).collect();
    let header_path = dir.join(api.header);
    let (items, functions) = bindgen_items_with(
        api,
        &header_path,
        &include_dirs,
        // cuBLASLt's, cuSPARSE's and cuSOLVER's loggers take a `FILE *`: kept opaque, not the
        // C library's layout.
        |builder| builder.opaque_type("_IO_FILE").opaque_type("FILE"),
    )?;
    let header_text = read(&header_path)?.replace("\\\n", " ");
    let names: Vec<String> = functions.iter().map(|sig| sig.ident.to_string()).collect();
    let name_set: BTreeSet<String> = names.iter().cloned().collect();
    let aliases = function_macros(&header_text, api.prefix, &name_set);

    let (version_header, major_macro, minor_macro) = library.version;
    let version_text = |dir: &Path| read(&dir.join(version_header));
    let pinned_version = version_of(&version_text(&dir)?, major_macro, minor_macro)
        .ok_or_else(|| format!("{version_header} of {} has no version", pinned.source()))?;
    let mut history = Vec::new();
    for wheel in library.wheels.history_of(set.major) {
        let old = library_headers::fetch(workspace, wheel)?;
        let version = version_of(&version_text(&old)?, major_macro, minor_macro)
            .ok_or_else(|| format!("{version_header} of {} has no version", wheel.source()))?;
        let declared = declared_in(&old, wheel, library.declared_in, api.prefix)?;
        history.push((version, declared));
    }
    let since = introduced(&names, &history, pinned_version);
    let oldest = history
        .first()
        .map_or(pinned_version, |(version, _)| *version);

    let mut declaring = Vec::new();
    for name in library.declared_in.iter().filter(|name| pinned.has(name)) {
        declaring.push((*name, read(&dir.join(name))?));
    }
    let (links, index) = match &library.reference {
        LibraryReference::Sections(page, titles) => {
            let page = format!("{}{page}", set.docs_root);
            (titles.links(&page, &names, &aliases), page)
        }
        LibraryReference::Doxygen(reference) => {
            let doxygen = reference.of(set);
            let declared_text: String = declaring.iter().map(|(_, text)| text.as_str()).collect();
            (
                doxygen.links(&declared_text, &names, &aliases)?,
                doxygen.index(),
            )
        }
        LibraryReference::Pages(pages) => (
            page_links(pages, &declaring, api.prefix, &names)?,
            format!("{}{}", pages.base, pages.overview),
        ),
    };
    let name = library.wheels.name;
    let dating = Dating::Library(name, &since);
    let docs = api_docs(&functions, &links, &dating)?;
    let entry_points = entry_point_table(&functions, &dating)?;
    let struct_tokens = entry_point_struct(api, &functions, &aliases, &docs)?;
    let header_name = format!(
        "`{}` ({name} {}.{})",
        api.header, pinned_version.0, pinned_version.1
    );
    let needs = format!(
        "for an entry point newer than {name} {}.{}, the {name} it needs",
        oldest.0, oldest.1
    );
    let api_doc = api_doc_macro(&docs, &aliases, &header_name, Some(&needs));
    let preamble = [
        format!(
            " Raw bindings to `{}` of {name} {}.{} (PyPI wheel {}), for the CUDA {} ABI.",
            api.header,
            pinned_version.0,
            pinned_version.1,
            pinned.source(),
            set.major
        ),
        String::new(),
        format!(" Generated by `cargo xtask bindgen` with bindgen {BINDGEN_VERSION}; do not edit."),
        " Types and constants come from bindgen; each function of the header is a method of"
            .to_owned(),
        format!(
            " [`{}`] that resolves its symbol on first use, dated by the first {name} header on",
            api.struct_name
        ),
        format!(
            " PyPI declaring it ({}.{} to {}.{}; those in the oldest are undated), and links to its",
            oldest.0, oldest.1, pinned_version.0, pinned_version.1
        ),
        format!(" entry in NVIDIA's reference (<{index}>)."),
    ];
    let cuda_version = Literal::u32_unsuffixed(set.cuda_version);
    let oldest_major = Literal::u32_unsuffixed(oldest.0);
    let oldest_minor = Literal::u32_unsuffixed(oldest.1);
    let oldest_doc = format!(
        " The oldest {name} (major, minor) the entry points were dated against: an undated entry \
         point is in every {name} from this one on."
    );
    let alias_rows = aliases
        .iter()
        .map(|(api_name, symbol)| quote!((#api_name, #symbol)));
    let tokens = quote! {
        #(#![doc = #preamble])*
        #(#items)*

        /// `CUDA_VERSION` of the CUDA headers of the ABI these bindings were generated for (the
        /// library's own version is in its version constants).
        pub const HEADER_CUDA_VERSION: u32 = #cuda_version;

        #[doc = #oldest_doc]
        pub const OLDEST_DATED_VERSION: (u32, u32) = (#oldest_major, #oldest_minor);

        /// Function macros of the header: (name used in C, exported symbol it expands to).
        pub const VERSIONED_NAMES: &[(&str, &str)] = &[#(#alias_rows),*];

        #entry_points
        #struct_tokens
        #api_doc
    };
    let file = syn::parse2::<syn::File>(tokens)
        .map_err(|e| format!("generated code for {} does not parse: {e}", api.header))?;
    format_file(&file, api.header)
}

#[cfg(test)]
mod tests {
    use super::super::doxygen::documented_functions;
    use super::super::library_apis::{LIBRARY_APIS, LibraryReference};
    use super::*;

    /// Declarations of the pinned `curand.h`, with the anchors NVIDIA's page gives them.
    #[test]
    fn curand_anchors_match_the_published_ones() {
        let header = "/**\n * \\defgroup HOST Host API\n * @{\n */\n\
                      /** Creates. */\n\
                      curandStatus_t CURANDAPI\n\
                      curandCreateGenerator(curandGenerator_t *generator, curandRngType_t rng_type);\n\
                      /** Creates on the host. */\n\
                      curandStatus_t CURANDAPI\n\
                      curandCreateGeneratorHost(curandGenerator_t *generator, curandRngType_t rng_type);\n\
                      /** @} */\n";
        let names: BTreeSet<String> = ["curandCreateGenerator", "curandCreateGeneratorHost"]
            .iter()
            .map(|name| name.to_string())
            .collect();
        let LibraryReference::Doxygen(reference) = &LIBRARY_APIS[2].reference else {
            panic!("cuRAND's reference is doxygen's");
        };
        let found = documented_functions(header, &names, reference.ignored_macros).unwrap();
        assert_eq!(
            found["curandCreateGenerator"].group.as_deref(),
            Some("HOST")
        );
        assert_eq!(
            found["curandCreateGenerator"].hash,
            "56ff2b3cf7e28849f73a1e22022bcbfd"
        );
        assert_eq!(
            found["curandCreateGeneratorHost"].hash,
            "35b6e9396d5b54b52ba9053496ad4ff4"
        );
    }

    #[test]
    fn versions_and_declarations_come_from_the_header_text() {
        let header = "#define CUBLAS_VER_MAJOR 12\n#define CUBLAS_VER_MINOR 9\n\
                      cublasStatus_t CUBLASWINAPI cublasCreate_v2(cublasHandle_t* handle);\n\
                      /* see cublasLtMatmul() */\n";
        assert_eq!(
            version_of(header, "CUBLAS_VER_MAJOR", "CUBLAS_VER_MINOR"),
            Some((12, 9))
        );
        assert_eq!(version_of("nothing", "A", "B"), None);
        let declared = declared_functions(header, "cublas").unwrap();
        assert!(declared.contains("cublasCreate_v2"));
        assert!(declared.contains("cublasLtMatmul"));
        let names: Vec<String> = ["cublasCreate_v2", "cublasGemmGroupedBatchedEx", "cublasNew"]
            .iter()
            .map(|name| name.to_string())
            .collect();
        let newer = format!("{header}cublasStatus_t cublasGemmGroupedBatchedEx(int);\n");
        let history = vec![
            ((12, 0), declared),
            ((12, 5), declared_functions(&newer, "cublas").unwrap()),
        ];
        let since = introduced(&names, &history, (12, 9));
        assert_eq!(since.get("cublasCreate_v2"), None);
        assert_eq!(since["cublasGemmGroupedBatchedEx"], (12, 5));
        assert_eq!(since["cublasNew"], (12, 9));
    }

    #[test]
    fn cudnn_functions_link_to_the_page_of_their_header() {
        let graph = "/** see cudnnSetStream() */\ncudnnStatus_t CUDNNWINAPI\n\
                     cudnnCreate(cudnnHandle_t *handle);\n\
                     const char *CUDNNWINAPI\ncudnnGetErrorString(cudnnStatus_t status);\n";
        let ops = "cudnnStatus_t CUDNNWINAPI cudnnSetTensorNdDescriptor(int n);\n\
                   CUDNN_DEPRECATED cudnnStatus_t CUDNNWINAPI\n\
                   cudnnGetConvolutionForwardAlgorithm_v7(int n);\n";
        let gnn = "cudnnStatus_t CUDNNWINAPI cudnnGnnThing(int n);\n";
        let headers = [
            ("cudnn_graph.h", graph.to_owned()),
            ("cudnn_ops.h", ops.to_owned()),
            ("cudnn_gnn_ops.h", gnn.to_owned()),
        ];
        let symbols: Vec<String> = [
            "cudnnCreate",
            "cudnnGetErrorString",
            "cudnnSetTensorNdDescriptor",
            "cudnnGetConvolutionForwardAlgorithm_v7",
            "cudnnGnnThing",
            "cudnnSetStream",
        ]
        .iter()
        .map(|name| name.to_string())
        .collect();
        let LibraryReference::Pages(pages) = &LIBRARY_APIS[3].reference else {
            panic!("cuDNN's reference is a page per header");
        };
        let links = page_links(pages, &headers, "cudnn", &symbols).unwrap();
        let base = "https://docs.nvidia.com/deeplearning/cudnn/backend/latest/api/";
        let link = |name: &str| links[name].1.clone();
        assert_eq!(
            link("cudnnCreate"),
            Ok(format!("{base}cudnn-graph-library.html#cudnncreate"))
        );
        assert_eq!(
            link("cudnnGetErrorString"),
            Ok(format!(
                "{base}cudnn-graph-library.html#cudnngeterrorstring"
            ))
        );
        assert_eq!(
            link("cudnnSetTensorNdDescriptor"),
            Ok(format!(
                "{base}cudnn-ops-library.html#cudnnsettensornddescriptor"
            ))
        );
        assert_eq!(
            link("cudnnGetConvolutionForwardAlgorithm_v7"),
            Ok(format!(
                "{base}cudnn-ops-library.html#cudnngetconvolutionforwardalgorithm-v7"
            ))
        );
        // A header without a page, and a function only mentioned: the overview.
        assert_eq!(link("cudnnGnnThing"), Err(format!("{base}overview.html")));
        assert_eq!(link("cudnnSetStream"), Err(format!("{base}overview.html")));
    }
}
