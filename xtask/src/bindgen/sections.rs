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
//! cuSOLVER's and cuSPARSE's pages title their typed routines the same way
//! (`cusolverDn<t>getrf()`, `cusolverDn<t1><t2>gesv()`, `cusparse<t>bsrsv2_bufferSize()`): a
//! function whose name is the prefix, one or two type letters and a stem that another function
//! has with other type letters links there ([`Titles::Typed`]). cuFFT's page declares each
//! function in Sphinx's C domain, whose id is `c.` and the name (`#c.cufftPlanMany`).

use std::collections::BTreeSet;

use super::links::Links;

/// How a page of sections names the entry of each function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Titles {
    /// cuBLAS's: `cublas<t>gemm()` for the routines of [`TYPED_STEMS`], else `name()`.
    Cublas,
    /// `<prefix><t>stem()` (`<prefix><t1><t2>stem()`) for a routine of several types, else
    /// `name()`; a function named as another and one of `merged_suffixes` (`_bufferSize`)
    /// shares that one's section, and so does a complex routine whose stem starts with the
    /// first of a pair of `complex_stems` with the real one that starts with the second
    /// (`cusolverDnZhegvd` with `cusolverDnDsygvd`).
    Typed {
        /// What stands before the type letters (`cusolverDn`).
        prefix: &'static str,
        /// The suffixes of functions documented in the section of the function without them.
        merged_suffixes: &'static [&'static str],
        /// The beginnings of complex routines' stems and of the real ones they share a
        /// section with (`("he", "sy")`, `("un", "or")`).
        complex_stems: &'static [(&'static str, &'static str)],
    },
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
            Self::Typed {
                prefix,
                merged_suffixes,
                complex_stems,
            } => {
                let names: BTreeSet<String> = symbols.iter().map(c_name).collect();
                symbols
                    .iter()
                    .map(|symbol| {
                        let name = c_name(symbol);
                        let title =
                            typed_title(&name, prefix, merged_suffixes, complex_stems, &names);
                        let link = format!("{page}#{}", sphinx_id(&title));
                        (symbol.clone(), (name, Ok(link)))
                    })
                    .collect()
            }
        }
    }
}

/// The type letters of a typed routine's name: one of the four BLAS types, or (mixed
/// precision, `cusolverDnZCgesv`) two letters of these and the lower precisions.
fn is_type_letter(letter: char, count: usize) -> bool {
    if count == 1 {
        "SDCZ".contains(letter)
    } else {
        "SDCZHBXKEY".contains(letter)
    }
}

/// The type letters and the stem of `name` after `prefix`, if it has `count` type letters.
fn typed_parts<'a>(name: &'a str, prefix: &str, count: usize) -> Option<(&'a str, &'a str)> {
    let rest = name.strip_prefix(prefix)?;
    let (letters, stem) = rest.split_at_checked(count)?;
    (letters.chars().all(|letter| is_type_letter(letter, count))
        && stem.starts_with(|c: char| c.is_ascii_lowercase()))
    .then_some((letters, stem))
}

