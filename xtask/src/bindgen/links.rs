//! Each entry point's documentation: a link to NVIDIA's reference for its C function, and the
//! release it needs, as the generated methods and `api_doc!` give them.

use std::collections::{BTreeMap, BTreeSet};

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::doxygen::{Documented, documented_functions};
use super::format::doc_lines;

/// What one entry point's documentation says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ApiDoc {
    /// The name NVIDIA's reference documents the function under (`cuMemAlloc`).
    pub(super) name: String,
    /// The function's entry in the reference, or (`Err`) the reference's first page, for a
    /// function the header files under no group (or documents not at all).
    pub(super) link: Result<String, String>,
    /// `Needs a CUDA 12.4 driver.` or `Needs NCCL 2.18.`, for an entry point newer than the
    /// oldest release its crate supports.
    pub(super) needs: Option<String>,
}

impl ApiDoc {
    /// `Calls [`cuMemAlloc`](...)`, without the full stop.
    pub(super) fn calls(&self) -> String {
        match &self.link {
            Ok(url) => format!("Calls [`{}`]({url})", self.name),
            Err(index) => format!(
                "Calls `{}`; the header files it under no group of [NVIDIA's reference]({index})",
                self.name
            ),
        }
    }

    /// The text `api_doc!` expands to: the call sentence and the needs line as paragraphs of
    /// their own, with a blank line before and after, so it reads the same wherever in a
    /// comment it stands.
    pub(super) fn macro_text(&self) -> String {
        let mut text = format!("\n{}.\n", self.calls());
        if let Some(needs) = &self.needs {
            text.push('\n');
            text.push_str(needs);
            text.push('\n');
        }
        text
    }
}

/// Each symbol's place in the reference: the name the function is documented under, and its
/// entry (`Err`: the reference's first page), as [`ApiDoc`] holds them.
pub(super) type Links = BTreeMap<String, (String, Result<String, String>)>;

/// A reference built by doxygen from the header, as NVIDIA publishes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Doxygen {
    /// The address the reference's pages are under, ending in `/`.
    pub(super) base: String,
    /// `None` for one page per group (`group__CUDA__MEM.html`); `Some(page)` when every group
    /// is a section of that one page (`index.html`).
    pub(super) one_page: Option<&'static str>,
    /// What stands between `_1` and the hash in an entry's anchor: `g` on doxygen's own HTML
    /// pages, `ga` on the Sphinx pages NVIDIA builds from doxygen's XML.
    pub(super) member_prefix: &'static str,
    /// The macros the reference's doxygen build defines away (`CUDAAPI`).
    pub(super) ignored_macros: &'static [&'static str],
}

impl Doxygen {
    /// The reference's first page.
    pub(super) fn index(&self) -> String {
        format!("{}{}", self.base, self.one_page.unwrap_or("index.html"))
    }

    /// The entry of a documented function, or `None` for one outside every group.
    fn entry(&self, documented: &Documented) -> Option<String> {
        // Doxygen doubles the underscores of a group's name in page names and anchors.
        let group = format!("group__{}", documented.group.as_deref()?.replace('_', "__"));
        let page = match self.one_page {
            Some(page) => page.to_owned(),
            None => format!("{group}.html"),
        };
        Some(format!(
            "{}{page}#{group}_1{}{}",
            self.base, self.member_prefix, documented.hash
        ))
    }

    /// The link of each symbol: its entry under the first of its names (the symbol, then the
    /// name C programs use, from `aliases`) documented inside a group, else the reference's
    /// first page.
    pub(super) fn links(
        &self,
        header: &str,
        symbols: &[String],
        aliases: &[(String, String)],
    ) -> Result<Links, String> {
        let wanted: BTreeSet<String> = symbols
            .iter()
            .cloned()
            .chain(aliases.iter().map(|(name, _)| name.clone()))
            .collect();
        let documented = documented_functions(header, &wanted, self.ignored_macros)?;
        Ok(symbols
            .iter()
            .map(|symbol| {
                let api_name = aliases
                    .iter()
                    .find(|(_, target)| target == symbol)
                    .map(|(name, _)| name);
                let names: Vec<&String> = std::iter::once(symbol).chain(api_name).collect();
                let entry = names.iter().find_map(|name| {
                    let url = self.entry(documented.get(*name)?)?;
                    Some(((*name).clone(), url))
                });
                let link = match entry {
                    Some((name, url)) => (name, Ok(url)),
                    None => ((*names[names.len() - 1]).clone(), Err(self.index())),
                };
                (symbol.clone(), link)
            })
            .collect())
    }
}

