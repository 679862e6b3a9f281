//! The exact flag of every option, their order, and what is refused before any linker.

use super::*;

fn sm90() -> LinkerOptions {
    LinkerOptions {
        arch: Some("sm_90".into()),
        ..Default::default()
    }
}

fn flags(options: LinkerOptions) -> Vec<String> {
    options.to_flags(CodeKind::Cubin).unwrap()
}

#[test]
fn each_field_renders_its_exact_flag() {
    let cases: Vec<(LinkerOptions, &[&str])> = vec![
        (sm90(), &[]),
        (
            LinkerOptions {
                lto: true,
                ..sm90()
            },
            &["-lto"],
        ),
        (
            LinkerOptions {
                incremental: true,
                ..sm90()
            },
            &["-r"],
        ),
        (
            LinkerOptions {
                optimization_level: Some(0),
                ..sm90()
            },
            &["-O0"],
        ),
        (
            LinkerOptions {
                optimization_level: Some(3),
                ..sm90()
            },
            &["-O3"],
        ),
        (
            LinkerOptions {
                debug: true,
                ..sm90()
            },
            &["-g"],
        ),
        (
            LinkerOptions {
                lineinfo: true,
                ..sm90()
            },
            &["-lineinfo"],
        ),
        (
            LinkerOptions {
                max_registers: Some(32),
                ..sm90()
            },
            &["-maxrregcount=32"],
        ),
        (
            LinkerOptions {
                ftz: Some(true),
                ..sm90()
            },
            &["-ftz=1"],
        ),
        (
            LinkerOptions {
                ftz: Some(false),
                ..sm90()
            },
            &["-ftz=0"],
        ),
        (
            LinkerOptions {
                prec_div: Some(false),
                ..sm90()
            },
            &["-prec-div=0"],
        ),
        (
            LinkerOptions {
                prec_sqrt: Some(true),
                ..sm90()
            },
            &["-prec-sqrt=1"],
        ),
        (
            LinkerOptions {
                fma: Some(false),
                ..sm90()
            },
            &["-fma=0"],
        ),
        (
            LinkerOptions {
                split_compile: Some(0),
                ..sm90()
            },
            &["-split-compile=0"],
        ),
        (
            LinkerOptions {
                split_compile_extended: Some(4),
                ..sm90()
            },
            &["-split-compile-extended=4"],
        ),
        (
            LinkerOptions {
                kernels_used: vec!["a".into(), "b".into()],
                ..sm90()
            },
            &["-kernels-used=a", "-kernels-used=b"],
        ),
        (
            LinkerOptions {
                variables_used: vec!["v".into()],
                ..sm90()
            },
            &["-variables-used=v"],
        ),
        (
            LinkerOptions {
                optimize_unused_variables: true,
                ..sm90()
            },
            &["-optimize-unused-variables"],
        ),
        (
            LinkerOptions {
                ptxas_options: vec!["-v".into()],
                ..sm90()
            },
            &["-Xptxas=-v"],
        ),
        (
            LinkerOptions {
                time: true,
                ..sm90()
            },
            &["-time"],
        ),
        (
            LinkerOptions {
                verbose: true,
                ..sm90()
            },
            &["-verbose"],
        ),
        (
            LinkerOptions {
                no_cache: true,
                ..sm90()
            },
            &["-no-cache"],
        ),
        (
            LinkerOptions {
                extra: vec!["-nvvm-latest".into()],
                ..sm90()
            },
            &["-nvvm-latest"],
        ),
    ];
    for (options, expected) in cases {
        let rendered = flags(options.clone());
        assert_eq!(rendered[0], "-arch=sm_90", "{options:?}");
        assert_eq!(&rendered[1..], expected, "{options:?}");
    }
}

