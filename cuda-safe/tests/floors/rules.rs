//! The rules: every path a module names, held against the plan.

use std::collections::BTreeSet;

use super::plan::{Place, Plan, RAW_CRATES, Standing};
use super::scan::{Source, child_modules, code_paths, expand, lines, use_statements};

/// Every violation of the plan in `sources`, one line each (`path:line: what`).
pub fn check(plan: &Plan, sources: &[Source]) -> Vec<String> {
    let mut problems = Vec::new();
    let exported = exported_macros(sources);
    for source in sources {
        let module = source.module();
        if module.is_empty() {
            continue; // The crate root only declares modules and re-exports them.
        }
        let Some(unit) = plan.unit_of(&module) else {
            problems.push(format!(
                "{}: {} stands on no floor: add it to the plan in docs/architecture.md",
                source.path,
                module.join("::")
            ));
            continue;
        };
        let file = File {
            plan,
            source,
            module,
            unit,
            children: child_modules(source),
            exported: &exported,
        };
        file.check(&mut problems);
    }
    problems
}

/// Every module of the plan that no source of `sources` lies in (a stale plan).
pub fn stale(plan: &Plan, sources: &[Source]) -> Vec<String> {
    let present: BTreeSet<String> = sources
        .iter()
        .filter_map(|source| plan.unit_of(&source.module()))
        .collect();
    plan.units
        .keys()
        .filter(|unit| !present.contains(*unit))
        .map(|unit| format!("the plan names {unit}, which has no source in src/"))
        .collect()
}

/// The macros the crate exports (`#[macro_export] macro_rules! NAME`): they live at the crate
/// root, so the module that defines one re-exports it from there (`use crate::{cu, cu_ready}`).
fn exported_macros(sources: &[Source]) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for source in sources {
        let mut exported = false;
        for line in source.text.lines().map(str::trim) {
            if line == "#[macro_export]" {
                exported = true;
            } else if let Some(rest) = line.strip_prefix("macro_rules! ") {
                if exported {
                    names.insert(rest.trim_end_matches(" {").to_owned());
                }
                exported = false;
            } else if !line.starts_with("///") && !line.starts_with("#[") {
                exported = false;
            }
        }
    }
    names
}

/// One file being checked.
struct File<'a> {
    plan: &'a Plan,
    source: &'a Source,
    module: Vec<String>,
    unit: String,
    children: Vec<String>,
    /// The crate's exported macros, which stand at the root.
    exported: &'a BTreeSet<String>,
}

