//! The module floors of `docs/architecture.md`, checked against `src/`. The plan is read from
//! that file (the one source of truth); every path a module names (`crate::`, `super::`,
//! `self::`, its child modules in `use` statements, the raw crates) is held against it. Each
//! kind of violation has a test below that builds a small violating source and expects the
//! check to refuse it.

mod plan;
mod rules;
mod scan;

use std::fs;
use std::path::{Path, PathBuf};

use plan::Plan;
use rules::{check, stale};
use scan::{Source, code_paths, expand};

/// The plan as `docs/architecture.md` writes it.
fn the_plan() -> Plan {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/architecture.md");
    let text = fs::read_to_string(&docs).unwrap_or_else(|e| panic!("{}: {e}", docs.display()));
    Plan::from_markdown(&text).unwrap_or_else(|e| panic!("{}: {e}", docs.display()))
}

/// Every source file under `src/`, by its path there.
fn the_sources() -> Vec<Source> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<Source>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path: PathBuf = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                let relative = path.strip_prefix(root).unwrap().to_string_lossy();
                out.push(Source::new(&relative, &fs::read_to_string(&path).unwrap()));
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut sources = Vec::new();
    walk(&root, &root, &mut sources);
    sources.sort_by(|a, b| a.path.cmp(&b.path));
    sources
}

