//! The rules `cuTensorMapEncodeTiled` and `cuTensorMapEncodeIm2col` state for their
//! arguments, checked before the driver sees them, each refusal naming the rule it broke.

use super::{Im2colOptions, Interleave, Swizzle, TensorMapDataType, TensorOptions, TiledOptions};
use crate::error::{Error, Result};

/// The most dimensions a tensor map has.
pub const MAX_RANK: usize = 5;

/// The global tensor of a map: its element type, first address, extents and byte strides,
/// innermost dimension first (as the driver takes them).
#[derive(Debug, Clone, Copy)]
pub(super) struct Global<'a> {
    pub(super) dtype: TensorMapDataType,
    pub(super) address: u64,
    pub(super) dims: &'a [u64],
    pub(super) strides: &'a [u64],
}

fn refuse(rule: &str, detail: String) -> Error {
    Error::invalid_argument(format!("tensor map: {rule}: {detail}"))
}

/// Checks the global tensor and the options shared by both kinds of map; `available` is the
/// bytes from `address` the tensor may reach (its memory's end), when known.
fn check_global(
    global: &Global<'_>,
    options: &TensorOptions,
    available: Option<u64>,
) -> Result<()> {
    let rank = global.dims.len();
    if rank == 0 || rank > MAX_RANK {
        return Err(refuse(
            "rank",
            format!("{rank} dimensions (1 to {MAX_RANK})"),
        ));
    }
    if options.interleave != Interleave::None && rank < 3 {
        return Err(refuse(
            "rank",
            format!("an interleaved layout needs 3 or more dimensions, not {rank}"),
        ));
    }
    let align = if options.interleave == Interleave::B32 {
        32
    } else {
        16
    };
    if !global.address.is_multiple_of(align) {
        return Err(refuse(
            "alignment",
            format!(
                "the address {:#x} must be {align}-byte aligned",
                global.address
            ),
        ));
    }
    for (axis, &dim) in global.dims.iter().enumerate() {
        if dim == 0 || dim > 1 << 31 {
            return Err(refuse(
                "dimension",
                format!("dimension {axis} is {dim} elements (1 to 2^31)"),
            ));
        }
    }
    if global.strides.len() + 1 != rank {
        return Err(refuse(
            "strides",
            format!(
                "a rank-{rank} tensor takes {} strides (those of every dimension but the \
                 innermost), not {}",
                rank - 1,
                global.strides.len()
            ),
        ));
    }
    let element = global.dtype.size() as u64;
    let mut covered = global.dims[0] * element;
    for (axis, &stride) in global.strides.iter().enumerate() {
        if !stride.is_multiple_of(align) {
            return Err(refuse(
                "stride multiple of 16",
                format!(
                    "the stride of dimension {} is {stride} bytes, not a multiple of {align}",
                    axis + 1
                ),
            ));
        }
        if stride >= 1 << 40 {
            return Err(refuse(
                "stride",
                format!(
                    "the stride of dimension {} is {stride} bytes (under 2^40)",
                    axis + 1
                ),
            ));
        }
        if stride < covered {
            return Err(refuse(
                "layout",
                format!(
                    "the stride of dimension {} is {stride} bytes, less than the {covered} bytes \
                     the dimensions inside it span (innermost dimension first, each stride \
                     covering the previous dimension)",
                    axis + 1
                ),
            ));
        }
        covered = stride.saturating_mul(global.dims[axis + 1]);
    }
    if let Some(available) = available {
        let last = global
            .dims
            .iter()
            .skip(1)
            .zip(global.strides)
            .map(|(&dim, &stride)| (dim - 1).saturating_mul(stride))
            .fold(
                (global.dims[0] - 1) * element + element,
                u64::saturating_add,
            );
        if last > available {
            return Err(refuse(
                "extent",
                format!(
                    "the tensor reaches {last} bytes past its address, its memory holds {available}"
                ),
            ));
        }
    }
    for (axis, &stride) in options.element_strides.iter().enumerate() {
        if stride == 0 || stride > 8 {
            return Err(refuse(
                "element strides",
                format!("the element stride of dimension {axis} is {stride} (1 to 8)"),
            ));
        }
    }
    if !options.element_strides.is_empty() && options.element_strides.len() != rank {
        return Err(refuse(
            "element strides",
            format!(
                "{} element strides for {rank} dimensions",
                options.element_strides.len()
            ),
        ));
    }
    if options.interleave == Interleave::B32 && options.swizzle != Swizzle::B32 {
        return Err(refuse(
            "swizzle",
            "a 32-byte interleaved layout needs the 32-byte swizzle".to_owned(),
        ));
    }
    if options.oob_fill_nan && !global.dtype.is_float() {
        return Err(refuse(
            "out-of-bounds fill",
            format!(
                "the NaN fill needs a floating-point type, not {:?}",
                global.dtype
            ),
        ));
    }
    Ok(())
}

