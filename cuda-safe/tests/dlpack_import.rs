//! DLPack import and export on host memory: ownership (each deleter runs exactly once, on
//! every error path too), flags, versions, round trips, and the C struct layouts.

use std::any::Any;
use std::ffi::c_void;
use std::mem::{offset_of, size_of};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use cuda_safe::Error;
use cuda_safe::dlpack::{
    DLDataType, DLDataTypeCode, DLDevice, DLDeviceType, DLManagedTensor, DLManagedTensorVersioned,
    DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED, DLPACK_FLAG_BITMASK_READ_ONLY, DLPackVersion,
    DLTensor, Owner, StridedMemoryView, ViewDevice,
};

/// A producer's tensor: the struct handed out, and what it points at.
#[repr(C)]
struct Producer {
    versioned: DLManagedTensorVersioned,
    legacy: DLManagedTensor,
    shape: Vec<i64>,
    strides: Vec<i64>,
    data: Vec<f32>,
    deleted: Arc<AtomicUsize>,
}

/// Builds a producer of `data` with `shape` and (optional) `strides`, counting its deletions
/// in the returned counter.
fn produce(
    data: Vec<f32>,
    shape: &[i64],
    strides: Option<&[i64]>,
) -> (*mut Producer, Arc<AtomicUsize>) {
    let deleted = Arc::new(AtomicUsize::new(0));
    let tensor = DLTensor {
        data: std::ptr::null_mut(),
        device: DLDevice {
            device_type: DLDeviceType::CPU,
            device_id: 0,
        },
        ndim: shape.len() as i32,
        dtype: DLDataType::F32,
        shape: std::ptr::null_mut(),
        strides: std::ptr::null_mut(),
        byte_offset: 0,
    };
    let producer = Box::into_raw(Box::new(Producer {
        versioned: DLManagedTensorVersioned {
            version: DLPackVersion { major: 1, minor: 0 },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(delete_versioned),
            flags: 0,
            dl_tensor: tensor,
        },
        legacy: DLManagedTensor {
            dl_tensor: tensor,
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(delete_legacy),
        },
        shape: shape.to_vec(),
        strides: strides.map(<[i64]>::to_vec).unwrap_or_default(),
        data,
        deleted: deleted.clone(),
    }));
    // SAFETY: a fresh allocation; the pointers stored point into it.
    unsafe {
        let p = &mut *producer;
        for tensor in [&mut p.versioned.dl_tensor, &mut p.legacy.dl_tensor] {
            tensor.data = p.data.as_mut_ptr().cast::<c_void>();
            tensor.shape = p.shape.as_mut_ptr();
            if strides.is_some() {
                tensor.strides = p.strides.as_mut_ptr();
            }
        }
        p.versioned.manager_ctx = producer.cast::<c_void>();
        p.legacy.manager_ctx = producer.cast::<c_void>();
    }
    (producer, deleted)
}

unsafe extern "C" fn delete_versioned(tensor: *mut DLManagedTensorVersioned) {
    // SAFETY: `manager_ctx` is the boxed producer, deleted once by the one owner.
    let producer = unsafe { Box::from_raw((*tensor).manager_ctx.cast::<Producer>()) };
    producer.deleted.fetch_add(1, Ordering::SeqCst);
}

unsafe extern "C" fn delete_legacy(tensor: *mut DLManagedTensor) {
    // SAFETY: as above.
    let producer = unsafe { Box::from_raw((*tensor).manager_ctx.cast::<Producer>()) };
    producer.deleted.fetch_add(1, Ordering::SeqCst);
}

fn versioned(producer: *mut Producer) -> *mut DLManagedTensorVersioned {
    // SAFETY: the producer is alive (not deleted yet) when this is called.
    unsafe { &raw mut (*producer).versioned }
}

fn legacy(producer: *mut Producer) -> *mut DLManagedTensor {
    // SAFETY: as above.
    unsafe { &raw mut (*producer).legacy }
}

