//! The article's benchmark section, as a picture: SAXPY (`out = a * x + y`, scalar and four
//! floats per thread) and device-to-device copies swept from 1 MiB to 4 GiB per array, each
//! timed with events (median of several runs), printed as a table and drawn as an SVG chart of
//! GB/s against size with the measured copy ceiling drawn in.
//!
//! ```text
//! cargo run --release -p cuda-safe-examples --example bandwidth -- [--svg FILE] [--table FILE] [--max-mib N]
//! ```
//!
//! Bandwidth counts the bytes a kernel must move: 12 bytes per SAXPY element (two reads, one
//! write), 8 per copied float (one read, one write). With no driver or GPU it prints one line
//! saying what is missing and exits with status 1.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use cuda_safe::{
    Buffer, CodeKind, Device, Event, EventOptions, Kernel, LaunchConfig, Program, ProgramOptions,
    Result, Stream, launch,
};
use plotters::prelude::*;

const SOURCE: &str = r#"
extern "C" __global__ void saxpy(float alpha, const float* __restrict__ x,
                                 const float* __restrict__ y, float* out, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = alpha * x[i] + y[i];
}

extern "C" __global__ void saxpy_vec4(float alpha, const float4* __restrict__ x,
                                      const float4* __restrict__ y, float4* out, size_t n4) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 a = x[i], b = y[i];
        out[i] = make_float4(alpha * a.x + b.x, alpha * a.y + b.y,
                             alpha * a.z + b.z, alpha * a.w + b.w);
    }
}
"#;

/// Threads per block for both kernels.
const BLOCK: u32 = 256;
/// Timed runs per size (after one warm-up); the median is reported.
const RUNS: usize = 9;

/// What to sweep and where to write.
#[derive(Debug)]
struct Options {
    svg: PathBuf,
    table: Option<PathBuf>,
    max_mib: usize,
}

impl Options {
    /// `--svg FILE`, `--table FILE`, `--max-mib N` (a power of two, at least 1).
    fn parse(mut args: impl Iterator<Item = String>) -> std::result::Result<Self, String> {
        let mut options = Options {
            svg: PathBuf::from("bandwidth.svg"),
            table: None,
            max_mib: 4096,
        };
        while let Some(flag) = args.next() {
            let mut value = || args.next().ok_or(format!("{flag} needs a value"));
            match flag.as_str() {
                "--svg" => options.svg = value()?.into(),
                "--table" => options.table = Some(value()?.into()),
                "--max-mib" => {
                    let text = value()?;
                    options.max_mib = text
                        .parse()
                        .ok()
                        .filter(|mib: &usize| mib.is_power_of_two())
                        .ok_or(format!("--max-mib {text}: a power of two, at least 1"))?;
                }
                other => {
                    return Err(format!(
                        "unknown argument {other}; usage: bandwidth [--svg FILE] [--table FILE] \
                         [--max-mib N]"
                    ));
                }
            }
        }
        Ok(options)
    }
}

