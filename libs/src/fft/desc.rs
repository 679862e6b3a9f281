//! What a plan transforms: [`FftDesc`] (kind, precision, shape, batch, layouts, placement),
//! built step by step and hashable, so plans are cached by it; [`FftShape`] and [`FftLayout`]
//! (cuFFT's advanced layout); and the checks that turn a description into what cuFFT is given.

use std::fmt;

use super::elements::{FftComplex, FftPrecision, FftReal};
use cuda_safe::{Error, Result};

/// The sizes of a transform or of a layout's embedding: 1 to 3 dimensions, outermost first
/// (`[nx, ny, nz]`, `nz` contiguous, as cuFFT takes them). Made from a `usize` or an array of
/// 1 to 3 of them: `1024.into()`, `[512, 512].into()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FftShape {
    /// The sizes, unused ones 0 (so equal shapes compare and hash equal).
    dims: [usize; 3],
    rank: u8,
}

impl FftShape {
    /// A 1-D shape.
    pub const fn d1(n: usize) -> Self {
        Self {
            dims: [n, 0, 0],
            rank: 1,
        }
    }

    /// A 2-D shape (`ny` contiguous).
    pub const fn d2(nx: usize, ny: usize) -> Self {
        Self {
            dims: [nx, ny, 0],
            rank: 2,
        }
    }

    /// A 3-D shape (`nz` contiguous).
    pub const fn d3(nx: usize, ny: usize, nz: usize) -> Self {
        Self {
            dims: [nx, ny, nz],
            rank: 3,
        }
    }

    /// The sizes, outermost first.
    pub fn dims(&self) -> &[usize] {
        &self.dims[..self.rank as usize]
    }

    /// The number of dimensions: 1, 2 or 3.
    pub const fn rank(&self) -> usize {
        self.rank as usize
    }

    /// This shape with its innermost size replaced by `last`.
    fn with_last(mut self, last: usize) -> Self {
        self.dims[self.rank() - 1] = last;
        self
    }

    /// The innermost size.
    fn last(&self) -> usize {
        self.dims[self.rank() - 1]
    }
}

impl From<usize> for FftShape {
    fn from(n: usize) -> Self {
        Self::d1(n)
    }
}

impl From<[usize; 1]> for FftShape {
    fn from([n]: [usize; 1]) -> Self {
        Self::d1(n)
    }
}

impl From<[usize; 2]> for FftShape {
    fn from([nx, ny]: [usize; 2]) -> Self {
        Self::d2(nx, ny)
    }
}

impl From<[usize; 3]> for FftShape {
    fn from([nx, ny, nz]: [usize; 3]) -> Self {
        Self::d3(nx, ny, nz)
    }
}

impl fmt::Display for FftShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, n) in self.dims().iter().enumerate() {
            if index > 0 {
                f.write_str("x")?;
            }
            write!(f, "{n}")?;
        }
        Ok(())
    }
}

/// cuFFT's advanced data layout of one side of a transform (`inembed`, `istride`, `idist`, or
/// the output's): element `(x, y, z)` of transform `b` is
/// `b * dist + ((x * embed[1] + y) * embed[2] + z) * stride` elements from the start, counted in
/// that side's element type (reals on the real side of R2C and C2R, complex numbers on the
/// other). `embed` has the transform's rank, and each of its sizes is at least the data's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FftLayout {
    embed: FftShape,
    stride: usize,
    dist: usize,
}

impl FftLayout {
    /// A layout of the storage `embed` (outermost first), elements `stride` apart, transforms
    /// of a batch `dist` apart.
    pub fn new(embed: impl Into<FftShape>, stride: usize, dist: usize) -> Self {
        Self {
            embed: embed.into(),
            stride,
            dist,
        }
    }

    /// The dense layout of `dims`: embedded in itself, stride 1, transforms back to back (the
    /// distance saturating: a layout past memory is refused by the span checks).
    fn packed(dims: FftShape) -> Self {
        let dist = dims
            .dims()
            .iter()
            .fold(1usize, |product, &n| product.saturating_mul(n));
        Self::new(dims, 1, dist)
    }

    /// The storage the data is embedded in.
    pub fn embed(&self) -> FftShape {
        self.embed
    }

