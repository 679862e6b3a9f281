//! Textures and surfaces on a real GPU: kernels sample a CUDA array (point and bilinear
//! filtering, against a CPU reference; wrap and border addressing), a mipmapped array
//! (`tex2DLod` between levels), linear and pitched memory, and write a surface
//! (`surf2Dwrite`) that is copied back; each object outlives the handles it was made from.

use std::sync::Arc;

use cuda_gpu_tests::{GpuFile, gpu_file};
use cuda_safe::{
    AddressMode, ArrayDescriptor, ArrayFlags, ArrayFormat, CodeKind, Copy3d, CudaArray, Device,
    FilterMode, HostPitched, HostPitchedMut, Kernel, LaunchConfig, MipmappedArray, ObjectCode,
    PitchedBuffer, Program, ProgramOptions, ReadMode, Stream, SurfaceObject, TextureDescriptor,
    TextureObject, launch,
};

const SOURCE: &str = r#"
// One fetch per (x, y) pair of `coords`, unnormalized or normalized as the texture says.
extern "C" __global__ void sample2d(cudaTextureObject_t tex, const float2* coords, float* out,
                                    unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2D<float>(tex, coords[i].x, coords[i].y);
}
extern "C" __global__ void sample2d_u8(cudaTextureObject_t tex, const float2* coords,
                                       float4* out, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2D<float4>(tex, coords[i].x, coords[i].y);
}
extern "C" __global__ void sample_lod(cudaTextureObject_t tex, const float* lods, float* out,
                                      unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2DLod<float>(tex, 0.5f, 0.5f, lods[i]);
}
extern "C" __global__ void fetch1d(cudaTextureObject_t tex, float* out, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1Dfetch<float>(tex, (int)i);
}
extern "C" __global__ void write_surface(cudaSurfaceObject_t surf, unsigned width,
                                         unsigned height) {
    unsigned x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x < width && y < height) surf2Dwrite(x * 1000u + y, surf, x * 4, y);
}
extern "C" __global__ void copy_surface(cudaSurfaceObject_t from, cudaSurfaceObject_t to,
                                        unsigned width, unsigned height) {
    unsigned x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x < width && y < height) {
        unsigned value;
        surf2Dread(&value, from, x * 4, y);
        surf2Dwrite(value + 1u, to, x * 4, y);
    }
}
"#;

struct Setup {
    device: Device,
    stream: Stream,
    code: ObjectCode,
}

fn setup() -> Setup {
    let device = Device::new(0).unwrap();
    device.set_current().unwrap();
    let stream = device.create_stream(Default::default()).unwrap();
    let program = Program::new(SOURCE, ProgramOptions::default()).unwrap();
    let code = program.compile(CodeKind::Cubin).unwrap().load().unwrap();
    Setup {
        device,
        stream,
        code,
    }
}

impl Setup {
    fn kernel(&self, name: &str) -> Kernel {
        self.code.get_kernel(name).unwrap()
    }

    /// `tex2D<float>` of `texture` at each of `coords`.
    fn sample(&self, texture: &TextureObject, coords: &[[f32; 2]]) -> Vec<f32> {
        let pool = self.device.default_memory_resource().unwrap();
        let flat: Vec<f32> = coords.iter().flatten().copied().collect();
        let points = pool.allocate_from_host(&flat, &self.stream).unwrap();
        let mut out = pool
            .allocate_zeroed::<f32>(coords.len(), &self.stream)
            .unwrap();
        let n = coords.len() as u32;
        let config = LaunchConfig::for_num_elements(coords.len(), 128).unwrap();
        // SAFETY: sample2d reads n float2 coordinates and writes n floats, which the buffers
        // hold; the texture is a 2-D float texture.
        unsafe {
            launch(
                &self.stream,
                &config,
                &self.kernel("sample2d"),
                (texture, &points, &mut out, n),
            )
            .unwrap()
        };
        out.to_vec().unwrap()
    }
}

/// `width` x `height` floats in [0, 1), deterministic.
fn image(width: usize, height: usize) -> Vec<f32> {
    (0..width * height)
        .map(|i| ((i * 7919 + 13) % 1000) as f32 / 1000.0)
        .collect()
}

