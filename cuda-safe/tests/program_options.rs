//! `ProgramOptions`: every field's exact NVRTC flag, their order, and what is refused. No GPU
//! and no NVRTC needed: every test names the architecture.

use cuda_safe::{CodeKind, CppStandard, Error, Program, ProgramOptions};
use proptest::prelude::*;

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
fn the_defaults_add_only_the_architecture() {
    assert_eq!(
        sm90().to_flags(CodeKind::Cubin).unwrap(),
        ["--gpu-architecture=sm_90"]
    );
    assert_eq!(ProgramOptions::default().name, "program.cu");
}

#[test]
fn the_target_decides_the_architecture_flag() {
    for arch in ["sm_90", "compute_90", "90"] {
        let options = ProgramOptions::default().arch(arch);
        assert_eq!(
            options.to_flags(CodeKind::Ptx).unwrap(),
            ["--gpu-architecture=compute_90"]
        );
        assert_eq!(
            options.to_flags(CodeKind::Cubin).unwrap(),
            ["--gpu-architecture=sm_90"]
        );
        assert_eq!(
            options.to_flags(CodeKind::LtoIr).unwrap(),
            ["--gpu-architecture=sm_90", "-dlto"]
        );
    }
    let suffixed = ProgramOptions::default().arch("sm_90a");
    assert_eq!(
        suffixed.to_flags(CodeKind::Ptx).unwrap(),
        ["--gpu-architecture=compute_90a"]
    );
    let family = ProgramOptions::default().arch("100f");
    assert_eq!(
        family.to_flags(CodeKind::Cubin).unwrap(),
        ["--gpu-architecture=sm_100f"]
    );
}

#[test]
fn every_cpp_standard_has_its_flag() {
    for (std, flag) in [
        (CppStandard::Cpp03, "--std=c++03"),
        (CppStandard::Cpp11, "--std=c++11"),
        (CppStandard::Cpp14, "--std=c++14"),
        (CppStandard::Cpp17, "--std=c++17"),
        (CppStandard::Cpp20, "--std=c++20"),
        (CppStandard::Cpp23, "--std=c++23"),
    ] {
        assert_eq!(std.flag(), flag);
        let options = sm90().std(std);
        assert_eq!(rest(options), [flag]);
    }
}

#[test]
fn every_switch_has_its_flag() {
    let cases: [(ProgramOptions, &str); 4] = [
        (
            sm90().relocatable_device_code(true),
            "--relocatable-device-code=true",
        ),
        (sm90().debug(true), "--device-debug"),
        (sm90().lineinfo(true), "--generate-line-info"),
        (sm90().fast_math(true), "--use_fast_math"),
    ];
    for (options, flag) in cases {
        assert_eq!(rest(options), [flag]);
    }
}

#[test]
fn every_float_control_renders_true_and_false() {
    for value in [true, false] {
        let cases = [
            (sm90().ftz(value), format!("--ftz={value}")),
            (sm90().prec_div(value), format!("--prec-div={value}")),
            (sm90().prec_sqrt(value), format!("--prec-sqrt={value}")),
            (sm90().fma(value), format!("--fmad={value}")),
        ];
        for (options, flag) in cases {
            assert_eq!(rest(options), [flag]);
        }
    }
}

#[test]
fn max_registers_renders_its_count() {
    let options = sm90().max_registers(64);
    assert_eq!(rest(options), ["--maxrregcount=64"]);
}

#[test]
fn macros_paths_and_raw_options_render_in_order() {
    let options = sm90()
        .define("DEBUG")
        .define_as("N", "4")
        .define_as("SQ(x)", "((x)*(x))")
        .define_as("EMPTY", "")
        .undefine("NDEBUG")
        .undefine("OTHER")
        .include_path("/opt/include")
        .include_path("relative dir")
        .pre_include("prelude.h")
        .option("--extra-device-vectorization")
        .option("-Wno-deprecated-gpu-targets");
    assert_eq!(
        rest(options),
        [
            "-DDEBUG",
            "-DN=4",
            "-DSQ(x)=((x)*(x))",
            "-DEMPTY=",
            "-UNDEBUG",
            "-UOTHER",
            "--include-path=/opt/include",
            "--include-path=relative dir",
            "--pre-include=prelude.h",
            "--extra-device-vectorization",
            "-Wno-deprecated-gpu-targets",
        ]
    );
}

