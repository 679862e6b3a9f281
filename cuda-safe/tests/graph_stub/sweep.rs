//! Every driver call of each new graph operation, failed in turn: the operation must return an
//! error naming the call (or, for a release inside it, log one), with nothing absorbed but
//! what is listed with the operation and why.
//!
//! The operations keep only what the test holds alive (its buffers, kernels and events), so the
//! crate's reaper thread drops shared handles without driver calls, and each run's calls are
//! the same.

use std::sync::Arc;

use cuda_safe::{
    Buffer, CaptureMode, Copy3d, CopyNodeSide, Graph, LaunchAttributes, LaunchConfig, Result,
};

use crate::Fixture;
use crate::stub::{Stub, take_error_logs};

/// `CUDA_ERROR_OUT_OF_MEMORY`, the code every call is failed with.
const OUT_OF_MEMORY: i32 = 2;

/// A call whose failure an operation absorbs by design: its name, which of its calls (from 1),
/// and why.
type Absorbed = (&'static str, usize, &'static str);

/// One operation: its name, what it runs, and the calls whose failure it absorbs.
struct Operation<'a> {
    name: &'static str,
    run: Box<dyn Fn() -> Result<()> + 'a>,
    absorbed: &'static [Absorbed],
}

/// Fails each call of `op` in turn; the number of faults, or what went wrong.
fn sweep(stub: &Stub, op: &Operation<'_>) -> std::result::Result<usize, String> {
    stub.take_log();
    take_error_logs();
    (op.run)().map_err(|error| format!("the clean run failed: {error}"))?;
    let calls = stub.take_log();
    let logged = take_error_logs();
    if !logged.is_empty() {
        return Err(format!("the clean run logged errors: {logged:?}"));
    }
    for (index, call) in calls.iter().enumerate() {
        let nth = calls[..=index]
            .iter()
            .filter(|earlier| earlier.name == call.name)
            .count();
        stub.fail(&call.name, OUT_OF_MEMORY, nth);
        let outcome = (op.run)();
        let fired = stub.faults_pending() == 0;
        stub.disarm();
        stub.take_log();
        let logged = take_error_logs();
        let absorbed = op
            .absorbed
            .iter()
            .any(|(name, which, _)| *name == call.name && *which == nth);
        let named = |text: &str| text.contains(call.name.as_str());
        let fine = fired
            && match &outcome {
                Err(error) => named(&chain(error)),
                Ok(()) => absorbed || logged.iter().any(|line| named(line)),
            };
        if !fine {
            return Err(format!(
                "failing {} #{nth} (fired: {fired}): {outcome:?}; logged {logged:?}",
                call.name
            ));
        }
    }
    Ok(calls.len())
}

/// `error` and its causes, one after the other.
fn chain(error: &cuda_safe::Error) -> String {
    let mut text = error.to_string();
    let mut cause = std::error::Error::source(error);
    while let Some(next) = cause {
        text.push_str(&format!(": {next}"));
        cause = next.source();
    }
    text
}

