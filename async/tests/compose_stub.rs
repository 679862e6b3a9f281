//! Stream pools and composed operations against the stub driver: the pool's policies, an
//! operation that makes no driver call before its first poll and then queues its steps in
//! order on one stream, what it uses kept until the held GPU has passed it even when its
//! future is dropped, a failing or panicking step returning at once (no thread waits), and an
//! operation captured into a graph and replayed.
//!
//! A `main` of its own (`harness = false`): the stub is built and the library variables are set
//! before anything else runs.

mod support;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::ExitCode;
use std::task::Poll;
use std::time::Duration;

use cuda_safe::{Buffer, Error, Kernel, LaunchConfig, ObjectCode};
use cuda_safe_async::{
    self as completion, DeviceOp, GraphExecExt, PoolOptions, PoolPolicy, Reactor, StreamPool, op,
};
use cuda_safe_stub::{Stub, ordering::PTX};
use pollster::block_on;
use support::{Case, Fixture, Held, Verdict, ensure, failed, poll_once, wait_until};

/// Floats per buffer.
const N: usize = 1024;

/// The calls that would block the calling thread until the GPU is done.
const BLOCKING: [&str; 3] = [
    "cuStreamSynchronize",
    "cuCtxSynchronize",
    "cuEventSynchronize",
];

fn blocking_calls(stub: &Stub) -> u64 {
    BLOCKING.iter().map(|name| stub.calls(name)).sum()
}

/// `twice`, which the stub runs by doubling `n` floats, and a configuration for `N`.
fn twice() -> cuda_safe::Result<(Kernel, LaunchConfig)> {
    Ok((
        ObjectCode::from_ptx(PTX)?.get_kernel("twice")?,
        LaunchConfig::for_num_elements(N, 256)?,
    ))
}

/// Doubles the buffer's `N` floats on the operation's stream.
fn doubled(x: Buffer, kernel: Kernel, config: LaunchConfig) -> impl DeviceOp<Output = Buffer> {
    op::on_stream(x, move |x, s| {
        // SAFETY: twice(float*, size_t) doubles `N` floats, which the buffer holds.
        unsafe { s.launch(&config, &kernel, (&mut *x, N)) }
    })
}

/// Upload, doubling, download: the server's request.
fn request(
    x: Buffer,
    values: Vec<f32>,
    (kernel, config): (Kernel, LaunchConfig),
) -> impl DeviceOp<Output = (Buffer, op::Fetched<f32>)> {
    op::upload(x, values)
        .then(move |x| doubled(x, kernel, config))
        .then(op::download::<f32>)
}

fn pool(fx: &Fixture, streams: usize, policy: PoolPolicy) -> cuda_safe::Result<StreamPool> {
    let options = PoolOptions::default().streams(streams).policy(policy);
    StreamPool::new(fx.stream.context(), options)
}

/// Round robin hands the streams out in turn; least busy the one with the fewest operations
/// in flight, counted until the GPU has passed them (a dropped future's included).
fn the_pool_spreads_work_by_its_policy(stub: &Stub, fx: &Fixture) -> Verdict {
    let turns = pool(fx, 4, PoolPolicy::RoundRobin).map_err(failed)?;
    let order: Vec<usize> = (0..8)
        .map(|_| {
            let stream = turns.next();
            turns.streams().iter().position(|s| s.same_as(&stream))
        })
        .map(|index| index.unwrap_or(usize::MAX))
        .collect();
    ensure(order == [0, 1, 2, 3, 0, 1, 2, 3], || {
        format!("round robin gave {order:?}")
    })?;
    ensure(
        StreamPool::new(fx.stream.context(), PoolOptions::default().streams(0)).is_err(),
        || "a pool of no stream was made".into(),
    )?;

    completion::set_spin_budget(Duration::ZERO);
    let least = pool(fx, 3, PoolPolicy::LeastBusy).map_err(failed)?;
    let held = Held::new(stub);
    let mut first = op::value(()).run(&least);
    let mut second = op::value(()).run(&least);
    ensure(
        poll_once(&mut first).is_pending() && poll_once(&mut second).is_pending(),
        || "held work was done".into(),
    )?;
    // The two busy streams are passed over, whatever the turn says.
    let third = least.next();
    let idle = least.in_flight().iter().position(|&n| n == 0);
    ensure(
        idle.is_some_and(|index| least.streams()[index].same_as(&third)),
        || {
            format!(
                "least busy picked another stream than the idle one: {:?}",
                least.in_flight()
            )
        },
    )?;
    drop(first);
    ensure(least.in_flight().iter().sum::<usize>() == 2, || {
        format!(
            "a dropped operation stopped counting before the GPU passed it: {:?}",
            least.in_flight()
        )
    })?;
    drop(held);
    block_on(second).map_err(failed)?;
    wait_until("the dropped operation is passed", || {
        least.in_flight().iter().sum::<usize>() == 0
    })
}