/// `#[macro_export] macro_rules! api_doc`: each entry point's documentation by its symbol and
/// by the name C programs use for it (from `aliases`), any other name a compile error.
/// `header` names the header in that error and in the macro's own documentation; `needs` says
/// which entry points get a needs line and what it names, when any do.
pub(super) fn api_doc_macro(
    docs: &BTreeMap<String, ApiDoc>,
    aliases: &[(String, String)],
    header: &str,
    needs: Option<&str>,
) -> TokenStream {
    let mut texts: BTreeMap<&str, String> = docs
        .iter()
        .map(|(symbol, doc)| (symbol.as_str(), doc.macro_text()))
        .collect();
    for (name, target) in aliases {
        if let Some(doc) = docs.get(target) {
            texts
                .entry(name.as_str())
                .or_insert_with(|| doc.macro_text());
        }
    }
    let arms = texts.iter().map(|(name, text)| {
        let name = format_ident!("{name}");
        quote!((#name) => { #text };)
    });
    let error = format!(
        "` is not an entry point of {header}, nor a name its macros give one (see ENTRY_POINTS \
         and VERSIONED_NAMES)"
    );
    let needs = needs.map_or_else(String::new, |needs| format!(" and, {needs}"));
    let doc = doc_lines(&format!(
        "The documentation of one function of {header}, as a string literal for a `#[doc]` \
         attribute: a link to NVIDIA's reference for it{needs}, as the methods here carry \
         them.\n\nGive \
         the name a C program calls or the symbol it exports; any other name is a compile \
         error. The text has a blank line before and after it, so it makes paragraphs of its \
         own wherever it stands in a doc comment. See [Documenting a \
         wrapper](crate#documenting-a-wrapper) for an example."
    ));
    quote! {
        #(#[doc = #doc])*
        #[macro_export]
        macro_rules! api_doc {
            #(#arms)*
            ($other:ident) => {
                compile_error!(concat!("`", stringify!($other), #error))
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(one_page: Option<&'static str>, member_prefix: &'static str) -> Doxygen {
        Doxygen {
            base: "https://docs.example/api/".to_owned(),
            one_page,
            member_prefix,
            ignored_macros: &["CUDAAPI"],
        }
    }

    #[test]
    fn links_follow_the_page_layout_and_prefer_a_grouped_name() {
        let header = "\
/** \\defgroup CUDA_MEM Memory\n @{ */
/** Allocates. */
CUresult CUDAAPI cuMemAlloc(CUdeviceptr *dptr, size_t bytesize);
/** @} */
/** Ungrouped. */
nvmlReturn_t DECLDIR nvmlInit(void);
/** \\defgroup init Init\n @{ */
/** Grouped. */
nvmlReturn_t DECLDIR nvmlInit_v2(void);
/** @} */
CUresult CUDAAPI cuGetExportTable(const void **table);
";
        let symbols: Vec<String> = ["cuMemAlloc_v2", "nvmlInit_v2", "cuGetExportTable"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let aliases = vec![
            ("cuMemAlloc".to_owned(), "cuMemAlloc_v2".to_owned()),
            ("nvmlInit".to_owned(), "nvmlInit_v2".to_owned()),
        ];
        let links = reference(None, "g")
            .links(header, &symbols, &aliases)
            .unwrap();
        assert_eq!(
            links["cuMemAlloc_v2"],
            (
                "cuMemAlloc".to_owned(),
                Ok("https://docs.example/api/group__CUDA__MEM.html\
                    #group__CUDA__MEM_1gb82d2a09844a58dd9e744dc31e8aa467"
                    .to_owned())
            )
        );
        assert_eq!(links["nvmlInit_v2"].0, "nvmlInit_v2");
        assert!(
            links["nvmlInit_v2"]
                .1
                .as_ref()
                .unwrap()
                .contains("group__init.html#group__init_1g")
        );
        assert_eq!(
            links["cuGetExportTable"],
            (
                "cuGetExportTable".to_owned(),
                Err("https://docs.example/api/index.html".to_owned())
            )
        );
        let one_page = reference(Some("index.html"), "ga")
            .links(header, &symbols, &aliases)
            .unwrap();
        assert!(
            one_page["cuMemAlloc_v2"]
                .1
                .as_ref()
                .unwrap()
                .starts_with("https://docs.example/api/index.html#group__CUDA__MEM_1gab82d2a09")
        );
    }

    #[test]
    fn macro_text_is_paragraphs_of_its_own() {
        let doc = ApiDoc {
            name: "cuKernelGetParamInfo".to_owned(),
            link: Ok("https://x/#a".to_owned()),
            needs: Some("Needs a CUDA 12.4 driver.".to_owned()),
        };
        assert_eq!(
            doc.macro_text(),
            "\nCalls [`cuKernelGetParamInfo`](https://x/#a).\n\nNeeds a CUDA 12.4 driver.\n"
        );
        let undocumented = ApiDoc {
            name: "cuGetExportTable".to_owned(),
            link: Err("https://x/index.html".to_owned()),
            needs: None,
        };
        assert_eq!(
            undocumented.macro_text(),
            "\nCalls `cuGetExportTable`; the header files it under no group of [NVIDIA's \
             reference](https://x/index.html).\n"
        );
    }

    #[test]
    fn the_macro_takes_symbols_and_c_names_and_refuses_the_rest() {
        let mut docs = BTreeMap::new();
        docs.insert(
            "cuMemAlloc_v2".to_owned(),
            ApiDoc {
                name: "cuMemAlloc".to_owned(),
                link: Ok("https://x/#m".to_owned()),
                needs: None,
            },
        );
        let aliases = vec![
            ("cuMemAlloc".to_owned(), "cuMemAlloc_v2".to_owned()),
            (
                "nvJitLinkCreate".to_owned(),
                "__nvJitLinkCreate_13_5".to_owned(),
            ),
        ];
        let text =
            api_doc_macro(&docs, &aliases, "`cuda.h`", Some("the driver it needs")).to_string();
        assert!(text.contains("(cuMemAlloc_v2) =>"), "{text}");
        assert!(text.contains("(cuMemAlloc) =>"), "{text}");
        assert!(!text.contains("nvJitLinkCreate"), "{text}");
        assert!(text.contains("compile_error !"), "{text}");
    }
}
