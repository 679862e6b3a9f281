//! StridedMemoryView on a real GPU: views of crate buffers launched on by kernels, strided
//! views touching only their elements, the DLPack export / re-import round trip, and the
//! checks against the buffer.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use cuda_gpu_tests::{GpuFile, gpu_file};
use cuda_safe::dlpack::{
    DLDataType, DLDeviceType, DLManagedTensorVersioned, Layout, StridedMemoryView, ViewDevice,
};
use cuda_safe::{
    Buffer, CodeKind, Device, DeviceMemoryResource, Error, Kernel, LaunchConfig,
    ManagedMemoryResource, PinnedMemoryResource, Program, ProgramOptions, Stream, launch,
};

const SOURCE: &str = r#"
extern "C" __global__ void scale(float* p, float factor, unsigned long long n) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) p[i] *= factor;
}
extern "C" __global__ void spin(unsigned long long ns) {
    unsigned long long t0; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    unsigned long long t = t0;
    while (t - t0 < ns) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
}
extern "C" __global__ void scale_2d(float* origin, long long rows, long long cols,
                                    long long row_stride, long long col_stride, float factor) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < rows * cols) origin[(i / cols) * row_stride + (i % cols) * col_stride] *= factor;
}
"#;

struct Setup {
    device: Device,
    stream: Stream,
    pool: DeviceMemoryResource,
    scale: Kernel,
    scale_2d: Kernel,
    spin: Kernel,
}

fn setup() -> Setup {
    let device = Device::new(0).unwrap();
    device.set_current().unwrap();
    let stream = device.create_stream(Default::default()).unwrap();
    let pool = device.default_memory_resource().unwrap();
    let compiled = Program::new(SOURCE, ProgramOptions::default())
        .unwrap()
        .compile(CodeKind::Cubin)
        .unwrap();
    let code = compiled.load().unwrap();
    Setup {
        device,
        stream,
        pool,
        scale: code.get_kernel("scale").unwrap(),
        scale_2d: code.get_kernel("scale_2d").unwrap(),
        spin: code.get_kernel("spin").unwrap(),
    }
}

/// A device buffer holding 0.0, 1.0, ... (`n` floats).
fn iota_buffer(setup: &Setup, n: usize) -> Arc<Buffer> {
    let mut buffer = setup.pool.allocate(4 * n, &setup.stream).unwrap();
    let values: Vec<f32> = (0..n).map(|i| i as f32).collect();
    buffer.copy_from_host(&values).unwrap();
    Arc::new(buffer)
}

/// Scales the `n` contiguous floats of `view` by `factor` and waits.
fn scale_contiguous(setup: &Setup, view: &StridedMemoryView, factor: f32) {
    assert!(view.is_c_contiguous());
    let n = view.len();
    let config = LaunchConfig::for_num_elements(n, 256).unwrap();
    // SAFETY: scale(float*, float, unsigned long long) writes the view's `n` contiguous
    // floats, which lie inside its live buffer.
    unsafe {
        launch(
            &setup.stream,
            &config,
            &setup.scale,
            (view, factor, n as u64),
        )
    }
    .unwrap();
    setup.stream.sync().unwrap();
}

fn a_buffer_view_is_scaled_in_place_by_a_kernel() {
    let setup = setup();
    let n = 10_000;
    let buffer = iota_buffer(&setup, n);
    let view =
        StridedMemoryView::from_buffer(buffer.clone(), &[100, 100], Layout::C, DLDataType::F32)
            .unwrap();
    assert_eq!(view.device(), ViewDevice::Cuda(setup.device.ordinal()));
    view.require_device(&setup.device).unwrap();
    assert_eq!(view.ptr(), buffer.as_raw());
    assert_eq!(view.buffer().map(Buffer::as_raw), Some(buffer.as_raw()));
    assert_eq!(view.typed_ptr::<f32>().unwrap() as u64, buffer.as_raw());
    scale_contiguous(&setup, &view, 2.0);
    let expected: Vec<f32> = (0..n).map(|i| 2.0 * i as f32).collect();
    assert_eq!(buffer.to_vec::<f32>().unwrap(), expected);
}

