//! Links into a reference written by hand in Sphinx, one section per function, as NVIDIA
//! publishes cuBLAS's and cuBLASLt's (`cublas/index.html#cublasgemmex`): the headers have no
//! doxygen groups, and each section's anchor is Sphinx's id of its title (`cublasGemmEx()`):
//! lower case, every run of other characters than letters and digits one `-`, none at the ends.
//!
//! The BLAS routines are documented once for every type letter, the title naming the type
//! `<t>` (`cublas<t>gemm()`, `cublasI<t>amax()`): a function whose name is a type prefix and
//! one of [`TYPED_STEMS`] links to that section (`cublasSgemm` and `cublasZgemm` to
//! `#cublas-t-gemm`). The 64-bit variants (`cublasSgemm_64`) share their section.
//!
//! cuFFT's page declares each function in Sphinx's C domain, whose id is `c.` and the name
//! (`#c.cufftPlanMany`).

use super::links::Links;

/// How a page of sections names the entry of each function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Titles {
    /// cuBLAS's: `cublas<t>gemm()` for the routines of [`TYPED_STEMS`], else `name()`.
    Cublas,
    /// Sphinx's C domain: `c.<name>`.
    CDomain,
}

impl Titles {
    /// Each symbol's entry on the page at `page`: the name C programs call it by (from
    /// `aliases`, (name, symbol) pairs, else the symbol itself) and the link.
    pub(super) fn links(
        self,
        page: &str,
        symbols: &[String],
        aliases: &[(String, String)],
    ) -> Links {
        let c_name = |symbol: &String| {
            aliases
                .iter()
                .find(|(_, target)| target == symbol)
                .map_or(symbol.clone(), |(name, _)| name.clone())
        };
        match self {
            Self::Cublas => section_links(page, symbols, aliases),
            Self::CDomain => symbols
                .iter()
                .map(|symbol| {
                    let name = c_name(symbol);
                    let link = format!("{page}#c.{name}");
                    (symbol.clone(), (name, Ok(link)))
                })
                .collect(),
        }
    }
}

/// The BLAS routines cuBLAS documents under one `cublas<t>...()` title for all its types, and
/// the stem the title uses (the complex dot and rank-1 updates share the real ones' sections).
const TYPED_STEMS: &[(&str, &str)] = &[
    // Level 1.
    ("amax", "amax"),
    ("amin", "amin"),
    ("asum", "asum"),
    ("axpy", "axpy"),
    ("copy", "copy"),
    ("dot", "dot"),
    ("dotu", "dot"),
    ("dotc", "dot"),
    ("nrm2", "nrm2"),
    ("rot", "rot"),
    ("rotg", "rotg"),
    ("rotm", "rotm"),
    ("rotmg", "rotmg"),
    ("scal", "scal"),
    ("swap", "swap"),
    // Level 2.
    ("gbmv", "gbmv"),
    ("gemv", "gemv"),
    ("ger", "ger"),
    ("geru", "ger"),
    ("gerc", "ger"),
    ("sbmv", "sbmv"),
    ("spmv", "spmv"),
    ("spr", "spr"),
    ("spr2", "spr2"),
    ("symv", "symv"),
    ("syr", "syr"),
    ("syr2", "syr2"),
    ("tbmv", "tbmv"),
    ("tbsv", "tbsv"),
    ("tpmv", "tpmv"),
    ("tpsv", "tpsv"),
    ("trmv", "trmv"),
    ("trsv", "trsv"),
    ("hemv", "hemv"),
    ("hbmv", "hbmv"),
    ("hpmv", "hpmv"),
    ("her", "her"),
    ("her2", "her2"),
    ("hpr", "hpr"),
    ("hpr2", "hpr2"),
    ("gemvBatched", "gemvBatched"),
    ("gemvStridedBatched", "gemvStridedBatched"),
    // Level 3.
    ("gemm", "gemm"),
    ("gemm3m", "gemm3m"),
    ("gemmBatched", "gemmBatched"),
    ("gemmStridedBatched", "gemmStridedBatched"),
    ("gemmGroupedBatched", "gemmGroupedBatched"),
    ("symm", "symm"),
    ("syrk", "syrk"),
    ("syr2k", "syr2k"),
    ("syrkx", "syrkx"),
    ("trmm", "trmm"),
    ("trsm", "trsm"),
    ("trsmBatched", "trsmBatched"),
    ("hemm", "hemm"),
    ("herk", "herk"),
    ("her2k", "her2k"),
    ("herkx", "herkx"),
    // BLAS-like extensions.
    ("geam", "geam"),
    ("dgmm", "dgmm"),
    ("getrfBatched", "getrfBatched"),
    ("getrsBatched", "getrsBatched"),
    ("getriBatched", "getriBatched"),
    ("matinvBatched", "matinvBatched"),
    ("geqrfBatched", "geqrfBatched"),
    ("gelsBatched", "gelsBatched"),
    ("tpttr", "tpttr"),
    ("trttp", "trttp"),
];

