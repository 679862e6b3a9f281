//! The sides of a 2-D/3-D copy: pitched views of device memory ([`Pitched`], [`PitchedMut`])
//! and of host slices ([`HostPitched`], [`HostPitchedMut`]).

use std::marker::PhantomData;

use bytemuck::Pod;

use super::extent::Shape;
use crate::error::{Error, Result};
use crate::memory::{Buffer, element_count};
use crate::stream::Stream;
use cuda_sys::CUdeviceptr;

/// Checks a layout: a pitch that holds whole `T`s and at least one row per slice.
fn check_layout<T>(what: &str, pitch: usize, rows: usize) -> Result<()> {
    let element = size_of::<T>();
    if element == 0 {
        return Err(Error::invalid_argument(format!(
            "{what}: zero-sized elements have no layout"
        )));
    }
    if pitch == 0 || !pitch.is_multiple_of(element) {
        return Err(Error::invalid_argument(format!(
            "{what}: pitch {pitch} bytes is not a non-zero whole number of {element}-byte elements"
        )));
    }
    if rows == 0 {
        return Err(Error::invalid_argument(format!(
            "{what}: a slice needs at least one row"
        )));
    }
    Ok(())
}

/// The rows of one slice that `len` bytes at `pitch` reach (at least one): a last row shorter
/// than the pitch counts, since a copy may end short of it (the extent check still refuses a
/// copy that reads past `len`).
fn rows_of(len: usize, pitch: usize) -> usize {
    match pitch {
        0 => 1,
        pitch => len.div_ceil(pitch).max(1),
    }
}

/// A shared view of device memory as rows `pitch` bytes apart, `rows` rows per slice, for 2-D
/// and 3-D copies. Made by [`Buffer::pitched`] or
/// [`PitchedBuffer::view`](super::PitchedBuffer::view); its copies are queued on the memory's
/// stream.
#[derive(Debug, Clone, Copy)]
pub struct Pitched<'a, T> {
    pub(super) ptr: CUdeviceptr,
    pub(super) len: usize,
    pub(super) pitch: usize,
    pub(super) rows: usize,
    pub(super) stream: &'a Stream,
    _elements: PhantomData<&'a [T]>,
}

/// An exclusive view of device memory as rows, the destination of 2-D and 3-D copies. Made by
/// [`Buffer::pitched_mut`] or [`PitchedBuffer::view_mut`](super::PitchedBuffer::view_mut).
#[derive(Debug)]
pub struct PitchedMut<'a, T> {
    pub(super) ptr: CUdeviceptr,
    pub(super) len: usize,
    pub(super) pitch: usize,
    pub(super) rows: usize,
    pub(super) stream: &'a Stream,
    _elements: PhantomData<&'a mut [T]>,
}

/// A host slice seen as rows `pitch` bytes apart, `rows` rows per slice: the source of a copy
/// to the device.
#[derive(Debug, Clone, Copy)]
pub struct HostPitched<'a, T> {
    pub(super) data: &'a [T],
    pub(super) pitch: usize,
    pub(super) rows: usize,
}

/// A mutable host slice seen as rows: the destination of a copy from the device.
#[derive(Debug)]
pub struct HostPitchedMut<'a, T> {
    pub(super) data: &'a mut [T],
    pub(super) pitch: usize,
    pub(super) rows: usize,
}

/// What [`Pitched`] and [`PitchedMut`] share: made from checked parts, their pitch, rows,
/// address and shape.
macro_rules! device_view_common {
    ($view:ident) => {
        impl<'a, T: Pod> $view<'a, T> {
            /// A view of `len` bytes at `ptr` (checked by the caller: inside one allocation,
            /// aligned).
            pub(super) fn from_parts(
                ptr: CUdeviceptr,
                len: usize,
                pitch: usize,
                rows: usize,
                stream: &'a Stream,
            ) -> Self {
                Self {
                    ptr,
                    len,
                    pitch,
                    rows,
                    stream,
                    _elements: PhantomData,
                }
            }

            /// The row pitch in bytes.
            pub fn pitch(&self) -> usize {
                self.pitch
            }

            /// The rows per slice.
            pub fn rows(&self) -> usize {
                self.rows
            }

            /// The device address of the first row.
            pub fn as_raw(&self) -> CUdeviceptr {
                self.ptr
            }

            pub(super) fn shape(&self) -> Shape {
                linear::<T>(self.len, self.pitch, self.rows)
            }
        }
    };
}

device_view_common!(Pitched);
device_view_common!(PitchedMut);

impl<T: Pod> PitchedMut<'_, T> {
    /// A shared view of the same memory.
    pub fn as_pitched(&self) -> Pitched<'_, T> {
        Pitched::from_parts(self.ptr, self.len, self.pitch, self.rows, self.stream)
    }
}