impl File<'_> {
    fn check(&self, problems: &mut Vec<String>) {
        let statements = use_statements(self.source);
        for statement in &statements {
            let place = format!("{}:{}", self.source.path, statement.number);
            if statement.tree.trim_start().starts_with("crate::{") {
                if self.only_exported_macros(&statement.tree) {
                    continue;
                }
                problems.push(format!(
                    "{place}: `crate::{{...}}` imports through the root; name the defining \
                     modules"
                ));
                continue;
            }
            for path in expand(&statement.tree) {
                if path.last().is_some_and(|last| last == "*") && !statement.in_test {
                    problems.push(format!(
                        "{place}: a glob import (`{}`): name what is used",
                        path.join("::")
                    ));
                }
                self.path(&place, &path, statement.in_test, true, problems);
            }
        }
        for line in lines(self.source) {
            let place = format!("{}:{}", self.source.path, line.number);
            self.raw_crates(&place, line.code, problems);
            self.c_names(&place, line.code, problems);
            let in_use = statements
                .iter()
                .any(|s| (s.number..=s.last).contains(&line.number));
            if in_use {
                continue;
            }
            for path in code_paths(line.code) {
                self.path(&place, &path, line.in_test, false, problems);
            }
        }
    }

    /// A path the file names: from the crate root, from a parent (`super`), from itself
    /// (`self`) or, in a `use` statement, from one of its child modules.
    fn path(
        &self,
        place: &str,
        path: &[String],
        in_test: bool,
        in_use: bool,
        problems: &mut Vec<String>,
    ) {
        // Inside an inline `mod tests`, `super` is the file's module.
        let mut base = self.module.clone();
        if in_test && !self.source.is_test_file() {
            base.push("tests".to_owned());
        }
        let Some(first) = path.first() else { return };
        match first.as_str() {
            "crate" => self.absolute(place, &path[1..], problems),
            "super" => {
                let supers = path.iter().take_while(|s| *s == "super").count();
                let mut absolute = base[..base.len().saturating_sub(supers)].to_vec();
                absolute.extend(path[supers..].iter().cloned());
                self.target(place, &absolute, problems);
            }
            "self" => {
                let mut absolute = base;
                absolute.extend(path[1..].iter().cloned());
                self.target(place, &absolute, problems);
            }
            child if in_use && self.children.iter().any(|c| c == child) => {
                let mut absolute = self.module.clone();
                absolute.extend(path.iter().cloned());
                self.target(place, &absolute, problems);
            }
            _ => {}
        }
    }

    /// Whether `tree` (`crate::{cu, cu_ready}`) names only the crate's exported macros.
    fn only_exported_macros(&self, tree: &str) -> bool {
        let paths = expand(tree);
        !paths.is_empty()
            && paths.iter().all(|path| {
                path.len() == 2 && path[0] == "crate" && self.exported.contains(&path[1])
            })
    }

    /// A `crate::` path (`rest` after `crate`). `crate::__private` is the facade the exported
    /// macros expand to (`$crate::__private::check`): it re-exports ground-floor items.
    fn absolute(&self, place: &str, rest: &[String], problems: &mut Vec<String>) {
        let Some(first) = rest.first() else { return };
        if first == "__private" || (rest.len() == 1 && self.exported.contains(first)) {
            return;
        }
        if first == "{" {
            problems.push(format!(
                "{place}: `crate::{{...}}` imports through the root; name the defining modules"
            ));
        } else if first == "*" {
            problems.push(format!("{place}: `crate::*` imports the whole root"));
        } else if first == "sys" || RAW_CRATES.contains(&first.as_str()) {
            problems.push(format!(
                "{place}: `crate::{first}` reaches a raw crate through the root's alias; name \
                 it directly (`cuda_sys::...`)"
            ));
        } else if first.starts_with(|c: char| c.is_uppercase()) {
            problems.push(format!(
                "{place}: `crate::{first}` goes through the root's re-exports; name the \
                 defining module"
            ));
        } else {
            self.target(place, rest, problems);
        }
    }

    /// A path from the crate root to a module (and maybe an item in it).
    fn target(&self, place: &str, path: &[String], problems: &mut Vec<String>) {
        let Some(target) = self.plan.unit_of(path) else {
            if path
                .first()
                .is_some_and(|first| !self.plan.units.contains_key(first))
            {
                problems.push(format!(
                    "{place}: `{}` is no module of the plan",
                    path.join("::")
                ));
            }
            return;
        };
        if target == self.unit {
            return;
        }
        if let Err(why) = allowed(self.plan, &self.unit, &target) {
            problems.push(format!("{place}: {} uses {target}: {why}", self.unit));
        }
    }

    /// The raw crates named in `code`, against those the module may name.
    fn raw_crates(&self, place: &str, code: &str, problems: &mut Vec<String>) {
        let allowed = self.plan.raw_crates_of(&self.unit);
        for name in RAW_CRATES {
            let named = code.match_indices(name).any(|(at, _)| {
                let before = code[..at].chars().next_back();
                let after = code[at + name.len()..].chars().next();
                let starts = !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$')
                    && !code[..at].ends_with("crate::");
                let ends = !after.is_some_and(|c| c.is_alphanumeric() || c == '_');
                starts && ends
            });
            if named && !allowed.iter().any(|crate_name| crate_name == name) {
                problems.push(format!(
                    "{place}: {} names {name}; it may name {} only",
                    self.unit,
                    allowed.join(", ")
                ));
            }
        }
    }

    /// A C call checked under a hand-written name, where the macros name it from the call.
    fn c_names(&self, place: &str, code: &str, problems: &mut Vec<String>) {
        let in_error = self.unit == "error";
        let in_nvml_text = self.source.path == "system/text.rs";
        if (code.contains("check(\"") && !in_error)
            || code.contains("check_nvrtc(\"")
            || code.contains("check_nvjitlink(\"")
            || code.contains("check_nvfatbin(\"")
            || code.contains("check_nccl(\"")
            || (code.contains("check_nvml(\"") && !in_nvml_text)
        {
            problems.push(format!(
                "{place}: a C call checked under a hand-written name; call it through \
                 cu!/nvrtc!/nvml!/query!"
            ));
        }
    }
}