fn a_strided_view_scales_only_its_elements() {
    let setup = setup();
    let (rows, cols) = (64usize, 48usize);
    let buffer = iota_buffer(&setup, rows * cols);
    let matrix = StridedMemoryView::from_buffer(
        buffer.clone(),
        &[rows as i64, cols as i64],
        Layout::C,
        DLDataType::F32,
    )
    .unwrap();
    let columns = matrix.slice(1, 8..24).unwrap().transpose(0, 1).unwrap();
    assert_eq!(columns.shape(), &[16, 64]);
    assert_eq!(columns.strides(), &[1, 48]);
    assert_eq!(columns.ptr(), buffer.as_raw() + 8 * 4);
    let (view_rows, view_cols) = (columns.shape()[0], columns.shape()[1]);
    let config = LaunchConfig::for_num_elements(columns.len(), 128).unwrap();
    // SAFETY: scale_2d(float*, long long x4, float) writes rows * cols elements at the view's
    // strides, all inside the buffer (the view's span was checked against it).
    unsafe {
        launch(
            &setup.stream,
            &config,
            &setup.scale_2d,
            (
                &columns,
                view_rows,
                view_cols,
                columns.strides()[0],
                columns.strides()[1],
                3.0f32,
            ),
        )
    }
    .unwrap();
    setup.stream.sync().unwrap();
    let values = buffer.to_vec::<f32>().unwrap();
    for (i, &value) in values.iter().enumerate() {
        let factor = if (8..24).contains(&(i % cols)) {
            3.0
        } else {
            1.0
        };
        assert_eq!(value, factor * i as f32, "element {i}");
    }
}

/// How many times the counting deleter ran, and the deleter it forwards to.
static DELETIONS: AtomicUsize = AtomicUsize::new(0);
static EXPORT_DELETER: std::sync::OnceLock<unsafe extern "C" fn(*mut DLManagedTensorVersioned)> =
    std::sync::OnceLock::new();

unsafe extern "C" fn counting_deleter(tensor: *mut DLManagedTensorVersioned) {
    DELETIONS.fetch_add(1, Ordering::SeqCst);
    // SAFETY: forwards the consumer's one call to the export's own deleter.
    unsafe { (EXPORT_DELETER.get().unwrap())(tensor) };
}

fn dlpack_export_and_reimport_keep_the_data_and_delete_once() {
    let setup = setup();
    let n = 4096;
    let buffer = iota_buffer(&setup, n);
    let view =
        StridedMemoryView::from_buffer(buffer.clone(), &[n as i64], Layout::C, DLDataType::F32)
            .unwrap();
    assert_eq!(Arc::strong_count(&buffer), 2);

    let exported = view.into_dlpack_versioned(None).unwrap();
    // SAFETY: the export is alive until its deleter runs.
    unsafe {
        let tensor = &(*exported).dl_tensor;
        assert_eq!(tensor.data as u64, buffer.as_raw());
        assert_eq!(tensor.device.device_type, DLDeviceType::CUDA);
        assert_eq!(tensor.device.device_id, setup.device.ordinal() as i32);
        assert_eq!(*tensor.shape, n as i64);
        let _ = EXPORT_DELETER.set((*exported).deleter.unwrap());
        (*exported).deleter = Some(counting_deleter);
    }
    assert_eq!(Arc::strong_count(&buffer), 2, "the export holds the view");

    // SAFETY: handed back; the new view owns the export.
    let back = unsafe { StridedMemoryView::from_dlpack_versioned(exported) }.unwrap();
    assert_eq!(
        (back.ptr(), back.shape()),
        (buffer.as_raw(), &[n as i64][..])
    );
    scale_contiguous(&setup, &back, 0.5);
    let half = back.slice(0, ..n / 2).unwrap();
    drop(back);
    assert_eq!(
        DELETIONS.load(Ordering::SeqCst),
        0,
        "a derived view still lives"
    );
    drop(half);
    assert_eq!(DELETIONS.load(Ordering::SeqCst), 1);
    assert_eq!(
        Arc::strong_count(&buffer),
        1,
        "the deleter released the buffer"
    );
    let expected: Vec<f32> = (0..n).map(|i| 0.5 * i as f32).collect();
    assert_eq!(buffer.to_vec::<f32>().unwrap(), expected);

    let legacy =
        StridedMemoryView::from_buffer(buffer.clone(), &[64, 64], Layout::F, DLDataType::F32)
            .unwrap()
            .into_dlpack(None)
            .unwrap();
    // SAFETY: handed back.
    let back = unsafe { StridedMemoryView::from_dlpack(legacy) }.unwrap();
    assert!(back.is_f_contiguous() && !back.is_c_contiguous());
    assert_eq!(back.strides(), &[1, 64]);
    drop(back);
    assert_eq!(Arc::strong_count(&buffer), 1);
}

