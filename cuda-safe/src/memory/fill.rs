//! Filling memory with copies of one value: the memsets that write any `Pod` value's bytes.
//!
//! A value whose bytes repeat with a period of 1, 2 or 4 bytes (every `u8`/`u16`/`u32`/`f32`,
//! and `0.0f64`, `[7u8; 12]`, ...) is one `cuMemsetD8/D16/D32Async` over the whole range.
//! Any other value is written in 4-, 2- or 1-byte columns: one `cuMemsetD2D*Async` per column,
//! whose pitch is the value's size, so an `f64` is two calls and a 12-byte struct three.

use crate::error::{Error, Result, cu};
use cuda_sys::{CUDA_MEMSET_NODE_PARAMS, CUdeviceptr, CUstream, Driver};

/// The width of the words a memset writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Word {
    /// `cuMemsetD8Async` / `cuMemsetD2D8Async`.
    U8,
    /// `cuMemsetD16Async` / `cuMemsetD2D16Async`.
    U16,
    /// `cuMemsetD32Async` / `cuMemsetD2D32Async`.
    U32,
}

impl Word {
    /// The word's width in bytes.
    pub(crate) fn bytes(self) -> usize {
        match self {
            Word::U8 => 1,
            Word::U16 => 2,
            Word::U32 => 4,
        }
    }

    /// The word at `offset` of `bytes`, little-endian as the GPU reads it.
    fn read(self, bytes: &[u8], offset: usize) -> u32 {
        bytes[offset..offset + self.bytes()]
            .iter()
            .rev()
            .fold(0, |word, &byte| (word << 8) | u32::from(byte))
    }
}

/// How to fill memory with copies of a value's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FillPlan {
    /// The bytes repeat with the word's period: one memset of `word`s of `value`.
    Uniform { word: Word, value: u32 },
    /// One 2-D memset per `word`-wide column of the value.
    Columns { word: Word },
}

/// The plan for filling with `bytes` (a value's bytes; not empty).
pub(crate) fn plan(bytes: &[u8]) -> FillPlan {
    for word in [Word::U8, Word::U16, Word::U32] {
        let period = word.bytes();
        if bytes.len().is_multiple_of(period)
            && bytes.chunks(period).all(|chunk| chunk == &bytes[..period])
        {
            return FillPlan::Uniform {
                word,
                value: word.read(bytes, 0),
            };
        }
    }
    let word = match bytes.len() {
        len if len % 4 == 0 => Word::U32,
        len if len % 2 == 0 => Word::U16,
        _ => Word::U8,
    };
    FillPlan::Columns { word }
}

/// One memset's description (a graph's memset node): `count` values with bytes `value` at
/// `dst`, which must repeat every 1, 2 or 4 bytes; `type_name` names the value's type in the
/// error for one that does not.
pub(crate) fn memset_description(
    dst: CUdeviceptr,
    value: &[u8],
    count: usize,
    type_name: &str,
) -> Result<CUDA_MEMSET_NODE_PARAMS> {
    let total = count
        .checked_mul(value.len())
        .ok_or_else(|| Error::invalid_argument("the memset's size overflows the address space"))?;
    if total == 0 {
        return Err(Error::invalid_argument(
            "a memset node needs at least one byte to set",
        ));
    }
    match plan(value) {
        FillPlan::Uniform { word, value } => Ok(CUDA_MEMSET_NODE_PARAMS {
            dst,
            pitch: 0,
            value,
            elementSize: word.bytes() as u32,
            width: total / word.bytes(),
            height: 1,
        }),
        FillPlan::Columns { .. } => Err(Error::invalid_argument(format!(
            "a memset node writes a value whose bytes repeat every 1, 2 or 4 bytes; {} bytes \
             that do not ({type_name}) need a kernel",
            value.len(),
        ))),
    }
}

