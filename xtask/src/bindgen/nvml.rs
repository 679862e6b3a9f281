//! NVML's struct version constants, which bindgen cannot evaluate.

use std::collections::{BTreeMap, BTreeSet};

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};
use regex::Regex;

/// NVML's `#define nvmlX_vN NVML_STRUCT_VERSION(X, N)` constants, which bindgen cannot
/// evaluate (they use `sizeof`): `size_of::<nvmlX_vN_t>() | N << 24`.
pub(super) fn nvml_struct_versions(
    header: &str,
    items: &[syn::Item],
) -> Result<TokenStream, String> {
    let regex = Regex::new(
        r"(?m)^\s*#\s*define\s+(nvml[A-Za-z0-9_]+)\s+NVML_STRUCT_VERSION\(\s*([A-Za-z0-9_]+)\s*,\s*([0-9]+)\s*\)",
    )
    .map_err(|e| e.to_string())?;
    let defined: BTreeSet<String> = items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Struct(s) => Some(s.ident.to_string()),
            syn::Item::Type(t) => Some(t.ident.to_string()),
            syn::Item::Union(u) => Some(u.ident.to_string()),
            _ => None,
        })
        .collect();
    let mut constants = BTreeMap::new();
    for captures in regex.captures_iter(header) {
        let name = captures[1].to_owned();
        let ty = format!("nvml{}_v{}_t", &captures[2], &captures[3]);
        if !defined.contains(&ty) {
            return Err(format!("{name} names {ty}, which bindgen did not generate"));
        }
        let version: u32 = captures[3]
            .parse()
            .map_err(|e| format!("{name}: version {}: {e}", &captures[3]))?;
        constants.insert(name, (ty, version));
    }
    let rows = constants.iter().map(|(name, (ty, version))| {
        let name = format_ident!("{name}");
        let ty = format_ident!("{ty}");
        let version = Literal::u32_unsuffixed(*version);
        let doc = format!(" `NVML_STRUCT_VERSION` of [`{ty}`].");
        quote! {
            #[doc = #doc]
            pub const #name: ::std::os::raw::c_uint =
                (::core::mem::size_of::<#ty>() as ::std::os::raw::c_uint) | (#version << 24);
        }
    });
    Ok(quote!(#(#rows)*))
}