#[test]
fn name_headers_and_digest_are_not_flags() {
    let options = sm90()
        .name("saxpy.cu")
        .caller_digest(vec![1, 2, 3])
        .header("my.h", "#define X 1");
    assert_eq!(rest(options), Vec::<String>::new());
}

#[test]
fn everything_together_keeps_the_documented_order() {
    let options = ProgramOptions::default()
        .name("all.cu")
        .arch("90")
        .std(CppStandard::Cpp20)
        .relocatable_device_code(true)
        .debug(true)
        .lineinfo(true)
        .fast_math(true)
        .ftz(true)
        .prec_div(false)
        .prec_sqrt(false)
        .fma(true)
        .max_registers(32)
        .caller_digest(b"digest".to_vec())
        .define_as("N", "4")
        .undefine("M")
        .include_path("/inc")
        .pre_include("pre.h")
        .header("my.h", "")
        .option("--restrict");
    assert_eq!(
        options.to_flags(CodeKind::LtoIr).unwrap(),
        [
            "--gpu-architecture=sm_90",
            "-dlto",
            "--std=c++20",
            "--relocatable-device-code=true",
            "--device-debug",
            "--generate-line-info",
            "--use_fast_math",
            "--ftz=true",
            "--prec-div=false",
            "--prec-sqrt=false",
            "--fmad=true",
            "--maxrregcount=32",
            "-DN=4",
            "-UM",
            "--include-path=/inc",
            "--pre-include=pre.h",
            "--restrict",
        ]
    );
    let program = Program::new("", options.clone()).unwrap();
    assert_eq!(
        program.flags(CodeKind::LtoIr).unwrap(),
        options.to_flags(CodeKind::LtoIr).unwrap()
    );
}