/// Queues a fill of `count` values with bytes `value` at `ptr` on `stream`.
///
/// # Safety
///
/// `ptr` must start `count * value.len()` bytes of live memory (aligned for the plan's word),
/// usable on `stream`.
pub(crate) unsafe fn fill(
    driver: &'static Driver,
    stream: CUstream,
    ptr: CUdeviceptr,
    value: &[u8],
    count: usize,
) -> Result<()> {
    let size = value.len();
    match plan(value) {
        FillPlan::Uniform { word, value } => {
            let words = count * (size / word.bytes());
            // SAFETY: `words` words of this width are exactly the caller's range.
            unsafe {
                match word {
                    Word::U8 => cu!(driver, cuMemsetD8Async(ptr, value as u8, words, stream)),
                    Word::U16 => cu!(driver, cuMemsetD16Async(ptr, value as u16, words, stream)),
                    Word::U32 => cu!(driver, cuMemsetD32Async(ptr, value, words, stream)),
                }
            }
        }
        FillPlan::Columns { word } => {
            for offset in (0..size).step_by(word.bytes()) {
                let column = ptr + offset as u64;
                let part = word.read(value, offset);
                // SAFETY: `count` rows of pitch `size`, one word wide, starting `offset` bytes
                // into the first value: inside the caller's range.
                unsafe {
                    match word {
                        Word::U8 => cu!(
                            driver,
                            cuMemsetD2D8Async(column, size, part as u8, 1, count, stream)
                        ),
                        Word::U16 => cu!(
                            driver,
                            cuMemsetD2D16Async(column, size, part as u16, 1, count, stream)
                        ),
                        Word::U32 => cu!(
                            driver,
                            cuMemsetD2D32Async(column, size, part, 1, count, stream)
                        ),
                    }
                }?;
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The description a graph's memset node gets, for `value` of type `T`.
    fn describe<T: bytemuck::Pod>(value: T, count: usize) -> Result<CUDA_MEMSET_NODE_PARAMS> {
        memset_description(
            0x1000,
            bytemuck::bytes_of(&value),
            count,
            std::any::type_name::<T>(),
        )
    }

    #[test]
    fn memset_descriptions_take_values_whose_bytes_repeat_in_words() {
        let params = describe(2.5f32, 8).unwrap();
        assert_eq!(
            (params.dst, params.elementSize, params.width, params.height),
            (0x1000, 4, 8, 1)
        );
        assert_eq!(params.value, 2.5f32.to_bits());
        let bytes = describe(7u8, 3).unwrap();
        assert_eq!((bytes.elementSize, bytes.width, bytes.value), (1, 3, 7));
        let zeros = describe(0f64, 4).unwrap();
        assert_eq!(
            (zeros.elementSize, zeros.width),
            (1, 32),
            "zero repeats every byte"
        );
        let halves = describe(0x0102u16, 5).unwrap();
        assert_eq!((halves.elementSize, halves.width), (2, 5));

        let error = describe(1.5f64, 4).unwrap_err();
        assert!(error.to_string().contains("need a kernel"), "{error}");
        assert!(error.to_string().contains("f64"), "{error}");
        assert!(describe(1u32, 0).is_err(), "nothing to set");
        assert!(describe(1u32, usize::MAX).is_err(), "overflow");
    }

    #[test]
    fn repeating_values_are_one_memset() {
        assert_eq!(
            plan(&[7]),
            FillPlan::Uniform {
                word: Word::U8,
                value: 7
            }
        );
        assert_eq!(
            plan(&0x1234u16.to_le_bytes()),
            FillPlan::Uniform {
                word: Word::U16,
                value: 0x1234
            }
        );
        assert_eq!(
            plan(&1.5f32.to_le_bytes()),
            FillPlan::Uniform {
                word: Word::U32,
                value: 1.5f32.to_bits()
            }
        );
        assert_eq!(
            plan(&0.0f64.to_le_bytes()),
            FillPlan::Uniform {
                word: Word::U8,
                value: 0
            }
        );
        assert_eq!(
            plan(&[1, 2, 1, 2, 1, 2]),
            FillPlan::Uniform {
                word: Word::U16,
                value: 0x0201
            }
        );
        assert_eq!(
            plan(&0x0101_0101u32.to_le_bytes()),
            FillPlan::Uniform {
                word: Word::U8,
                value: 1
            }
        );
    }

    #[test]
    fn other_values_are_written_in_the_widest_columns() {
        assert_eq!(
            plan(&1.5f64.to_le_bytes()),
            FillPlan::Columns { word: Word::U32 }
        );
        assert_eq!(
            plan(&[1, 2, 3, 4, 5, 6]),
            FillPlan::Columns { word: Word::U16 }
        );
        assert_eq!(plan(&[1, 2, 3]), FillPlan::Columns { word: Word::U8 });
    }

    #[test]
    fn words_are_read_little_endian() {
        let bytes = 0x1122_3344_5566_7788u64.to_le_bytes();
        assert_eq!(Word::U32.read(&bytes, 0), 0x5566_7788);
        assert_eq!(Word::U32.read(&bytes, 4), 0x1122_3344);
        assert_eq!(Word::U16.read(&bytes, 2), 0x5566);
        assert_eq!(Word::U8.read(&bytes, 7), 0x11);
    }
}
