//! What keeps an arena's memory from being freed under a graph that may use it: a launch in
//! progress refuses a reset, a capture into a graph after a reset leaves the graph refused, a
//! binding that fails leaves a defect, a launch neither tracked nor waited for keeps the arena
//! busy, an executable of two arenas leaves no event behind, device launch and a static
//! buffer copied over itself are refused.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use cuda_safe::{CaptureMode, Error, Graph, GraphArena, InstantiateOptions, LaunchConfig, Result};

use crate::stub::Stub;
use crate::{Fixture, RESERVE, Verdict, ensure, failed, live_of, refused};

const MODE: CaptureMode = CaptureMode::ThreadLocal;
/// Floats of the captured scratch buffer.
const N: usize = 256;
/// How long a reset asked from inside a launch may take before it counts as let through.
const PATIENCE: Duration = Duration::from_secs(5);
/// What a reset refused while one launch is being made answers.
const BUSY: &str = "busy with one launch";
/// `CUDA_ERROR_INVALID_VALUE`, as the stub fails calls with.
const INVALID_VALUE: i32 = 1;

/// A graph captured using `arenas` (the first captures): a scratch buffer from each, doubled.
fn scratch_graph(fx: &Fixture, arenas: &[&GraphArena]) -> Result<Graph> {
    let config = LaunchConfig::new(1, 1);
    // SAFETY: the work touches the arenas' scratch buffers only.
    unsafe {
        arenas[0].capture(&fx.stream, MODE, |capture| {
            for arena in arenas {
                capture.use_arena(arena)?;
                let mut scratch = arena.allocate_array::<f32>(N, capture.stream())?;
                launch_twice(fx, capture.stream(), &config, &mut scratch)?;
            }
            Ok(())
        })
    }
}

/// `twice` over `buffer`'s `N` floats on `stream`.
///
/// # Safety
///
/// `buffer` holds `N` floats.
unsafe fn launch_twice(
    fx: &Fixture,
    stream: &cuda_safe::Stream,
    config: &LaunchConfig,
    buffer: &mut cuda_safe::Buffer,
) -> Result<()> {
    // SAFETY: twice(float*, size_t) doubles the N floats of the buffer (the caller's promise).
    unsafe { cuda_safe::launch(stream, config, &fx.twice, (buffer, N)) }
}

/// Asks `arena` for a reset from another thread (the launching one runs a host node, where
/// CUDA must not be called), waiting at most `PATIENCE`.
fn reset_elsewhere(arena: &GraphArena) -> String {
    let (sender, receiver) = mpsc::channel();
    let arena = arena.clone();
    thread::spawn(move || {
        let answer = match arena.reset() {
            Err(Error::ArenaBusy { in_flight: 1, .. }) => BUSY.to_owned(),
            other => format!("{other:?}"),
        };
        let _ = sender.send(answer);
    });
    receiver
        .recv_timeout(PATIENCE)
        .unwrap_or_else(|_| "no answer: the reset went on to ask the driver".into())
}

pub(crate) fn a_launch_in_progress_refuses_a_reset(fx: &Fixture) -> Verdict {
    let arena = GraphArena::new(&fx.stream, RESERVE).map_err(failed)?;
    let mut graph = scratch_graph(fx, &[&arena]).map_err(failed)?;
    let answers = Arc::new(Mutex::new(Vec::new()));
    let (asker, seen) = (arena.clone(), Arc::clone(&answers));
    graph
        .add_host(&[], move || {
            let answer = reset_elsewhere(&asker);
            seen.lock().unwrap_or_else(|p| p.into_inner()).push(answer);
        })
        .map_err(failed)?;
    let exec = graph.instantiate().map_err(failed)?;
    exec.launch(&fx.stream).map_err(failed)?;
    fx.stream.sync().map_err(failed)?;
    let answers = answers.lock().unwrap_or_else(|p| p.into_inner()).clone();
    ensure(answers == [BUSY], || {
        format!("a reset during the launch gave {answers:?}")
    })?;
    arena.reset().map_err(failed)?;
    refused(exec.launch(&fx.stream), "was reset since")
}