fn buffer_views_are_checked_against_the_buffer() {
    let setup = setup();
    let buffer = iota_buffer(&setup, 100);
    let f32 = DLDataType::F32;
    let view = |shape: &[i64], layout: Layout<'_>| {
        StridedMemoryView::from_buffer(buffer.clone(), shape, layout, f32)
    };
    let invalid = |result: cuda_safe::Result<StridedMemoryView>| {
        matches!(result, Err(Error::InvalidArgument(_)))
    };
    assert!(view(&[10, 10], Layout::C).is_ok());
    assert!(view(&[10, 10], Layout::F).unwrap().is_f_contiguous());
    assert!(invalid(view(&[101], Layout::C)));
    assert!(invalid(view(&[10, 11], Layout::F)));
    let reversed = view(
        &[100],
        Layout::Strided {
            strides: &[-1],
            byte_offset: 396,
        },
    )
    .unwrap();
    assert_eq!(reversed.byte_span(), (-396, 4));
    assert!(invalid(view(
        &[100],
        Layout::Strided {
            strides: &[-1],
            byte_offset: 392
        }
    )));
    assert!(invalid(view(
        &[10, 10],
        Layout::Strided {
            strides: &[10, 1],
            byte_offset: 4
        }
    )));
    assert!(invalid(view(
        &[4],
        Layout::Strided {
            strides: &[1],
            byte_offset: 2
        }
    )));
    assert!(invalid(view(
        &[4],
        Layout::Strided {
            strides: &[1],
            byte_offset: 401
        }
    )));
    assert!(invalid(view(
        &[4, 4],
        Layout::Strided {
            strides: &[1],
            byte_offset: 0
        }
    )));
    let every_other = view(
        &[50],
        Layout::Strided {
            strides: &[2],
            byte_offset: 4,
        },
    )
    .unwrap();
    assert_eq!(every_other.byte_span(), (0, 396));

    let pinned = PinnedMemoryResource::new(&setup.device)
        .unwrap()
        .allocate(64, &setup.stream)
        .unwrap();
    let pinned = StridedMemoryView::from_buffer(pinned, &[16], Layout::C, f32).unwrap();
    assert_eq!(pinned.device(), ViewDevice::CudaHost);
    pinned.require_device(&setup.device).unwrap();
    match ManagedMemoryResource::new(&setup.device) {
        Ok(managed) => {
            let managed = managed.allocate(64, &setup.stream).unwrap();
            let managed = StridedMemoryView::from_buffer(managed, &[16], Layout::C, f32).unwrap();
            assert_eq!(managed.device(), ViewDevice::CudaManaged);
        }
        Err(error) => eprintln!("managed memory not available here: {error}"),
    }
    let elsewhere = StridedMemoryView::from_buffer(buffer.clone(), &[4], Layout::C, f32).unwrap();
    // SAFETY: nothing is read through the view; only its device is checked.
    let other_device = unsafe {
        StridedMemoryView::from_raw_parts(
            elsewhere.ptr(),
            &[4],
            None,
            f32,
            ViewDevice::Cuda(setup.device.ordinal() + 1),
            None,
        )
    }
    .unwrap();
    assert!(matches!(
        other_device.require_device(&setup.device),
        Err(Error::InvalidArgument(_))
    ));
}