/// Building an operation and its future calls no driver entry point; the first poll queues
/// the upload, the launch and the download in that order, then the completion's event, all on
/// one stream of the pool; the result is the doubled input.
fn an_operation_is_lazy_and_ordered(stub: &Stub, fx: &Fixture) -> Verdict {
    completion::set_spin_budget(Duration::from_micros(20));
    let pool = pool(fx, 2, PoolPolicy::RoundRobin).map_err(failed)?;
    let x = fx
        .pool
        .allocate_array::<f32>(N, &fx.other)
        .map_err(failed)?;
    let code = twice().map_err(failed)?;
    let input: Vec<f32> = (0..N).map(|i| i as f32).collect();
    stub.take_log();
    let mut future = request(x, input.clone(), code).run(&pool);
    let before = stub.take_log();
    ensure(before.is_empty() && !future.is_submitted(), || {
        format!("calls before the first poll: {before:?}")
    })?;
    let result = loop {
        if let Poll::Ready(result) = poll_once(&mut future) {
            break result;
        }
    };
    let (x, fetched) = result.map_err(failed)?;
    let calls: Vec<String> = stub
        .take_log()
        .into_iter()
        .map(|call| call.name)
        .filter(|name| {
            [
                "cuMemcpyAsync",
                "cuLaunchKernel",
                "cuLaunchKernelEx",
                "cuEventRecord",
            ]
            .contains(&name.as_str())
        })
        .collect();
    ensure(
        calls.iter().map(|name| name.trim_end_matches("Ex")).eq([
            "cuMemcpyAsync",
            "cuLaunchKernel",
            "cuMemcpyAsync",
            "cuEventRecord",
        ]),
        || format!("the steps were queued as {calls:?}"),
    )?;
    ensure(x.stream().same_as(&pool.streams()[0]), || {
        "the buffer was not moved onto the pool's stream".into()
    })?;
    let values = fetched.to_vec().map_err(failed)?;
    ensure(
        values.iter().zip(&input).all(|(v, i)| *v == 2.0 * i),
        || format!("read {:?}...", &values[..4]),
    )
}

/// A future dropped while the GPU is held leaves its staging memory and buffers to the
/// reactor until the GPU has passed the work; fetched values cannot be read inside a `then`.
fn a_dropped_operation_keeps_what_it_uses(stub: &Stub, fx: &Fixture, reactor: &Reactor) -> Verdict {
    completion::set_spin_budget(Duration::ZERO);
    let pool = pool(fx, 2, PoolPolicy::RoundRobin).map_err(failed)?;
    let x = fx
        .pool
        .allocate_array::<f32>(N, &fx.stream)
        .map_err(failed)?;
    let code = twice().map_err(failed)?;
    let held = Held::new(stub);
    let mut future = request(x, vec![1.0; N], code)
        .then(|(x, fetched)| {
            let early = fetched.to_vec();
            op::value((x, fetched, early.is_err()))
        })
        .run(&pool);
    ensure(poll_once(&mut future).is_pending(), || {
        "held work was done".into()
    })?;
    drop(future);
    let stats = reactor.stats();
    ensure(stats.staging_in_use >= 2 * N * 4, || {
        format!("staging released under held work: {stats:?}")
    })?;
    drop(held);
    wait_until("the reactor released the staging", || {
        reactor.stats().staging_in_use == 0
    })?;

    let x = fx
        .pool
        .allocate_array::<f32>(N, &fx.stream)
        .map_err(failed)?;
    let code = twice().map_err(failed)?;
    let (_, _, refused) = block_on(
        request(x, vec![1.0; N], code)
            .then(|(x, fetched)| {
                let early = fetched.to_vec();
                op::value((x, fetched, early.is_err()))
            })
            .run(&pool),
    )
    .map_err(failed)?;
    ensure(refused, || {
        "fetched values were read before they landed".into()
    })
}