/// Reads the `f32` at `index`.
fn get(view: &StridedMemoryView, index: &[i64]) -> f32 {
    let offset: i64 = index.iter().zip(view.strides()).map(|(i, s)| i * s).sum();
    // SAFETY: the views read here cover live elements.
    unsafe { *((view.ptr() as i64 + offset * 4) as *const f32) }
}

fn iota(n: usize) -> Vec<f32> {
    (0..n).map(|i| i as f32).collect()
}

#[test]
fn owned_versioned_import_deletes_once_when_the_last_view_drops() {
    let (producer, deleted) = produce(iota(6), &[2, 3], Some(&[3, 1]));
    // SAFETY: a valid tensor, handed over.
    let view = unsafe { StridedMemoryView::from_dlpack_versioned(versioned(producer)) }.unwrap();
    assert_eq!((view.shape(), view.strides()), (&[2, 3][..], &[3, 1][..]));
    assert_eq!(
        (view.dtype(), view.device()),
        (DLDataType::F32, ViewDevice::Host)
    );
    assert!(!view.is_read_only() && view.owner().is_some());
    let column = view.slice(1, 2..3).unwrap();
    let clone = view.clone();
    drop(view);
    assert_eq!(get(&column, &[1, 0]), 5.0);
    drop(clone);
    assert_eq!(
        deleted.load(Ordering::SeqCst),
        0,
        "a derived view still lives"
    );
    drop(column);
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
}

#[test]
fn owned_legacy_import_with_null_strides_is_row_major() {
    let (producer, deleted) = produce(iota(6), &[3, 2], None);
    // SAFETY: a valid tensor, handed over.
    let view = unsafe { StridedMemoryView::from_dlpack(legacy(producer)) }.unwrap();
    assert_eq!(view.strides(), &[2, 1]);
    assert!(view.is_c_contiguous());
    assert_eq!(get(&view, &[2, 1]), 5.0);
    drop(view);
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
}

#[test]
fn read_only_flag_and_byte_offset_are_honoured() {
    let (producer, deleted) = produce(iota(6), &[2], Some(&[1]));
    // SAFETY: the producer is alive.
    unsafe {
        (*producer).versioned.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
        (*producer).versioned.dl_tensor.byte_offset = 8;
    }
    // SAFETY: a valid tensor, handed over.
    let view = unsafe { StridedMemoryView::from_dlpack_versioned(versioned(producer)) }.unwrap();
    assert!(view.is_read_only());
    assert_eq!(get(&view, &[0]), 2.0);
    assert!(matches!(
        view.clone().into_dlpack(None),
        Err(Error::InvalidArgument(_))
    ));
    let exported = view.into_dlpack_versioned(None).unwrap();
    // SAFETY: the export is alive until its deleter runs below.
    unsafe {
        assert_eq!((*exported).flags & DLPACK_FLAG_BITMASK_READ_ONLY, 1);
        ((*exported).deleter.unwrap())(exported);
    }
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
}

#[test]
fn another_major_version_is_refused_after_deleting() {
    let (producer, deleted) = produce(iota(4), &[4], None);
    // SAFETY: the producer is alive.
    unsafe { (*producer).versioned.version = DLPackVersion { major: 2, minor: 0 } };
    // SAFETY: a valid tensor, handed over.
    let result = unsafe { StridedMemoryView::from_dlpack_versioned(versioned(producer)) };
    assert!(
        matches!(result, Err(Error::Unsupported { .. })),
        "{result:?}"
    );
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
}

/// Spoils a producer's tensor in one way.
type Spoil = fn(&mut DLTensor);