/// The operations, each building, running and dropping a graph.
fn operations<'a>(
    fx: &'a Fixture,
    x: &'a Arc<Buffer>,
    counter: &'a Arc<Buffer>,
) -> Vec<Operation<'a>> {
    let one = LaunchConfig::new(1, 1);
    vec![
        Operation {
            name: "a clustered kernel node with a priority, launched",
            run: Box::new(move || {
                let mut graph = Graph::new(fx.stream.context())?;
                let attributes = LaunchAttributes::default().priority(-1);
                let config = LaunchConfig::clusters(2, 2, 32)?;
                // SAFETY: twice doubles the 4 floats of `x`, kept by the test.
                unsafe {
                    graph.add_kernel_with(&[], &config, &attributes, &fx.twice, (x, 4usize))
                }?;
                graph.instantiate()?.launch(&fx.stream)
            }),
            absorbed: &[],
        },
        Operation {
            name: "definition node updates",
            run: Box::new(move || {
                let mut graph = Graph::new(fx.stream.context())?;
                let fill = graph.add_memset(&[], x, 1.0f32)?;
                graph.set_memset(fill, counter, 3u32)?;
                let host = graph.add_host(&[fill], || {})?;
                graph.set_host(host, || {})?;
                // SAFETY: as above.
                let kernel = unsafe { graph.add_kernel(&[host], &one, &fx.twice, (x, 2usize)) }?;
                // SAFETY: as above.
                unsafe { graph.set_kernel_args(&kernel, (x, 4usize)) }
            }),
            absorbed: &[],
        },
        Operation {
            name: "executable node updates, handed over on drop",
            run: Box::new(move || {
                let mut graph = Graph::new(fx.stream.context())?;
                let fill = graph.add_memset(&[], x, 1.0f32)?;
                let host = graph.add_host(&[fill], || {})?;
                let mut exec = graph.instantiate()?;
                exec.set_memset(fill, counter, 3u32)?;
                exec.set_host(host, || {})?;
                exec.launch(&fx.stream)?;
                exec.close()
            }),
            absorbed: &[
                (
                    "cuGraphExecUpdate_v2",
                    1,
                    "a refused handover waits for the context instead (logged at debug level)",
                ),
                (
                    "cuCtxGetCurrent",
                    2,
                    "the handover's context check: it waits for the context instead",
                ),
            ],
        },
        Operation {
            name: "a 3-D copy node",
            run: Box::new(move || {
                let mut graph = Graph::new(fx.stream.context())?;
                let (src, dst) = (
                    CopyNodeSide::buffer::<f32>(x, 8, 1)?,
                    CopyNodeSide::buffer::<f32>(x, 8, 1)?,
                );
                let copy = Copy3d::boxed(8, 1, 1).to_offset(0, 0, 1);
                let node = graph.add_memcpy_3d(&[], &dst, &src, &copy)?;
                graph.set_memcpy_3d(node, &dst, &src, &copy)?;
                graph.instantiate()?.launch(&fx.stream)
            }),
            absorbed: &[],
        },
        Operation {
            name: "a clone, a node found in it and removed",
            run: Box::new(move || {
                let mut graph = Graph::new(fx.stream.context())?;
                let first = graph.add_empty(&[])?;
                graph.add_empty(&[first])?;
                let mut clone = graph.try_clone()?;
                let found = graph.node_in_clone(&clone, first)?;
                clone.remove_node(found)?;
                clone.instantiate()?.launch(&fx.stream)
            }),
            absorbed: &[],
        },
        Operation {
            name: "a while node captured inside a capture",
            run: Box::new(move || {
                // SAFETY: twice doubles the 4 floats of `x`, count_down updates `counter`'s
                // int; the test keeps both.
                let graph = unsafe {
                    Graph::capture(&fx.stream, CaptureMode::ThreadLocal, |capture| {
                        let again = capture.conditional_handle(Some(1))?;
                        capture.add_while(&again, &fx.body, |body| {
                            body.launch(&one, &fx.twice, (x, 4usize))?;
                            body.launch(&one, &fx.count_down, (again, counter))?;
                            Ok(())
                        })?;
                        Ok(())
                    })
                }?;
                graph.instantiate()?.launch(&fx.stream)
            }),
            absorbed: &[],
        },
    ]
}

/// Sweeps every operation: its name and the faults it took, or what went wrong.
pub(crate) fn every_call_fails_in_turn(
    stub: &Stub,
    fx: &Fixture,
) -> Vec<(&'static str, std::result::Result<usize, String>)> {
    let x = fx.floats(&[1.0; 16]);
    let counter = fx.words(1);
    operations(fx, &x, &counter)
        .iter()
        .map(|op| (op.name, sweep(stub, op)))
        .collect()
}
