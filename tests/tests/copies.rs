//! 2-D and 3-D copies on a real GPU, checked against a CPU model on random data: device to
//! device between pitched buffers on two streams, host to device and back in 3-D through a
//! buffer with a chosen pitch, CUDA arrays, and bad extents refused on each side with the
//! destination untouched.

use cuda_gpu_tests::{GpuFile, gpu_file};
use cuda_safe::{
    ArrayDescriptor, ArrayFormat, Copy3d, CudaArray, Device, Error, HostPitched, HostPitchedMut,
    PitchedBuffer, Stream,
};

fn random_bytes(n: usize, mut seed: u64) -> Vec<u8> {
    (0..n)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 24) as u8
        })
        .collect()
}

/// A linear layout: pitch and rows per slice.
#[derive(Clone, Copy)]
struct Layout {
    pitch: usize,
    rows: usize,
}

/// What `copy` does, on the CPU.
fn model(copy: &Copy3d, src: &[u8], from: Layout, dst: &mut [u8], to: Layout) {
    for z in 0..copy.depth {
        for y in 0..copy.height {
            let s = ((copy.src.z + z) * from.rows + copy.src.y + y) * from.pitch + copy.src.x_bytes;
            let d = ((copy.dst.z + z) * to.rows + copy.dst.y + y) * to.pitch + copy.dst.x_bytes;
            dst[d..d + copy.width_bytes].copy_from_slice(&src[s..s + copy.width_bytes]);
        }
    }
}

fn setup() -> (Device, Stream) {
    let device = Device::new(0).unwrap();
    device.set_current().unwrap();
    let stream = device.create_stream(Default::default()).unwrap();
    (device, stream)
}

/// A pitched buffer of `rows` rows of `width` bytes holding `data` (packed at `width`).
fn uploaded(stream: &Stream, width: usize, rows: usize, data: &[u8]) -> PitchedBuffer {
    let mut buffer = PitchedBuffer::allocate(stream, width, rows, 1, 4).unwrap();
    let host = HostPitched::rows(data, width).unwrap();
    buffer
        .view_mut::<u8>()
        .unwrap()
        .copy_from_host(&host, &Copy3d::rect(width, rows))
        .unwrap();
    buffer
}

/// The whole of a pitched buffer, packed at its width.
fn downloaded(buffer: &PitchedBuffer) -> Vec<u8> {
    let (width, rows) = (buffer.width_bytes(), buffer.height());
    let mut host = vec![0u8; width * rows];
    let mut out = HostPitchedMut::rows(&mut host, width).unwrap();
    buffer
        .view::<u8>()
        .unwrap()
        .copy_to_host(&mut out, &Copy3d::rect(width, rows))
        .unwrap();
    host
}

fn device_to_device_sub_rectangles_across_streams() {
    let (device, first) = setup();
    let second = device.create_stream(Default::default()).unwrap();
    let (width, rows) = (1000, 40);
    let source = random_bytes(width * rows, 1);
    let a = uploaded(&first, width, rows, &source);
    let mut b = uploaded(&second, width, rows, &vec![0u8; width * rows]);
    assert!(a.pitch() >= width && b.pitch() >= width);
    let copy = Copy3d::rect(400, 17)
        .from_offset(64, 5, 0)
        .to_offset(200, 11, 0);
    b.view_mut::<u32>()
        .unwrap()
        .copy_from(&a.view::<u32>().unwrap(), &copy)
        .unwrap();
    let mut expected = vec![0u8; width * rows];
    let packed = Layout { pitch: width, rows };
    model(&copy, &source, packed, &mut expected, packed);
    assert_eq!(downloaded(&b), expected);
}

