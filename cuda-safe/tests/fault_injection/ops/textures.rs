//! The operations of textures and surfaces: mipmapped arrays and their levels, texture objects
//! over each kind of resource, surface objects, and their destruction.

use std::cell::RefCell;
use std::sync::Arc;

use cuda_safe::{
    ArrayDescriptor, ArrayFlags, ArrayFormat, Copy3d, CudaArray, FilterMode, HostPitched,
    MipmappedArray, PitchedBuffer, ReadMode, Stream, SurfaceObject, TextureDescriptor,
    TextureObject,
};

use cuda_safe_stub::faults::fixtures::{buffer, stream, take};
use cuda_safe_stub::faults::{Op, op};

/// Why a texture or surface whose release failed leaks three objects.
const KEEPS: &str = "a texture or surface whose release failed keeps what it reads (it may \
                     still be in use), and that keeps its stream: the three leak together";

fn image(width: usize, height: usize) -> ArrayDescriptor {
    ArrayDescriptor::new(width, ArrayFormat::U8, 4)
        .height(height)
        .depth(0)
}

fn surface_array(stream: &Stream) -> CudaArray {
    CudaArray::with_flags(stream, image(64, 16), ArrayFlags::SURFACE_LOAD_STORE)
        .expect("a surface array")
}

fn mipmapped(stream: &Stream) -> MipmappedArray {
    MipmappedArray::with_flags(stream, image(64, 64), 4, ArrayFlags::SURFACE_LOAD_STORE)
        .expect("a mipmapped array")
}

fn bilinear() -> TextureDescriptor {
    TextureDescriptor::default()
        .filter(FilterMode::Linear)
        .read_mode(ReadMode::NormalizedFloat)
}

pub(crate) fn texture_operations(ops: &mut Vec<Op>) {
    mipmap_operations(ops);
    object_operations(ops);
}

fn mipmap_operations(ops: &mut Vec<Op>) {
    ops.push(op("MipmappedArray::new", stream, |s| {
        MipmappedArray::new(s, image(64, 64), 7)
    }));
    ops.push(op(
        "MipmappedArray::level + copy_from_host",
        || {
            let s = stream();
            (mipmapped(&s), s)
        },
        |(m, _)| {
            let mut level = m.level(2)?;
            let data = vec![7u8; 16 * 4 * 16];
            level.copy_from_host(
                &HostPitched::rows(&data, 16 * 4)?,
                &Copy3d::rect(16 * 4, 16),
            )
        },
    ));
    ops.push(
        op(
            "MipmappedArray::close",
            || {
                let s = stream();
                (RefCell::new(Some(mipmapped(&s))), s)
            },
            |(m, _)| take(m).close(),
        )
        .releasing(),
    );
}

fn object_operations(ops: &mut Vec<Op>) {
    ops.push(
        op(
            "TextureObject::from_array",
            || {
                let s = stream();
                (surface_array(&s), s)
            },
            |(a, _)| TextureObject::from_array(a, &bilinear()),
        )
        .leaking(3, KEEPS),
    );
    ops.push(
        op(
            "TextureObject::from_mipmapped",
            || {
                let s = stream();
                (mipmapped(&s), s)
            },
            |(m, _)| {
                let trilinear = bilinear().mipmap_filter(FilterMode::Linear);
                TextureObject::from_mipmapped(m, &trilinear)
            },
        )
        .leaking(3, KEEPS),
    );
    ops.push(
        op(
            "TextureObject::from_linear",
            || {
                let s = stream();
                (Arc::new(buffer(&s)), s)
            },
            |(b, _)| {
                TextureObject::from_linear(b, ArrayFormat::F32, 1, &TextureDescriptor::default())
            },
        )
        .leaking(3, KEEPS),
    );
    ops.push(
        op(
            "TextureObject::from_pitched",
            || {
                let s = stream();
                let pitched =
                    PitchedBuffer::allocate(&s, 64 * 4, 16, 1, 4).expect("pitched memory");
                (Arc::new(pitched), s)
            },
            |(p, _)| {
                TextureObject::from_pitched(p, ArrayFormat::F32, 1, &TextureDescriptor::default())
            },
        )
        .leaking(3, KEEPS),
    );
    ops.push(
        op(
            "SurfaceObject::new (a mipmap level)",
            || {
                let s = stream();
                (mipmapped(&s), s)
            },
            |(m, _)| SurfaceObject::new(&m.level(1)?),
        )
        .leaking(3, KEEPS),
    );
    ops.push(
        op(
            "TextureObject::close",
            || {
                let s = stream();
                let a = surface_array(&s);
                let texture = TextureObject::from_array(&a, &bilinear()).expect("a texture");
                (RefCell::new(Some(texture)), a, s)
            },
            |(t, _, _)| take(t).close(),
        )
        .releasing()
        .leaking(3, KEEPS),
    );
    ops.push(
        op(
            "SurfaceObject::close",
            || {
                let s = stream();
                let a = surface_array(&s);
                let surface = SurfaceObject::new(&a).expect("a surface");
                (RefCell::new(Some(surface)), a, s)
            },
            |(t, _, _)| take(t).close(),
        )
        .releasing()
        .leaking(3, KEEPS),
    );
}