impl<'a, T: Pod> HostPitched<'a, T> {
    /// `data` as rows `pitch` bytes apart, `rows` rows per slice (for a 2-D copy, the slice's
    /// rows: `data`'s bytes divided by the pitch will do).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a pitch that is 0 or not whole `T`s, or no rows.
    pub fn new(data: &'a [T], pitch: usize, rows: usize) -> Result<Self> {
        check_layout::<T>("host source", pitch, rows)?;
        Ok(Self { data, pitch, rows })
    }

    /// `data` as rows `pitch` bytes apart, all in one slice.
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new).
    pub fn rows(data: &'a [T], pitch: usize) -> Result<Self> {
        Self::new(data, pitch, rows_of(size_of_val(data), pitch))
    }

    pub(super) fn shape(&self) -> Shape {
        linear::<T>(size_of_val(self.data), self.pitch, self.rows)
    }
}

impl<'a, T: Pod> HostPitchedMut<'a, T> {
    /// `data` as rows `pitch` bytes apart, `rows` rows per slice.
    ///
    /// # Errors
    ///
    /// As [`HostPitched::new`].
    pub fn new(data: &'a mut [T], pitch: usize, rows: usize) -> Result<Self> {
        check_layout::<T>("host destination", pitch, rows)?;
        Ok(Self { data, pitch, rows })
    }

    /// `data` as rows `pitch` bytes apart, all in one slice.
    ///
    /// # Errors
    ///
    /// As [`HostPitched::new`].
    pub fn rows(data: &'a mut [T], pitch: usize) -> Result<Self> {
        let rows = rows_of(size_of_val(data), pitch);
        Self::new(data, pitch, rows)
    }

    pub(super) fn shape(&self) -> Shape {
        linear::<T>(size_of_val(self.data), self.pitch, self.rows)
    }
}

/// The shape of linear memory of `T`s.
fn linear<T>(len: usize, pitch: usize, rows: usize) -> Shape {
    Shape::Linear {
        len,
        pitch,
        rows,
        element: size_of::<T>(),
    }
}

impl Buffer {
    /// The buffer as rows `pitch` bytes apart, `rows` rows per slice, for 2-D and 3-D copies
    /// (for a 2-D copy, `rows` may be the buffer's size over the pitch).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a pitch that is 0 or not whole `T`s, no rows, or a
    /// buffer not aligned for `T`.
    pub fn pitched<T: Pod>(&self, pitch: usize, rows: usize) -> Result<Pitched<'_, T>> {
        check_layout::<T>("device source", pitch, rows)?;
        element_count::<T>(self.as_raw(), 0)?;
        Ok(Pitched::from_parts(
            self.as_raw(),
            self.len(),
            pitch,
            rows,
            self.stream(),
        ))
    }

    /// The buffer as rows, the destination of 2-D and 3-D copies.
    ///
    /// # Errors
    ///
    /// As [`pitched`](Self::pitched).
    pub fn pitched_mut<T: Pod>(&mut self, pitch: usize, rows: usize) -> Result<PitchedMut<'_, T>> {
        check_layout::<T>("device destination", pitch, rows)?;
        element_count::<T>(self.as_raw(), 0)?;
        Ok(PitchedMut::from_parts(
            self.as_raw(),
            self.len(),
            pitch,
            rows,
            self.stream(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::super::extent::{Copy3d, check};
    use super::*;

    #[test]
    fn layouts_need_a_whole_pitch_and_a_row() {
        let data = [0f32; 16];
        assert!(HostPitched::new(&data, 16, 4).is_ok());
        assert_eq!(HostPitched::rows(&data, 16).unwrap().rows, 4);
        let message = HostPitched::new(&data, 6, 4).unwrap_err().to_string();
        assert!(
            message.contains("host source") && message.contains("pitch 6"),
            "{message}"
        );
        assert!(HostPitched::new(&data, 0, 4).is_err());
        assert!(HostPitched::new(&data, 16, 0).is_err());
        let mut out = [0u8; 3];
        assert_eq!(HostPitchedMut::rows(&mut out, 8).unwrap().rows, 1);
    }

    #[test]
    fn a_tight_last_row_counts_as_a_row() {
        // 3 rows of 100 bytes at a pitch of 128: the last row holds only its 100 bytes.
        let data = [0u8; 2 * 128 + 100];
        let rows = HostPitched::rows(&data, 128).unwrap();
        assert_eq!(rows.rows, 3);
        assert!(check(&Copy3d::rect(100, 3), &rows.shape(), &rows.shape()).unwrap());
        assert!(check(&Copy3d::rect(101, 3), &rows.shape(), &rows.shape()).is_err());
        assert!(check(&Copy3d::rect(100, 4), &rows.shape(), &rows.shape()).is_err());
        let mut out = [0u8; 2 * 128 + 100];
        assert_eq!(HostPitchedMut::rows(&mut out, 128).unwrap().rows, 3);
    }
}