pub(crate) fn captures_into_a_graph_keep_its_stale_binding(stub: &Stub, fx: &Fixture) -> Verdict {
    let arena = GraphArena::new(&fx.stream, RESERVE).map_err(failed)?;
    let mut graph = scratch_graph(fx, &[&arena]).map_err(failed)?;
    arena.reset().map_err(failed)?;
    // SAFETY: nothing is recorded.
    unsafe { graph.capture_into(&fx.stream, MODE, &[], |capture| capture.use_arena(&arena)) }
        .map_err(failed)?;
    let exec = graph.instantiate().map_err(failed)?;
    refused(exec.launch(&fx.stream), "was reset since")?;
    drop(exec);

    // A binding that fails leaves the graph with a defect: its new nodes are in it.
    let mut other = Graph::new(fx.stream.context()).map_err(failed)?;
    stub.fail("cuUserObjectCreate", INVALID_VALUE, 1);
    // SAFETY: nothing is recorded.
    let bound =
        unsafe { other.capture_into(&fx.stream, MODE, &[], |capture| capture.use_arena(&arena)) };
    ensure(bound.is_err(), || {
        format!("a failed binding gave {bound:?}")
    })?;
    refused(
        other.instantiate().map(drop),
        "a capture into the graph failed",
    )
}

pub(crate) fn untracked_launches_keep_the_arena_busy(stub: &Stub, fx: &Fixture) -> Verdict {
    let arena = GraphArena::new(&fx.stream, RESERVE).map_err(failed)?;
    let exec = scratch_graph(fx, &[&arena])
        .and_then(Graph::instantiate)
        .map_err(failed)?;
    stub.fail("cuEventRecord", INVALID_VALUE, 1);
    stub.fail("cuStreamSynchronize", INVALID_VALUE, 1);
    ensure(exec.launch(&fx.stream).is_err(), || {
        "a launch neither recorded nor waited for succeeded".into()
    })?;
    match arena.reset() {
        Err(Error::ArenaBusy { in_flight: 1, .. }) => {}
        other => return Err(format!("a reset after an untracked launch gave {other:?}")),
    }
    // A later launch's record tracks the earlier one too (they run in order).
    exec.launch(&fx.stream).map_err(failed)?;
    fx.stream.sync().map_err(failed)?;
    arena.reset().map_err(failed)
}

pub(crate) fn executables_of_two_arenas_leave_no_event(stub: &Stub, fx: &Fixture) -> Verdict {
    let first = GraphArena::new(&fx.stream, RESERVE).map_err(failed)?;
    let second = GraphArena::new(&fx.stream, RESERVE).map_err(failed)?;
    let graph = scratch_graph(fx, &[&first, &second]).map_err(failed)?;
    let events = live_of(stub, "event");
    let exec = graph.instantiate().map_err(failed)?;
    exec.launch(&fx.stream).map_err(failed)?;
    fx.stream.sync().map_err(failed)?;
    ensure(live_of(stub, "event") == events + 1, || {
        "one event per executable".into()
    })?;
    drop(exec);
    first.reset().map_err(failed)?;
    second.reset().map_err(failed)?;
    crate::wait_until("the executable's event is destroyed", || {
        live_of(stub, "event") == events
    })
}

pub(crate) fn device_launch_and_self_copies_are_refused(fx: &Fixture) -> Verdict {
    let arena = GraphArena::new(&fx.stream, RESERVE).map_err(failed)?;
    let device = InstantiateOptions::default().device_launch(true);
    let graph = scratch_graph(fx, &[&arena]).map_err(failed)?;
    refused(graph.instantiate_with(device).map(drop), "device launch")?;
    let fresh = scratch_graph(fx, &[&arena]).map_err(failed)?;
    let mut plain = Graph::new(fx.stream.context()).map_err(failed)?;
    let x = fx.floats(&[1.0; N]);
    let config = LaunchConfig::new(1, 1);
    // SAFETY: twice doubles the N floats of `x`, which the graph keeps.
    unsafe { plain.add_kernel(&[], &config, &fx.twice, (&x, N)) }.map_err(failed)?;
    let mut exec = plain.instantiate_with(device).map_err(failed)?;
    refused(exec.update(&fresh), "device launch")?;

    let input = arena.static_buffer::<f32>(N, &fx.stream).map_err(failed)?;
    refused(input.copy_in_from(input.buffer()), "overlaps")?;
    let other = arena.static_buffer::<f32>(N, &fx.stream).map_err(failed)?;
    other.copy_in(&[3.0; N]).map_err(failed)?;
    input.copy_in_from(other.buffer()).map_err(failed)?;
    let copied = input.to_vec().map_err(failed)?;
    ensure(copied.iter().all(|&v| v == 3.0), || {
        "a copy from another static buffer".into()
    })
}