    /// The distance between two elements of a transform, in elements.
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// The distance between two transforms of a batch, in elements.
    pub fn dist(&self) -> usize {
        self.dist
    }
}

/// The kind of a transform: complex to complex (forward or inverse, chosen per execution),
/// real to complex (forward), or complex to real (inverse).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FftKind {
    /// Complex to complex (cuFFT's C2C, Z2Z).
    C2C,
    /// Real to complex, the `n / 2 + 1` non-redundant outputs of the innermost dimension
    /// (R2C, D2Z).
    R2C,
    /// Complex to real, from the `n / 2 + 1` non-redundant inputs (C2R, Z2D). cuFFT may
    /// overwrite its input.
    C2R,
}

/// The direction of a complex-to-complex transform. cuFFT does not normalize: an inverse
/// transform of a forward one is the input times the number of points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FftDirection {
    /// `CUFFT_FORWARD`: the exponent's sign is -1.
    Forward,
    /// `CUFFT_INVERSE`: the exponent's sign is +1.
    Inverse,
}

impl FftDirection {
    /// `CUFFT_FORWARD` (-1) or `CUFFT_INVERSE` (1).
    pub const fn as_raw(self) -> i32 {
        match self {
            Self::Forward => cufft_sys::CUFFT_FORWARD,
            Self::Inverse => cufft_sys::CUFFT_INVERSE as i32,
        }
    }
}

/// What a plan transforms: kind, precision, shape, batch, the two sides' layouts and whether
/// the transform is in place. `Hash + Eq`: [`Fft`](super::Fft) caches its plans by it.
///
/// ```
/// use cuda_safe_libs::fft::{Complex32, FftDesc, FftLayout};
///
/// // 64 rows of 1024 reals, each row's 513 outputs padded to 520.
/// let desc = FftDesc::r2c::<f32>(1024)
///     .batch(64)
///     .output_layout(FftLayout::new(520, 1, 520));
/// assert_eq!(desc.input_len()?, 64 * 1024);
/// assert_eq!(desc.output_len()?, 63 * 520 + 513);
/// let square = FftDesc::c2c::<Complex32>([256, 256]).in_place();
/// assert_eq!(square.to_string(), "C2C f32 256x256, in place");
/// # Ok::<(), cuda_safe::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FftDesc {
    kind: FftKind,
    precision: FftPrecision,
    shape: FftShape,
    batch: usize,
    input: Option<FftLayout>,
    output: Option<FftLayout>,
    in_place: bool,
}

impl FftDesc {
    /// One transform of `kind` and `precision` over `shape`, out of place, both sides dense
    /// (cuFFT's basic layout).
    pub fn new(kind: FftKind, precision: FftPrecision, shape: impl Into<FftShape>) -> Self {
        Self {
            kind,
            precision,
            shape: shape.into(),
            batch: 1,
            input: None,
            output: None,
            in_place: false,
        }
    }

    /// A complex-to-complex transform of `C`s.
    pub fn c2c<C: FftComplex>(shape: impl Into<FftShape>) -> Self {
        Self::new(FftKind::C2C, C::PRECISION, shape)
    }

    /// A real-to-complex transform of `R`s.
    pub fn r2c<R: FftReal>(shape: impl Into<FftShape>) -> Self {
        Self::new(FftKind::R2C, R::PRECISION, shape)
    }

    /// A complex-to-real transform into `R`s.
    pub fn c2r<R: FftReal>(shape: impl Into<FftShape>) -> Self {
        Self::new(FftKind::C2R, R::PRECISION, shape)
    }

    /// `count` transforms of the shape (1 by default), `dist` elements apart on each side.
    pub fn batch(mut self, count: usize) -> Self {
        self.batch = count;
        self
    }

    /// The input's layout (dense by default).
    pub fn input_layout(mut self, layout: FftLayout) -> Self {
        self.input = Some(layout);
        self
    }

    /// The output's layout (dense by default).
    pub fn output_layout(mut self, layout: FftLayout) -> Self {
        self.output = Some(layout);
        self
    }

    /// An in-place transform: the output overwrites the input. A real side's default layout
    /// is then padded, as cuFFT's in-place layout is: its innermost dimension holds
    /// `2 * (n / 2 + 1)` reals, the room of the complex side's `n / 2 + 1` numbers.
    pub fn in_place(mut self) -> Self {
        self.in_place = true;
        self
    }