/// Asserts that `options` is refused with an `InvalidArgument` mentioning `needle`, by
/// `validate`, `to_flags` and `Program::new` alike.
#[track_caller]
fn refused(options: ProgramOptions, needle: &str) {
    let error = options.validate().unwrap_err();
    assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
    assert!(
        error.to_string().contains(needle),
        "{needle:?} not in {error}"
    );
    assert!(matches!(
        options.to_flags(CodeKind::Cubin),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        Program::new("", options),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn empty_strings_are_refused() {
    refused(sm90().name(String::new()), "program name is empty");
    refused(sm90().define(""), "macro name is empty");
    refused(sm90().undefine(""), "macro name is empty");
    refused(sm90().include_path(""), "include path is empty");
    refused(sm90().pre_include(""), "pre-include is empty");
    refused(sm90().header("", "x"), "header name is empty");
    refused(sm90().option(""), "extra option is empty");
    refused(ProgramOptions::default().arch(String::new()), "sm_XX");
}

#[test]
fn nul_bytes_are_refused() {
    refused(sm90().name("a\0.cu"), "NUL");
    refused(sm90().define("A\0B"), "NUL");
    refused(sm90().define_as("A", "1\0"), "NUL");
    refused(sm90().undefine("A\0"), "NUL");
    refused(sm90().include_path("/a\0"), "NUL");
    refused(sm90().pre_include("p\0.h"), "NUL");
    refused(sm90().header("h\0", ""), "NUL");
    refused(sm90().header("h", "\0"), "NUL");
    refused(sm90().option("--x\0"), "NUL");
}

#[test]
fn malformed_values_are_refused() {
    for arch in ["sm90", "sm_9", "gfx90", "sm_90x", "compute_"] {
        refused(ProgramOptions::default().arch(arch), "sm_XX");
    }
    for name in ["N=4", "A B", "1ST", "-DX", "TAB\t"] {
        refused(sm90().define(name), "is not a macro name");
        refused(sm90().undefine(name), "is not a macro name");
    }
    refused(sm90().define_as("N", "1\n2"), "line break");
    refused(
        sm90().header("my.h", "a").header("my.h", "b"),
        "two in-memory headers",
    );
    refused(sm90().max_registers(0), "max_registers");
}

#[test]
fn a_nul_in_the_source_is_refused() {
    let error = Program::new("__global__ void k() {}\0", sm90()).unwrap_err();
    assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
}

proptest! {
    #[test]
    fn any_define_renders_as_one_flag(
        name in "[A-Za-z_][A-Za-z0-9_]{0,20}",
        value in proptest::option::of("[ -~]{0,30}"),
    ) {
        let options = match &value {
            Some(value) => sm90().define_as(name.clone(), value.clone()),
            None => sm90().define(name.clone()),
        };
        let expected = match value {
            Some(value) => format!("-D{name}={value}"),
            None => format!("-D{name}"),
        };
        prop_assert_eq!(rest(options), vec![expected]);
    }

    #[test]
    fn any_valid_arch_spelling_renders_the_same(
        number in 20u32..1000,
        suffix in prop_oneof![Just(""), Just("a"), Just("f")],
        prefix in prop_oneof![Just(""), Just("sm_"), Just("compute_")],
    ) {
        let options = ProgramOptions::default().arch(format!("{prefix}{number}{suffix}"));
        prop_assert_eq!(
            options.to_flags(CodeKind::Ptx).unwrap(),
            vec![format!("--gpu-architecture=compute_{number}{suffix}")]
        );
        prop_assert_eq!(
            options.to_flags(CodeKind::Cubin).unwrap(),
            vec![format!("--gpu-architecture=sm_{number}{suffix}")]
        );
    }

    #[test]
    fn list_fields_keep_their_order_and_count(
        dirs in proptest::collection::vec("[a-z/]{1,12}", 0..6),
        extras in proptest::collection::vec(
            "--[a-z-]{1,12}".prop_filter("a PCH switch is refused", |extra| !is_pch_switch(extra)),
            0..6,
        ),
    ) {
        let mut options = sm90();
        for dir in &dirs {
            options = options.include_path(dir.clone());
        }
        for extra in &extras {
            options = options.option(extra.clone());
        }
        let expected: Vec<String> = dirs
            .iter()
            .map(|dir| format!("--include-path={dir}"))
            .chain(extras.iter().cloned())
            .collect();
        prop_assert_eq!(rest(options), expected);
    }
}

/// Whether `extra` names one of NVRTC's precompiled-header switches, which only the PCH fields
/// may set.
fn is_pch_switch(extra: &str) -> bool {
    let flag = extra.trim_start_matches('-');
    [
        "pch",
        "create-pch",
        "use-pch",
        "instantiate-templates-in-pch",
    ]
    .iter()
    .any(|switch| flag.starts_with(switch))
}

#[test]
fn the_builder_sets_what_the_fields_set() {
    let built = ProgramOptions::new("saxpy.cu")
        .arch("sm_90")
        .std(CppStandard::Cpp20)
        .relocatable_device_code(true)
        .lineinfo(true)
        .debug(false)
        .fast_math(true)
        .ftz(true)
        .prec_div(false)
        .prec_sqrt(false)
        .fma(true)
        .max_registers(64)
        .caller_digest(vec![1, 2, 3])
        .define_as("N", "4");
    let by_fields = ProgramOptions::default()
        .name("saxpy.cu")
        .arch("sm_90")
        .std(CppStandard::Cpp20)
        .relocatable_device_code(true)
        .lineinfo(true)
        .fast_math(true)
        .ftz(true)
        .prec_div(false)
        .prec_sqrt(false)
        .fma(true)
        .max_registers(64)
        .caller_digest(vec![1, 2, 3])
        .defines(vec![("N".to_owned(), Some("4".to_owned()))]);
    assert_eq!(built, by_fields);
    assert_eq!(
        built.to_flags(CodeKind::Cubin).unwrap(),
        by_fields.to_flags(CodeKind::Cubin).unwrap()
    );
    assert_eq!(
        ProgramOptions::default().arch("90").arch,
        Some("90".to_owned())
    );
}

#[test]
fn precompiled_header_switches_are_refused_as_extra_options() {
    for switch in [
        "--pch",
        "-pch",
        "--create-pch=a.pch",
        "-use-pch=a.pch",
        "--pch-dir=/tmp",
        "--instantiate-templates-in-pch=true",
    ] {
        let error = sm90().option(switch).validate().unwrap_err();
        assert!(error.to_string().contains("ProgramOptions::pch"), "{error}");
    }
    assert!(sm90().option("--use_fast_math").validate().is_ok());
}