#[test]
fn every_module_imports_only_what_the_plan_allows() {
    let problems = check(&the_plan(), &the_sources());
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

#[test]
fn the_plan_names_no_module_that_is_gone() {
    let problems = stale(&the_plan(), &the_sources());
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

#[test]
fn the_check_sees_what_it_checks() {
    // The plan and the scan found what they are meant to police (guards against a check that
    // reads nothing and passes).
    let plan = the_plan();
    for unit in [
        "memory",
        "memory::vmm",
        "launch",
        "graph",
        "system",
        "nvtx",
        "memory::texture",
    ] {
        assert!(
            plan.units.contains_key(unit),
            "{unit} missing from the plan"
        );
    }
    let sources = the_sources();
    assert!(sources.len() > 100, "only {} sources", sources.len());
    let paths: usize = sources
        .iter()
        .flat_map(|source| source.text.lines())
        .map(|line| code_paths(scan::code_of(line)).len())
        .sum();
    assert!(paths > 500, "only {paths} paths");
    assert_eq!(
        expand("crate::memory::{Buffer, vmm::{self, X as Y}, copies::*}"),
        [
            vec!["crate", "memory", "Buffer"],
            vec!["crate", "memory", "vmm"],
            vec!["crate", "memory", "vmm", "X"],
            vec!["crate", "memory", "copies", "*"],
        ]
    );
}

/// The problems the real plan finds in the one source `path` holding `text`.
fn problems_in(path: &str, text: &str) -> Vec<String> {
    check(&the_plan(), &[Source::new(path, text)])
}

/// Asserts the check refuses `text` at `path` with a problem mentioning `expected`.
fn refuses(path: &str, text: &str, expected: &str) {
    let problems = problems_in(path, text);
    assert!(
        problems.iter().any(|problem| problem.contains(expected)),
        "{path}: expected a problem with {expected:?}, got {problems:#?}"
    );
}

/// Asserts the check accepts `text` at `path`.
fn accepts(path: &str, text: &str) {
    let problems = problems_in(path, text);
    assert!(problems.is_empty(), "{path}: {problems:#?}");
}

#[test]
fn an_import_from_a_floor_above_is_refused() {
    refuses(
        "memory/buffer.rs",
        "use crate::graph::Graph;",
        "floor 2 imports from floor 3",
    );
    refuses(
        "cache/mod.rs",
        "use crate::stream::Stream;",
        "imports from floor 2",
    );
    accepts(
        "graph/mod.rs",
        "use crate::stream::Stream;\nuse crate::cache::CacheKey;",
    );
}

#[test]
fn floor_three_is_a_line_without_circles() {
    refuses(
        "kernel/occupancy.rs",
        "use crate::launch::LaunchConfig;",
        "against the floor's order",
    );
    refuses(
        "module/mod.rs",
        "use crate::kernel::Kernel;",
        "against the floor's order",
    );
    refuses(
        "program/compiled.rs",
        "fn f() -> crate::module::ObjectCode { todo!() }",
        "order",
    );
    refuses(
        "graph/build.rs",
        "use crate::tma::TensorMap;",
        "side by side",
    );
    refuses(
        "green/plan.rs",
        "use crate::launch::LaunchConfig;",
        "independent rows",
    );
    accepts(
        "launch/mod.rs",
        "use crate::kernel::Kernel;\nuse crate::program::Program;",
    );
}

#[test]
fn globs_are_refused_outside_tests() {
    refuses("stream.rs", "use crate::memory::*;", "glob import");
    refuses("graph/exec.rs", "use super::*;", "glob import");
    accepts(
        "stream.rs",
        "fn f() {}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n}",
    );
    accepts("abi/tests.rs", "use super::*;");
}

#[test]
fn paths_through_the_root_are_refused() {
    refuses("stream.rs", "use crate::Buffer;", "root's re-exports");
    refuses(
        "stream.rs",
        "use crate::{event::Event, device::Device};",
        "through the root",
    );
    refuses("stream.rs", "use crate::*;", "glob import");
    // The crate's exported macros stand at the root: their module re-exports them from there,
    // and the facade they expand to is no floor's.
    accepts(
        "error/check.rs",
        "#[macro_export]\nmacro_rules! cu {\n    () => { $crate::__private::check() };\n}\n\
         pub(crate) use crate::{cu};",
    );
    refuses(
        "error/check.rs",
        "macro_rules! cu {\n    () => {};\n}\npub(crate) use crate::{cu};",
        "through the root",
    );
    refuses(
        "graph/mod.rs",
        "use crate::ipc::Channel;",
        "no module of the plan",
    );
}

#[test]
fn the_raw_crates_are_named_directly_and_only_by_their_wings() {
    refuses("stream.rs", "use crate::sys::CUresult;", "root's alias");
    refuses(
        "stream.rs",
        "fn f(_: crate::nvrtc_sys::nvrtcResult) {}",
        "root's alias",
    );
    refuses(
        "system/device.rs",
        "use cuda_sys::CUresult;",
        "may name nvml_sys only",
    );
    refuses(
        "program/compile.rs",
        "use nvml_sys::Nvml;",
        "may name nvrtc_sys only",
    );
    refuses(
        "graph/mod.rs",
        "use nvjitlink_sys::NvJitLink;",
        "cuda_sys only",
    );
    accepts(
        "link/nvjitlink.rs",
        "use nvjitlink_sys::NvJitLink;\nuse cuda_sys::Driver;",
    );
    accepts("system/device.rs", "use nvml_sys::Nvml; // not cuda_sys");
}

#[test]
fn wings_beside_the_floors_keep_to_their_floor() {
    refuses(
        "system/device.rs",
        "use crate::stream::Stream;",
        "beside the floors",
    );
    refuses(
        "graph/mod.rs",
        "use crate::nvtx::Domain;",
        "only the top uses nvtx",
    );
    refuses(
        "nvtx/domain.rs",
        "use crate::graph::Graph;",
        "beside the floors",
    );
    accepts("nvtx/domain.rs", "use crate::error::Error;");
    accepts("kernels.rs", "use crate::system::Device;");
}

/// The problems a plan of a wing with rooms (`wing`, on floor 2: `a < b < c`) finds in the one
/// source `path` holding `text`.
fn problems_with_rooms(path: &str, text: &str) -> Vec<String> {
    let plan = Plan::parse(&[
        "top      user",
        "2        core",
        "ground   error",
        "beside   wing on 2",
        "wing     wing::a < wing::b < wing::c",
    ])
    .expect("the plan parses");
    check(&plan, &[Source::new(path, text)])
}

#[test]
fn the_rooms_of_a_wing_keep_their_order() {
    let refused = |path: &str, text: &str, expected: &str| {
        let problems = problems_with_rooms(path, text);
        assert!(
            problems.iter().any(|problem| problem.contains(expected)),
            "{path}: expected {expected:?}, got {problems:#?}"
        );
    };
    refused(
        "wing/a.rs",
        "use crate::wing::b::B;",
        "against the floor's order",
    );
    refused("wing/a.rs", "use super::c::C;", "against the floor's order");
    refused("wing/b/x.rs", "use crate::wing::W;", "uses its front door");
    assert!(problems_with_rooms("wing/c.rs", "use super::a::A;").is_empty());
    assert!(problems_with_rooms("wing/mod.rs", "mod a;\npub use a::A;").is_empty());
    assert!(problems_with_rooms("user.rs", "use crate::wing::W;").is_empty());
}

#[test]
fn the_memory_core_does_not_use_its_wing() {
    refuses(
        "memory/device_pool.rs",
        "use super::vmm::VmmLocation;",
        "floor 2 imports",
    );
    refuses(
        "memory/mod.rs",
        "pub(crate) mod copies;\npub(crate) use copies::linear_description;",
        "floor 2 imports from floor 2b",
    );
    refuses(
        "memory/buffer.rs",
        "use crate::memory::{\n    vmm::GrowableBuffer,\n    slice::DeviceSlice,\n};",
        "floor 2 imports from floor 2b",
    );
    accepts(
        "memory/texture/mod.rs",
        "use crate::memory::Buffer;\nuse super::copies::CudaArray;",
    );
}

#[test]
fn unknown_modules_and_hand_written_c_names_are_refused() {
    refuses("newthing.rs", "fn f() {}", "stands on no floor");
    refuses(
        "stream.rs",
        "check(\"cuInit\", code)?;",
        "hand-written name",
    );
    refuses(
        "system/device.rs",
        "check_nvml(\"nvmlInit\", code)?;",
        "hand-written name",
    );
}

#[test]
fn a_stale_or_malformed_plan_is_refused() {
    let plan = the_plan();
    let all = the_sources();
    let without_uuid: Vec<Source> = all.into_iter().filter(|s| s.path != "uuid.rs").collect();
    assert!(
        stale(&plan, &without_uuid)
            .iter()
            .any(|p| p.contains("uuid"))
    );
    assert!(
        Plan::parse(&["2 a b", "beside c on 9"]).is_err(),
        "no floor 9"
    );
    assert!(Plan::parse(&["2 a", "1 a"]).is_err(), "a module twice");
    assert!(
        Plan::parse(&["1 a", "raw a: libfoo"]).is_err(),
        "no such raw crate"
    );
    assert!(
        Plan::parse(&["1 a", "beside w on 1", "w x < y"]).is_err(),
        "rooms outside w"
    );
    assert!(Plan::from_markdown("no marker here").is_err());
}
