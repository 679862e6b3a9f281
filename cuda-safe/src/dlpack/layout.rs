//! Stride arithmetic on a shape and its strides (in elements): element counts, compact
//! strides, the byte span and contiguity. Every product and sum is checked; an overflow is
//! [`Error::InvalidArgument`].

use crate::error::{Error, Result};

/// The overflow error, naming what was being computed.
#[cold]
fn overflow(what: &str) -> Error {
    Error::invalid_argument(format!("{what} overflows 64-bit arithmetic"))
}

/// The number of elements; a negative extent or an overflowing product is an error.
#[inline]
pub(crate) fn element_count(shape: &[i64]) -> Result<usize> {
    let mut count: i64 = 1;
    for &extent in shape {
        if extent < 0 {
            return Err(Error::invalid_argument(format!(
                "shape {shape:?} has a negative extent"
            )));
        }
        count = count
            .checked_mul(extent)
            .ok_or_else(|| overflow("the element count"))?;
    }
    usize::try_from(count).map_err(|_| overflow("the element count"))
}

/// Writes the strides of a compact row-major (C order) layout of `shape` into `strides`.
#[inline]
pub(crate) fn fill_c_strides(shape: &[i64], strides: &mut [i64]) -> Result<()> {
    let mut next = Some(1i64);
    for (stride, &extent) in strides.iter_mut().zip(shape).rev() {
        *stride = next.ok_or_else(|| overflow("a C-order stride"))?;
        next = next.and_then(|next| next.checked_mul(extent.max(1)));
    }
    Ok(())
}

/// Writes the strides of a compact column-major (Fortran order) layout of `shape`.
#[inline]
pub(crate) fn fill_f_strides(shape: &[i64], strides: &mut [i64]) -> Result<()> {
    let mut next = Some(1i64);
    for (stride, &extent) in strides.iter_mut().zip(shape) {
        *stride = next.ok_or_else(|| overflow("a Fortran-order stride"))?;
        next = next.and_then(|next| next.checked_mul(extent.max(1)));
    }
    Ok(())
}

/// The bytes the elements cover, as `[low, high)` relative to the first element (`low <= 0`
/// with negative strides); `(0, 0)` when there is no element.
#[inline]
pub(crate) fn byte_span(shape: &[i64], strides: &[i64], item_size: usize) -> Result<(i64, i64)> {
    if shape.contains(&0) {
        return Ok((0, 0));
    }
    let (mut low, mut high) = (0i64, 0i64);
    for (&extent, &stride) in shape.iter().zip(strides) {
        let reach = (extent - 1)
            .checked_mul(stride)
            .ok_or_else(|| overflow("an axis' reach (extent - 1) * stride"))?;
        if reach < 0 {
            low = low.checked_add(reach).ok_or_else(|| overflow("the span"))?;
        } else {
            high = high
                .checked_add(reach)
                .ok_or_else(|| overflow("the span"))?;
        }
    }
    let item = i64::try_from(item_size).map_err(|_| overflow("the element size"))?;
    let low = low.checked_mul(item).ok_or_else(|| overflow("the span"))?;
    let high = high
        .checked_add(1)
        .and_then(|end| end.checked_mul(item))
        .ok_or_else(|| overflow("the span"))?;
    Ok((low, high))
}

/// Whether the layout is compact row-major: extents of 1 may have any stride, and a layout
/// without elements is contiguous.
#[inline]
pub(crate) fn is_c_contiguous(shape: &[i64], strides: &[i64]) -> bool {
    is_compact(shape.iter().zip(strides).rev(), shape)
}

/// Whether the layout is compact column-major, by the same rules as [`is_c_contiguous`].
#[inline]
pub(crate) fn is_f_contiguous(shape: &[i64], strides: &[i64]) -> bool {
    is_compact(shape.iter().zip(strides), shape)
}

/// Walks `(extent, stride)` pairs from the fastest axis out.
fn is_compact<'a>(axes: impl Iterator<Item = (&'a i64, &'a i64)>, shape: &[i64]) -> bool {
    if shape.contains(&0) {
        return true;
    }
    let mut expected: i64 = 1;
    for (&extent, &stride) in axes {
        if extent != 1 && stride != expected {
            return false;
        }
        match expected.checked_mul(extent) {
            Some(next) => expected = next,
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_strides() {
        let mut strides = [0; 3];
        fill_c_strides(&[2, 3, 4], &mut strides).unwrap();
        assert_eq!(strides, [12, 4, 1]);
        fill_f_strides(&[2, 3, 4], &mut strides).unwrap();
        assert_eq!(strides, [1, 2, 6]);
        assert!(fill_c_strides(&[i64::MAX, 2, 2], &mut strides).is_ok());
        assert!(fill_c_strides(&[2, i64::MAX, 2], &mut strides).is_err());
    }

    #[test]
    fn spans() {
        assert_eq!(byte_span(&[2, 3], &[3, 1], 4).unwrap(), (0, 24));
        assert_eq!(byte_span(&[2, 3], &[-3, 1], 4).unwrap(), (-12, 12));
        assert_eq!(byte_span(&[0, 3], &[-3, 1], 4).unwrap(), (0, 0));
        assert_eq!(byte_span(&[], &[], 8).unwrap(), (0, 8));
        assert!(byte_span(&[3], &[i64::MAX], 1).is_err());
    }
}
