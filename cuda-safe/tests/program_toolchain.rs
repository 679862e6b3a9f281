//! `ProgramOptions`' precompiled headers and CUDA headers: their exact flags and order, what is
//! refused before NVRTC, and what the cache key makes of them. No GPU and no NVRTC needed:
//! every test names the architecture and the compiler version.

use cuda_safe::cache::InMemoryProgramCache;
use cuda_safe::{CodeKind, CudaHeaders, Error, Pch, Program, ProgramOptions};

fn sm90() -> ProgramOptions {
    ProgramOptions::default().arch("sm_90")
}

/// The flags after the architecture flag, for a CUBIN.
fn rest(options: ProgramOptions) -> Vec<String> {
    let flags = options.to_flags(CodeKind::Cubin).unwrap();
    assert_eq!(flags[0], "--gpu-architecture=sm_90");
    flags[1..].to_vec()
}

#[test]
fn each_pch_mode_has_its_flag() {
    for (pch, flag) in [
        (Pch::Automatic, "--pch"),
        (Pch::Create("a.pch".into()), "--create-pch=a.pch"),
        (Pch::Use("/p/a.pch".into()), "--use-pch=/p/a.pch"),
    ] {
        assert_eq!(pch.flag(), flag);
        assert_eq!(rest(sm90().pch(pch)), [flag]);
    }
}

#[test]
fn pch_and_cuda_headers_keep_the_documented_order() {
    let options = sm90()
        .pch_messages(false)
        .pch_verbose(true)
        .instantiate_templates_in_pch(false)
        .include_path("/mine")
        .cuda_headers(CudaHeaders::Bundled(Some("/opt/nvrtc-headers".into())))
        .pre_include("pre.h")
        .pch(Pch::Automatic)
        .pch_dir("/tmp/pch")
        .option("--restrict");
    assert_eq!(
        rest(options),
        [
            "--include-path=/mine",
            "--use-bundled-headers=/opt/nvrtc-headers",
            "--pre-include=pre.h",
            "--pch",
            "--pch-dir=/tmp/pch",
            "--pch-messages=false",
            "--pch-verbose=true",
            "--instantiate-templates-in-pch=false",
            "--restrict",
        ]
    );
}

/// `options` is refused with an `InvalidArgument` mentioning `needle`, by `validate` and
/// `Program::new` alike.
#[track_caller]
fn refused(options: ProgramOptions, needle: &str) {
    let error = options.validate().unwrap_err();
    assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
    assert!(
        error.to_string().contains(needle),
        "{needle:?} not in {error}"
    );
    assert!(matches!(
        Program::new("", options),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn pch_fields_without_pch_and_bad_names_are_refused() {
    refused(
        sm90().pch_dir("/tmp/pch"),
        "pch_dir has no effect without pch",
    );
    refused(sm90().pch_messages(true), "pch_messages");
    refused(
        sm90().instantiate_templates_in_pch(true),
        "instantiate_templates_in_pch",
    );
    refused(sm90().pch(Pch::Create(String::new())), "PCH file is empty");
    refused(sm90().pch(Pch::Use("a\0b".into())), "NUL");
    refused(
        sm90().pch(Pch::Automatic).pch_dir(""),
        "PCH folder is empty",
    );
    refused(
        sm90().cuda_headers(CudaHeaders::Bundled(Some("relative/headers".into()))),
        "not an absolute path",
    );
}

#[test]
fn automatic_pch_and_bundled_headers_key_without_a_caller_digest() {
    let key = |options: ProgramOptions| {
        Program::new("__global__ void k() {}", options)
            .unwrap()
            .cache_key_for_compiler(CodeKind::Cubin, "13.3")
            .unwrap()
    };
    let plain = key(sm90());
    let automatic = key(sm90().pch(Pch::Automatic).pch_dir("/tmp/pch"));
    let bundled = key(sm90().cuda_headers(CudaHeaders::Bundled(Some("/opt/h".into()))));
    let elsewhere = key(sm90().cuda_headers(CudaHeaders::Bundled(Some("/opt/g".into()))));
    for (index, other) in [automatic, bundled, elsewhere].iter().enumerate() {
        assert_ne!(*other, plain, "variant {index}");
    }
    assert_ne!(automatic, bundled);
    assert_ne!(bundled, elsewhere);
}

#[test]
fn a_used_pch_needs_a_caller_digest_to_be_keyed() {
    let program =
        |options: ProgramOptions| Program::new("__global__ void k() {}", options).unwrap();
    let used = sm90().pch(Pch::Use("/p/a.pch".into()));
    let error = program(used.clone())
        .cache_key_for_compiler(CodeKind::Cubin, "12.9")
        .unwrap_err();
    assert!(error.to_string().contains("precompiled header"), "{error}");
    let digested = used.caller_digest(b"sha-256 of a.pch".to_vec());
    assert!(
        program(digested)
            .cache_key_for_compiler(CodeKind::Cubin, "12.9")
            .is_ok()
    );
}

#[test]
fn creating_a_pch_through_a_cache_is_refused_before_nvrtc() {
    let program = Program::new(
        "__global__ void k() {}",
        sm90().pch(Pch::Create("a.pch".into())),
    )
    .unwrap();
    let error = program
        .compile_cached(CodeKind::Cubin, &InMemoryProgramCache::new(1 << 20))
        .unwrap_err();
    assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
    assert!(error.to_string().contains("Program::compile"), "{error}");
    // The key itself is fine: the file is an output, not an input.
    assert!(
        program
            .cache_key_for_compiler(CodeKind::Cubin, "12.9")
            .is_ok()
    );
}
