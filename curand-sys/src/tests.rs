//! The generated bindings, the loader's search and its errors.

use std::path::PathBuf;

use super::*;

#[test]
fn header_major_matches_the_features() {
    let expected = if cfg!(feature = "cuda-13") { 13 } else { 12 };
    assert_eq!(HEADER_CUDA_VERSION / 1000, expected);
    assert_eq!(ABI_MAJOR, expected);
    // cuRAND's own numbering: 10.3 goes with CUDA 12, 10.4 with CUDA 13.
    assert_eq!(CURAND_VER_MAJOR, 10);
    assert_eq!(CURAND_VER_MINOR, if expected == 12 { 3 } else { 4 });
    assert_eq!(OLDEST_DATED_VERSION, (10, CURAND_VER_MINOR));
}

#[test]
fn the_generators_and_distributions_are_there() {
    let names: Vec<&str> = ENTRY_POINTS.iter().map(EntryPoint::name).collect();
    for symbol in [
        "curandCreateGenerator",
        "curandDestroyGenerator",
        "curandSetStream",
        "curandSetPseudoRandomGeneratorSeed",
        "curandSetGeneratorOffset",
        "curandSetQuasiRandomGeneratorDimensions",
        "curandGenerate",
        "curandGenerateUniform",
        "curandGenerateUniformDouble",
        "curandGenerateNormal",
        "curandGenerateNormalDouble",
        "curandGenerateLogNormal",
        "curandGenerateLogNormalDouble",
        "curandGeneratePoisson",
        "curandGetVersion",
    ] {
        assert!(names.contains(&symbol), "{symbol} missing");
    }
    // No entry point is newer than the oldest cuRAND of the major.
    assert!(
        ENTRY_POINTS
            .iter()
            .all(|entry| entry.introduced().is_none())
    );
}

#[test]
fn statuses_and_generator_types_are_open_newtypes() {
    assert_eq!(curandStatus_t::CURAND_STATUS_SUCCESS.0, 0);
    assert_eq!(curandStatus_t::CURAND_STATUS_LENGTH_NOT_MULTIPLE.0, 105);
    assert_eq!(curandRngType_t::CURAND_RNG_PSEUDO_XORWOW.0, 101);
    assert_eq!(curandRngType_t::CURAND_RNG_PSEUDO_MRG32K3A.0, 121);
    assert_eq!(curandRngType_t::CURAND_RNG_PSEUDO_PHILOX4_32_10.0, 161);
    assert_eq!(curandRngType_t::CURAND_RNG_QUASI_SOBOL32.0, 201);
}

#[test]
fn a_library_without_the_symbol_gives_the_typed_error() {
    // SAFETY: libc's initialisers have run already in this process; only lookups happen, and
    // none of its functions is called (it has none of cuRAND's symbols).
    let curand = unsafe {
        Library::open_first("libc", [PathBuf::from("libc.so.6")], &ENTRY_POINTS)
            .map(|library| Curand::new(library))
    }
    .expect("libc.so.6 loads");
    let mut version = 0;
    // SAFETY: the call never reaches C: the symbol is missing.
    let error = unsafe { curand.curandGetVersion(&mut version) }.unwrap_err();
    assert!(
        matches!(
            error,
            LoadError::SymbolMissing {
                symbol: "curandGetVersion",
                ..
            }
        ),
        "{error:?}"
    );
}

#[test]
fn api_doc_links_the_doxygen_entry() {
    let reference = if ABI_MAJOR == 12 {
        "https://docs.nvidia.com/cuda/archive/12.9.1/curand/group__HOST.html"
    } else {
        "https://docs.nvidia.com/cuda/curand/group__HOST.html"
    };
    assert_eq!(
        api_doc!(curandCreateGenerator),
        format!(
            "\nCalls [`curandCreateGenerator`]({reference}#group__HOST_1g{}).\n",
            "56ff2b3cf7e28849f73a1e22022bcbfd"
        )
    );
}