fn host_to_device_and_back_in_3d_through_a_chosen_pitch() {
    let (device, stream) = setup();
    let pool = device.default_memory_resource().unwrap();
    let device_layout = Layout {
        pitch: 512,
        rows: 16,
    };
    let depth = 4;
    let mut buffer = pool
        .allocate_zeroed::<u8>(device_layout.pitch * device_layout.rows * depth, &stream)
        .unwrap();
    let host_layout = Layout {
        pitch: 300,
        rows: 20,
    };
    let source = random_bytes(host_layout.pitch * host_layout.rows * 5, 2);
    let copy = Copy3d::boxed(256, 12, 3)
        .from_offset(20, 4, 1)
        .to_offset(100, 2, 1);
    let host = HostPitched::new(&source, host_layout.pitch, host_layout.rows).unwrap();
    buffer
        .pitched_mut::<u8>(device_layout.pitch, device_layout.rows)
        .unwrap()
        .copy_from_host(&host, &copy)
        .unwrap();
    let mut expected = vec![0u8; buffer.len()];
    model(&copy, &source, host_layout, &mut expected, device_layout);
    assert_eq!(buffer.to_vec::<u8>().unwrap(), expected);

    // Back: a box of the device buffer into a host layout of its own.
    let back_layout = Layout {
        pitch: 128,
        rows: 8,
    };
    let mut back = vec![0u8; back_layout.pitch * back_layout.rows * 2];
    let copy_back = Copy3d::boxed(96, 8, 2)
        .from_offset(120, 3, 1)
        .to_offset(16, 0, 0);
    let mut out = HostPitchedMut::new(&mut back, back_layout.pitch, back_layout.rows).unwrap();
    buffer
        .pitched::<u8>(device_layout.pitch, device_layout.rows)
        .unwrap()
        .copy_to_host(&mut out, &copy_back)
        .unwrap();
    let mut expected_back = vec![0u8; back.len()];
    model(
        &copy_back,
        &expected,
        device_layout,
        &mut expected_back,
        back_layout,
    );
    assert_eq!(back, expected_back);
}

fn arrays_round_trip_in_2d_and_3d() {
    let (device, stream) = setup();
    // 2-D: 64 x 32 f32, via the array into a pitched buffer.
    let flat = ArrayDescriptor::new(64, ArrayFormat::F32, 1)
        .height(32)
        .depth(0);
    let mut array = CudaArray::new(&stream, flat).unwrap();
    let packed = Layout {
        pitch: 256,
        rows: 32,
    };
    let source = random_bytes(packed.pitch * packed.rows, 3);
    array
        .copy_from_host(
            &HostPitched::rows(&source, packed.pitch).unwrap(),
            &Copy3d::rect(256, 32),
        )
        .unwrap();
    let pool = device.default_memory_resource().unwrap();
    let device_layout = Layout {
        pitch: 512,
        rows: 32,
    };
    let mut buffer = pool.allocate_zeroed::<u8>(512 * 32, &stream).unwrap();
    let copy = Copy3d::rect(32 * 4, 16)
        .from_offset(16 * 4, 8, 0)
        .to_offset(64, 3, 0);
    buffer
        .pitched_mut::<f32>(device_layout.pitch, device_layout.rows)
        .unwrap()
        .copy_from_array(&array, &copy)
        .unwrap();
    let mut expected = vec![0u8; buffer.len()];
    model(&copy, &source, packed, &mut expected, device_layout);
    assert_eq!(buffer.to_vec::<u8>().unwrap(), expected);

    // 3-D: 16 x 8 x 4 elements of 4 u8 channels, host to array to host.
    let boxed = ArrayDescriptor::new(16, ArrayFormat::U8, 4)
        .height(8)
        .depth(4);
    let mut cube = CudaArray::new(&stream, boxed).unwrap();
    let cube_layout = Layout { pitch: 64, rows: 8 };
    let cube_source = random_bytes(64 * 8 * 4, 4);
    cube.copy_from_host(
        &HostPitched::new(&cube_source, 64, 8).unwrap(),
        &Copy3d::boxed(64, 8, 4),
    )
    .unwrap();
    let mut out = vec![0u8; 64 * 8 * 4];
    let part = Copy3d::boxed(32, 5, 2)
        .from_offset(16, 2, 1)
        .to_offset(8, 1, 2);
    cube.copy_to_host(&mut HostPitchedMut::new(&mut out, 64, 8).unwrap(), &part)
        .unwrap();
    let mut expected_cube = vec![0u8; out.len()];
    model(
        &part,
        &cube_source,
        cube_layout,
        &mut expected_cube,
        cube_layout,
    );
    assert_eq!(out, expected_cube);
}

