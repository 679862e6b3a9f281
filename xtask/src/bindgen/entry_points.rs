//! The lazily loading entry points: the symbol table and the struct whose methods call it.

use std::collections::BTreeMap;
use std::ffi::CString;

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};

use super::api::Api;
use super::format::doc_lines;
use super::links::{ApiDoc, Links};
use super::scan::since_of;

/// Which release introduced each entry point, as the library's headers tell it.
pub(super) enum Dating<'a> {
    /// CUDA: each base name's `PFN_<name>_v<version>` versions in `cudaTypedefs.h`.
    Cuda(&'a BTreeMap<String, Vec<u32>>),
    /// NCCL: the `NCCL_VERSION_CODE` (patch 0) of the first header declaring each function.
    Nccl(&'a BTreeMap<String, u32>),
    /// A library versioned on its own (cuBLAS, cuRAND): its name, and the (major, minor) of
    /// the first of its headers declaring each function.
    Library(&'static str, &'a BTreeMap<String, (u32, u32)>),
}

impl Dating<'_> {
    /// The entry point's row in `ENTRY_POINTS`.
    fn row(&self, symbol: &Literal, name: &str) -> TokenStream {
        let code = |version: Option<u32>| match version {
            Some(version) => {
                let version = Literal::u32_unsuffixed(version);
                quote!(Some(#version))
            }
            None => quote!(None),
        };
        match self {
            Self::Cuda(versions) => {
                let version = code(since_of(name, versions));
                quote!(::cuda_loader::EntryPoint::new(#symbol, #version))
            }
            Self::Nccl(versions) => {
                let version = code(versions.get(name).copied());
                quote!(::cuda_loader::EntryPoint::nccl(#symbol, #version))
            }
            Self::Library(_, versions) => {
                let version = match versions.get(name) {
                    Some((major, minor)) => {
                        let major = Literal::u32_unsuffixed(*major);
                        let minor = Literal::u32_unsuffixed(*minor);
                        quote!(Some((#major, #minor)))
                    }
                    None => quote!(None),
                };
                quote!(::cuda_loader::EntryPoint::library(#symbol, #version))
            }
        }
    }

    /// `Needs a CUDA 12.4 driver.` for an entry point newer than CUDA 12.0, the oldest driver
    /// the crates support; `Needs NCCL 2.18.` (`Needs cuBLAS 12.5.`) for one newer than the
    /// oldest NCCL (cuBLAS) header dated against (the undated ones are in every release from
    /// that one on).
    pub(super) fn needs(&self, symbol: &str) -> Option<String> {
        match self {
            Self::Cuda(versions) => {
                let version = since_of(symbol, versions)?;
                (version > OLDEST_CUDA).then(|| {
                    format!(
                        "Needs a CUDA {}.{} driver.",
                        version / 1000,
                        (version % 1000) / 10
                    )
                })
            }
            Self::Nccl(versions) => {
                let version = versions.get(symbol)?;
                Some(format!(
                    "Needs NCCL {}.{}.",
                    version / 10000,
                    (version % 10000) / 100
                ))
            }
            Self::Library(library, versions) => {
                let (major, minor) = versions.get(symbol)?;
                Some(format!("Needs {library} {major}.{minor}."))
            }
        }
    }
}

/// `CUDA_VERSION` of the oldest driver the crates support: CUDA 12.0. Entry points this driver
/// has need no needs line.
const OLDEST_CUDA: u32 = 12000;

/// Each entry point's documentation, by symbol: its reference entry from `links` (symbol ->
/// documented name and link) and its needs line from `dating`.
pub(super) fn api_docs(
    functions: &[syn::Signature],
    links: &Links,
    dating: &Dating<'_>,
) -> Result<BTreeMap<String, ApiDoc>, String> {
    functions
        .iter()
        .map(|sig| {
            let symbol = sig.ident.to_string();
            let (name, link) = links
                .get(&symbol)
                .cloned()
                .ok_or_else(|| format!("{symbol} has no documentation link"))?;
            let needs = dating.needs(&symbol);
            Ok((symbol, ApiDoc { name, link, needs }))
        })
        .collect()
}

/// `pub static ENTRY_POINTS` and `ENTRY_POINT_COUNT`.
pub(super) fn entry_point_table(
    functions: &[syn::Signature],
    since: &Dating<'_>,
) -> Result<TokenStream, String> {
    let count = Literal::usize_unsuffixed(functions.len());
    let rows = functions
        .iter()
        .map(|sig| {
            let name = sig.ident.to_string();
            let symbol = CString::new(name.clone())
                .map_err(|e| format!("symbol {name} holds a NUL byte: {e}"))?;
            let symbol = Literal::c_string(&symbol);
            Ok(since.row(&symbol, &name))
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(quote! {
        /// How many entry points the header declares.
        pub const ENTRY_POINT_COUNT: usize = #count;

        /// Every function of the header, in header order; a method's index into this table is
        /// its cache slot.
        pub static ENTRY_POINTS: [::cuda_loader::EntryPoint; ENTRY_POINT_COUNT] = [#(#rows),*];
    })
}

/// The struct whose methods call the header's functions.
pub(super) fn entry_point_struct(
    api: &Api,
    functions: &[syn::Signature],
    aliases: &[(String, String)],
    docs: &BTreeMap<String, ApiDoc>,
) -> Result<TokenStream, String> {
    let name = format_ident!("{}", api.struct_name);
    let struct_doc = doc_lines(&format!(
        "The entry points of {}, each resolved on first call and cached.\n\n\
         Every method is `unsafe`: the caller upholds the C function's contract (valid \
         pointers, handles and sizes) as the header documents it. A method returns \
         [`LoadError::SymbolMissing`](::cuda_loader::LoadError::SymbolMissing) when the loaded \
         library lacks its symbol, and otherwise the C function's own return value.",
        api.library
    ));
    let methods = functions
        .iter()
        .enumerate()
        .map(|(index, sig)| method(index, sig, aliases, docs))
        .collect::<Result<Vec<_>, String>>()?;
    Ok(quote! {
        #(#[doc = #struct_doc])*
        #[derive(Debug)]
        pub struct #name {
            library: ::cuda_loader::Library<ENTRY_POINT_COUNT>,
        }

        impl #name {
            /// Wraps a library opened with [`ENTRY_POINTS`].
            ///
            /// # Safety
            ///
            /// `library` must have been opened with [`ENTRY_POINTS`], and every symbol listed
            /// there that the library exports must have the signature the header declares for
            /// it: each method calls its symbol through that signature.
            pub unsafe fn new(library: ::cuda_loader::Library<ENTRY_POINT_COUNT>) -> Self {
                Self { library }
            }

            /// The loaded library (its path, and which entry points it has).
            pub fn library(&self) -> &::cuda_loader::Library<ENTRY_POINT_COUNT> {
                &self.library
            }

            #(#methods)*
        }
    })
}

/// One method: look the symbol up in its slot, then call it.
fn method(
    index: usize,
    sig: &syn::Signature,
    aliases: &[(String, String)],
    docs: &BTreeMap<String, ApiDoc>,
) -> Result<TokenStream, String> {
    let ident = &sig.ident;
    let symbol = ident.to_string();
    if sig.variadic.is_some() {
        return Err(format!(
            "{symbol} is variadic, which the loader does not support"
        ));
    }
    let mut names = Vec::new();
    let mut types = Vec::new();
    for input in &sig.inputs {
        let syn::FnArg::Typed(typed) = input else {
            return Err(format!("{symbol} has a receiver"));
        };
        let syn::Pat::Ident(pat) = typed.pat.as_ref() else {
            return Err(format!("{symbol} has an unnamed parameter"));
        };
        names.push(pat.ident.clone());
        types.push(typed.ty.as_ref().clone());
    }
    let ret = match &sig.output {
        syn::ReturnType::Default => quote!(()),
        syn::ReturnType::Type(_, ty) => quote!(#ty),
    };
    let api_doc = docs
        .get(&symbol)
        .ok_or_else(|| format!("{symbol} has no documentation"))?;
    let doc = method_doc(&symbol, api_doc, aliases);
    let slot = Literal::usize_unsuffixed(index);
    Ok(quote! {
        #(#[doc = #doc])*
        #[inline]
        pub unsafe fn #ident(&self, #(#names: #types),*)
            -> ::core::result::Result<#ret, ::cuda_loader::LoadError>
        {
            // C reserves names with two leading underscores, so no parameter is called this.
            let __c_function = unsafe {
                self.library.get::<unsafe extern "C" fn(#(#types),*) -> #ret>(#slot)
            }?;
            Ok(unsafe { __c_function(#(#names),*) })
        }
    })
}

/// A method's doc lines: what it calls (the reference entry, and the export when its name
/// differs), then the needs line.
fn method_doc(symbol: &str, doc: &ApiDoc, aliases: &[(String, String)]) -> Vec<String> {
    let mut first = format!(" {}", doc.calls());
    if doc.name != symbol {
        first.push_str(&format!(", exported as `{symbol}`"));
    } else if let Some((name, _)) = aliases.iter().find(|(_, target)| target == symbol) {
        first.push_str(&format!(" (what `{name}` names in the header)"));
    } else if let Some((_, versioned)) = aliases.iter().find(|(name, _)| name == symbol) {
        first.push_str(&format!(
            ", the plain export of what the header's inline wrapper calls as `{versioned}`"
        ));
    }
    first.push('.');
    let mut lines = vec![first];
    if let Some(needs) = &doc.needs {
        lines.push(String::new());
        lines.push(format!(" {needs}"));
    }
    lines
}
