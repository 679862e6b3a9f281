//! StridedMemoryView layout rules on host memory: contiguity, counts, spans, slicing,
//! transposing, permuting, reshaping, typed pointers, and every bad-input error.

use cuda_safe::Error;
use cuda_safe::dlpack::{
    DLDataType, DLDataTypeCode, DLDevice, DLDeviceType, MAX_NDIM, StridedMemoryView, ViewDevice,
};

/// A non-owning view of `data` (which outlives every view in these tests).
fn view_of<T>(
    data: &[T],
    dtype: DLDataType,
    shape: &[i64],
    strides: Option<&[i64]>,
) -> StridedMemoryView {
    try_view(data.as_ptr() as u64, dtype, shape, strides).expect("a valid view")
}

/// A view at `ptr`, or the error. Nothing reads through views made here unless `ptr` points
/// at live memory covering the span.
fn try_view(
    ptr: u64,
    dtype: DLDataType,
    shape: &[i64],
    strides: Option<&[i64]>,
) -> cuda_safe::Result<StridedMemoryView> {
    // SAFETY: the tests only read through views of live vectors that cover their span; other
    // views are checked for their arithmetic and never dereferenced.
    unsafe { StridedMemoryView::from_raw_parts(ptr, shape, strides, dtype, ViewDevice::Host, None) }
}

/// Reads the `f32` at `index` through the view's address and strides.
fn get(view: &StridedMemoryView, index: &[i64]) -> f32 {
    assert_eq!(index.len(), view.ndim());
    let offset: i64 = index.iter().zip(view.strides()).map(|(i, s)| i * s).sum();
    let address = view.ptr() as i64 + offset * 4;
    // SAFETY: every view read here covers live elements of a vector in the test.
    unsafe { *(address as *const f32) }
}

/// 0.0, 1.0, ... as f32.
fn iota(n: usize) -> Vec<f32> {
    (0..n).map(|i| i as f32).collect()
}

fn is_invalid<T: std::fmt::Debug>(result: cuda_safe::Result<T>) -> bool {
    matches!(result, Err(Error::InvalidArgument(_)))
}

#[test]
fn c_order_view_reads_row_major() {
    let data = iota(6);
    let view = view_of(&data, DLDataType::F32, &[2, 3], None);
    assert_eq!(view.shape(), &[2, 3]);
    assert_eq!(view.strides(), &[3, 1]);
    assert_eq!(view.ndim(), 2);
    assert_eq!(view.len(), 6);
    assert_eq!(view.item_size(), 4);
    assert_eq!(view.byte_span(), (0, 24));
    assert_eq!(view.span_len(), 24);
    assert!(view.is_c_contiguous() && !view.is_f_contiguous());
    assert_eq!(get(&view, &[1, 2]), 5.0);
    assert!(!view.is_read_only());
    assert!(view.owner().is_none() && view.buffer().is_none());
}

#[test]
fn fortran_and_odd_layouts() {
    let data = iota(6);
    let f = view_of(&data, DLDataType::F32, &[2, 3], Some(&[1, 2]));
    assert!(f.is_f_contiguous() && !f.is_c_contiguous());
    assert_eq!(get(&f, &[1, 2]), 5.0);
    assert_eq!(get(&f, &[0, 1]), 2.0);
    // Extents of 1 may have any stride: both orders at once.
    let row = view_of(&data, DLDataType::F32, &[1, 6], Some(&[99, 1]));
    assert!(row.is_c_contiguous() && row.is_f_contiguous());
    // Gaps: neither.
    let every_other = view_of(&data, DLDataType::F32, &[3], Some(&[2]));
    assert!(!every_other.is_c_contiguous() && !every_other.is_f_contiguous());
    assert_eq!(every_other.byte_span(), (0, 20));
    // Broadcast (stride 0): neither, and a one-element span.
    let broadcast = view_of(&data, DLDataType::F32, &[4], Some(&[0]));
    assert!(!broadcast.is_c_contiguous());
    assert_eq!(broadcast.byte_span(), (0, 4));
    assert_eq!(broadcast.len(), 4);
}

#[test]
fn scalars_and_empty_views() {
    let data = [7.0f32];
    let scalar = view_of(&data, DLDataType::F32, &[], None);
    assert_eq!((scalar.ndim(), scalar.len()), (0, 1));
    assert_eq!(scalar.byte_span(), (0, 4));
    assert!(scalar.is_c_contiguous() && scalar.is_f_contiguous());
    assert_eq!(get(&scalar, &[]), 7.0);

    let empty = try_view(0, DLDataType::F32, &[3, 0, 2], Some(&[-5, 7, 1])).unwrap();
    assert!(empty.is_empty());
    assert_eq!(empty.byte_span(), (0, 0));
    assert!(empty.is_c_contiguous() && empty.is_f_contiguous());
}