/// Whether a module of `from` may use one of `to`; the reason when not.
pub fn allowed(plan: &Plan, from: &str, to: &str) -> Result<(), String> {
    let standing = |unit: &str| plan.units.get(unit).cloned();
    let (Some(from_standing), Some(to_standing)) = (standing(from), standing(to)) else {
        return Err("not in the plan".into());
    };
    // Inside one wing: the rooms' own order; the front door stands above its rooms.
    let wing_of = |standing: &Standing| match standing {
        Standing::Room { parent, place } => Some((parent.clone(), *place)),
        _ => None,
    };
    match (wing_of(&from_standing), wing_of(&to_standing)) {
        (Some((a, from_place)), Some((b, to_place))) if a == b => {
            return same_floor(&from_place, &to_place);
        }
        (Some((wing, _)), None) if wing == to => {
            return Err(format!(
                "a room of {wing} uses its front door; name the defining room"
            ));
        }
        (None, Some((wing, _))) if wing == from => return Ok(()),
        _ => {}
    }
    let outer = |unit: &str, standing: Standing| match standing {
        Standing::Room { parent, .. } => (parent.clone(), standing_of(plan, &parent)),
        other => (unit.to_owned(), Some(other)),
    };
    let (from, from_standing) = outer(from, from_standing);
    let (to, to_standing) = outer(to, to_standing);
    let top = plan.floors.len().saturating_sub(1);
    match (from_standing, to_standing) {
        (Some(Standing::Beside { on }), Some(Standing::Floor(to_place))) => {
            if to_place.floor <= on {
                Ok(())
            } else {
                Err(format!(
                    "{from} stands beside the floors on floor {}; {to} is on floor {}",
                    plan.floor_label(on),
                    plan.floor_label(to_place.floor)
                ))
            }
        }
        (Some(Standing::Floor(from_place)), Some(Standing::Beside { .. })) => {
            if from_place.floor == top {
                Ok(())
            } else {
                Err(format!(
                    "only the top uses {to}, which stands beside the floors"
                ))
            }
        }
        (Some(Standing::Beside { .. }), Some(Standing::Beside { .. })) => {
            Err(format!("{from} and {to} stand beside the floors, apart"))
        }
        (Some(Standing::Floor(from_place)), Some(Standing::Floor(to_place))) => {
            if to_place.floor < from_place.floor {
                Ok(())
            } else if to_place.floor > from_place.floor {
                Err(format!(
                    "floor {} imports from floor {} above it",
                    plan.floor_label(from_place.floor),
                    plan.floor_label(to_place.floor)
                ))
            } else {
                same_floor(&from_place, &to_place)
            }
        }
        _ => Err("not in the plan".into()),
    }
}

fn standing_of(plan: &Plan, unit: &str) -> Option<Standing> {
    plan.units.get(unit).cloned()
}

/// The rule between two places of one floor (or one wing's rooms).
fn same_floor(from: &Place, to: &Place) -> Result<(), String> {
    if from.row != to.row {
        Err("they stand in independent rows of one floor".into())
    } else if to.rank > from.rank {
        Err("it runs against the floor's order (`<`)".into())
    } else if to.rank == from.rank && to.group != from.group {
        Err("they stand side by side (`,`): neither uses the other".into())
    } else {
        Ok(())
    }
}
