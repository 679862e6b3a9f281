//! The arena: a forward pass captured from it against the same pass run eagerly, its
//! addresses, its refusals while busy, and its figures.

use cuda_safe::{
    Buffer, CaptureMode, Error, Graph, GraphArena, LaunchConfig, Result, StaticBuffer, Stream,
    launch,
};

use crate::stub::Stub;
use crate::{Fixture, RESERVE, Verdict, count_of, ensure, failed, refused};

/// Floats in the pass (not a multiple of the arena's alignment).
const N: usize = 1000;
/// Replays (and eager runs) compared.
const ROUNDS: usize = 20;

/// The forward pass on `stream`: `x` copied into a temporary, doubled twice, copied into a
/// second temporary (the first freed), doubled again, and handed to `finish`: `8 x`. The
/// temporaries come from `allocate`; returns their addresses.
fn pass(
    fx: &Fixture,
    stream: &Stream,
    allocate: impl Fn(usize) -> Result<Buffer>,
    x: &Buffer,
    finish: impl FnOnce(&Buffer) -> Result<()>,
) -> Result<(u64, u64)> {
    let config = LaunchConfig::new(1, 1);
    let mut first = allocate(N)?;
    first.copy_from(x)?;
    // SAFETY: twice(float*, size_t) doubles the N floats of the buffer it is given.
    unsafe {
        launch(stream, &config, &fx.twice, (&mut first, N))?;
        launch(stream, &config, &fx.twice, (&mut first, N))?;
    }
    let mut second = allocate(N)?;
    second.copy_from(&first)?;
    let addresses = (first.as_raw(), second.as_raw());
    drop(first);
    // SAFETY: as above.
    unsafe { launch(stream, &config, &fx.twice, (&mut second, N))? };
    finish(&second)?;
    Ok(addresses)
}

/// The pass captured from `arena`, between the static buffers `x` and `y`.
fn captured(
    fx: &Fixture,
    arena: &GraphArena,
    x: &StaticBuffer<f32>,
    y: &StaticBuffer<f32>,
) -> Result<(Graph, (u64, u64))> {
    let mut addresses = (0, 0);
    // SAFETY: the pass touches the arena's memory only (its temporaries and static buffers).
    let graph = unsafe {
        arena.capture(&fx.stream, CaptureMode::ThreadLocal, |capture| {
            let stream = capture.stream();
            addresses = pass(
                fx,
                stream,
                |n| arena.allocate_array::<f32>(n, stream),
                x.buffer(),
                |last| y.copy_in_from(last),
            )?;
            Ok(())
        })
    }?;
    Ok((graph, addresses))
}

/// `ROUNDS` inputs: mixed signs, magnitudes and fractions.
fn inputs(round: usize) -> Vec<f32> {
    (0..N)
        .map(|i| {
            let k = (i * 7919 + round * 104_729) % 20_011;
            (k as f32 - 10_000.0) / 37.0 * (1.0 + round as f32 / 3.0)
        })
        .collect()
}

pub(crate) fn replays_match_eager_runs(stub: &Stub, fx: &Fixture) -> Verdict {
    let arena = GraphArena::new(&fx.stream, RESERVE).map_err(failed)?;
    let x = arena.static_buffer::<f32>(N, &fx.stream).map_err(failed)?;
    let y = arena.static_buffer::<f32>(N, &fx.stream).map_err(failed)?;
    stub.take_log();
    let (graph, _) = captured(fx, &arena, &x, &y).map_err(failed)?;
    let calls = stub.take_log();
    for name in [
        "cuMemAllocAsync",
        "cuMemAllocFromPoolAsync",
        "cuGraphAddMemAllocNode",
    ] {
        ensure(count_of(&calls, name) == 0, || {
            format!("the capture allocated through {name}")
        })?;
    }
    let nodes = graph.nodes().map_err(failed)?.len();
    ensure(nodes == 6, || {
        format!("3 copies and 3 kernels are 6 nodes, not {nodes}")
    })?;
    let exec = graph.instantiate().map_err(failed)?;

    stub.take_log();
    let mut replayed = Vec::new();
    for round in 0..ROUNDS {
        x.copy_in(&inputs(round)).map_err(failed)?;
        exec.launch(&fx.stream).map_err(failed)?;
        replayed.push(y.to_vec().map_err(failed)?);
    }
    let calls = stub.take_log();
    ensure(count_of(&calls, "cuGraphLaunch") == ROUNDS, || {
        "one cuGraphLaunch per replay".into()
    })?;
    ensure(count_of(&calls, "cuEventRecord") == ROUNDS, || {
        "one event recorded after each replay".into()
    })?;
    for name in ["cuMemMap", "cuMemCreate", "cuMemAllocFromPoolAsync"] {
        ensure(count_of(&calls, name) == 0, || {
            format!("a replay allocated: {name}")
        })?;
    }

    for (round, replay) in replayed.iter().enumerate() {
        let input = fx.floats(&inputs(round));
        let mut eager = fx
            .pool
            .allocate_zeroed::<f32>(N, &fx.stream)
            .map_err(failed)?;
        pass(
            fx,
            &fx.stream,
            |n| fx.pool.allocate_array::<f32>(n, &fx.stream),
            &input,
            |last| eager.copy_from(last),
        )
        .map_err(failed)?;
        let expected = eager.to_vec::<f32>().map_err(failed)?;
        let same = replay
            .iter()
            .zip(&expected)
            .all(|(a, b)| a.to_bits() == b.to_bits());
        ensure(same && replay.len() == N, || {
            format!("replay {round} differs from the eager run")
        })?;
    }
    Ok(())
}

