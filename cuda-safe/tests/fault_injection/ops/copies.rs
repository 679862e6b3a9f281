//! The operations of 2-D and 3-D copies: pitched memory, CUDA arrays, and copies between them,
//! buffers' pitched views and the host.

use std::cell::RefCell;

use cuda_safe::{
    ArrayDescriptor, ArrayFormat, Buffer, Copy3d, CudaArray, HostPitched, HostPitchedMut,
    PitchedBuffer, Stream,
};

use cuda_safe_stub::faults::fixtures::{buffer, stream, take};
use cuda_safe_stub::faults::{Op, op};

/// Rows of 64 floats, 16 rows a slice, 4 slices.
const WIDTH: usize = 64 * 4;
const ROWS: usize = 16;
const SLICES: usize = 4;

fn pitched(stream: &Stream, slices: usize) -> PitchedBuffer {
    PitchedBuffer::allocate(stream, WIDTH, ROWS, slices, 4).expect("pitched memory")
}

fn array(stream: &Stream, slices: usize) -> CudaArray {
    let descriptor = ArrayDescriptor::new(64, ArrayFormat::F32, 1)
        .height(ROWS)
        .depth(slices);
    CudaArray::new(stream, descriptor).expect("an array")
}

/// The host's floats for `slices` slices.
fn host(slices: usize) -> Vec<f32> {
    vec![1.5; WIDTH / 4 * ROWS * slices]
}

pub(crate) fn copy_operations(ops: &mut Vec<Op>) {
    allocation_operations(ops);
    linear_operations(ops);
    array_operations(ops);
}

fn allocation_operations(ops: &mut Vec<Op>) {
    ops.push(op("PitchedBuffer::allocate", stream, |s| {
        PitchedBuffer::allocate(s, WIDTH, ROWS, SLICES, 4)
    }));
    ops.push(
        op(
            "PitchedBuffer::close",
            || {
                let s = stream();
                (RefCell::new(Some(pitched(&s, 1))), s)
            },
            |(p, _)| take(p).close(),
        )
        .releasing(),
    );
    ops.push(op("CudaArray::new (2-D)", stream, |s| {
        CudaArray::new(
            s,
            ArrayDescriptor::new(64, ArrayFormat::U8, 4)
                .height(ROWS)
                .depth(0),
        )
    }));
    ops.push(op("CudaArray::new (3-D)", stream, |s| {
        CudaArray::new(
            s,
            ArrayDescriptor::new(64, ArrayFormat::F32, 1)
                .height(ROWS)
                .depth(SLICES),
        )
    }));
    ops.push(
        op(
            "CudaArray::close",
            || {
                let s = stream();
                (RefCell::new(Some(array(&s, 1))), s)
            },
            |(a, _)| take(a).close(),
        )
        .releasing(),
    );
}

fn linear_operations(ops: &mut Vec<Op>) {
    ops.push(op(
        "PitchedMut::copy_from_host (2-D)",
        || {
            let s = stream();
            (RefCell::new(pitched(&s, 1)), s)
        },
        |(p, _)| {
            let data = host(1);
            let rows = HostPitched::rows(&data, WIDTH)?;
            p.borrow_mut()
                .view_mut::<f32>()?
                .copy_from_host(&rows, &Copy3d::rect(WIDTH, ROWS))
        },
    ));
    ops.push(op(
        "Pitched::copy_to_host (3-D)",
        || {
            let s = stream();
            (pitched(&s, SLICES), s)
        },
        |(p, _)| {
            let mut data = host(SLICES);
            let mut rows = HostPitchedMut::new(&mut data, WIDTH, ROWS)?;
            p.view::<f32>()?
                .copy_to_host(&mut rows, &Copy3d::boxed(WIDTH, ROWS, SLICES))
        },
    ));
    ops.push(op(
        "PitchedMut::copy_from (a buffer's rows, across streams)",
        || {
            let (a, b) = (stream(), stream());
            let source: Buffer = buffer(&b);
            (RefCell::new(pitched(&a, 1)), source, a, b)
        },
        |(p, source, _, _)| {
            let from = source.pitched::<f32>(WIDTH, ROWS)?;
            p.borrow_mut()
                .view_mut::<f32>()?
                .copy_from(&from, &Copy3d::rect(WIDTH, ROWS))
        },
    ));
}

fn array_operations(ops: &mut Vec<Op>) {
    ops.push(op(
        "CudaArray::copy_from_host (3-D)",
        || {
            let s = stream();
            (RefCell::new(array(&s, SLICES)), s)
        },
        |(a, _)| {
            let data = host(SLICES);
            let rows = HostPitched::new(&data, WIDTH, ROWS)?;
            a.borrow_mut()
                .copy_from_host(&rows, &Copy3d::boxed(WIDTH, ROWS, SLICES))
        },
    ));
    ops.push(op(
        "CudaArray::copy_to_host (a corner)",
        || {
            let s = stream();
            (array(&s, 1), s)
        },
        |(a, _)| {
            let mut data = vec![0f32; 8 * 4];
            let mut rows = HostPitchedMut::rows(&mut data, 8 * 4)?;
            a.copy_to_host(&mut rows, &Copy3d::rect(8 * 4, 4).from_offset(16, 2, 0))
        },
    ));
    ops.push(op(
        "CudaArray::copy_from (pitched memory)",
        || {
            let s = stream();
            (RefCell::new(array(&s, 1)), pitched(&s, 1), s)
        },
        |(a, p, _)| {
            a.borrow_mut()
                .copy_from(&p.view::<f32>()?, &Copy3d::rect(WIDTH, ROWS))
        },
    ));
    ops.push(op(
        "PitchedMut::copy_from_array (across streams)",
        || {
            let (a, b) = (stream(), stream());
            (RefCell::new(pitched(&a, 1)), array(&b, 1), a, b)
        },
        |(p, array, _, _)| {
            p.borrow_mut()
                .view_mut::<f32>()?
                .copy_from_array(array, &Copy3d::rect(WIDTH, ROWS))
        },
    ));
}
