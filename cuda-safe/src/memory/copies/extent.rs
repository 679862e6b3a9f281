//! What a 2-D/3-D copy moves ([`Copy3d`]) and the checks of every extent against both sides'
//! shapes, made before any driver call (pure, so tested without a GPU).

use crate::error::{Error, Result};

/// Where a copy starts on one side: a byte offset within a row, a row, a slice.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Offset3 {
    /// Bytes into each row.
    pub x_bytes: usize,
    /// Rows into each slice.
    pub y: usize,
    /// Slices.
    pub z: usize,
}

/// A 2-D or 3-D copy: `depth` slices of `height` rows of `width_bytes` bytes, from `src` on
/// the source side to `dst` on the destination side (a 2-D copy has a depth of 1).
///
/// Every extent is checked against both sides before the driver is called: an offset plus the
/// extent must fit the row (the pitch, or an array's width), the rows per slice and the slices
/// (or the side's size in bytes), and byte offsets and widths must be whole elements of the
/// side's type. A copy of zero width, height or depth copies nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Copy3d {
    /// Bytes per row.
    pub width_bytes: usize,
    /// Rows per slice.
    pub height: usize,
    /// Slices (1 for a 2-D copy).
    pub depth: usize,
    /// Where the copy starts in the source.
    pub src: Offset3,
    /// Where the copy starts in the destination.
    pub dst: Offset3,
}

impl Copy3d {
    /// A 2-D copy of `height` rows of `width_bytes` bytes, from the origin to the origin.
    pub fn rect(width_bytes: usize, height: usize) -> Self {
        Self::boxed(width_bytes, height, 1)
    }

    /// A 3-D copy of `depth` slices of `height` rows of `width_bytes` bytes, from the origin
    /// to the origin.
    pub fn boxed(width_bytes: usize, height: usize, depth: usize) -> Self {
        Self {
            width_bytes,
            height,
            depth,
            ..Self::default()
        }
    }

    /// The same copy starting at (`x_bytes`, `y`, `z`) in the source.
    pub fn from_offset(self, x_bytes: usize, y: usize, z: usize) -> Self {
        Self {
            src: Offset3 { x_bytes, y, z },
            ..self
        }
    }

    /// The same copy starting at (`x_bytes`, `y`, `z`) in the destination.
    pub fn to_offset(self, x_bytes: usize, y: usize, z: usize) -> Self {
        Self {
            dst: Offset3 { x_bytes, y, z },
            ..self
        }
    }

    /// Whether it copies nothing (a zero extent).
    pub fn is_empty(&self) -> bool {
        self.width_bytes == 0 || self.height == 0 || self.depth == 0
    }

    /// Whether it fits the 2-D call (one slice, at slice 0 on both sides).
    pub(crate) fn is_2d(&self) -> bool {
        self.depth == 1 && self.src.z == 0 && self.dst.z == 0
    }
}

/// The shape of one side of a copy, as far as the checks need it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// Linear memory (device or host): `len` bytes, rows `pitch` bytes apart, `rows` rows per
    /// slice, elements of `element` bytes.
    Linear {
        len: usize,
        pitch: usize,
        rows: usize,
        element: usize,
    },
    /// A CUDA array: `width_bytes` per row, `height` rows, `depth` slices (at least 1 each),
    /// elements of `element` bytes.
    Array {
        width_bytes: usize,
        height: usize,
        depth: usize,
        element: usize,
    },
}

/// `a + b`, or an error naming what overflowed.
fn add(side: &str, what: &str, a: usize, b: usize) -> Result<usize> {
    a.checked_add(b).ok_or_else(|| {
        Error::invalid_argument(format!("{side}: {what} ({a} + {b}) overflows usize"))
    })
}

/// `a * b`, or an error naming what overflowed.
fn mul(side: &str, what: &str, a: usize, b: usize) -> Result<usize> {
    a.checked_mul(b).ok_or_else(|| {
        Error::invalid_argument(format!("{side}: {what} ({a} * {b}) overflows usize"))
    })
}