/// Checks the inner extent of a box (`inner` elements along dimension 0) against the swizzle
/// span and the 16-byte rule.
fn check_inner(inner: u64, global: &Global<'_>, options: &TensorOptions, what: &str) -> Result<()> {
    let bytes = inner * global.dtype.size() as u64;
    if options.interleave == Interleave::None {
        if !bytes.is_multiple_of(16) {
            return Err(refuse(
                "box inner bytes multiple of 16",
                format!("{what} is {bytes} bytes, not a multiple of 16"),
            ));
        }
        if let Some(span) = options.swizzle.span()
            && bytes > span
        {
            return Err(refuse(
                "swizzle span",
                format!("{what} is {bytes} bytes, over the {span}-byte swizzle span"),
            ));
        }
    }
    Ok(())
}

/// Checks a tiled map's arguments.
pub(super) fn check_tiled(
    global: &Global<'_>,
    options: &TiledOptions,
    available: Option<u64>,
) -> Result<()> {
    check_global(global, &options.common, available)?;
    let rank = global.dims.len();
    if options.box_dims.len() != rank {
        return Err(refuse(
            "box",
            format!(
                "{} box dimensions for {rank} tensor dimensions",
                options.box_dims.len()
            ),
        ));
    }
    for (axis, &extent) in options.box_dims.iter().enumerate() {
        if extent == 0 || extent > 256 {
            return Err(refuse(
                "box limits",
                format!("box dimension {axis} is {extent} elements (1 to 256)"),
            ));
        }
    }
    check_inner(
        u64::from(options.box_dims[0]),
        global,
        &options.common,
        "the box's inner dimension",
    )
}

/// The range of im2col corner offsets for a rank.
fn corner_range(rank: usize) -> (i32, i32) {
    match rank {
        3 => (-32_768, 32_767),
        4 => (-128, 127),
        _ => (-16, 15),
    }
}

/// Checks an im2col map's arguments.
pub(super) fn check_im2col(
    global: &Global<'_>,
    options: &Im2colOptions,
    available: Option<u64>,
) -> Result<()> {
    check_global(global, &options.common, available)?;
    let rank = global.dims.len();
    if !(3..=5).contains(&rank) {
        return Err(refuse(
            "rank",
            format!("an im2col map has 3 to 5 dimensions, not {rank}"),
        ));
    }
    let (low, high) = corner_range(rank);
    for (what, corner) in [
        ("lower", &options.lower_corner),
        ("upper", &options.upper_corner),
    ] {
        if corner.len() != rank - 2 {
            return Err(refuse(
                "pixel box corners",
                format!(
                    "the {what} corner has {} offsets, a rank-{rank} map takes {}",
                    corner.len(),
                    rank - 2
                ),
            ));
        }
        if let Some(offset) = corner.iter().find(|offset| !(low..=high).contains(*offset)) {
            return Err(refuse(
                "pixel box corners",
                format!(
                    "the {what} corner offset {offset} is outside {low} to {high} for rank {rank}"
                ),
            ));
        }
    }
    if options.channels_per_pixel == 0 || options.channels_per_pixel > 256 {
        return Err(refuse(
            "box limits",
            format!(
                "{} channels per pixel (1 to 256)",
                options.channels_per_pixel
            ),
        ));
    }
    if options.pixels_per_column == 0 || options.pixels_per_column > 1024 {
        return Err(refuse(
            "box limits",
            format!(
                "{} pixels per column (1 to 1024)",
                options.pixels_per_column
            ),
        ));
    }
    check_inner(
        u64::from(options.channels_per_pixel),
        global,
        &options.common,
        "a pixel's channels",
    )
}

#[cfg(test)]
mod tests;