fn float_array(stream: &Stream, width: usize, height: usize, data: &[f32]) -> CudaArray {
    let shape = ArrayDescriptor::new(width, ArrayFormat::F32, 1)
        .height(height)
        .depth(0);
    let mut array = CudaArray::new(stream, shape).unwrap();
    let rows = HostPitched::rows(data, width * 4).unwrap();
    array
        .copy_from_host(&rows, &Copy3d::rect(width * 4, height))
        .unwrap();
    array
}

/// What bilinear filtering returns at unnormalized (x, y), clamped at the edges.
fn bilinear(data: &[f32], width: usize, height: usize, x: f32, y: f32) -> f32 {
    let at = |i: i64, j: i64| {
        let i = i.clamp(0, width as i64 - 1) as usize;
        let j = j.clamp(0, height as i64 - 1) as usize;
        data[j * width + i]
    };
    let (xb, yb) = (x - 0.5, y - 0.5);
    let (i, j) = (xb.floor() as i64, yb.floor() as i64);
    let (a, b) = (xb - xb.floor(), yb - yb.floor());
    (1.0 - a) * (1.0 - b) * at(i, j)
        + a * (1.0 - b) * at(i + 1, j)
        + (1.0 - a) * b * at(i, j + 1)
        + a * b * at(i + 1, j + 1)
}

fn point_and_bilinear_sampling_match_a_cpu_reference() {
    let s = setup();
    let (width, height) = (37, 23);
    let data = image(width, height);
    let array = float_array(&s.stream, width, height, &data);
    let point = TextureObject::from_array(&array, &TextureDescriptor::default()).unwrap();
    let linear = TextureObject::from_array(
        &array,
        &TextureDescriptor::default().filter(FilterMode::Linear),
    )
    .unwrap();
    // The textures keep the array alive.
    drop(array);
    let centres: Vec<[f32; 2]> = (0..height)
        .flat_map(|y| (0..width).map(move |x| [x as f32 + 0.5, y as f32 + 0.5]))
        .collect();
    assert_eq!(
        s.sample(&point, &centres),
        data,
        "element centres read back exactly"
    );
    let between: Vec<[f32; 2]> = (0..400)
        .map(|k| {
            let x = (k * 37 % 1000) as f32 / 1000.0 * (width as f32 + 2.0) - 1.0;
            let y = (k * 61 % 1000) as f32 / 1000.0 * (height as f32 + 2.0) - 1.0;
            [x, y]
        })
        .collect();
    let got = s.sample(&linear, &between);
    for (&[x, y], value) in between.iter().zip(got) {
        let expected = bilinear(&data, width, height, x, y);
        // The hardware's weights have 8 fractional bits: 1/256 of the neighbours' spread.
        assert!(
            (value - expected).abs() <= 1.0 / 128.0,
            "bilinear at ({x}, {y}): {value} against {expected}"
        );
    }
}

fn wrap_and_border_addressing() {
    let s = setup();
    let (width, height) = (16, 8);
    let data = image(width, height);
    let array = float_array(&s.stream, width, height, &data);
    let wrap = TextureObject::from_array(
        &array,
        &TextureDescriptor::default()
            .address_modes([AddressMode::Wrap; 3])
            .normalized_coordinates(true),
    )
    .unwrap();
    let border = TextureObject::from_array(
        &array,
        &TextureDescriptor::default()
            .address_modes([AddressMode::Border; 3])
            .border_color([0.75, 0.0, 0.0, 0.0]),
    )
    .unwrap();
    let u = (3.0 + 0.5) / width as f32;
    let v = (5.0 + 0.5) / height as f32;
    let wrapped = s.sample(&wrap, &[[u, v], [u + 1.0, v], [u - 2.0, v + 3.0]]);
    assert_eq!(wrapped, vec![data[5 * width + 3]; 3]);
    let outside = s.sample(&border, &[[-3.0, 2.5], [2.5, 100.0], [3.5, 5.5]]);
    assert_eq!(outside, [0.75, 0.75, data[5 * width + 3]]);
}