/// A step that fails at submission (a download of 6 bytes as floats) resolves the future to
/// its error at the first poll with the GPU held, blocking nothing; the upload queued before
/// it keeps its staging until the stream has passed it.
fn a_failing_step_returns_at_once(stub: &Stub, fx: &Fixture, reactor: &Reactor) -> Verdict {
    completion::set_spin_budget(Duration::ZERO);
    let pool = pool(fx, 1, PoolPolicy::RoundRobin).map_err(failed)?;
    let x = fx
        .pool
        .allocate_array::<f32>(N, &fx.stream)
        .map_err(failed)?;
    let odd = fx.pool.allocate(6, &fx.stream).map_err(failed)?;
    let blocking = blocking_calls(stub);
    let held = Held::new(stub);
    let mut future = op::upload(x, vec![3.0f32; N])
        .then(move |x| {
            op::value(x).then(move |x| op::download::<f32>(odd).then(|d| op::value((x, d))))
        })
        .run(&pool);
    let first = poll_once(&mut future);
    ensure(
        matches!(first, Poll::Ready(Err(Error::InvalidArgument(_)))),
        || format!("the first poll gave {first:?}"),
    )?;
    ensure(blocking_calls(stub) == blocking, || {
        "a thread waited for the GPU".into()
    })?;
    ensure(reactor.stats().staging_in_use >= N * 4, || {
        "the upload's staging was released under held work".into()
    })?;
    drop(held);
    wait_until("the reactor released the upload's staging", || {
        reactor.stats().staging_in_use == 0
    })?;

    let held = Held::new(stub);
    let x = fx
        .pool
        .allocate_array::<f32>(N, &fx.stream)
        .map_err(failed)?;
    let mut panicking = op::upload(x, vec![1.0f32; N])
        .then(|x| op::on_stream(x, |_, _| panic!("a step of the caller's panics")))
        .run(&pool);
    let unwound = catch_unwind(AssertUnwindSafe(|| poll_once(&mut panicking)));
    ensure(unwound.is_err(), || {
        "the step's panic did not reach the poll".into()
    })?;
    ensure(reactor.stats().staging_in_use >= N * 4, || {
        "a panicking step released the staging under held work".into()
    })?;
    drop(held);
    wait_until("the reactor released the staging", || {
        reactor.stats().staging_in_use == 0
    })?;
    ensure(
        matches!(block_on(panicking), Err(Error::InvalidArgument(_))),
        || "a future polled after its step panicked did not say so".into(),
    )
}

/// An operation captured into a graph records its launches (the stub runs none of them
/// then); each replay doubles the buffer twice. A staged upload is refused in a capture.
fn a_captured_operation_replays(_: &Stub, fx: &Fixture) -> Verdict {
    let x = fx
        .pool
        .allocate_from_host(&[1.0f32; N], &fx.stream)
        .map_err(failed)?;
    let (kernel, config) = twice().map_err(failed)?;
    let (k2, c2) = (kernel.clone(), config);
    let twice_twice = doubled(x, kernel, config).then(move |x| doubled(x, k2, c2));
    // SAFETY: `x`, the output, outlives the executable (dropped after it below).
    let (graph, x) = unsafe { twice_twice.capture(&fx.stream) }.map_err(failed)?;
    let nodes = graph.nodes().map_err(failed)?.len();
    ensure(nodes == 2, || format!("{nodes} nodes captured"))?;
    ensure(x.to_vec::<f32>().map_err(failed)?[0] == 1.0, || {
        "the capture ran the launches".into()
    })?;
    let exec = graph.instantiate().map_err(failed)?;
    block_on(exec.launch_async(&fx.stream)).map_err(failed)?;
    block_on(exec.launch_async(&fx.stream)).map_err(failed)?;
    let values = x.to_vec::<f32>().map_err(failed)?;
    ensure(values.iter().all(|&v| v == 16.0), || {
        format!("after two replays: {:?}...", &values[..4])
    })?;
    drop(exec);
    drop(x);

    let y = fx
        .pool
        .allocate_array::<f32>(N, &fx.stream)
        .map_err(failed)?;
    // SAFETY: nothing is recorded (the upload is refused first).
    let refused = unsafe { op::upload(y, vec![0.0f32; N]).capture(&fx.stream) };
    ensure(matches!(refused, Err(Error::InvalidArgument(_))), || {
        "a staged upload was captured".into()
    })
}

fn main() -> ExitCode {
    let Some((stub, fixture)) = support::start("compose_stub") else {
        return ExitCode::SUCCESS;
    };
    let reactor = Reactor::shared();
    let fx = &fixture;
    let cases: Vec<(&str, Case<'_>)> = vec![
        (
            "the pool spreads work by its policy",
            Box::new(|| the_pool_spreads_work_by_its_policy(stub, fx)),
        ),
        (
            "an operation is lazy and ordered",
            Box::new(|| an_operation_is_lazy_and_ordered(stub, fx)),
        ),
        (
            "a dropped operation keeps what it uses",
            Box::new(|| a_dropped_operation_keeps_what_it_uses(stub, fx, &reactor)),
        ),
        (
            "a failing step returns at once",
            Box::new(|| a_failing_step_returns_at_once(stub, fx, &reactor)),
        ),
        (
            "a captured operation replays",
            Box::new(|| a_captured_operation_replays(stub, fx)),
        ),
    ];
    let total = cases.len();
    let failures = support::run(&cases);
    drop(cases);
    support::finish(
        "compose_stub",
        stub,
        (fixture, reactor),
        (0, 0),
        (total, failures),
    )
}
