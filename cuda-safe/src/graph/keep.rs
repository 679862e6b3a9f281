//! What a graph keeps alive, held by CUDA user objects.
//!
//! A user object is a driver-counted reference with a destructor. A graph retains it; each
//! executable made from the graph (or updated from it) retains it too, and the driver releases
//! an executable's references only once its launches in flight have finished, even when the
//! executable is destroyed first. When the last reference goes, the driver calls the
//! destructor on a thread of its own, where CUDA must not be called; dropping a buffer or a
//! kernel calls CUDA, so the destructor only hands the items to the *reaper*, a thread of this
//! crate that drops them.

use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;
use std::sync::mpsc::{Sender, channel};

use crate::callback::InsideCallback;
use crate::error::{Error, Result, cu};
use crate::launch::Keep;
use cuda_sys::{CUgraph, CUuserObject, CUuserObject_flags, CUuserObjectRetain_flags, Driver};

/// Makes `graph` keep `items` alive: one user object holding them, whose only reference moves
/// to the graph. Returns the object, which lives while the graph (or another holder) retains it.
pub(super) fn retain(
    driver: &'static Driver,
    graph: CUgraph,
    items: Vec<Keep>,
) -> Result<CUuserObject> {
    if reaper().is_none() {
        return Err(Error::unsupported(
            "keeping what graph nodes use alive",
            "the thread that drops it afterwards could not be started",
        ));
    }
    let data = Box::into_raw(Box::new(items)).cast::<c_void>();
    let mut object: CUuserObject = std::ptr::null_mut();
    // SAFETY: valid out-pointer; `release` takes back exactly this box when the last reference
    // goes; the only flag the driver accepts is given.
    let created = unsafe {
        cu!(
            driver,
            cuUserObjectCreate(
                &mut object,
                data,
                Some(release),
                1,
                CUuserObject_flags::CU_USER_OBJECT_NO_DESTRUCTOR_SYNC.0,
            )
        )
    };
    if let Err(error) = created {
        // SAFETY: the driver did not take the box, so it is still this function's.
        drop(unsafe { Box::from_raw(data.cast::<Vec<Keep>>()) });
        return Err(error);
    }
    // SAFETY: the object and graph are valid; the caller's one reference moves to the graph.
    let moved = unsafe {
        cu!(
            driver,
            cuGraphRetainUserObject(
                graph,
                object,
                1,
                CUuserObjectRetain_flags::CU_GRAPH_USER_OBJECT_MOVE.0,
            )
        )
    };
    if let Err(error) = moved {
        // SAFETY: the reference is still the caller's; releasing it runs `release`, which
        // hands the items to the reaper.
        let _ = unsafe { cu!(driver, cuUserObjectRelease(object, 1)) };
        return Err(error);
    }
    Ok(object)
}

/// The user objects' destructor: hands the items to the reaper (never dropping them on the
/// driver's thread); if there is no reaper, they are leaked rather than dropped here.
///
/// # Safety
///
/// `data` must be the box [`retain`] made, passed here once.
unsafe extern "C" fn release(data: *mut c_void) {
    let _inside = InsideCallback::enter();
    // SAFETY: the caller's promise: the box `retain` made, handed over once.
    let items = unsafe { Box::from_raw(data.cast::<Vec<Keep>>()) };
    let outcome = catch_unwind(AssertUnwindSafe(move || match reaper() {
        Some(reaper) => {
            if let Err(returned) = reaper.send(*items) {
                std::mem::forget(returned.0);
            }
        }
        None => std::mem::forget(items),
    }));
    // Sending cannot panic in practice; if it did, nothing more can be done on this thread.
    let _ = outcome;
}

/// The channel to the reaper thread, started on first use (`None` if it could not start).
fn reaper() -> Option<&'static Sender<Vec<Keep>>> {
    static REAPER: OnceLock<Option<Sender<Vec<Keep>>>> = OnceLock::new();
    REAPER
        .get_or_init(|| {
            let (sender, receiver) = channel::<Vec<Keep>>();
            let started = std::thread::Builder::new()
                .name("cuda-safe-reaper".to_owned())
                .spawn(move || {
                    for items in receiver {
                        // A panicking destructor must not end the thread.
                        let _ = catch_unwind(AssertUnwindSafe(move || drop(items)));
                    }
                });
            match started {
                Ok(_) => Some(sender),
                Err(error) => {
                    log::error!(
                        "cuda-safe: starting the thread that drops what graphs kept alive \
                         failed ({error}); graphs cannot keep buffers, kernels or closures alive"
                    );
                    None
                }
            }
        })
        .as_ref()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    use super::*;

    /// Records whether, and on which thread, it was dropped.
    struct Sentinel {
        dropped: Arc<AtomicBool>,
        thread: Arc<std::sync::Mutex<Option<String>>>,
    }

    impl Drop for Sentinel {
        fn drop(&mut self) {
            let name = std::thread::current().name().map(str::to_owned);
            *self.thread.lock().unwrap() = name;
            self.dropped.store(true, Ordering::SeqCst);
        }
    }

    #[test]
    fn released_items_are_dropped_on_the_reaper_thread() {
        let dropped = Arc::new(AtomicBool::new(false));
        let thread = Arc::new(std::sync::Mutex::new(None));
        let items: Vec<Keep> = vec![
            Box::new(Sentinel {
                dropped: dropped.clone(),
                thread: thread.clone(),
            }),
            Box::new(7u32),
        ];
        let data = Box::into_raw(Box::new(items)).cast::<c_void>();
        // SAFETY: `data` is a box of items, handed over once, as the driver would.
        unsafe { release(data) };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !dropped.load(Ordering::SeqCst) {
            assert!(
                Instant::now() < deadline,
                "the reaper never dropped the items"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(thread.lock().unwrap().as_deref(), Some("cuda-safe-reaper"));
    }

    #[test]
    fn a_panicking_drop_does_not_stop_the_reaper() {
        struct Bomb;
        impl Drop for Bomb {
            fn drop(&mut self) {
                panic!("a destructor panicked");
            }
        }
        let data = Box::into_raw(Box::new(vec![Box::new(Bomb) as Keep])).cast::<c_void>();
        // SAFETY: as above.
        unsafe { release(data) };
        let dropped = Arc::new(AtomicBool::new(false));
        let items: Vec<Keep> = vec![Box::new(Sentinel {
            dropped: dropped.clone(),
            thread: Arc::default(),
        })];
        let data = Box::into_raw(Box::new(items)).cast::<c_void>();
        // SAFETY: as above.
        unsafe { release(data) };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !dropped.load(Ordering::SeqCst) {
            assert!(
                Instant::now() < deadline,
                "the reaper stopped after a panic"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}