fn normalized_srgb_reads_of_8_bit_data() {
    let s = setup();
    let shape = ArrayDescriptor::new(4, ArrayFormat::U8, 4)
        .height(1)
        .depth(0);
    let mut array = CudaArray::new(&s.stream, shape).unwrap();
    let texels: [u8; 16] = [
        0, 64, 128, 255, 255, 0, 0, 255, 10, 20, 30, 40, 200, 100, 50, 0,
    ];
    array
        .copy_from_host(
            &HostPitched::rows(&texels, 16).unwrap(),
            &Copy3d::rect(16, 1),
        )
        .unwrap();
    let descriptor = TextureDescriptor::default().read_mode(ReadMode::NormalizedFloat);
    let plain = TextureObject::from_array(&array, &descriptor).unwrap();
    let srgb = TextureObject::from_array(&array, &descriptor.srgb(true)).unwrap();
    let pool = s.device.default_memory_resource().unwrap();
    let coords: Vec<f32> = (0..4).flat_map(|x| [x as f32 + 0.5, 0.5]).collect();
    let points = pool.allocate_from_host(&coords, &s.stream).unwrap();
    let read = |texture: &TextureObject| {
        let mut out = pool.allocate_zeroed::<f32>(16, &s.stream).unwrap();
        // SAFETY: sample2d_u8 reads 4 float2 and writes 4 float4 (16 floats).
        unsafe {
            launch(
                &s.stream,
                &LaunchConfig::new(1u32, 4u32),
                &s.kernel("sample2d_u8"),
                (texture, &points, &mut out, 4u32),
            )
            .unwrap()
        };
        out.to_vec::<f32>().unwrap()
    };
    let normalized = read(&plain);
    for (value, texel) in normalized.iter().zip(texels) {
        assert!(
            (value - f32::from(texel) / 255.0).abs() < 1e-6,
            "{value} for {texel}"
        );
    }
    let linearized = read(&srgb);
    // sRGB to linear: (c/255 + 0.055) / 1.055 raised to 2.4 above the toe; alpha stays.
    let to_linear = |c: f32| {
        if c <= 0.04045 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    for (index, (value, texel)) in linearized.iter().zip(texels).enumerate() {
        let c = f32::from(texel) / 255.0;
        let expected = if index % 4 == 3 { c } else { to_linear(c) };
        assert!(
            (value - expected).abs() < 2e-3,
            "{value} against {expected}"
        );
    }
}

fn mipmap_levels_copy_in_and_out_and_tex2dlod_picks_them() {
    let s = setup();
    let base = ArrayDescriptor::new(64, ArrayFormat::F32, 1)
        .height(64)
        .depth(0);
    let mipmapped = MipmappedArray::new(&s.stream, base, 7).unwrap();
    for level in 0..7 {
        let shape = mipmapped.level_descriptor(level).unwrap();
        assert_eq!(shape.width, 64 >> level);
        let mut array = mipmapped.level(level).unwrap();
        let values = vec![level as f32; shape.width * shape.height];
        let rows = HostPitched::rows(&values, shape.width * 4).unwrap();
        array
            .copy_from_host(&rows, &Copy3d::rect(shape.width * 4, shape.height))
            .unwrap();
        let mut back = vec![-1.0f32; values.len()];
        let mut out = HostPitchedMut::rows(&mut back, shape.width * 4).unwrap();
        array
            .copy_to_host(&mut out, &Copy3d::rect(shape.width * 4, shape.height))
            .unwrap();
        assert_eq!(back, values, "level {level} round-trips");
    }
    let texture = TextureObject::from_mipmapped(
        &mipmapped,
        &TextureDescriptor::default()
            .normalized_coordinates(true)
            .filter(FilterMode::Linear)
            .mipmap_filter(FilterMode::Linear)
            .disable_trilinear_optimization(true),
    )
    .unwrap();
    let clamped = TextureObject::from_mipmapped(
        &mipmapped,
        &TextureDescriptor::default()
            .normalized_coordinates(true)
            .max_mipmap_level_clamp(3.0),
    )
    .unwrap();
    drop(mipmapped);
    let lods = [0.0f32, 1.0, 2.0, 2.4, 6.0, 10.0];
    let pool = s.device.default_memory_resource().unwrap();
    let levels = pool.allocate_from_host(&lods, &s.stream).unwrap();
    let read = |texture: &TextureObject| {
        let mut out = pool.allocate_zeroed::<f32>(lods.len(), &s.stream).unwrap();
        // SAFETY: sample_lod reads and writes lods.len() floats.
        unsafe {
            launch(
                &s.stream,
                &LaunchConfig::new(1u32, 32u32),
                &s.kernel("sample_lod"),
                (texture, &levels, &mut out, lods.len() as u32),
            )
            .unwrap()
        };
        out.to_vec::<f32>().unwrap()
    };
    let blended = read(&texture);
    for (got, expected) in blended.iter().zip([0.0, 1.0, 2.0, 2.4, 6.0, 6.0]) {
        assert!(
            (got - expected).abs() <= 1.0 / 64.0,
            "{got} against {expected}"
        );
    }
    assert_eq!(read(&clamped), [0.0, 1.0, 2.0, 2.0, 3.0, 3.0]);
}

fn linear_and_pitched_memory_textures() {
    let s = setup();
    let pool = s.device.default_memory_resource().unwrap();
    let values: Vec<f32> = (0..1000).map(|i| i as f32 * 0.25).collect();
    let buffer = Arc::new(pool.allocate_from_host(&values, &s.stream).unwrap());
    let linear =
        TextureObject::from_linear(&buffer, ArrayFormat::F32, 1, &TextureDescriptor::default())
            .unwrap();
    drop(buffer);
    let mut out = pool.allocate_zeroed::<f32>(1000, &s.stream).unwrap();
    // SAFETY: fetch1d writes 1000 floats, fetched from a 1000-float texture.
    unsafe {
        launch(
            &s.stream,
            &LaunchConfig::for_num_elements(1000, 128).unwrap(),
            &s.kernel("fetch1d"),
            (&linear, &mut out, 1000u32),
        )
        .unwrap()
    };
    assert_eq!(out.to_vec::<f32>().unwrap(), values);

    let (width, height) = (50, 20);
    let data = image(width, height);
    let mut pitched = PitchedBuffer::allocate(&s.stream, width * 4, height, 1, 4).unwrap();
    pitched
        .view_mut::<f32>()
        .unwrap()
        .copy_from_host(
            &HostPitched::rows(&data, width * 4).unwrap(),
            &Copy3d::rect(width * 4, height),
        )
        .unwrap();
    let pitched = Arc::new(pitched);
    let texture = TextureObject::from_pitched(
        &pitched,
        ArrayFormat::F32,
        1,
        &TextureDescriptor::default().filter(FilterMode::Linear),
    )
    .unwrap();
    let centres: Vec<[f32; 2]> = (0..height)
        .flat_map(|y| (0..width).map(move |x| [x as f32 + 0.5, y as f32 + 0.5]))
        .collect();
    assert_eq!(s.sample(&texture, &centres), data);
}

fn surfaces_write_and_read_arrays() {
    let s = setup();
    let (width, height) = (70usize, 9usize);
    let shape = ArrayDescriptor::new(width, ArrayFormat::U32, 1)
        .height(height)
        .depth(0);
    let first = CudaArray::with_flags(&s.stream, shape, ArrayFlags::SURFACE_LOAD_STORE).unwrap();
    let second = CudaArray::with_flags(&s.stream, shape, ArrayFlags::SURFACE_LOAD_STORE).unwrap();
    let from = SurfaceObject::new(&first).unwrap();
    let to = SurfaceObject::new(&second).unwrap();
    let config = LaunchConfig::new((1u32, height as u32), 128u32);
    // SAFETY: both kernels stay inside width x height u32 elements of surface arrays.
    unsafe {
        launch(
            &s.stream,
            &config,
            &s.kernel("write_surface"),
            (&from, width as u32, height as u32),
        )
        .unwrap();
        launch(
            &s.stream,
            &config,
            &s.kernel("copy_surface"),
            (&from, &to, width as u32, height as u32),
        )
        .unwrap();
    }
    let mut back = vec![0u32; width * height];
    second
        .copy_to_host(
            &mut HostPitchedMut::rows(&mut back, width * 4).unwrap(),
            &Copy3d::rect(width * 4, height),
        )
        .unwrap();
    for y in 0..height {
        for x in 0..width {
            assert_eq!(back[y * width + x], (x * 1000 + y) as u32 + 1, "({x}, {y})");
        }
    }
    let plain = CudaArray::new(&s.stream, shape).unwrap();
    let error = SurfaceObject::new(&plain).unwrap_err();
    assert!(error.to_string().contains("SURFACE_LOAD_STORE"), "{error}");
}

pub(crate) const FILE: GpuFile = gpu_file![
    point_and_bilinear_sampling_match_a_cpu_reference,
    wrap_and_border_addressing,
    normalized_srgb_reads_of_8_bit_data,
    mipmap_levels_copy_in_and_out_and_tex2dlod_picks_them,
    linear_and_pitched_memory_textures,
    surfaces_write_and_read_arrays,
];
