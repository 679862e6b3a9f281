//! The plan cache: hits, least-recently-used eviction, capacity, and capture.

use cuda_safe::{CaptureMode, Error, Graph};
use cuda_safe_libs::fft::{Complex32, Fft, FftDesc, FftDirection};

use super::{Case, CaseFn, ensure, names};

pub(crate) const CASES: &[(&str, CaseFn)] = &[
    (
        "the plan cache hits and evicts the least recently used",
        cache_hits_and_evicts,
    ),
    (
        "a capture records a cached plan's execution and refuses a miss",
        capture,
    ),
];

fn err(error: Error) -> String {
    error.to_string()
}

fn count(calls: &[String], name: &str) -> usize {
    calls.iter().filter(|call| *call == name).count()
}

fn cache_hits_and_evicts(case: &Case) -> Result<(), String> {
    let mut fft = Fft::with_memory_resource(&case.stream, case.pool.clone(), 2).map_err(err)?;
    let [a, b, c] = [8, 16, 32].map(FftDesc::c2c::<Complex32>);
    fft.plan(&a).map_err(err)?;
    fft.plan(&a).map_err(err)?;
    let calls = names(case.stub.take_log());
    ensure(count(&calls, "cufftCreate") == 1, || {
        format!("two asks of one description made {calls:?}")
    })?;
    fft.plan(&b).map_err(err)?;
    fft.plan(&a).map_err(err)?; // a is now the more recent
    case.stub.take_log();
    fft.plan(&c).map_err(err)?; // evicts b
    let calls = names(case.stub.take_log());
    ensure(
        count(&calls, "cufftCreate") == 1 && count(&calls, "cufftDestroy") == 1,
        || format!("a third plan in a cache of 2 called {calls:?}"),
    )?;
    ensure(
        fft.contains(&a) && !fft.contains(&b) && fft.contains(&c),
        || "the least recently used plan was not the one evicted".into(),
    )?;
    ensure(fft.len() == 2 && case.fft.live() == 2, || {
        format!("{} cached, {} live", fft.len(), case.fft.live())
    })?;
    // A hit calls nothing: the execution is the one cuFFT call.
    let x = case
        .pool
        .allocate_zeroed::<Complex32>(32, &case.stream)
        .map_err(err)?;
    let mut y = case
        .pool
        .allocate_zeroed::<Complex32>(32, &case.stream)
        .map_err(err)?;
    case.stub.take_log();
    fft.plan(&c)
        .map_err(err)?
        .c2c::<Complex32>(&x, &mut y, FftDirection::Forward)
        .map_err(err)?;
    let calls = names(case.stub.take_log());
    ensure(calls == ["cuCtxGetCurrent", "cufftExecC2C"], || {
        format!("a cached execution called {calls:?}")
    })?;
    fft.set_capacity(1).map_err(err)?;
    ensure(fft.contains(&c) && !fft.contains(&a), || {
        "shrinking kept the wrong plan".into()
    })?;
    match fft.set_capacity(0) {
        Err(Error::InvalidArgument(_)) => {}
        other => return Err(format!("a capacity of 0: {other:?}")),
    }
    fft.clear();
    ensure(fft.is_empty() && case.fft.live() == 0, || {
        format!("{} plans live after clear", case.fft.live())
    })?;
    ensure(fft.capacity() == 1, || "the capacity changed".into())
}

fn capture(case: &Case) -> Result<(), String> {
    let mut fft = Fft::new(&case.stream).map_err(err)?;
    let cached = FftDesc::c2c::<Complex32>(8);
    let missing = FftDesc::c2c::<Complex32>(4);
    fft.plan(&cached).map_err(err)?;
    let x = case
        .pool
        .allocate_zeroed::<Complex32>(8, &case.stream)
        .map_err(err)?;
    let mut y = case
        .pool
        .allocate_zeroed::<Complex32>(8, &case.stream)
        .map_err(err)?;
    // SAFETY: the buffers and the plan outlive the graph (dropped at the end of this function,
    // never launched); nothing is allocated on the stream while it captures.
    let graph = unsafe {
        Graph::capture(&case.stream, CaptureMode::ThreadLocal, |_| {
            fft.plan(&cached)?
                .c2c::<Complex32>(&x, &mut y, FftDirection::Forward)
        })
    }
    .map_err(err)?;
    drop(graph);
    // SAFETY: as above.
    let refused = unsafe {
        Graph::capture(&case.stream, CaptureMode::ThreadLocal, |_| {
            fft.plan(&missing).map(drop)
        })
    };
    match refused {
        Err(Error::InvalidArgument(message)) if message.contains("before capturing") => {}
        other => return Err(format!("a miss while capturing: {other:?}")),
    }
    ensure(fft.len() == 1, || format!("{} plans cached", fft.len()))
}