fn bad_extents_are_refused_on_each_side_and_copy_nothing() {
    let (_device, stream) = setup();
    let (width, rows) = (256, 8);
    let a = uploaded(&stream, width, rows, &random_bytes(width * rows, 5));
    let mut b = uploaded(&stream, width, rows, &vec![7u8; width * rows]);
    let before = downloaded(&b);
    let past_rows = Copy3d::rect(16, 1).to_offset(0, 8, 0);
    let cases: [(Copy3d, &str); 7] = [
        (Copy3d::rect(16, 9), "source"),
        (Copy3d::rect(16, 1).from_offset(0, 0, 1), "source"),
        (Copy3d::rect(16, 1).from_offset(2, 0, 0), "source"),
        (Copy3d::rect(16, 1).from_offset(a.pitch(), 0, 0), "source"),
        (past_rows, "destination"),
        (
            Copy3d::rect(8, 1).to_offset(b.pitch() - 4, 0, 0),
            "destination",
        ),
        (Copy3d::rect(6, 1), "source"),
    ];
    for (copy, side) in cases {
        let error = b
            .view_mut::<u32>()
            .unwrap()
            .copy_from(&a.view::<u32>().unwrap(), &copy)
            .unwrap_err();
        assert!(
            matches!(error, Error::InvalidArgument(_)),
            "{copy:?}: {error}"
        );
        assert!(
            error
                .to_string()
                .starts_with(&format!("invalid argument: {side}")),
            "{error}"
        );
    }
    // Host sides: a host slice too short, and a host pitch narrower than the copy.
    let short = vec![0u8; 100];
    let error = b
        .view_mut::<u8>()
        .unwrap()
        .copy_from_host(
            &HostPitched::rows(&short, 50).unwrap(),
            &Copy3d::rect(50, 3),
        )
        .unwrap_err();
    assert!(error.to_string().contains("source"), "{error}");
    let mut narrow = vec![0u8; 4096];
    let error = a
        .view::<u8>()
        .unwrap()
        .copy_to_host(
            &mut HostPitchedMut::rows(&mut narrow, 32).unwrap(),
            &Copy3d::rect(64, 2),
        )
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("destination: x offset + width = 64"),
        "{error}"
    );
    // An array side.
    let array = CudaArray::new(
        &stream,
        ArrayDescriptor::new(8, ArrayFormat::F32, 1)
            .height(8)
            .depth(0),
    )
    .unwrap();
    let error = b
        .view_mut::<u8>()
        .unwrap()
        .copy_from_array(&array, &Copy3d::rect(36, 1))
        .unwrap_err();
    assert!(error.to_string().contains("array's width of 32"), "{error}");
    // A zero extent copies nothing and is fine.
    b.view_mut::<u32>()
        .unwrap()
        .copy_from(&a.view::<u32>().unwrap(), &Copy3d::rect(0, 5))
        .unwrap();
    assert_eq!(
        downloaded(&b),
        before,
        "no refused copy touched the destination"
    );
}

/// This file's tests.
pub(crate) const FILE: GpuFile = gpu_file![
    device_to_device_sub_rectangles_across_streams,
    host_to_device_and_back_in_3d_through_a_chosen_pitch,
    arrays_round_trip_in_2d_and_3d,
    bad_extents_are_refused_on_each_side_and_copy_nothing,
];