/// Every way a tensor can be refused, each applied to a fresh producer.
fn refusals() -> Vec<(&'static str, Spoil)> {
    vec![
        ("unknown type code", |t| t.dtype.code = DLDataTypeCode(99)),
        ("zero bits", |t| t.dtype.bits = 0),
        ("too many dimensions", |t| t.ndim = 65),
        ("negative ndim", |t| t.ndim = -1),
        ("null shape", |t| t.shape = std::ptr::null_mut()),
        ("null data", |t| t.data = std::ptr::null_mut()),
        ("OpenCL device", |t| {
            t.device.device_type = DLDeviceType::OPENCL
        }),
        ("negative CUDA id", |t| {
            t.device = DLDevice {
                device_type: DLDeviceType::CUDA,
                device_id: -3,
            }
        }),
        ("overflowing stride", |t| {
            // SAFETY: the producer's stride array has one entry per dimension.
            unsafe { *t.strides = i64::MAX }
        }),
        ("negative extent", |t| {
            // SAFETY: as above, for the shape.
            unsafe { *t.shape = -4 }
        }),
        ("offset overflow", |t| t.byte_offset = u64::MAX),
    ]
}

#[test]
fn every_refusal_after_taking_ownership_deletes_exactly_once() {
    for (what, spoil) in refusals() {
        let (producer, deleted) = produce(iota(4), &[4], Some(&[1]));
        // SAFETY: the producer is alive.
        spoil(unsafe { &mut (*producer).versioned.dl_tensor });
        // SAFETY: a tensor whose arrays are valid, handed over.
        let result = unsafe { StridedMemoryView::from_dlpack_versioned(versioned(producer)) };
        assert!(
            matches!(result, Err(Error::InvalidArgument(_))),
            "{what}: {result:?}"
        );
        assert_eq!(deleted.load(Ordering::SeqCst), 1, "{what}");

        let (producer, deleted) = produce(iota(4), &[4], Some(&[1]));
        // SAFETY: the producer is alive.
        spoil(unsafe { &mut (*producer).legacy.dl_tensor });
        // SAFETY: as above.
        let result = unsafe { StridedMemoryView::from_dlpack(legacy(producer)) };
        assert!(
            matches!(result, Err(Error::InvalidArgument(_))),
            "legacy {what}"
        );
        assert_eq!(deleted.load(Ordering::SeqCst), 1, "legacy {what}");
    }
}

#[test]
fn null_pointers_and_null_deleters() {
    // SAFETY: null pointers are refused before anything is read.
    unsafe {
        let null = StridedMemoryView::from_dlpack(std::ptr::null_mut());
        assert!(matches!(null, Err(Error::InvalidArgument(_))));
        let null = StridedMemoryView::from_dlpack_versioned(std::ptr::null_mut());
        assert!(matches!(null, Err(Error::InvalidArgument(_))));
        assert!(StridedMemoryView::from_dltensor(std::ptr::null()).is_err());
        assert!(StridedMemoryView::borrow_dlpack_versioned(std::ptr::null()).is_err());
    }
    let (producer, deleted) = produce(iota(2), &[2], None);
    // SAFETY: the producer is alive; without a deleter nobody frees it here.
    unsafe { (*producer).versioned.deleter = None };
    // SAFETY: a valid tensor, handed over.
    let view = unsafe { StridedMemoryView::from_dlpack_versioned(versioned(producer)) }.unwrap();
    drop(view);
    assert_eq!(deleted.load(Ordering::SeqCst), 0);
    // SAFETY: still alive: free it the way its (removed) deleter would.
    unsafe { delete_versioned(versioned(producer)) };
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
}

#[test]
fn borrowed_imports_never_delete() {
    let (producer, deleted) = produce(iota(6), &[2, 3], None);
    {
        // SAFETY: the producer outlives both views.
        let legacy_view =
            unsafe { StridedMemoryView::from_dltensor(&(*producer).legacy.dl_tensor) }.unwrap();
        // SAFETY: as above.
        let versioned_view =
            unsafe { StridedMemoryView::borrow_dlpack_versioned(versioned(producer)) }.unwrap();
        assert!(legacy_view.owner().is_none() && versioned_view.owner().is_none());
        assert_eq!(get(&versioned_view.transpose(0, 1).unwrap(), &[2, 1]), 5.0);
        assert_eq!(get(&legacy_view, &[1, 0]), 3.0);
        // SAFETY: the producer is alive.
        unsafe { (*producer).versioned.flags = DLPACK_FLAG_BITMASK_READ_ONLY };
        // SAFETY: as above.
        let read_only =
            unsafe { StridedMemoryView::borrow_dlpack_versioned(versioned(producer)) }.unwrap();
        assert!(read_only.is_read_only());
        // SAFETY: the producer is alive.
        unsafe { (*producer).versioned.version.major = 0 };
        // SAFETY: as above.
        let old = unsafe { StridedMemoryView::borrow_dlpack_versioned(versioned(producer)) };
        assert!(matches!(old, Err(Error::Unsupported { .. })));
    }
    assert_eq!(deleted.load(Ordering::SeqCst), 0);
    // SAFETY: the producer is alive and deleted once here.
    unsafe { delete_legacy(legacy(producer)) };
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
}