    /// The kind.
    pub fn kind(&self) -> FftKind {
        self.kind
    }

    /// The precision.
    pub fn precision(&self) -> FftPrecision {
        self.precision
    }

    /// The logical shape of one transform.
    pub fn shape(&self) -> FftShape {
        self.shape
    }

    /// The number of transforms.
    pub fn batch_count(&self) -> usize {
        self.batch
    }

    /// The input's layout, when one was given.
    pub fn input(&self) -> Option<FftLayout> {
        self.input
    }

    /// The output's layout, when one was given.
    pub fn output(&self) -> Option<FftLayout> {
        self.output
    }

    /// Whether the transform is in place.
    pub fn is_in_place(&self) -> bool {
        self.in_place
    }

    /// How many elements the input spans (reals for R2C, complex numbers otherwise): the
    /// length an input must have at least.
    ///
    /// # Errors
    ///
    /// As [`Fft::plan`](super::Fft::plan)'s checks of the description.
    pub fn input_len(&self) -> Result<usize> {
        Ok(self.geometry()?.spans[0])
    }

    /// How many elements the output spans (reals for C2R, complex numbers otherwise).
    ///
    /// # Errors
    ///
    /// As [`input_len`](Self::input_len).
    pub fn output_len(&self) -> Result<usize> {
        Ok(self.geometry()?.spans[1])
    }

    /// The sizes of each side's data: the complex side of a real transform holds `n / 2 + 1`
    /// numbers in its innermost dimension.
    fn side_dims(&self) -> [FftShape; 2] {
        let half = self.shape.with_last(self.shape.last() / 2 + 1);
        match self.kind {
            FftKind::C2C => [self.shape, self.shape],
            FftKind::R2C => [self.shape, half],
            FftKind::C2R => [half, self.shape],
        }
    }

    /// Which side holds reals, if any (0 input, 1 output).
    fn real_side(&self) -> Option<usize> {
        match self.kind {
            FftKind::C2C => None,
            FftKind::R2C => Some(0),
            FftKind::C2R => Some(1),
        }
    }

    /// Checks the description and works out what cuFFT is given and what each side spans.
    pub(crate) fn geometry(&self) -> Result<Geometry> {
        let shape = self.shape;
        if shape.dims().contains(&0) || self.batch == 0 {
            return Err(self.refuse("every size and the batch count must be at least 1"));
        }
        if self.precision == FftPrecision::Half && !shape.dims().iter().all(|n| n.is_power_of_two())
        {
            return Err(self.refuse("cuFFT's half-precision transforms take powers of 2 only"));
        }
        let dims = self.side_dims();
        let padded = |side: usize| {
            let real = dims[side];
            FftLayout::packed(real.with_last((shape.last() / 2 + 1).saturating_mul(2)))
        };
        let default = |side: usize| match self.real_side() {
            Some(real) if self.in_place && real == side => padded(side),
            _ => FftLayout::packed(dims[side]),
        };
        let explicit = self.input.is_some()
            || self.output.is_some()
            || (self.in_place && self.kind != FftKind::C2C);
        let layouts = [
            self.input.unwrap_or_else(|| default(0)),
            self.output.unwrap_or_else(|| default(1)),
        ];
        let mut spans = [0; 2];
        for side in 0..2 {
            spans[side] = self.span(&layouts[side], dims[side], side)?;
        }
        if self.in_place {
            self.check_in_place(&layouts)?;
        }
        let wide = |value: usize| {
            i64::try_from(value).map_err(|_| self.refuse(format!("{value} exceeds cuFFT's sizes")))
        };
        let mut n = [0i64; 3];
        let mut raw = [RawLayout::default(); 2];
        for (index, size) in shape.dims().iter().enumerate() {
            n[index] = wide(*size)?;
            for side in 0..2 {
                raw[side].embed[index] = wide(layouts[side].embed.dims[index])?;
            }
        }
        for side in 0..2 {
            raw[side].stride = wide(layouts[side].stride)?;
            raw[side].dist = wide(layouts[side].dist)?;
            wide(spans[side])?;
        }
        Ok(Geometry {
            rank: shape.rank as i32,
            n,
            batch: wide(self.batch)?,
            layouts: explicit.then_some(raw),
            spans,
        })
    }