/// Checks the copy against one side (`side` names it in errors: "source" or
/// "destination").
fn check_side(side: &str, copy: &Copy3d, at: &Offset3, shape: &Shape) -> Result<()> {
    let refuse = |what: String| Err(Error::invalid_argument(format!("{side}: {what}")));
    let element = match *shape {
        Shape::Linear { element, .. } | Shape::Array { element, .. } => element,
    };
    if element == 0 {
        return refuse("zero-sized elements have no layout".into());
    }
    if !at.x_bytes.is_multiple_of(element) {
        return refuse(format!(
            "x offset {} bytes is not a whole number of {element}-byte elements",
            at.x_bytes
        ));
    }
    if !copy.width_bytes.is_multiple_of(element) {
        return refuse(format!(
            "width {} bytes is not a whole number of {element}-byte elements",
            copy.width_bytes
        ));
    }
    let row_end = add(side, "x offset + width", at.x_bytes, copy.width_bytes)?;
    let last_row = add(side, "y offset + height", at.y, copy.height)?;
    let last_slice = add(side, "z offset + depth", at.z, copy.depth)?;
    match *shape {
        Shape::Linear {
            len,
            pitch,
            rows,
            element,
        } => {
            if pitch == 0 || !pitch.is_multiple_of(element) {
                return refuse(format!(
                    "pitch {pitch} bytes is not a non-zero whole number of {element}-byte \
                     elements"
                ));
            }
            if row_end > pitch {
                return refuse(format!(
                    "x offset + width = {row_end} bytes exceeds the pitch of {pitch} bytes"
                ));
            }
            if last_row > rows {
                return refuse(format!(
                    "y offset + height = {last_row} rows exceeds the {rows} rows per slice"
                ));
            }
            // The byte just past the copy's last row: slice z + depth - 1, row y + height - 1.
            let slice_bytes = mul(side, "rows per slice * pitch", rows, pitch)?;
            let last_start = add(
                side,
                "the last row's offset",
                mul(side, "the last slice's offset", last_slice - 1, slice_bytes)?,
                mul(side, "the last row's offset", last_row - 1, pitch)?,
            )?;
            let end = add(side, "the copy's end", last_start, row_end)?;
            if end > len {
                return refuse(format!(
                    "the copy ends at byte {end} (slice {}, row {}), past the {len} bytes there",
                    last_slice - 1,
                    last_row - 1
                ));
            }
        }
        Shape::Array {
            width_bytes,
            height,
            depth,
            ..
        } => {
            if row_end > width_bytes {
                return refuse(format!(
                    "x offset + width = {row_end} bytes exceeds the array's width of \
                     {width_bytes} bytes"
                ));
            }
            if last_row > height {
                return refuse(format!(
                    "y offset + height = {last_row} rows exceeds the array's height of {height}"
                ));
            }
            if last_slice > depth {
                return refuse(format!(
                    "z offset + depth = {last_slice} slices exceeds the array's depth of {depth}"
                ));
            }
        }
    }
    Ok(())
}