/// An owner that counts its drops.
struct DropCounter(Arc<AtomicUsize>);

impl Drop for DropCounter {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A view of `data` owned by a [`DropCounter`]; returns the counter.
fn counted_view(
    data: &[f32],
    shape: &[i64],
    strides: Option<&[i64]>,
) -> (StridedMemoryView, Arc<AtomicUsize>) {
    let dropped = Arc::new(AtomicUsize::new(0));
    let owner: Owner = Arc::new(DropCounter(dropped.clone()));
    // SAFETY: `data` outlives the views of these tests.
    let view = unsafe {
        StridedMemoryView::from_raw_parts(
            data.as_ptr() as u64,
            shape,
            strides,
            DLDataType::F32,
            ViewDevice::Host,
            Some(owner),
        )
    }
    .unwrap();
    (view, dropped)
}

#[test]
fn versioned_export_round_trip_keeps_the_layout_and_releases_once() {
    let data = iota(24);
    let (view, dropped) = counted_view(&data, &[2, 3, 4], None);
    let permuted = view.permute(&[2, 0, 1]).unwrap().slice(0, 1..3).unwrap();
    drop(view);
    let expected = (
        permuted.ptr(),
        permuted.shape().to_vec(),
        permuted.strides().to_vec(),
    );
    let exported = permuted.into_dlpack_versioned(None).unwrap();
    // SAFETY: the export is alive until the re-imported view drops.
    unsafe {
        let m = &*exported;
        assert_eq!(m.version, DLPackVersion { major: 1, minor: 1 });
        assert_eq!(m.flags, 0);
        let t = &m.dl_tensor;
        assert_eq!((t.data as u64, t.ndim, t.byte_offset), (expected.0, 3, 0));
        assert_eq!(std::slice::from_raw_parts(t.shape, 3), &expected.1[..]);
        assert_eq!(std::slice::from_raw_parts(t.strides, 3), &expected.2[..]);
        assert_eq!(t.device.device_type, DLDeviceType::CPU);
    }
    assert_eq!(dropped.load(Ordering::SeqCst), 0);
    // SAFETY: handed back; the view now owns the export.
    let back = unsafe { StridedMemoryView::from_dlpack_versioned(exported) }.unwrap();
    assert_eq!(
        (back.ptr(), back.shape(), back.strides()),
        (expected.0, &expected.1[..], &expected.2[..])
    );
    // [1, 1, 2] of the permuted slice is [1, 2, 1 + 1] of the 2x3x4 original: 12 + 8 + 2.
    assert_eq!(get(&back, &[1, 1, 2]), 22.0);
    drop(back);
    assert_eq!(dropped.load(Ordering::SeqCst), 1);
}

#[test]
fn legacy_export_round_trip_and_direct_deletion() {
    let data = iota(6);
    let (view, dropped) = counted_view(&data, &[3, 2], Some(&[1, 3]));
    let exported = view.clone().into_dlpack(None).unwrap();
    // SAFETY: handed back.
    let back = unsafe { StridedMemoryView::from_dlpack(exported) }.unwrap();
    assert_eq!(back.strides(), &[1, 3]);
    assert!(back.is_f_contiguous());
    assert_eq!(get(&back, &[2, 1]), 5.0);
    drop((back, view.clone()));
    assert_eq!(
        dropped.load(Ordering::SeqCst),
        0,
        "the original view still lives"
    );

    let exported = view.into_dlpack(None).unwrap();
    assert_eq!(dropped.load(Ordering::SeqCst), 0);
    // SAFETY: the consumer deletes the export once.
    unsafe { ((*exported).deleter.unwrap())(exported) };
    assert_eq!(dropped.load(Ordering::SeqCst), 1);
}

#[test]
fn deep_views_export_through_the_heap_fallback() {
    let data = iota(1 << 10);
    let shape = [2i64; 10];
    let (view, dropped) = counted_view(&data, &shape, None);
    let reversed = view.permute(&[9, 8, 7, 6, 5, 4, 3, 2, 1, 0]).unwrap();
    let strides = reversed.strides().to_vec();
    let exported = reversed.into_dlpack_versioned(None).unwrap();
    // SAFETY: handed back.
    let back = unsafe { StridedMemoryView::from_dlpack_versioned(exported) }.unwrap();
    assert_eq!((back.ndim(), back.strides()), (10, &strides[..]));
    assert!(back.is_f_contiguous());
    assert_eq!(get(&back, &[1, 0, 0, 0, 0, 0, 0, 0, 0, 1]), 513.0);
    drop((view, back));
    assert_eq!(dropped.load(Ordering::SeqCst), 1);
}

#[test]
fn owners_are_shared_and_downcastable() {
    let data = iota(4);
    let (view, dropped) = counted_view(&data, &[4], None);
    let owner: &Arc<dyn Any + Send + Sync> = view.owner().unwrap();
    assert!(owner.downcast_ref::<DropCounter>().is_some());
    assert!(view.buffer().is_none());
    drop(view);
    assert_eq!(dropped.load(Ordering::SeqCst), 1);
}

#[test]
fn c_struct_layouts_match_dlpack_1() {
    assert_eq!(size_of::<DLPackVersion>(), 8);
    assert_eq!(size_of::<DLDevice>(), 8);
    assert_eq!(size_of::<DLDataType>(), 4);
    assert_eq!(size_of::<DLTensor>(), 48);
    assert_eq!(offset_of!(DLTensor, device), 8);
    assert_eq!(offset_of!(DLTensor, ndim), 16);
    assert_eq!(offset_of!(DLTensor, dtype), 20);
    assert_eq!(offset_of!(DLTensor, shape), 24);
    assert_eq!(offset_of!(DLTensor, strides), 32);
    assert_eq!(offset_of!(DLTensor, byte_offset), 40);
    assert_eq!(size_of::<DLManagedTensor>(), 64);
    assert_eq!(offset_of!(DLManagedTensor, manager_ctx), 48);
    assert_eq!(offset_of!(DLManagedTensor, deleter), 56);
    // version (8) + manager_ctx (8) + deleter (8) + flags (8) + DLTensor (48)
    assert_eq!(size_of::<DLManagedTensorVersioned>(), 80);
    assert_eq!(offset_of!(DLManagedTensorVersioned, deleter), 16);
    assert_eq!(offset_of!(DLManagedTensorVersioned, flags), 24);
    assert_eq!(offset_of!(DLManagedTensorVersioned, dl_tensor), 32);
    assert_eq!(DLDeviceType::CUDA_MANAGED.0, 13);
    assert_eq!(DLDataTypeCode::BOOL.0, 6);
}

#[test]
fn padded_sub_byte_elements_are_refused_and_still_deleted() {
    let (producer, deleted) = produce(iota(4), &[4], None);
    // SAFETY: the producer is alive; only its flags and dtype change.
    unsafe {
        (*producer).versioned.flags = DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED;
        (*producer).versioned.dl_tensor.dtype = DLDataType {
            code: DLDataTypeCode::FLOAT,
            bits: 4,
            lanes: 2,
        };
    }
    // SAFETY: a valid tensor, handed over.
    let refused = unsafe { StridedMemoryView::from_dlpack_versioned(versioned(producer)) };
    assert!(
        matches!(refused, Err(Error::Unsupported { .. })),
        "{refused:?}"
    );
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
}