    /// The elements one side spans under `layout`, after checking the layout holds `dims`.
    fn span(&self, layout: &FftLayout, dims: FftShape, side: usize) -> Result<usize> {
        let what = ["input", "output"][side];
        if layout.embed.rank != dims.rank {
            return Err(self.refuse(format!(
                "the {what} layout embeds {} dimension(s), the transform has {}",
                layout.embed.rank, dims.rank
            )));
        }
        if layout.stride == 0 || layout.dist == 0 {
            return Err(self.refuse(format!("the {what} layout's stride and dist must be >= 1")));
        }
        if let Some(index) = (0..dims.rank()).find(|&i| layout.embed.dims[i] < dims.dims[i]) {
            return Err(self.refuse(format!(
                "the {what} layout embeds {} where the data has {} (dimension {index}: {} < {})",
                layout.embed, dims, layout.embed.dims[index], dims.dims[index]
            )));
        }
        let overflow = || self.refuse(format!("the {what} layout's span overflows usize"));
        let mut last = 0usize;
        let mut pitch = 1usize;
        for index in (0..dims.rank()).rev() {
            let term = (dims.dims[index] - 1)
                .checked_mul(pitch)
                .ok_or_else(overflow)?;
            last = last.checked_add(term).ok_or_else(overflow)?;
            pitch = pitch
                .checked_mul(layout.embed.dims[index])
                .ok_or_else(overflow)?;
        }
        (self.batch - 1)
            .checked_mul(layout.dist)
            .and_then(|batches| last.checked_mul(layout.stride)?.checked_add(batches))
            .and_then(|span| span.checked_add(1))
            .ok_or_else(overflow)
    }

    /// An in-place transform's sides must address the same rows: equal layouts for C2C; for a
    /// real transform, equal strides, and the real side's distance and innermost embedding
    /// twice the complex side's (the other embeddings equal).
    fn check_in_place(&self, [input, output]: &[FftLayout; 2]) -> Result<()> {
        let matches = match self.real_side() {
            None => input == output,
            Some(real) => {
                let (real, complex) = if real == 0 {
                    (input, output)
                } else {
                    (output, input)
                };
                let rank = self.shape.rank();
                real.stride == complex.stride
                    && Some(real.dist) == complex.dist.checked_mul(2)
                    && real.embed.dims[..rank - 1] == complex.embed.dims[..rank - 1]
                    && Some(real.embed.last()) == complex.embed.last().checked_mul(2)
            }
        };
        if matches {
            Ok(())
        } else {
            Err(self.refuse(
                "an in-place transform's sides must address the same memory: equal layouts \
                 (C2C), or equal strides and the real side's dist and innermost embedding \
                 twice the complex side's",
            ))
        }
    }

    /// The error refusing this description.
    fn refuse(&self, why: impl fmt::Display) -> Error {
        Error::invalid_argument(format!("the FFT {self}: {why}"))
    }
}

impl fmt::Display for FftDesc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} {} {}", self.kind, self.precision, self.shape)?;
        if self.batch != 1 {
            write!(f, ", batch {}", self.batch)?;
        }
        for (what, layout) in [("input", self.input), ("output", self.output)] {
            if let Some(layout) = layout {
                write!(
                    f,
                    ", {what} embed {} stride {} dist {}",
                    layout.embed, layout.stride, layout.dist
                )?;
            }
        }
        if self.in_place {
            f.write_str(", in place")?;
        }
        Ok(())
    }
}

/// One side's layout as cuFFT's 64-bit calls take it.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RawLayout {
    pub(crate) embed: [i64; 3],
    pub(crate) stride: i64,
    pub(crate) dist: i64,
}

/// A checked description, as cuFFT is given it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Geometry {
    pub(crate) rank: i32,
    pub(crate) n: [i64; 3],
    pub(crate) batch: i64,
    /// The input's and output's layouts, or `None` for cuFFT's basic layout (`NULL` embeds).
    pub(crate) layouts: Option<[RawLayout; 2]>,
    /// The elements the input and output span (each in its side's element type).
    pub(crate) spans: [usize; 2],
}

#[cfg(test)]
#[path = "desc/tests.rs"]
mod tests;
