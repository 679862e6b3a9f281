//! The operations of code: loaded images, kernels, launches, NVRTC programs and caches.

use std::cell::RefCell;

use cuda_safe::cache::InMemoryProgramCache;
use cuda_safe::{CodeKind, KernelCache, ObjectCode, Program, ProgramOptions, StreamOptions};

use cuda_safe_stub::faults::fixtures::{
    CUBIN, FATBIN, LaunchFixture, PTX, SOURCE, buffer, code_object, device, green, kernel,
    launch_fixture, launch_twice, program, stream, take,
};
use cuda_safe_stub::faults::{Op, op};

/// `CUDA_ERROR_NOT_SUPPORTED`: how a driver without the parameter query answers.
const NOT_SUPPORTED: u32 = 801;

/// Why `cuKernelGetParamInfo` failing with `CUDA_ERROR_NOT_SUPPORTED` is absorbed.
const PARAMS_OLD_DRIVER: &str = "a driver that cannot report parameters (NOT_SUPPORTED, or no \
                                 symbol before CUDA 12.4): launches unchecked, nothing logged, \
                                 never read again";

/// Why any other failure of `cuKernelGetParamInfo` is logged (the case launches twice, and the
/// one line is checked over both).
const PARAMS_FAILED: &str = "a failed parameter read is logged once per kernel, never retried; \
                             launches check the parameters read before it (Kernel::params, \
                             launch)";

pub(crate) fn code_operations(ops: &mut Vec<Op>, scratch: &std::path::Path) {
    ops.push(op(
        "ObjectCode::from_ptx",
        || (),
        |_| ObjectCode::from_ptx(PTX),
    ));
    ops.push(op(
        "ObjectCode::from_cubin",
        || (),
        |_| ObjectCode::from_cubin(CUBIN),
    ));
    ops.push(op(
        "ObjectCode::from_fatbin",
        || (),
        |_| ObjectCode::from_fatbin(FATBIN),
    ));
    let file = scratch.join("kernels.cubin");
    std::fs::write(&file, CUBIN).expect("a CUBIN file");
    ops.push(op(
        "ObjectCode::from_file",
        || (),
        move |_| ObjectCode::from_file(&file),
    ));
    ops.push(op(
        "ObjectCode::from_compiled (a compiled PTX)",
        || program().compile(CodeKind::Ptx).expect("compiled"),
        |compiled| compiled.load(),
    ));
    ops.push(
        op(
            "ObjectCode::close",
            || RefCell::new(Some(code_object())),
            |code| take(code).close(),
        )
        .releasing(),
    );
    ops.push(op("ObjectCode::get_kernel", code_object, |code| {
        code.get_kernel("twice")
    }));
    ops.push(op(
        "ObjectCode::get_kernel (a name expression)",
        || {
            program()
                .compile(CodeKind::Cubin)
                .expect("compiled")
                .load()
                .expect("loaded")
        },
        |code| code.get_kernel("twice<float>"),
    ));
    ops.push(op("ObjectCode::kernels", code_object, |code| {
        code.kernels()
    }));
    ops.push(op(
        "ObjectCode::get_global",
        || {
            (
                code_object(),
                device().context().expect("the primary context"),
            )
        },
        |(code, context)| code.get_global("counter", context),
    ));
    ops.push(op("Kernel::symbol", kernel, |k| k.symbol()));
    ops.push(
        op("Kernel::params (no context current)", kernel, |k| {
            Ok(k.params().map(<[_]>::len))
        })
        .absorbs_codes("cuKernelGetParamInfo", &[NOT_SUPPORTED], PARAMS_OLD_DRIVER)
        .logs("cuKernelGetParamInfo", PARAMS_FAILED),
    );
    ops.push(op(
        "Kernel::attributes",
        || (kernel(), device()),
        |(k, d)| k.attributes(d),
    ));
    ops.push(op(
        "Kernel::set_max_dynamic_shared_memory",
        || (kernel(), device()),
        |(k, d)| k.set_max_dynamic_shared_memory(64 << 10, d),
    ));
    ops.push(op(
        "KernelOccupancy::max_active_blocks_per_multiprocessor",
        || (kernel(), device()),
        |(k, d)| k.occupancy(d).max_active_blocks_per_multiprocessor(256, 0),
    ));
    ops.push(op(
        "KernelOccupancy::max_potential_block_size",
        || (kernel(), device()),
        |(k, d)| k.occupancy(d).max_potential_block_size(0),
    ));
    ops.push(op(
        "launch",
        || {
            let fixture = launch_fixture(stream(), kernel());
            launch_twice(&fixture, &fixture.stream).expect("a first launch");
            fixture
        },
        |f| launch_twice(f, &f.stream),
    ));
    const PARAMS: &str = "launch reads the parameter list in the stream's context: a failure to \
                          make it current leaves this launch unchecked, read again next launch";
    ops.push(
        op(
            "launch (first launch of a kernel: reads its parameters)",
            || launch_fixture(stream(), kernel()),
            |f| launch_twice(f, &f.stream),
        )
        .absorbs("cuCtxGetCurrent", PARAMS)
        .absorbs("cuCtxSetCurrent(ctx)", PARAMS)
        .absorbs_codes("cuKernelGetParamInfo", &[NOT_SUPPORTED], PARAMS_OLD_DRIVER)
        .logs("cuKernelGetParamInfo", PARAMS_FAILED),
    );
    ops.push(op(
        "launch (a buffer of another stream)",
        || {
            let fixture = launch_fixture(stream(), kernel());
            let other = stream();
            launch_twice(&fixture, &other).expect("a first launch");
            (fixture, other)
        },
        |(f, other)| launch_twice(f, other),
    ));
    ops.push(op(
        "launch (in a new green context: reads its limits)",
        || {
            let primary = launch_fixture(stream(), kernel());
            launch_twice(&primary, &primary.stream).expect("a launch reading the parameters");
            let stream = green()
                .create_stream(StreamOptions::default())
                .expect("a stream");
            LaunchFixture {
                buffer: RefCell::new(buffer(&stream)),
                stream,
                ..primary
            }
        },
        |f| launch_twice(f, &f.stream),
    ));
    ops.push(op(
        "nvrtc_supported_archs",
        || (),
        |_| cuda_safe::nvrtc_supported_archs(),
    ));
    ops.push(op(
        "Program::compile (PTX, a name expression)",
        program,
        |p| p.compile(CodeKind::Ptx),
    ));
    ops.push(op("Program::compile (CUBIN)", program, |p| {
        p.compile(CodeKind::Cubin)
    }));
    ops.push(op("Program::compile (LTO-IR)", program, |p| {
        p.compile(CodeKind::LtoIr)
    }));
    ops.push(op(
        "Program::compile (the current device's architecture)",
        || Program::new(SOURCE, ProgramOptions::default()).expect("a program"),
        |p| p.compile(CodeKind::Cubin),
    ));
    ops.push(op(
        "Program::compile_cached (a miss)",
        || (InMemoryProgramCache::new(1 << 20), program()),
        |(cache, p)| p.compile_cached(CodeKind::Ptx, cache),
    ));
    ops.push(op(
        "KernelCache::kernel (a miss: compiles, loads, looks up)",
        || {
            (
                KernelCache::new(InMemoryProgramCache::new(1 << 20)),
                program(),
            )
        },
        |(cache, p)| cache.kernel(p, CodeKind::Cubin, "twice<float>"),
    ));
}
