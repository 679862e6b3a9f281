//! TMA tensor maps of views: the view's element type, extents and strides, reversed into the
//! innermost-first order the driver takes, checked as [`TensorMap::tiled`] checks a buffer's.

use super::abi::DLDataType;
use super::device::ViewDevice;
use super::view::StridedMemoryView;
use crate::error::{Error, Result};
use crate::tma::{TensorMap, TensorMapDataType, TiledOptions};

/// The tensor-map element type of a DLPack type, if TMA has one.
fn map_dtype(dtype: DLDataType) -> Option<TensorMapDataType> {
    Some(match dtype {
        DLDataType::U8 => TensorMapDataType::U8,
        DLDataType::U16 => TensorMapDataType::U16,
        DLDataType::U32 => TensorMapDataType::U32,
        DLDataType::I32 => TensorMapDataType::I32,
        DLDataType::U64 => TensorMapDataType::U64,
        DLDataType::I64 => TensorMapDataType::I64,
        DLDataType::F16 => TensorMapDataType::F16,
        DLDataType::BF16 => TensorMapDataType::Bf16,
        DLDataType::F32 => TensorMapDataType::F32,
        DLDataType::F64 => TensorMapDataType::F64,
        _ => return None,
    })
}

/// The driver's innermost-first extents and byte strides of a view, or why it has none.
fn layout(view: &StridedMemoryView) -> Result<(Vec<u64>, Vec<u64>)> {
    let refuse = |what: String| Error::invalid_argument(format!("tensor map of a view: {what}"));
    let rank = view.ndim();
    let innermost = rank
        .checked_sub(1)
        .ok_or_else(|| refuse("a 0-d view".into()))?;
    if view.strides()[innermost] != 1 {
        return Err(refuse(format!(
            "the innermost dimension must be contiguous (stride 1), the view's strides are {:?}",
            view.strides()
        )));
    }
    let item = view.item_size() as i64;
    let mut dims = Vec::with_capacity(rank);
    let mut strides = Vec::with_capacity(innermost);
    for axis in (0..rank).rev() {
        dims.push(u64::try_from(view.shape()[axis]).unwrap_or(0));
        if axis != innermost {
            let stride = view.strides()[axis];
            let bytes = stride
                .checked_mul(item)
                .filter(|bytes| *bytes > 0)
                .ok_or_else(|| {
                    refuse(format!(
                        "dimension {axis} has stride {stride}, not positive"
                    ))
                })?;
            strides.push(bytes as u64);
        }
    }
    Ok((dims, strides))
}

impl StridedMemoryView {
    /// A tiled TMA map of this view: its element type, extents and strides, with `box_dims`
    /// given in the view's axis order (outermost first, like its shape); the other options
    /// are `options`' (whose own box is ignored).
    ///
    #[doc = cuda_sys::api_doc!(cuTensorMapEncodeTiled)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a view not in device memory, of a type TMA lacks (8- and
    /// 16-bit signed integers, booleans, complex numbers), whose innermost stride is not 1 or
    /// whose strides are not positive, and as [`TensorMap::tiled`] for the rules.
    #[doc(alias = "cuTensorMapEncodeTiled")]
    pub fn tensor_map(&self, box_dims: &[u32], options: &TiledOptions) -> Result<TensorMap> {
        if !matches!(self.device(), ViewDevice::Cuda(_) | ViewDevice::CudaManaged) {
            return Err(Error::invalid_argument(format!(
                "tensor map of a view: the view is in {:?} memory, not the GPU's",
                self.device()
            )));
        }
        let dtype = map_dtype(self.dtype()).ok_or_else(|| {
            Error::invalid_argument(format!(
                "tensor map of a view: TMA has no element type for {:?}",
                self.dtype()
            ))
        })?;
        let (dims, strides) = layout(self)?;
        let options = TiledOptions {
            box_dims: box_dims.iter().rev().copied().collect(),
            common: options.common.clone(),
        };
        // SAFETY: the view describes memory its owner keeps allocated, and every element the
        // extents and strides reach lies in it (the view's own invariant); the map is built
        // from exactly those.
        unsafe { TensorMap::tiled_at(self.ptr(), dtype, &dims, &strides, &options) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(shape: &[i64], strides: &[i64], dtype: DLDataType) -> StridedMemoryView {
        // SAFETY: the views are only inspected, never read.
        unsafe {
            StridedMemoryView::from_raw_parts(
                0x7f00_0000_0000,
                shape,
                Some(strides),
                dtype,
                ViewDevice::Cuda(0),
                None,
            )
        }
        .unwrap()
    }

    #[test]
    fn views_reverse_into_the_drivers_order() {
        let matrix = view(&[777, 1000], &[1024, 1], DLDataType::F32);
        let (dims, strides) = layout(&matrix).unwrap();
        assert_eq!(dims, [1000, 777]);
        assert_eq!(strides, [4096]);
        let cube = view(&[4, 8, 16], &[256, 16, 1], DLDataType::U16);
        assert_eq!(layout(&cube).unwrap(), (vec![16, 8, 4], vec![32, 512]));
    }

    #[test]
    fn views_tma_cannot_read_are_refused() {
        let transposed = view(&[1000, 777], &[1, 1024], DLDataType::F32);
        let error = layout(&transposed).unwrap_err();
        assert!(error.to_string().contains("contiguous"), "{error}");
        let error = transposed
            .tensor_map(&[32, 64], &TiledOptions::default())
            .unwrap_err();
        assert!(error.to_string().contains("contiguous"), "{error}");
        let bytes = view(&[16, 16], &[16, 1], DLDataType::I8);
        let error = bytes
            .tensor_map(&[16, 16], &TiledOptions::default())
            .unwrap_err();
        assert!(error.to_string().contains("no element type"), "{error}");
        assert_eq!(map_dtype(DLDataType::BF16), Some(TensorMapDataType::Bf16));
    }

    #[test]
    fn the_rules_apply_to_views() {
        // Rows of 1001 floats are 4004 bytes apart: not a multiple of 16.
        let odd = view(&[8, 1001], &[1001, 1], DLDataType::F32);
        let error = odd
            .tensor_map(&[8, 64], &TiledOptions::default())
            .unwrap_err();
        assert!(
            error.to_string().contains("stride multiple of 16"),
            "{error}"
        );
    }
}