/// A chart series: its label, how to read it from a row, and its colour.
type Series = (&'static str, fn(&Row) -> f64, RGBColor);

/// One size's results, in GB/s.
struct Row {
    mib: usize,
    copy: f64,
    saxpy: f64,
    saxpy_vec4: f64,
}

fn main() -> ExitCode {
    let options = match Options::parse(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(2);
        }
    };
    match run(&options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run(options: &Options) -> Result<()> {
    let device = Device::new(0)?;
    device.set_current()?;
    let stream = device.create_stream(Default::default())?;
    let code = Program::new(SOURCE, ProgramOptions::default())?
        .compile(CodeKind::Cubin)?
        .load()?;
    let (saxpy, saxpy_vec4) = (code.get_kernel("saxpy")?, code.get_kernel("saxpy_vec4")?);

    let max = options.max_mib << 20;
    let pool = device.default_memory_resource()?;
    let mut x = pool.allocate_array::<f32>(max / 4, &stream)?;
    let mut y = pool.allocate_array::<f32>(max / 4, &stream)?;
    let mut out = pool.allocate_array::<f32>(max / 4, &stream)?;
    x.fill(1.5f32)?;
    y.fill(-0.5f32)?;

    let timed = EventOptions::default().timing(true);
    let (start, end) = (device.create_event(timed)?, device.create_event(timed)?);
    let mut rows = Vec::new();
    let header = format!(
        "# {} ({} SMs), bandwidth in GB/s (10^9 bytes/s), median of {RUNS} runs\n{:>9} {:>10} {:>10} {:>10}",
        device.name()?,
        device.properties()?.multiprocessor_count,
        "MiB/array",
        "copy",
        "saxpy",
        "saxpy_vec4"
    );
    println!("{header}");
    let mut table = format!("{header}\n");
    let mut mib = 1;
    while mib <= options.max_mib {
        let bytes = mib << 20;
        let n = bytes / 4;
        let copy = median_gbps(2 * bytes, &stream, &start, &end, || {
            out.as_mut_slice::<f32>()?
                .slice_mut(..n)?
                .copy_from(&x.as_slice::<f32>()?.slice(..n)?)
        })?;
        let saxpy_gbps = median_gbps(3 * bytes, &stream, &start, &end, || {
            launch_saxpy(&stream, &saxpy, &x, &y, &mut out, n, 1)
        })?;
        check(&out, n, 1.5 * 2.0 - 0.5)?;
        out.fill(0f32)?;
        let vec4_gbps = median_gbps(3 * bytes, &stream, &start, &end, || {
            launch_saxpy(&stream, &saxpy_vec4, &x, &y, &mut out, n, 4)
        })?;
        check(&out, n, 1.5 * 2.0 - 0.5)?;
        let line = format!("{mib:>9} {copy:>10.0} {saxpy_gbps:>10.0} {vec4_gbps:>10.0}");
        println!("{line}");
        let _ = writeln!(table, "{line}");
        rows.push(Row {
            mib,
            copy,
            saxpy: saxpy_gbps,
            saxpy_vec4: vec4_gbps,
        });
        mib *= 2;
    }
    let ceiling = rows.iter().map(|row| row.copy).fold(0.0, f64::max);
    let summary = format!("# copy ceiling (the sweep's best d2d copy): {ceiling:.0} GB/s");
    println!("{summary}");
    let _ = writeln!(table, "{summary}");
    if let Some(path) = &options.table {
        std::fs::write(path, table).map_err(|error| {
            cuda_safe::Error::invalid_argument(format!("writing {}: {error}", path.display()))
        })?;
    }
    draw(&options.svg, &device.name()?, &rows, ceiling)?;
    println!("# chart: {}", options.svg.display());
    Ok(())
}

/// Queues `out = 2 x + y` over the first `n` floats with `kernel`, which handles `per_thread`
/// floats per thread.
fn launch_saxpy(
    stream: &Stream,
    kernel: &Kernel,
    x: &Buffer,
    y: &Buffer,
    out: &mut Buffer,
    n: usize,
    per_thread: usize,
) -> Result<()> {
    let items = n / per_thread;
    let config = LaunchConfig::for_num_elements(items, BLOCK)?;
    // SAFETY: both kernels read `items` elements of `x` and `y` and write `items` of `out`
    // (floats, or float4s of 4 floats each); each buffer holds at least `n` floats.
    unsafe { launch(stream, &config, kernel, (2.0f32, x, y, out, items)) }
}

/// Runs `work` once to warm up, then `RUNS` times between two events; the median rate for
/// `bytes` moved per run.
fn median_gbps(
    bytes: usize,
    stream: &Stream,
    start: &Event,
    end: &Event,
    mut work: impl FnMut() -> Result<()>,
) -> Result<f64> {
    work()?;
    let mut rates = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        stream.record(start)?;
        work()?;
        stream.record(end)?;
        let seconds = Event::elapsed(start, end)?.as_secs_f64();
        rates.push(bytes as f64 / seconds / 1e9);
    }
    rates.sort_by(f64::total_cmp);
    Ok(rates[RUNS / 2])
}

/// Checks the first `n` results (all, or an even sample of a million when there are more).
fn check(out: &Buffer, n: usize, expected: f32) -> Result<()> {
    let step = (n / 1_000_000).max(1);
    let values = out.as_slice::<f32>()?.slice(..n)?.to_vec()?;
    match values
        .iter()
        .step_by(step)
        .position(|&value| value != expected)
    {
        None => Ok(()),
        Some(index) => Err(cuda_safe::Error::invalid_argument(format!(
            "saxpy gave {} at element {} of {n}, expected {expected}",
            values[index * step],
            index * step
        ))),
    }
}

/// The chart: GB/s against MiB per array (log scale), one line per kernel, the copy ceiling
/// dashed.
fn draw(path: &PathBuf, gpu: &str, rows: &[Row], ceiling: f64) -> Result<()> {
    let failed = |error: &dyn std::fmt::Display| {
        cuda_safe::Error::invalid_argument(format!("drawing {}: {error}", path.display()))
    };
    let root = SVGBackend::new(path, (960, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|error| failed(&error))?;
    let max_mib = rows.last().map_or(1, |row| row.mib) as f64;
    let top = rows
        .iter()
        .flat_map(|row| [row.copy, row.saxpy, row.saxpy_vec4])
        .fold(ceiling, f64::max)
        * 1.1;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("SAXPY and copy bandwidth, {gpu}"),
            ("sans-serif", 24),
        )
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d((1f64..max_mib).log_scale(), 0f64..top)
        .map_err(|error| failed(&error))?;
    chart
        .configure_mesh()
        .x_desc("MiB per array")
        .y_desc("GB/s")
        .x_label_formatter(&|mib| format!("{mib:.0}"))
        .draw()
        .map_err(|error| failed(&error))?;
    let series: [Series; 3] = [
        ("device-to-device copy", |row| row.copy, BLUE),
        ("saxpy", |row| row.saxpy, RED),
        ("saxpy, 4 floats per thread", |row| row.saxpy_vec4, GREEN),
    ];
    for (label, value, color) in series {
        chart
            .draw_series(LineSeries::new(
                rows.iter().map(|row| (row.mib as f64, value(row))),
                color.stroke_width(2),
            ))
            .map_err(|error| failed(&error))?
            .label(label)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color.stroke_width(2)));
        chart
            .draw_series(
                rows.iter()
                    .map(|row| Circle::new((row.mib as f64, value(row)), 3, color.filled())),
            )
            .map_err(|error| failed(&error))?;
    }
    chart
        .draw_series(DashedLineSeries::new(
            [(1f64, ceiling), (max_mib, ceiling)],
            8,
            6,
            BLACK.stroke_width(1),
        ))
        .map_err(|error| failed(&error))?
        .label(format!("copy ceiling {ceiling:.0} GB/s"))
        .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLACK.stroke_width(1)));
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()
        .map_err(|error| failed(&error))?;
    root.present().map_err(|error| failed(&error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> std::result::Result<Options, String> {
        Options::parse(args.iter().map(|arg| (*arg).to_owned()))
    }

    #[test]
    fn options_have_defaults_and_refuse_bad_values() {
        let defaults = parse(&[]).unwrap();
        assert_eq!(defaults.max_mib, 4096);
        assert_eq!(defaults.svg, PathBuf::from("bandwidth.svg"));
        assert!(defaults.table.is_none());
        let given = parse(&["--svg", "a.svg", "--table", "t.txt", "--max-mib", "64"]).unwrap();
        assert_eq!(
            (given.svg, given.table, given.max_mib),
            ("a.svg".into(), Some("t.txt".into()), 64)
        );
        assert!(
            parse(&["--max-mib", "3"])
                .unwrap_err()
                .contains("power of two")
        );
        assert!(parse(&["--max-mib", "0"]).is_err());
        assert!(parse(&["--svg"]).unwrap_err().contains("needs a value"));
        assert!(parse(&["--fast"]).unwrap_err().contains("unknown argument"));
    }

    #[test]
    fn the_chart_draws_without_a_gpu() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chart.svg");
        let rows = [1, 2, 4].map(|mib| Row {
            mib,
            copy: 1000.0 * mib as f64,
            saxpy: 900.0 * mib as f64,
            saxpy_vec4: 950.0 * mib as f64,
        });
        draw(&path, "test GPU", &rows, 4000.0).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..40.min(svg.len())]);
        assert!(svg.contains("copy ceiling 4000 GB/s") && svg.contains("test GPU"));
    }
}
