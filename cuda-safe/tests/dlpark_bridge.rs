//! The dlpark bridge on host memory (no driver): a view handed to dlpark and taken back keeps
//! its shape, strides, element type, read-only flag and memory, and its owner is released
//! exactly once, when dlpark's handle (or the view made from it) drops.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use cuda_safe::dlpack::{DLDataType, Owner, StridedMemoryView, ViewDevice};

/// Host memory that counts its drops.
struct Counted {
    data: Vec<f32>,
    dropped: Arc<AtomicUsize>,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.dropped.fetch_add(1, Ordering::SeqCst);
    }
}

/// A 3 x 4 row-major view of 0..12 whose owner counts its drops.
fn host_view() -> (StridedMemoryView, Arc<AtomicUsize>) {
    let dropped = Arc::new(AtomicUsize::new(0));
    let owner = Arc::new(Counted {
        data: (0..12).map(|i| i as f32).collect(),
        dropped: dropped.clone(),
    });
    let ptr = owner.data.as_ptr() as u64;
    let owner: Owner = owner;
    // SAFETY: 12 floats at `ptr`, kept alive by `owner`, which the view holds.
    let view = unsafe {
        StridedMemoryView::from_raw_parts(
            ptr,
            &[3, 4],
            None,
            DLDataType::F32,
            ViewDevice::Host,
            Some(owner),
        )
    }
    .unwrap();
    (view, dropped)
}

/// The floats a view reaches, in index order (2-D).
fn read(view: &StridedMemoryView) -> Vec<f32> {
    let (shape, strides) = (view.shape(), view.strides());
    let mut values = Vec::new();
    for i in 0..shape[0] {
        for j in 0..shape[1] {
            let at = (view.ptr() as *const f32)
                .wrapping_offset((i * strides[0] + j * strides[1]) as isize);
            // SAFETY: inside the 12 floats the view's owner keeps alive.
            values.push(unsafe { *at });
        }
    }
    values
}

#[test]
fn a_view_through_dlpark_and_back_is_the_same_memory() {
    let (view, dropped) = host_view();
    let transposed = view.transpose(0, 1).unwrap().into_read_only();
    let expected = read(&transposed);
    drop(view);
    let handle = transposed.into_dlpark(None).unwrap();
    {
        let tensor = handle.validate().unwrap();
        assert_eq!(tensor.shape(), &[4, 3]);
    }
    assert!(handle.flags().contains(dlpark::DlpackFlags::READ_ONLY));
    assert_eq!(
        dropped.load(Ordering::SeqCst),
        0,
        "dlpark's handle keeps the memory"
    );
    let back = StridedMemoryView::from_dlpark(handle).unwrap();
    assert_eq!(back.shape(), &[4, 3]);
    assert_eq!(back.strides(), &[1, 4]);
    assert_eq!(back.dtype(), DLDataType::F32);
    assert!(back.is_read_only());
    assert_eq!(read(&back), expected);
    drop(back);
    assert_eq!(
        dropped.load(Ordering::SeqCst),
        1,
        "released once, with the last view"
    );
}

#[test]
fn dropping_dlparks_handle_releases_the_view() {
    let (view, dropped) = host_view();
    let handle = view.into_dlpark(None).unwrap();
    drop(handle);
    assert_eq!(dropped.load(Ordering::SeqCst), 1);
}

#[test]
fn a_legacy_dlpark_handle_is_taken_too() {
    let (view, dropped) = host_view();
    let raw = view.into_dlpack(None).unwrap();
    // SAFETY: a fresh legacy tensor handed over to dlpark's handle.
    let handle = unsafe { dlpark::legacy::Dlpack::from_raw(raw.cast()) }.unwrap();
    let back = StridedMemoryView::from_dlpark_legacy(handle).unwrap();
    assert_eq!(back.shape(), &[3, 4]);
    assert_eq!(read(&back), (0..12).map(|i| i as f32).collect::<Vec<_>>());
    drop(back);
    assert_eq!(dropped.load(Ordering::SeqCst), 1);
}