/// Checks `copy` against both sides; `false` when it copies nothing (zero extent, which needs
/// no check and no call).
pub(crate) fn check(copy: &Copy3d, src: &Shape, dst: &Shape) -> Result<bool> {
    if copy.is_empty() {
        return Ok(false);
    }
    check_side("source", copy, &copy.src, src)?;
    check_side("destination", copy, &copy.dst, dst)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn linear(len: usize, pitch: usize, rows: usize, element: usize) -> Shape {
        Shape::Linear {
            len,
            pitch,
            rows,
            element,
        }
    }

    fn refused(copy: Copy3d, src: Shape, dst: Shape, words: &[&str]) {
        let message = check(&copy, &src, &dst).unwrap_err().to_string();
        for word in words {
            assert!(message.contains(word), "{message:?} should say {word:?}");
        }
    }

    #[test]
    fn copies_that_fit_pass_and_empty_ones_do_nothing() {
        let side = linear(64 * 10 * 3, 64, 10, 4);
        assert!(check(&Copy3d::boxed(64, 10, 3), &side, &side).unwrap());
        let inner = Copy3d::boxed(32, 4, 2)
            .from_offset(16, 3, 1)
            .to_offset(32, 6, 0);
        assert!(check(&inner, &side, &side).unwrap());
        assert!(!check(&Copy3d::rect(0, 10), &side, &side).unwrap());
        assert!(!check(&Copy3d::boxed(64, 10, 0), &side, &side).unwrap());
        let array = Shape::Array {
            width_bytes: 64,
            height: 10,
            depth: 3,
            element: 4,
        };
        assert!(check(&Copy3d::boxed(64, 10, 3), &side, &array).unwrap());
    }

    #[test]
    fn a_2d_copy_may_end_short_of_the_last_row() {
        // 3 rows of 100 bytes at a pitch of 128: the last row needs only 100 bytes.
        let tight = linear(128 * 2 + 100, 128, 3, 1);
        assert!(check(&Copy3d::rect(100, 3), &tight, &tight).unwrap());
        refused(
            Copy3d::rect(101, 3),
            tight,
            linear(1 << 20, 128, 3, 1),
            &["source", "ends at byte 357", "356 bytes"],
        );
    }

    #[test]
    fn each_source_extent_is_refused_by_name() {
        let big = linear(1 << 20, 256, 64, 1);
        let src = linear(64 * 8 * 2, 64, 8, 4);
        let cases: [(Copy3d, &[&str]); 7] = [
            (Copy3d::rect(68, 1), &["source", "exceeds the pitch"]),
            (
                Copy3d::rect(8, 1).from_offset(60, 0, 0),
                &["source", "x offset + width = 68"],
            ),
            (
                Copy3d::rect(8, 9),
                &["source", "9 rows", "8 rows per slice"],
            ),
            (
                Copy3d::rect(8, 2).from_offset(0, 7, 0),
                &["source", "y offset + height"],
            ),
            (
                Copy3d::boxed(8, 8, 3),
                &["source", "ends at byte", "slice 2"],
            ),
            (
                Copy3d::rect(6, 1),
                &["source", "width 6 bytes", "4-byte elements"],
            ),
            (
                Copy3d::rect(4, 1).from_offset(2, 0, 0),
                &["source", "x offset 2 bytes"],
            ),
        ];
        for (copy, words) in cases {
            refused(copy, src, big, words);
        }
    }

    #[test]
    fn each_destination_extent_is_refused_by_name() {
        let big = linear(1 << 20, 256, 64, 1);
        let array = Shape::Array {
            width_bytes: 32,
            height: 4,
            depth: 2,
            element: 8,
        };
        let cases: [(Copy3d, &[&str]); 5] = [
            (Copy3d::rect(40, 1), &["destination", "array's width of 32"]),
            (Copy3d::rect(8, 5), &["destination", "array's height of 4"]),
            (
                Copy3d::boxed(8, 1, 2).to_offset(0, 0, 1),
                &["destination", "array's depth of 2"],
            ),
            (Copy3d::rect(12, 1), &["destination", "8-byte elements"]),
            (
                Copy3d::rect(8, 1).to_offset(4, 0, 0),
                &["destination", "x offset 4"],
            ),
        ];
        for (copy, words) in cases {
            refused(copy, big, array, words);
        }
        refused(
            Copy3d::rect(8, 1),
            big,
            linear(64, 6, 1, 4),
            &["destination", "pitch 6"],
        );
        refused(
            Copy3d::rect(8, 1),
            big,
            linear(64, 0, 1, 1),
            &["destination", "pitch 0"],
        );
    }

    #[test]
    fn overflowing_extents_are_refused_not_wrapped() {
        let huge = linear(usize::MAX, usize::MAX / 2 + 1, usize::MAX, 1);
        refused(
            Copy3d::boxed(1, 3, 3),
            huge,
            huge,
            &["source", "overflows usize"],
        );
        refused(
            Copy3d::rect(1, 1).from_offset(usize::MAX, 0, 0),
            huge,
            huge,
            &["source", "x offset + width", "overflows"],
        );
    }

    /// The bytes a copy touches on a linear side, computed the slow way.
    fn touched(copy: &Copy3d, at: &Offset3, pitch: usize, rows: usize) -> usize {
        let mut end = 0;
        for z in 0..copy.depth {
            for y in 0..copy.height {
                let start = ((at.z + z) * rows + at.y + y) * pitch + at.x_bytes;
                end = end.max(start + copy.width_bytes);
            }
        }
        end
    }

    proptest! {
        #[test]
        fn a_checked_linear_copy_stays_inside_both_sides(
            width in 1usize..64, height in 1usize..8, depth in 1usize..4,
            sx in 0usize..32, sy in 0usize..8, sz in 0usize..3,
            dx in 0usize..32, dy in 0usize..8, dz in 0usize..3,
            spitch in 1usize..128, dpitch in 1usize..128,
            srows in 1usize..16, drows in 1usize..16,
            slen in 0usize..8192, dlen in 0usize..8192,
        ) {
            let copy = Copy3d::boxed(width, height, depth)
                .from_offset(sx, sy, sz)
                .to_offset(dx, dy, dz);
            let src = linear(slen, spitch, srows, 1);
            let dst = linear(dlen, dpitch, drows, 1);
            let fits = |at: &Offset3, pitch: usize, rows: usize, len: usize| {
                at.x_bytes + width <= pitch
                    && at.y + height <= rows
                    && touched(&copy, at, pitch, rows) <= len
            };
            let expected = fits(&copy.src, spitch, srows, slen) && fits(&copy.dst, dpitch, drows, dlen);
            prop_assert_eq!(check(&copy, &src, &dst).is_ok(), expected);
        }
    }
}