/// The type prefixes of the typed routines, longest first (`Cs` in `cublasCsscal`, `Sc` in
/// `cublasScnrm2`); the index-returning ones (`cublasIsamax`) write them in lower case.
const TYPE_PREFIXES: [&str; 9] = ["Cs", "Zd", "Sc", "Dz", "S", "D", "C", "Z", "H"];

/// Sphinx's id of a section title: lower case, other characters than letters and digits
/// runs of `-`, none at the ends.
fn sphinx_id(title: &str) -> String {
    let mut id = String::new();
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            id.push(c.to_ascii_lowercase());
        } else if !id.ends_with('-') {
            id.push('-');
        }
    }
    id.trim_matches('-').to_owned()
}

/// The title of the section documenting the function C programs call `name`.
fn section_title(name: &str) -> String {
    let name = name.strip_suffix("_64").unwrap_or(name);
    if let Some(rest) = name.strip_prefix("cublas") {
        let (index, rest) = match rest.strip_prefix('I') {
            Some(after) => ("I", after),
            None => ("", rest),
        };
        for prefix in TYPE_PREFIXES {
            let prefix = if index.is_empty() {
                prefix.to_owned()
            } else {
                prefix.to_ascii_lowercase()
            };
            let Some(stem) = rest.strip_prefix(prefix.as_str()) else {
                continue;
            };
            if let Some((_, title)) = TYPED_STEMS.iter().find(|(routine, _)| *routine == stem) {
                return format!("cublas{index}<t>{title}()");
            }
        }
    }
    format!("{name}()")
}

/// Each symbol's section on the page at `page`: the name C programs call it by (from
/// `aliases`, (name, symbol) pairs, else the symbol itself) and the link.
pub(super) fn section_links(page: &str, symbols: &[String], aliases: &[(String, String)]) -> Links {
    symbols
        .iter()
        .map(|symbol| {
            let name = aliases
                .iter()
                .find(|(_, target)| target == symbol)
                .map_or(symbol.as_str(), |(name, _)| name.as_str());
            let link = format!("{page}#{}", sphinx_id(&section_title(name)));
            (symbol.clone(), (name.to_owned(), Ok(link)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Anchors as NVIDIA's cuBLAS page has them (cited by projects that link to it).
    #[test]
    fn anchors_follow_the_section_titles() {
        let id = |name: &str| sphinx_id(&section_title(name));
        assert_eq!(id("cublasSgemm"), "cublas-t-gemm");
        assert_eq!(id("cublasHgemm"), "cublas-t-gemm");
        assert_eq!(id("cublasDgemmBatched"), "cublas-t-gemmbatched");
        assert_eq!(id("cublasGemmEx"), "cublasgemmex");
        assert_eq!(id("cublasGemmBatchedEx"), "cublasgemmbatchedex");
        assert_eq!(
            id("cublasGemmGroupedBatchedEx"),
            "cublasgemmgroupedbatchedex"
        );
        assert_eq!(id("cublasLtMatmul"), "cublasltmatmul");
        assert_eq!(id("cublasLtMatmulDescCreate"), "cublasltmatmuldesccreate");
        assert_eq!(id("cublasIsamax"), "cublasi-t-amax");
        assert_eq!(id("cublasIzamin_64"), "cublasi-t-amin");
        assert_eq!(id("cublasCsscal"), "cublas-t-scal");
        assert_eq!(id("cublasDznrm2"), "cublas-t-nrm2");
        assert_eq!(id("cublasZdotc"), "cublas-t-dot");
        assert_eq!(id("cublasCreate"), "cublascreate");
        assert_eq!(id("cublasSetStream"), "cublassetstream");
        // Neither a type prefix and a stem nor the index form: the plain title.
        assert_eq!(id("cublasCopyEx"), "cublascopyex");
        assert_eq!(id("cublasIamaxEx"), "cublasiamaxex");
    }

    #[test]
    fn links_name_the_c_name_of_each_symbol() {
        let symbols = vec!["cublasSgemm_v2".to_owned(), "cublasGemmEx".to_owned()];
        let aliases = vec![("cublasSgemm".to_owned(), "cublasSgemm_v2".to_owned())];
        let links = section_links("https://x/cublas/index.html", &symbols, &aliases);
        assert_eq!(
            links["cublasSgemm_v2"],
            (
                "cublasSgemm".to_owned(),
                Ok("https://x/cublas/index.html#cublas-t-gemm".to_owned())
            )
        );
        assert_eq!(links["cublasGemmEx"].0, "cublasGemmEx");
    }

    fn strings(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| name.to_string()).collect()
    }

    #[test]
    fn the_c_domain_ids_are_the_names() {
        let links = Titles::CDomain.links(
            "https://x/cufft/index.html",
            &strings(&["cufftPlanMany"]),
            &[],
        );
        assert_eq!(
            links["cufftPlanMany"],
            (
                "cufftPlanMany".to_owned(),
                Ok("https://x/cufft/index.html#c.cufftPlanMany".to_owned())
            )
        );
    }
}
