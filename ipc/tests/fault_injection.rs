//! The channel's operations driven through every failure of the driver calls they make, with
//! the stub driver of `stub/c` (the core's `fault_injection` test does the same for the core's
//! operations, the IPC values included): each call in turn failed with each code, and the error,
//! the leaks and the logs checked (`cuda_safe_stub::faults`).
//!
//! A `main` of its own (`harness = false`): the stub is built and the library variables are set
//! before anything else runs.

use std::process::ExitCode;

use cuda_safe_ipc::Channel;
use cuda_safe_stub::faults::fixtures::{
    context, device, exported_buffer, imported_buffer, ipc_event_options, shareable_pool, shared,
    stream, take,
};
use cuda_safe_stub::faults::{Op, Runner, op, report_panics};
use cuda_safe_stub::{Installed, Stub};

fn channel() -> (Channel, Channel) {
    Channel::pair().expect("a socket pair")
}

fn channel_operations(ops: &mut Vec<Op>, stub: &'static Stub) {
    ops.push(op(
        "Channel::send_pool",
        || (channel(), shareable_pool()),
        |((a, _), p)| a.send_pool(p),
    ));
    ops.push(op(
        "Channel::recv_pool",
        || {
            let ((a, b), pool) = (channel(), shareable_pool());
            a.send_pool(&pool).expect("sent");
            (b, pool)
        },
        |(b, _)| b.recv_pool(),
    ));
    ops.push(op(
        "Channel::send_buffer",
        || {
            let stream = stream();
            let buffer = exported_buffer(&stream);
            (channel(), stream, buffer)
        },
        |((a, _), _, buffer)| a.send_buffer(buffer),
    ));
    ops.push(op(
        "Channel::recv_buffer",
        || {
            let ((a, b), shared) = (channel(), shared());
            a.send_buffer(&shared.buffer).expect("sent");
            (b, shared)
        },
        |(b, s)| b.recv_buffer(&s.imported, &s.stream),
    ));
    ops.push(op(
        "Channel::send_event",
        || {
            let event = device()
                .create_event(ipc_event_options())
                .expect("an IPC event");
            (channel(), event)
        },
        |((a, _), e)| a.send_event(e),
    ));
    ops.push(op(
        "Channel::recv_event",
        move || {
            let (a, b) = channel();
            let event = stub.as_other_process(|| {
                let event = device()
                    .create_event(ipc_event_options())
                    .expect("an IPC event");
                a.send_event(&event).expect("sent");
                event
            });
            (b, event, context())
        },
        |(b, _, c)| b.recv_event(c),
    ));
    ops.push(
        op(
            "Channel::release",
            || {
                let (import, shared) = imported_buffer();
                (channel(), import, shared)
            },
            |((_, b), import, _)| b.release(take(import)),
        )
        .releasing(),
    );
}

fn main() -> ExitCode {
    let stub = match cuda_safe_stub::install() {
        Installed::Ready(stub) => stub,
        Installed::Skipped(reason) => {
            println!("fault_injection: skipped: {reason}");
            return ExitCode::SUCCESS;
        }
    };
    cuda_safe_stub::install_logger();
    report_panics();
    // The primary context is retained once for the process, as any program's first call
    // would: a case then sees only what its operation makes.
    drop(shareable_pool());
    let mut ops = Vec::new();
    channel_operations(&mut ops, stub);
    let mut runner = Runner::default();
    for op in &ops {
        runner.matrix(stub, op);
    }
    runner.finish("fault_injection", stub)
}
