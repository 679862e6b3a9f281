//! [`Dims`]: a view's shape and strides, inline up to [`INLINE_NDIM`] dimensions.
//!
//! Almost every tensor has at most 8 dimensions, so both arrays live inside the view (128
//! bytes) and building a view allocates nothing; a tensor with more dimensions puts both in
//! one boxed slice. A hand-written type rather than two `SmallVec`s: shape and strides share
//! one length and one fallback allocation, and the export hands out pointers into it.

/// Dimensions kept inline; more go to the heap.
pub(crate) const INLINE_NDIM: usize = 8;

/// The shape and the strides (in elements) of a view, of equal length.
#[derive(Clone)]
pub(crate) enum Dims {
    /// Up to [`INLINE_NDIM`] dimensions; entries past `ndim` are zero.
    Inline {
        ndim: u8,
        shape: [i64; INLINE_NDIM],
        strides: [i64; INLINE_NDIM],
    },
    /// The shape followed by the strides.
    Heap(Box<[i64]>),
}

impl Dims {
    /// `ndim` dimensions, all zero.
    #[inline]
    pub(crate) fn zeroed(ndim: usize) -> Self {
        match u8::try_from(ndim) {
            Ok(small) if ndim <= INLINE_NDIM => Self::Inline {
                ndim: small,
                shape: [0; INLINE_NDIM],
                strides: [0; INLINE_NDIM],
            },
            _ => Self::Heap(vec![0; 2 * ndim].into_boxed_slice()),
        }
    }

    /// The number of dimensions.
    #[inline]
    pub(crate) fn ndim(&self) -> usize {
        match self {
            Self::Inline { ndim, .. } => usize::from(*ndim),
            Self::Heap(both) => both.len() / 2,
        }
    }

    /// The extents.
    #[inline]
    pub(crate) fn shape(&self) -> &[i64] {
        match self {
            Self::Inline { ndim, shape, .. } => &shape[..usize::from(*ndim)],
            Self::Heap(both) => &both[..both.len() / 2],
        }
    }

    /// The strides, in elements.
    #[inline]
    pub(crate) fn strides(&self) -> &[i64] {
        match self {
            Self::Inline { ndim, strides, .. } => &strides[..usize::from(*ndim)],
            Self::Heap(both) => &both[both.len() / 2..],
        }
    }

    /// Both arrays, writable.
    #[inline]
    pub(crate) fn parts_mut(&mut self) -> (&mut [i64], &mut [i64]) {
        match self {
            Self::Inline {
                ndim,
                shape,
                strides,
            } => {
                let ndim = usize::from(*ndim);
                (&mut shape[..ndim], &mut strides[..ndim])
            }
            Self::Heap(both) => {
                let half = both.len() / 2;
                both.split_at_mut(half)
            }
        }
    }
}