pub(crate) fn addresses_are_stable(fx: &Fixture) -> Verdict {
    let arena = GraphArena::new(&fx.stream, RESERVE).map_err(failed)?;
    let x = arena.static_buffer::<f32>(N, &fx.stream).map_err(failed)?;
    let y = arena.static_buffer::<f32>(N, &fx.stream).map_err(failed)?;
    let (graph, first) = captured(fx, &arena, &x, &y).map_err(failed)?;
    let inside = |address: u64| address >= arena.base() && address < arena.base() + RESERVE as u64;
    ensure(inside(first.0) && inside(first.1), || {
        format!("{first:x?} lies outside the arena")
    })?;
    // What the graph replays is nobody else's: a buffer made now gets other memory.
    let other = arena.allocate_array::<f32>(N, &fx.stream).map_err(failed)?;
    ensure(
        other.as_raw() != first.0 && other.as_raw() != first.1,
        || "a buffer got the graph's memory".into(),
    )?;
    drop(other);
    let mut exec = graph.instantiate().map_err(failed)?;
    x.copy_in(&[1.5; N]).map_err(failed)?;
    exec.launch(&fx.stream).map_err(failed)?;
    fx.stream.sync().map_err(failed)?;

    arena.reset().map_err(failed)?;
    refused(exec.launch(&fx.stream), "was reset since")?;
    let (fresh, second) = captured(fx, &arena, &x, &y).map_err(failed)?;
    ensure(first == second, || {
        format!("the capture after the reset moved: {first:x?} -> {second:x?}")
    })?;
    exec.update(&fresh).map_err(failed)?;
    x.copy_in(&[0.25; N]).map_err(failed)?;
    exec.launch(&fx.stream).map_err(failed)?;
    let out = y.to_vec().map_err(failed)?;
    ensure(out.iter().all(|&v| v == 2.0), || {
        format!("the updated executable computes 8 x: {:?}", &out[..4])
    })
}

pub(crate) fn busy_arenas_refuse(stub: &Stub, fx: &Fixture) -> Verdict {
    let arena = GraphArena::new(&fx.stream, RESERVE).map_err(failed)?;
    let x = arena.static_buffer::<f32>(N, &fx.stream).map_err(failed)?;
    let y = arena.static_buffer::<f32>(N, &fx.stream).map_err(failed)?;
    let (graph, _) = captured(fx, &arena, &x, &y).map_err(failed)?;
    let exec = graph.instantiate().map_err(failed)?;
    // A capture recording into the arena holds it too.
    // SAFETY: nothing is recorded.
    let empty = unsafe {
        arena.capture(&fx.stream, CaptureMode::ThreadLocal, |_| {
            match arena.reset() {
                Err(Error::ArenaBusy { capturing: 1, .. }) => Ok(()),
                other => Err(Error::invalid_argument(format!(
                    "a reset during a capture gave {other:?}"
                ))),
            }
        })
    }
    .map_err(failed)?;
    drop(empty);

    stub.hold_gpu(true);
    exec.launch(&fx.stream).map_err(failed)?;
    let before = arena.usage();
    let busy = |result: Result<()>, what: &str| match result {
        Err(Error::ArenaBusy {
            in_flight: 1,
            capturing: 0,
            ..
        }) => Ok(()),
        other => Err(format!("{what} while a launch runs gave {other:?}")),
    };
    busy(arena.reset(), "a reset")?;
    busy(arena.clone().close(), "a close")?;
    // The launch outlives its executable.
    drop(exec);
    busy(arena.reset(), "a reset after the executable was dropped")?;
    ensure(arena.usage() == before, || {
        "a refused reset freed something".into()
    })?;
    stub.hold_gpu(false);
    arena.reset().map_err(failed)?;
    ensure(arena.usage().held == 0, || "the reset freed nothing".into())?;

    // Closing: refused while buffers hold the arena; done once nothing else does (what the
    // graphs kept is dropped by the crate's reaper thread).
    match arena.clone().close() {
        Err(Error::ArenaBusy { holders, .. }) if holders >= 3 => {}
        other => {
            return Err(format!(
                "a close while buffers hold the arena gave {other:?}"
            ));
        }
    }
    drop((x, y));
    crate::wait_until("nothing else holds the arena", || {
        matches!(
            arena.clone().close(),
            Err(Error::ArenaBusy { holders: 1, .. })
        )
    })?;
    arena.close().map_err(failed)
}

