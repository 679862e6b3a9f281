//! One header's generated file: bindgen's types and constants, then the entry-point table,
//! its struct, and the header facts bindgen cannot see.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use super::api::Api;
use super::entry_points::{Dating, api_docs, entry_point_struct, entry_point_table};
use super::format::format_file;
use super::links::api_doc_macro;
use super::nvml::nvml_struct_versions;
use super::scan::{function_macros, inline_wrappers, introduced_versions};
use crate::headers::{self, HeaderSet};

/// Generates the complete, formatted file of one header.
pub(super) fn generate(api: &Api, set: &HeaderSet) -> Result<String, String> {
    let header_path = set.header(api.header);
    // Macros continued over several lines are read as one line.
    let header_text = read(&header_path)?.replace("\\\n", " ");
    let (items, mut functions) = bindgen_items(api, &header_path, &[&set.include_dir])?;

    let function_names: BTreeSet<String> =
        functions.iter().map(|sig| sig.ident.to_string()).collect();
    let wrappers = inline_wrappers(&header_text, api.prefix, &function_names);
    let aliases = if wrappers.is_empty() {
        function_macros(&header_text, api.prefix, &function_names)
    } else {
        // nvJitLink: the header's inline `nvJitLinkCreate` forwards to the versioned export
        // `__nvJitLinkCreate_13_5`, which only libraries at least as new as the header have.
        // Every libnvJitLink (12.3 on, both majors) also exports the plain name with the same
        // signature, which the header declares under NVJITLINK_NO_INLINE: the method takes
        // the API name and resolves that export, so a build with newer headers runs on an
        // older library. The versioned names stay listed in VERSIONED_NAMES.
        for sig in &mut functions {
            let symbol = sig.ident.to_string();
            if let Some((name, _)) = wrappers.iter().find(|(_, target)| *target == symbol) {
                sig.ident = syn::Ident::new(name, sig.ident.span());
            }
        }
        wrappers
    };
    let since = if api.header == headers::CUDA_H {
        let typedefs = read(&set.header(headers::CUDA_TYPEDEFS_H))?;
        introduced_versions(&typedefs)
    } else {
        BTreeMap::new()
    };
    let struct_versions = if api.header == headers::NVML_H {
        nvml_struct_versions(&header_text, &items)?
    } else {
        TokenStream::new()
    };

    let reference = api
        .reference
        .as_ref()
        .ok_or_else(|| format!("{} has no reference", api.header))?
        .of(set);
    let symbols: Vec<String> = functions.iter().map(|sig| sig.ident.to_string()).collect();
    let links = reference.links(&header_text, &symbols, &aliases)?;

    let preamble = preamble(api, set, &reference.index());
    let cuda_version = Literal::u32_unsuffixed(set.cuda_version);
    let dating = Dating::Cuda(&since);
    let docs = api_docs(&functions, &links, &dating)?;
    let entry_points = entry_point_table(&functions, &dating)?;
    let alias_rows = aliases
        .iter()
        .map(|(api_name, symbol)| quote!((#api_name, #symbol)));
    let struct_tokens = entry_point_struct(api, &functions, &aliases, &docs)?;
    let header_name = format!(
        "`{}` (CUDA {}.{})",
        api.header,
        set.cuda_version / 1000,
        (set.cuda_version % 1000) / 10
    );
    let needs = (api.header == headers::CUDA_H)
        .then_some("for an entry point newer than CUDA 12.0, the driver it needs");
    let api_doc = api_doc_macro(&docs, &aliases, &header_name, needs);

    let tokens = quote! {
        #(#![doc = #preamble])*
        #(#items)*

        /// `CUDA_VERSION` of the `cuda.h` these bindings were generated with.
        pub const HEADER_CUDA_VERSION: u32 = #cuda_version;

        /// Function macros of the header: (name used in C, exported symbol it expands to).
        pub const VERSIONED_NAMES: &[(&str, &str)] = &[#(#alias_rows),*];

        #struct_versions
        #entry_points
        #struct_tokens
        #api_doc
    };
    let file = syn::parse2::<syn::File>(tokens)
        .map_err(|e| format!("generated code for {} does not parse: {e}", api.header))?;
    format_file(&file, api.header)
}

/// bindgen's output for one header: its items, and the signatures of its functions (which
/// become methods instead of `extern` declarations).
pub(super) fn bindgen_items(
    api: &Api,
    header_path: &Path,
    include_dirs: &[&Path],
) -> Result<(Vec<syn::Item>, Vec<syn::Signature>), String> {
    bindgen_items_with(api, header_path, include_dirs, |builder| builder)
}

/// [`bindgen_items`], with `configure` adding to the builder's settings.
pub(super) fn bindgen_items_with(
    api: &Api,
    header_path: &Path,
    include_dirs: &[&Path],
    configure: impl FnOnce(bindgen::Builder) -> bindgen::Builder,
) -> Result<(Vec<syn::Item>, Vec<syn::Signature>), String> {
    let builder = bindgen::Builder::default()
        .header(header_path.display().to_string())
        .clang_args(
            include_dirs
                .iter()
                .map(|dir| format!("-I{}", dir.display())),
        )
        .allowlist_function(api.functions)
        .allowlist_type(api.types)
        .allowlist_var(api.vars)
        .default_enum_style(bindgen::EnumVariation::NewType {
            is_bitfield: false,
            is_global: false,
        })
        .derive_default(true)
        .generate_comments(false)
        .layout_tests(true)
        .formatter(bindgen::Formatter::None)
        .rust_target(bindgen::RustTarget::stable(85, 0).map_err(|e| e.to_string())?)
        .rust_edition(bindgen::RustEdition::Edition2024);
    let raw = configure(builder)
        .generate()
        .map_err(|e| format!("bindgen failed on {}: {e}", header_path.display()))?
        .to_string();
    let file = syn::parse_file(&raw).map_err(|e| format!("parsing bindgen output: {e}"))?;

    let mut items = Vec::new();
    let mut functions = Vec::new();
    for item in file.items {
        match item {
            syn::Item::ForeignMod(block) => {
                for foreign in block.items {
                    match foreign {
                        syn::ForeignItem::Fn(function) => functions.push(function.sig),
                        other => {
                            return Err(format!(
                                "unexpected foreign item in {}: {}",
                                api.header,
                                quote!(#other)
                            ));
                        }
                    }
                }
            }
            other => items.push(other),
        }
    }
    Ok((items, functions))
}

/// The file's inner doc lines: which header of which CUDA it binds, how it was generated, and
/// the reference its methods link to.
fn preamble(api: &Api, set: &HeaderSet, reference: &str) -> [String; 6] {
    [
        format!(
            " Raw bindings to `{}` of CUDA {}.{} ({}).",
            api.header,
            set.cuda_version / 1000,
            (set.cuda_version % 1000) / 10,
            set.source_of(api.header),
        ),
        String::new(),
        format!(" Generated by `cargo xtask bindgen` with bindgen {BINDGEN_VERSION}; do not edit."),
        " Types and constants come from bindgen; each function of the header is a method of"
            .to_owned(),
        format!(
            " [`{}`] that resolves its symbol on first use, and links to its entry in NVIDIA's",
            api.struct_name
        ),
        format!(" reference (<{reference}>)."),
    ]
}

/// The bindgen version, for the preamble (kept equal to the pinned one by a test).
pub(super) const BINDGEN_VERSION: &str = "0.73.2";

/// Reads a text file.
pub(super) fn read(path: &Path) -> Result<String, String> {
    fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::bindgen::api::APIS;
    use crate::bindgen::format::render;

    #[test]
    fn rendered_header_carries_the_generated_marker() {
        let set = HeaderSet {
            major: 13,
            cuda_version: 13050,
            include_dir: PathBuf::new(),
            sources: vec![(headers::CUDA_H, "a wheel".to_owned())],
            docs_root: "https://docs.nvidia.com/cuda/".to_owned(),
        };
        let preamble = preamble(
            &APIS[0],
            &set,
            "https://docs.nvidia.com/cuda/cuda-driver-api/",
        );
        let file: syn::File = syn::parse_quote! {
            #(#![doc = #preamble])*
            pub const CUDA_VERSION: u32 = 13050;
        };
        let text = render(&file);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("// @generated"), "{}", lines[0]);
        assert_eq!(
            lines[1],
            "//! Raw bindings to `cuda.h` of CUDA 13.5 (a wheel)."
        );
        assert!(lines[3].starts_with("//! Generated by `cargo xtask bindgen`"));
        assert!(text.ends_with("pub const CUDA_VERSION: u32 = 13050;\n"));
    }

    #[test]
    fn preamble_version_matches_the_pinned_bindgen() {
        let manifest = include_str!("../../../Cargo.toml");
        assert!(
            manifest.contains(&format!("bindgen = \"={BINDGEN_VERSION}\"")),
            "update BINDGEN_VERSION with the workspace's bindgen pin"
        );
    }
}