/// The title of the section documenting `name` among the functions `names` (see
/// [`Titles::Typed`]).
fn typed_title(
    name: &str,
    prefix: &str,
    merged_suffixes: &[&str],
    complex_stems: &[(&str, &str)],
    names: &BTreeSet<String>,
) -> String {
    let base = merged_suffixes
        .iter()
        .find_map(|suffix| {
            name.strip_suffix(suffix)
                .filter(|base| names.contains(*base))
        })
        .unwrap_or(name);
    for (count, marker) in [(2, "<t1><t2>"), (1, "<t>")] {
        let Some((letters, stem)) = typed_parts(base, prefix, count) else {
            continue;
        };
        let sibling = names.iter().any(|other| {
            typed_parts(other, prefix, count)
                .is_some_and(|(others, other_stem)| other_stem == stem && others != letters)
        });
        if sibling {
            let real = (count == 1 && "CZ".contains(letters))
                .then(|| {
                    complex_stems.iter().find_map(|(complex, real)| {
                        let real = format!("{real}{}", stem.strip_prefix(complex)?);
                        ["S", "D"]
                            .iter()
                            .any(|letter| names.contains(&format!("{prefix}{letter}{real}")))
                            .then_some(real)
                    })
                })
                .flatten();
            return format!("{prefix}{marker}{}()", real.as_deref().unwrap_or(stem));
        }
    }
    format!("{base}()")
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

    /// Anchors as NVIDIA's cuSOLVER and cuSPARSE pages have them (cited by projects that link
    /// to them).
    #[test]
    fn typed_routines_share_a_section() {
        let solver = strings(&[
            "cusolverDnSgetrf",
            "cusolverDnDgetrf",
            "cusolverDnSgetrf_bufferSize",
            "cusolverDnSsygvd",
            "cusolverDnDsygvd",
            "cusolverDnChegvd",
            "cusolverDnZhegvd",
            "cusolverDnDormqr",
            "cusolverDnSormqr",
            "cusolverDnZunmqr",
            "cusolverDnCunmqr",
            "cusolverDnXgetrf",
            "cusolverDnXgetrf_bufferSize",
            "cusolverDnZZgesv",
            "cusolverDnDSgesv",
            "cusolverDnCreate",
            "cusolverDnDestroy",
        ]);
        let titles = Titles::Typed {
            prefix: "cusolverDn",
            merged_suffixes: &["_bufferSize"],
            complex_stems: &[("he", "sy"), ("un", "or")],
        };
        let links = titles.links("https://x/cusolver/index.html", &solver, &[]);
        let anchor = |name: &str| {
            let link = links[name].1.clone().unwrap();
            link.rsplit_once('#').unwrap().1.to_owned()
        };
        assert_eq!(anchor("cusolverDnSgetrf"), "cusolverdn-t-getrf");
        assert_eq!(anchor("cusolverDnSgetrf_bufferSize"), "cusolverdn-t-getrf");
        assert_eq!(anchor("cusolverDnDsygvd"), "cusolverdn-t-sygvd");
        assert_eq!(anchor("cusolverDnZhegvd"), "cusolverdn-t-sygvd");
        assert_eq!(anchor("cusolverDnCunmqr"), "cusolverdn-t-ormqr");
        assert_eq!(anchor("cusolverDnXgetrf"), "cusolverdnxgetrf");
        assert_eq!(anchor("cusolverDnXgetrf_bufferSize"), "cusolverdnxgetrf");
        assert_eq!(anchor("cusolverDnZZgesv"), "cusolverdn-t1-t2-gesv");
        assert_eq!(anchor("cusolverDnCreate"), "cusolverdncreate");
        assert_eq!(anchor("cusolverDnDestroy"), "cusolverdndestroy");
        let sparse = strings(&[
            "cusparseSpMV",
            "cusparseSpMV_bufferSize",
            "cusparseSbsrsv2_bufferSize",
            "cusparseDbsrsv2_bufferSize",
            "cusparseXbsrsv2_zeroPivot",
        ]);
        let titles = Titles::Typed {
            prefix: "cusparse",
            merged_suffixes: &[],
            complex_stems: &[],
        };
        let links = titles.links("https://x/cusparse/index.html", &sparse, &[]);
        let anchor = |name: &str| links[name].1.clone().unwrap();
        assert!(anchor("cusparseSpMV").ends_with("#cusparsespmv"));
        assert!(anchor("cusparseSpMV_bufferSize").ends_with("#cusparsespmv-buffersize"));
        assert!(anchor("cusparseDbsrsv2_bufferSize").ends_with("#cusparse-t-bsrsv2-buffersize"));
        assert!(anchor("cusparseXbsrsv2_zeroPivot").ends_with("#cusparsexbsrsv2-zeropivot"));
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