pub(crate) fn usage_is_reported(fx: &Fixture) -> Verdict {
    let arena = GraphArena::new(&fx.stream, RESERVE).map_err(failed)?;
    let start = arena.usage();
    ensure(
        start.reserved == RESERVE && start.mapped > 0 && start.in_use == 0,
        || format!("a new arena: {start:?}"),
    )?;
    let x = arena.static_buffer::<f32>(N, &fx.stream).map_err(failed)?;
    let big = arena
        .allocate(start.mapped * 2, &fx.stream)
        .map_err(failed)?;
    let grown = arena.usage();
    ensure(
        grown.mapped >= start.mapped * 2 + N * 4 && grown.in_use == 4096 + start.mapped * 2,
        || format!("after a static buffer and a buffer past the mapping: {grown:?}"),
    )?;
    ensure(big.as_raw() == x.as_raw() + 4096, || {
        "the arena packs allocations".into()
    })?;
    let scratch = start.mapped / 2;
    // SAFETY: nothing is recorded but an allocation.
    let graph = unsafe {
        arena.capture(&fx.stream, CaptureMode::ThreadLocal, |capture| {
            drop(arena.allocate(scratch, capture.stream())?);
            Ok(())
        })
    }
    .map_err(failed)?;
    let captured = arena.usage();
    ensure(
        captured.held == scratch && captured.high_water == grown.in_use + scratch,
        || format!("after a capture freed {scratch} bytes: {captured:?}"),
    )?;
    match arena.allocate(RESERVE, &fx.stream) {
        Err(error @ Error::ArenaFull { .. }) if error.is_out_of_memory() => {}
        other => return Err(format!("more than the reservation gave {other:?}")),
    }
    drop((big, graph));
    arena.reset().map_err(failed)?;
    let after = arena.usage();
    ensure(
        after.in_use == 4096 && after.held == 0 && after.high_water == captured.high_water,
        || format!("after a reset: {after:?}"),
    )?;
    drop(x);
    Ok(())
}

pub(crate) fn captures_must_name_the_arena(fx: &Fixture) -> Verdict {
    let arena = GraphArena::new(&fx.stream, RESERVE).map_err(failed)?;
    // SAFETY: nothing is recorded.
    let outcome = unsafe {
        Graph::capture(&fx.stream, CaptureMode::ThreadLocal, |capture| {
            refused(
                arena.allocate(64, capture.stream()).map(drop),
                "when the capture uses it",
            )
            .and_then(|()| {
                refused(
                    arena.static_buffer::<u8>(64, capture.stream()).map(drop),
                    "before the capture",
                )
            })
            .map_err(Error::invalid_argument)
        })
    };
    outcome.map(drop).map_err(failed)
}

/// `CUDA_ERROR_OUT_OF_MEMORY` and `CUDA_ERROR_INVALID_VALUE`, as the stub fails calls with.
const OUT_OF_MEMORY: i32 = 2;
const INVALID_VALUE: i32 = 1;

pub(crate) fn failures_leave_the_arena_whole(stub: &Stub, fx: &Fixture) -> Verdict {
    let arena = GraphArena::new(&fx.stream, RESERVE).map_err(failed)?;
    let before = arena.usage();
    // A growth the driver refuses gives the range back.
    stub.fail("cuMemCreate", OUT_OF_MEMORY, 1);
    match arena.allocate(before.mapped * 2, &fx.stream) {
        Err(error) if error.is_out_of_memory() => {}
        other => return Err(format!("a refused growth gave {other:?}")),
    }
    ensure(arena.usage() == before, || {
        format!("a refused growth left {:?}", arena.usage())
    })?;
    let grown = arena
        .allocate(before.mapped * 2, &fx.stream)
        .map_err(failed)?;
    ensure(grown.as_raw() == arena.base(), || {
        "the range refused before is the one given now".into()
    })?;
    drop(grown);

    // A launch whose event cannot be recorded waits for the stream: nothing is left running.
    let x = arena.static_buffer::<f32>(N, &fx.stream).map_err(failed)?;
    let y = arena.static_buffer::<f32>(N, &fx.stream).map_err(failed)?;
    let (graph, _) = captured(fx, &arena, &x, &y).map_err(failed)?;
    let exec = graph.instantiate().map_err(failed)?;
    stub.take_log();
    stub.fail("cuEventRecord", INVALID_VALUE, 1);
    match exec.launch(&fx.stream) {
        Err(error) if error.cuda_code().is_some() => {}
        other => return Err(format!("a failed event record gave {other:?}")),
    }
    let calls = stub.take_log();
    ensure(count_of(&calls, "cuStreamSynchronize") == 1, || {
        "the launch was waited for".into()
    })?;
    arena.reset().map_err(failed)?;
    drop((exec, x, y));
    Ok(())
}