/// Queues `spin` for `ms` milliseconds on `stream` (one block: it holds the stream, not the GPU).
fn spin_on(setup: &Setup, stream: &Stream, ms: u64) {
    // SAFETY: spin reads the clock and touches no memory.
    unsafe {
        launch(
            stream,
            &LaunchConfig::new(1, 1),
            &setup.spin,
            (ms * 1_000_000,),
        )
    }
    .unwrap();
}

/// DLPack's stream rule, both ways: the consumer's stream waits for the producer's queued work
/// at export, and the deleter orders the buffer's free (on the buffer's stream) after the
/// consumer's queued work, so the pool cannot reuse memory a consumer kernel still reads.
fn dlpack_export_is_ordered_on_the_consumer_stream() {
    let setup = setup();
    let consumer = setup.device.create_stream(Default::default()).unwrap();
    let n = 1 << 20;
    let buffer = iota_buffer(&setup, n);
    let marker = |stream: &Stream| {
        let event = setup
            .device
            .create_event(cuda_safe::EventOptions::default())
            .unwrap();
        stream.record(&event).unwrap();
        event
    };

    // The producer is still busy at export: the consumer's work must wait for it.
    spin_on(&setup, buffer.stream(), 200);
    let view =
        StridedMemoryView::from_buffer(buffer, &[n as i64], Layout::C, DLDataType::F32).unwrap();
    let exported = view.into_dlpack_versioned(Some(&consumer)).unwrap();
    let consumer_start = marker(&consumer);
    assert!(
        !consumer_start.is_done().unwrap(),
        "the consumer's stream does not wait for the producer's work"
    );
    setup.stream.sync().unwrap();

    // The consumer is still busy when it deletes: the buffer's stream (where its free is
    // queued) must wait for it.
    spin_on(&setup, &consumer, 200);
    // SAFETY: the export is deleted once, here.
    unsafe { ((*exported).deleter.unwrap())(exported) };
    let after_delete = marker(&setup.stream);
    assert!(
        !after_delete.is_done().unwrap(),
        "the buffer's free is not ordered after the consumer's queued work"
    );
    consumer.sync().unwrap();
    after_delete.sync().unwrap();

    // Without a consumer stream nothing is ordered: the producer's stream is free at once.
    let buffer = iota_buffer(&setup, 16);
    setup.stream.sync().unwrap();
    let view = StridedMemoryView::from_buffer(buffer, &[16], Layout::C, DLDataType::F32).unwrap();
    let exported = view.into_dlpack_versioned(None).unwrap();
    spin_on(&setup, &consumer, 200);
    // SAFETY: the export is deleted once, here.
    unsafe { ((*exported).deleter.unwrap())(exported) };
    let unordered = marker(&setup.stream);
    unordered.sync().unwrap();
    assert!(
        !consumer.query().unwrap(),
        "the consumer's spin is still running"
    );
    consumer.sync().unwrap();
}

/// This file's tests.
pub(crate) const FILE: GpuFile = gpu_file![
    dlpack_export_is_ordered_on_the_consumer_stream,
    a_buffer_view_is_scaled_in_place_by_a_kernel,
    a_strided_view_scales_only_its_elements,
    dlpack_export_and_reimport_keep_the_data_and_delete_once,
    buffer_views_are_checked_against_the_buffer,
];