#[test]
fn negative_strides_span_backwards() {
    let data = iota(6);
    let end = data.as_ptr() as u64 + 5 * 4; // the last element
    let reversed = try_view(end, DLDataType::F32, &[6], Some(&[-1])).unwrap();
    assert_eq!(reversed.byte_span(), (-20, 4));
    assert_eq!(get(&reversed, &[0]), 5.0);
    assert_eq!(get(&reversed, &[5]), 0.0);
    assert!(!reversed.is_c_contiguous());
    let upside_down = try_view(
        data.as_ptr() as u64 + 12,
        DLDataType::F32,
        &[2, 3],
        Some(&[-3, 1]),
    )
    .unwrap();
    assert_eq!(upside_down.byte_span(), (-12, 12));
    assert_eq!(get(&upside_down, &[1, 0]), 0.0);
}

#[test]
fn slicing_moves_the_origin_and_shares_the_memory() {
    let data = iota(12);
    let view = view_of(&data, DLDataType::F32, &[3, 4], None);
    let rows = view.slice(0, 1..3).unwrap();
    assert_eq!(rows.shape(), &[2, 4]);
    assert_eq!(rows.ptr(), view.ptr() + 16);
    assert_eq!(get(&rows, &[0, 0]), 4.0);
    let cols = view.slice(1, 1..=2).unwrap();
    assert_eq!((cols.shape(), cols.strides()), (&[3, 2][..], &[4, 1][..]));
    assert_eq!(get(&cols, &[2, 1]), 10.0);
    assert!(!cols.is_c_contiguous());
    let tail = view.slice(1, 3..).unwrap();
    assert_eq!(get(&tail, &[1, 0]), 7.0);
    let all = view.slice(0, ..).unwrap();
    assert_eq!((all.ptr(), all.shape()), (view.ptr(), view.shape()));
    let none = view.slice(0, 3..3).unwrap();
    assert!(none.is_empty());
    assert_eq!(none.ptr(), view.ptr());

    assert!(is_invalid(view.slice(2, 0..1)));
    assert!(is_invalid(view.slice(0, 2..5)));
    #[allow(clippy::reversed_empty_ranges)]
    let backwards = view.slice(0, 2..1);
    assert!(is_invalid(backwards));
    assert!(is_invalid(view.slice(1, ..=4)));
}

#[test]
fn transpose_and_permute_reorder_axes() {
    let data = iota(24);
    let view = view_of(&data, DLDataType::F32, &[2, 3, 4], None);
    let t = view.transpose(0, 2).unwrap();
    assert_eq!((t.shape(), t.strides()), (&[4, 3, 2][..], &[1, 4, 12][..]));
    assert!(t.is_f_contiguous());
    assert_eq!(get(&t, &[3, 2, 1]), get(&view, &[1, 2, 3]));
    let p = view.permute(&[1, 2, 0]).unwrap();
    assert_eq!((p.shape(), p.strides()), (&[3, 4, 2][..], &[4, 1, 12][..]));
    assert_eq!(get(&p, &[2, 3, 1]), get(&view, &[1, 2, 3]));
    assert_eq!(p.byte_span(), view.byte_span());

    assert!(is_invalid(view.transpose(0, 3)));
    assert!(is_invalid(view.permute(&[0, 1])));
    assert!(is_invalid(view.permute(&[0, 1, 1])));
    assert!(is_invalid(view.permute(&[0, 1, 3])));
    assert!(is_invalid(view.permute(&[0, 1, 2, 3])));
}

#[test]
fn reshape_of_contiguous_views() {
    let data = iota(24);
    let view = view_of(&data, DLDataType::F32, &[2, 3, 4], None);
    let flat = view.reshape(&[-1]).unwrap();
    assert_eq!((flat.shape(), flat.strides()), (&[24][..], &[1][..]));
    let square = view.reshape(&[4, -1]).unwrap();
    assert_eq!(
        (square.shape(), square.strides()),
        (&[4, 6][..], &[6, 1][..])
    );
    assert_eq!(get(&square, &[3, 5]), 23.0);
    let same = square.reshape(&[2, 3, 4]).unwrap();
    assert_eq!(
        (same.shape(), same.strides()),
        (view.shape(), view.strides())
    );
    let scalar = view_of(&data, DLDataType::F32, &[1, 1], None)
        .reshape(&[])
        .unwrap();
    assert_eq!(scalar.len(), 1);

    assert!(is_invalid(view.reshape(&[5, 5])));
    assert!(is_invalid(view.reshape(&[-1, -1])));
    assert!(is_invalid(view.reshape(&[5, -1])));
    assert!(is_invalid(view.reshape(&[0, -1])));
    assert!(is_invalid(view.reshape(&[-2, -12])));
    assert!(is_invalid(view.transpose(0, 1).unwrap().reshape(&[24])));
    assert!(is_invalid(view.slice(2, 0..2).unwrap().reshape(&[12])));
}

