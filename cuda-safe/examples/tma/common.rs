//! The TMA tile copy shared by the `tma_copy` example, the TMA GPU tests and the link
//! benchmark: its kernel (`copy.cu`), its tensor maps, its launch, and `cuMemcpy2DAsync` of the
//! same region for comparison.

use cuda_safe::sys::{CUDA_MEMCPY2D, CUmemorytype, CUresult};
use cuda_safe::{
    Buffer, CodeKind, Device, Error, Kernel, LaunchConfig, Program, ProgramOptions, Result, Stream,
    TensorMap, TensorMapDataType, TiledOptions, launch,
};

/// The kernel's source.
pub const SOURCE: &str = include_str!("copy.cu");
/// The tile the kernel copies: `BOX_W` floats by `BOX_H` rows (as in `copy.cu`).
pub const BOX_W: u32 = 64;
/// Rows of a tile.
pub const BOX_H: u32 = 32;

/// A `width` x `height` float matrix in device memory, rows `pitch` bytes apart.
#[derive(Debug, Clone, Copy)]
pub struct Matrix {
    /// Floats per row.
    pub width: u64,
    /// Rows.
    pub height: u64,
    /// Bytes from one row's start to the next's (a multiple of 16).
    pub pitch: u64,
}

impl Matrix {
    /// The bytes a buffer for the matrix needs.
    pub fn bytes(&self) -> usize {
        (self.pitch * self.height) as usize
    }

    /// The tensor map of the matrix in `buffer`, read and written in tiles.
    pub fn map(&self, buffer: &Buffer) -> Result<TensorMap> {
        TensorMap::tiled(
            buffer,
            TensorMapDataType::F32,
            &[self.width, self.height],
            &[self.pitch],
            &TiledOptions::new(&[BOX_W, BOX_H]),
        )
    }

    /// One block per tile.
    pub fn config(&self) -> LaunchConfig {
        let tiles_x = self.width.div_ceil(u64::from(BOX_W)) as u32;
        let tiles_y = self.height.div_ceil(u64::from(BOX_H)) as u32;
        LaunchConfig::new((tiles_x, tiles_y), 32)
    }
}

/// The compiled `tma_copy` kernel for `device`.
pub fn kernel(device: &Device) -> Result<Kernel> {
    let options = ProgramOptions::default().arch(format!("sm_{}", device.arch()?));
    Program::new(SOURCE, options)?
        .compile(CodeKind::Cubin)?
        .load()?
        .get_kernel("tma_copy")
}

/// Queues the copy of `matrix` from the memory of `src` to that of `dst`.
///
/// # Safety
///
/// Both maps must describe `matrix` in memory that stays allocated until the copy completes.
pub unsafe fn copy(
    stream: &Stream,
    kernel: &Kernel,
    matrix: &Matrix,
    src: &TensorMap,
    dst: &TensorMap,
) -> Result<()> {
    // SAFETY: tma_copy(TensorMap, TensorMap) reads the tiles of `src` and writes those of
    // `dst`, which the maps bound to the matrix; the memory is the caller's promise.
    unsafe { launch(stream, &matrix.config(), kernel, (src, dst)) }
}

/// Queues `cuMemcpy2DAsync` of `matrix` from `src` to `dst` on `stream`.
pub fn memcpy_2d(stream: &Stream, matrix: &Matrix, src: &Buffer, dst: &mut Buffer) -> Result<()> {
    if src.len() < matrix.bytes() || dst.len() < matrix.bytes() {
        return Err(Error::invalid_argument(
            "the buffers do not hold the matrix",
        ));
    }
    let copy = CUDA_MEMCPY2D {
        srcMemoryType: CUmemorytype::CU_MEMORYTYPE_DEVICE,
        srcDevice: src.as_raw(),
        srcPitch: matrix.pitch as usize,
        dstMemoryType: CUmemorytype::CU_MEMORYTYPE_DEVICE,
        dstDevice: dst.as_raw(),
        dstPitch: matrix.pitch as usize,
        WidthInBytes: (matrix.width * 4) as usize,
        Height: matrix.height as usize,
        ..Default::default()
    };
    let driver = cuda_safe::sys::driver()?;
    // SAFETY: both regions lie in their buffers (checked above), which outlive the queued copy
    // as the callers keep them until the stream is synchronised.
    match unsafe { driver.cuMemcpy2DAsync_v2(&copy, stream.as_raw()) }? {
        CUresult::CUDA_SUCCESS => Ok(()),
        code => Err(Error::cuda("cuMemcpy2DAsync_v2", code)),
    }
}
