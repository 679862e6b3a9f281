//! The bridges against the stub driver of `stub/c`: a wrapped stream keeps its owner alive
//! and drops it with its last clone (always); with the feature `tracing`, the spans of the slow
//! paths are seen and none is opened on the launch, copy, allocation or event paths
//! (`spans.rs`); with the feature `cudarc`, cudarc (which finds the stub by its name,
//! `libcuda.so`) and this crate share its streams and slices, with cudarc's events waited on
//! and recorded as its own guards do, and a buffer lent to cudarc is never freed by it
//! (`cudarc.rs`). Prints each check.
//!
//! A `main` of its own (`harness = false`): the stub is built and the library variables are set
//! before anything else runs. `cargo test -p cuda-safe --features tracing,cudarc --test bridges`.

use cuda_safe_stub as stub;

#[cfg(feature = "cudarc")]
mod cudarc;
#[cfg(feature = "tracing")]
mod spans;

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use cuda_safe::{Device, Stream};
use stub::{Installed, Stub};

/// Sets its flag when dropped.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// The number of live streams the stub counts.
fn live_streams(stub: &Stub) -> i64 {
    stub.live()[2]
}

/// `Stream::from_raw_with_owner`: the owner lives as long as the last clone of the wrapper,
/// and the wrapper never destroys the stream itself.
fn a_wrapped_stream_keeps_its_owner(stub: &Stub) {
    let device = Device::new(0).unwrap();
    let before = live_streams(stub);
    let made = device.create_stream(Default::default()).unwrap();
    let raw = made.as_raw();
    let dropped = Arc::new(AtomicBool::new(false));
    let owner = Arc::new((made, DropFlag(dropped.clone())));
    let context = owner.0.context().clone();
    // SAFETY: `raw` is the stream `owner` holds, alive while `owner` lives.
    let wrapper = unsafe { Stream::from_raw_with_owner(raw, &context, owner) };
    assert_eq!(wrapper.as_raw(), raw);
    assert!(wrapper.owner().is_some());
    let clone = wrapper.clone();
    drop(wrapper);
    assert!(!dropped.load(Ordering::SeqCst), "a clone keeps the owner");
    assert_eq!(live_streams(stub), before + 1);
    clone.sync().unwrap();
    drop(clone);
    assert!(
        dropped.load(Ordering::SeqCst),
        "the last clone drops the owner"
    );
    assert_eq!(
        live_streams(stub),
        before,
        "the owner's stream is destroyed by its owner"
    );
    // SAFETY: the legacy stream of the current context, used on this thread only.
    let plain = unsafe { Stream::legacy_default(&context) };
    assert!(plain.owner().is_none());
    println!("ok   a wrapped stream keeps its owner alive until its last clone");
}

fn main() -> ExitCode {
    let stub = match stub::install() {
        Installed::Ready(stub) => stub,
        Installed::Skipped(reason) => {
            println!("bridges: skipped: {reason}");
            return ExitCode::SUCCESS;
        }
    };
    #[cfg(feature = "tracing")]
    let recorder = spans::install();
    a_wrapped_stream_keeps_its_owner(stub);
    #[cfg(feature = "tracing")]
    spans::check(stub, recorder);
    #[cfg(feature = "cudarc")]
    cudarc::check(stub);
    let (misuses, last) = stub.misuse();
    if misuses != 0 {
        println!("FAIL the driver was misused {misuses} time(s); last: {last}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