#[test]
fn typed_pointers_check_type_and_alignment() {
    let data = iota(4);
    let view = view_of(&data, DLDataType::F32, &[4], None);
    assert_eq!(view.typed_ptr::<f32>().unwrap(), data.as_ptr().cast_mut());
    assert!(is_invalid(view.typed_ptr::<i32>()));
    assert!(is_invalid(view.typed_ptr::<f64>()));
    let misaligned = try_view(data.as_ptr() as u64 + 1, DLDataType::F32, &[2], None).unwrap();
    assert!(is_invalid(misaligned.typed_ptr::<f32>()));
    let bytes = view_of(&data, DLDataType::U8, &[16], None);
    assert!(bytes.typed_ptr::<u8>().is_ok());
}

#[test]
fn bad_layouts_are_invalid_arguments() {
    let data = iota(8);
    let ptr = data.as_ptr() as u64;
    let f32 = DLDataType::F32;
    assert!(is_invalid(try_view(ptr, f32, &[2, -1], None)));
    assert!(is_invalid(try_view(ptr, f32, &[2, 3], Some(&[1]))));
    assert!(is_invalid(try_view(ptr, f32, &[i64::MAX, 2], None)));
    assert!(is_invalid(try_view(ptr, f32, &[3], Some(&[i64::MAX]))));
    assert!(is_invalid(try_view(
        ptr,
        f32,
        &[3, 3],
        Some(&[i64::MAX / 2, i64::MAX / 2])
    )));
    assert!(is_invalid(try_view(ptr, f32, &[3], Some(&[i64::MIN]))));
    assert!(is_invalid(try_view(ptr, f32, &[1 << 62], None)));
    // null data with elements; an address span past the end of the address space
    assert!(is_invalid(try_view(0, f32, &[1], None)));
    assert!(is_invalid(try_view(u64::MAX - 8, f32, &[4], None)));
    assert!(is_invalid(try_view(8, f32, &[4], Some(&[-1]))));
    // too many dimensions
    let shape = vec![1; MAX_NDIM + 1];
    assert!(is_invalid(try_view(ptr, f32, &shape, None)));
    let deep = try_view(ptr, f32, &vec![1; MAX_NDIM], None).unwrap();
    assert_eq!(deep.ndim(), MAX_NDIM);
}

#[test]
fn element_types() {
    let unknown = DLDataType::scalar(DLDataTypeCode(200), 32);
    assert!(is_invalid(unknown.item_size()));
    assert!(is_invalid(
        DLDataType::scalar(DLDataTypeCode::FLOAT, 0).item_size()
    ));
    let no_lanes = DLDataType {
        code: DLDataTypeCode::FLOAT,
        bits: 32,
        lanes: 0,
    };
    assert!(is_invalid(no_lanes.item_size()));
    let fp4 = DLDataType::scalar(DLDataTypeCode::FLOAT4_E2M1FN, 4);
    assert!(matches!(fp4.item_size(), Err(Error::Unsupported { .. })));
    let float4 = DLDataType {
        lanes: 4,
        ..DLDataType::F32
    };
    assert_eq!(float4.item_size().unwrap(), 16);
    assert_eq!(DLDataType::C128.item_size().unwrap(), 16);
    assert_eq!(DLDataType::BOOL.item_size().unwrap(), 1);
    let data = iota(4);
    assert!(is_invalid(try_view(
        data.as_ptr() as u64,
        unknown,
        &[1],
        None
    )));
}

#[test]
fn devices() {
    assert!(ViewDevice::Cuda(1).is_accessible_from(1));
    assert!(!ViewDevice::Cuda(1).is_accessible_from(0));
    assert!(ViewDevice::CudaHost.is_accessible_from(3));
    assert!(ViewDevice::CudaManaged.is_accessible_from(0));
    assert!(!ViewDevice::Host.is_accessible_from(0));
    assert!(ViewDevice::Host.is_host_accessible() && !ViewDevice::Cuda(0).is_host_accessible());
    for device in [
        ViewDevice::Host,
        ViewDevice::Cuda(3),
        ViewDevice::CudaHost,
        ViewDevice::CudaManaged,
    ] {
        assert_eq!(
            ViewDevice::from_dlpack(device.to_dlpack().unwrap()).unwrap(),
            device
        );
    }
    let opencl = DLDevice {
        device_type: DLDeviceType::OPENCL,
        device_id: 0,
    };
    assert!(is_invalid(ViewDevice::from_dlpack(opencl)));
    let negative = DLDevice {
        device_type: DLDeviceType::CUDA,
        device_id: -1,
    };
    assert!(is_invalid(ViewDevice::from_dlpack(negative)));
    assert!(is_invalid(ViewDevice::Cuda(usize::MAX).to_dlpack()));
}

#[test]
fn read_only_and_clones() {
    let data = iota(4);
    let view = view_of(&data, DLDataType::F32, &[4], None).into_read_only();
    assert!(view.is_read_only());
    let derived = view.slice(0, 1..).unwrap();
    assert!(derived.is_read_only());
    let clone = derived.clone();
    assert_eq!(
        (clone.ptr(), clone.shape()),
        (derived.ptr(), derived.shape())
    );
    let text = format!("{clone:?}");
    assert!(
        text.contains("read_only: true") && text.contains("shape: [3]"),
        "{text}"
    );
}
