//! What the completion benchmarks share (`completion`, `completion_threads`): the kernels of
//! `bench/floors/async_floor.c` (an empty one, and one that spins on `%globaltimer`), their launches,
//! medians and the process's CPU time.

use cuda_safe::{
    CodeKind, Device, Kernel, LaunchConfig, Program, ProgramOptions, Result, Stream, launch,
};

/// The floor's kernels, compiled for the device.
pub struct Kernels {
    pub empty: Kernel,
    pub spin: Kernel,
}

/// Compiles the kernels (`spin(ns)`: one thread reads `%globaltimer` until `ns` have passed).
pub fn kernels(device: &Device) -> Result<Kernels> {
    device.set_current()?;
    let source = r#"
extern "C" __global__ void empty() {}
extern "C" __global__ void spin(unsigned long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
}
"#;
    let code = Program::new(source, ProgramOptions::default())?
        .compile(CodeKind::Cubin)?
        .load()?;
    Ok(Kernels {
        empty: code.get_kernel("empty")?,
        spin: code.get_kernel("spin")?,
    })
}

/// Launches the empty kernel on `stream`, one thread.
#[inline]
pub fn launch_empty(kernels: &Kernels, stream: &Stream) -> Result<()> {
    // SAFETY: `empty` takes nothing and touches no memory.
    unsafe { launch(stream, &LaunchConfig::new(1, 1), &kernels.empty, ()) }
}

/// Launches the spinning kernel on `stream` for `ns` nanoseconds.
pub fn launch_spin(kernels: &Kernels, stream: &Stream, ns: u64) -> Result<()> {
    // SAFETY: `spin` takes one 64-bit value and touches no memory.
    unsafe { launch(stream, &LaunchConfig::new(1, 1), &kernels.spin, (ns,)) }
}

/// The median of `values` (sorted in place).
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The process's CPU time so far, in milliseconds (`CLOCK_PROCESS_CPUTIME_ID`: every thread,
/// the driver's and the reactor's included).
pub fn process_cpu_ms() -> f64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer for a clock every Linux has.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut now) };
    now.tv_sec as f64 * 1e3 + now.tv_nsec as f64 / 1e6
}