#[test]
fn every_flag_comes_in_the_fixed_order() {
    let all = LinkerOptions {
        arch: Some("90a".into()),
        lto: true,
        incremental: false,
        optimization_level: Some(3),
        debug: true,
        lineinfo: true,
        max_registers: Some(128),
        ftz: Some(true),
        prec_div: Some(false),
        prec_sqrt: Some(false),
        fma: Some(true),
        split_compile: Some(8),
        split_compile_extended: Some(2),
        kernels_used: vec!["k".into()],
        variables_used: vec!["v".into()],
        optimize_unused_variables: true,
        ptxas_options: vec!["-O2".into()],
        time: true,
        verbose: true,
        no_cache: true,
        extra: vec!["-jump-table-density=50".into()],
        backend: LinkerBackend::NvJitLink,
    };
    assert_eq!(
        all.to_flags(CodeKind::Ptx).unwrap(),
        [
            "-arch=sm_90a",
            "-ptx",
            "-lto",
            "-O3",
            "-g",
            "-lineinfo",
            "-maxrregcount=128",
            "-ftz=1",
            "-prec-div=0",
            "-prec-sqrt=0",
            "-fma=1",
            "-split-compile=8",
            "-split-compile-extended=2",
            "-kernels-used=k",
            "-variables-used=v",
            "-optimize-unused-variables",
            "-Xptxas=-O2",
            "-time",
            "-verbose",
            "-no-cache",
            "-jump-table-density=50",
        ]
    );
    assert_eq!(all.driver_lacks(), Some("lto"));
}

#[test]
fn bad_values_are_refused_before_any_linker() {
    for bad in [
        LinkerOptions {
            arch: Some("sm90".into()),
            ..Default::default()
        },
        LinkerOptions {
            optimization_level: Some(2),
            ..sm90()
        },
        LinkerOptions {
            max_registers: Some(0),
            ..sm90()
        },
        LinkerOptions {
            max_registers: Some(256),
            ..sm90()
        },
        LinkerOptions {
            kernels_used: vec![String::new()],
            ..sm90()
        },
        LinkerOptions {
            extra: vec!["-a\0b".into()],
            ..sm90()
        },
    ] {
        let error = bad.validate().unwrap_err();
        assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
    }
}

#[test]
fn ptx_and_ltoir_output_need_lto() {
    let error = sm90().to_flags(CodeKind::Ptx).unwrap_err();
    assert!(
        error.to_string().contains("PTX output needs lto"),
        "{error}"
    );
    let error = sm90().to_flags(CodeKind::LtoIr).unwrap_err();
    assert!(
        error.to_string().contains("LTO-IR output needs lto"),
        "{error}"
    );
    let lto = LinkerOptions {
        lto: true,
        ..sm90()
    };
    // LTO-IR output has no flag of its own; PTX output has `-ptx`.
    assert_eq!(
        lto.to_flags(CodeKind::LtoIr).unwrap(),
        ["-arch=sm_90", "-lto"]
    );
    assert_eq!(
        lto.to_flags(CodeKind::Ptx).unwrap(),
        ["-arch=sm_90", "-ptx", "-lto"]
    );
}

#[test]
fn an_incremental_link_renders_r_after_lto_and_refuses_ptx() {
    let incremental = LinkerOptions {
        lto: true,
        incremental: true,
        optimization_level: Some(3),
        ..sm90()
    };
    for target in [CodeKind::Cubin, CodeKind::LtoIr] {
        assert_eq!(
            incremental.to_flags(target).unwrap(),
            ["-arch=sm_90", "-lto", "-r", "-O3"],
            "{target}"
        );
    }
    let error = incremental.to_flags(CodeKind::Ptx).unwrap_err();
    assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
    assert!(error.to_string().contains("not PTX"), "{error}");
    assert_eq!(incremental.driver_lacks(), Some("lto"));
    let plain = LinkerOptions {
        incremental: true,
        ..sm90()
    };
    assert_eq!(plain.driver_lacks(), Some("incremental"));
}

#[test]
fn the_driver_linker_lacks_the_lto_options_only() {
    let plain = LinkerOptions {
        optimization_level: Some(3),
        debug: true,
        lineinfo: true,
        max_registers: Some(64),
        verbose: true,
        ..sm90()
    };
    assert_eq!(plain.driver_lacks(), None);
    let ftz = LinkerOptions {
        ftz: Some(true),
        ..sm90()
    };
    assert_eq!(ftz.driver_lacks(), Some("ftz"));
    assert_eq!(LinkerBackend::Driver.name(), "cuLink");
    assert_eq!(LinkerBackend::default(), LinkerBackend::Auto);
}
