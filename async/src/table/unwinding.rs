//! The slot's protocol when the user's waker panics in `clone` or `drop`: the panic reaches the
//! poll (or the drop) that ran it, the slot's lock is not poisoned, and the slot keeps the
//! outcome or a waker that the completion wakes.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Mutex, PoisonError};
use std::task::{RawWaker, RawWakerVTable};

use super::{Arc, Detach, Finish, Ordering, Poll, Slot, Waker};

/// What a trap waker does, shared by its clones.
#[derive(Default)]
struct Trap {
    clone_panics: AtomicBool,
    drop_panics: AtomicBool,
    woken: AtomicUsize,
    /// Run (once) by the next clone, before it returns.
    on_clone: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

const VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake_by_ref, drop_waker);

fn trap_of(data: *const ()) -> &'static Trap {
    // SAFETY: every trap waker's data is a leaked `Trap` (`trap_waker`), alive for good.
    unsafe { &*data.cast::<Trap>() }
}

fn clone(data: *const ()) -> RawWaker {
    let trap = trap_of(data);
    let hook = trap
        .on_clone
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    if let Some(hook) = hook {
        hook();
    }
    assert!(
        !trap.clone_panics.load(Ordering::SeqCst),
        "the waker's clone panics"
    );
    RawWaker::new(data, &VTABLE)
}

fn wake(data: *const ()) {
    wake_by_ref(data);
    drop_waker(data);
}

fn wake_by_ref(data: *const ()) {
    trap_of(data).woken.fetch_add(1, Ordering::SeqCst);
}

fn drop_waker(data: *const ()) {
    assert!(
        !trap_of(data).drop_panics.load(Ordering::SeqCst),
        "the waker's drop panics"
    );
}

/// A waker of a trap of its own (leaked: a test's few bytes).
fn trap_waker() -> (&'static Trap, Waker) {
    let trap: &'static Trap = Box::leak(Box::default());
    let raw = RawWaker::new(std::ptr::from_ref(trap).cast(), &VTABLE);
    // SAFETY: the vtable's functions keep `RawWaker`'s contract for the leaked trap (clones
    // share it; nothing is freed).
    (trap, unsafe { Waker::from_raw(raw) })
}

/// Completes `slot` as the reactor does, waking what it finds.
fn complete(slot: &Slot) {
    match slot.complete(Ok(())) {
        Finish::Wake(waker) => waker.into_iter().for_each(Waker::wake),
        Finish::Release(_) => panic!("no future was dropped"),
    }
}

#[test]
fn a_clone_that_panics_leaves_the_waker_before_it() {
    let slot = Slot::new();
    let (kept, kept_waker) = trap_waker();
    assert!(slot.poll(&kept_waker).is_pending());
    let (bad, bad_waker) = trap_waker();
    bad.clone_panics.store(true, Ordering::SeqCst);
    assert!(catch_unwind(AssertUnwindSafe(|| slot.poll(&bad_waker))).is_err());
    assert!(!slot.state.is_poisoned(), "the clone ran outside the lock");
    complete(&slot);
    assert_eq!(
        kept.woken.load(Ordering::SeqCst),
        1,
        "the kept waker is woken"
    );
    assert!(matches!(slot.poll(&kept_waker), Poll::Ready(Ok(()))));
}

#[test]
fn a_replaced_waker_whose_drop_panics_leaves_the_new_one_kept() {
    let slot = Slot::new();
    let (old, old_waker) = trap_waker();
    assert!(slot.poll(&old_waker).is_pending());
    old.drop_panics.store(true, Ordering::SeqCst);
    let (new, new_waker) = trap_waker();
    assert!(catch_unwind(AssertUnwindSafe(|| slot.poll(&new_waker))).is_err());
    assert!(
        !slot.state.is_poisoned(),
        "the old waker was dropped outside the lock"
    );
    old.drop_panics.store(false, Ordering::SeqCst);
    complete(&slot);
    assert_eq!(
        new.woken.load(Ordering::SeqCst),
        1,
        "the new waker is woken"
    );
    assert_eq!(old.woken.load(Ordering::SeqCst), 0);
    assert!(matches!(slot.poll(&new_waker), Poll::Ready(Ok(()))));
}

/// The reactor completes the slot while the poll clones its waker (the clone runs outside the
/// lock, so the completion can take it: under the lock it would deadlock); the clone, dropped
/// unused, panics: the outcome stays for the next poll.
#[test]
fn a_completion_during_the_clone_keeps_the_outcome_when_the_clone_s_drop_panics() {
    let slot = Arc::new(Slot::new());
    let (trap, waker) = trap_waker();
    let reactor = slot.clone();
    *trap.on_clone.lock().unwrap() = Some(Box::new(move || {
        complete(&reactor);
        trap.drop_panics.store(true, Ordering::SeqCst);
    }));
    assert!(catch_unwind(AssertUnwindSafe(|| slot.poll(&waker))).is_err());
    trap.drop_panics.store(false, Ordering::SeqCst);
    assert!(!slot.state.is_poisoned());
    assert!(matches!(slot.poll(&waker), Poll::Ready(Ok(()))));
}

#[test]
fn a_detached_slot_hands_its_waker_back_to_be_dropped_outside_the_lock() {
    let slot = Slot::new();
    let (trap, waker) = trap_waker();
    assert!(slot.poll(&waker).is_pending());
    trap.drop_panics.store(true, Ordering::SeqCst);
    let kept = std::sync::Arc::new(());
    let (detached, stale) = slot.detach(Some(Box::new(kept.clone())));
    assert!(matches!(detached, Detach::Left));
    assert!(catch_unwind(AssertUnwindSafe(move || drop(stale))).is_err());
    trap.drop_panics.store(false, Ordering::SeqCst);
    assert!(!slot.state.is_poisoned());
    match slot.complete(Ok(())) {
        Finish::Release(keep) => {
            assert!(keep.is_some(), "the reactor drops what was kept");
            assert_eq!(std::sync::Arc::strong_count(&kept), 2, "kept until then");
        }
        Finish::Wake(_) => panic!("a dropped future was woken"),
    }
    assert_eq!(trap.woken.load(Ordering::SeqCst), 0);
}
