//! The floor plan of `docs/architecture.md`, parsed: where each module stands, and which raw
//! crates it may name.

use std::collections::BTreeMap;

/// The comment that marks the plan's block in the Markdown.
const MARKER: &str = "<!-- floors plan";

/// The raw crates, by the names code uses for them.
pub const RAW_CRATES: &[&str] = &[
    "cuda_sys",
    "nvrtc_sys",
    "nvml_sys",
    "nvjitlink_sys",
    "nvfatbin_sys",
    "nccl_sys",
    "cublas_sys",
    "cublaslt_sys",
    "curand_sys",
];

/// A module's place in one ordering: its floor (0 is the lowest), its row on that floor, its
/// rank along the row (`<`), and its group within the rank (`,` separates groups; the
/// modules of one group form a circle).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    pub floor: usize,
    pub row: usize,
    pub rank: usize,
    pub group: usize,
}

/// Where a module of the plan stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// On a floor of the building.
    Floor(Place),
    /// Beside the floors, standing on floor `on`: it uses that floor and below.
    Beside { on: usize },
    /// A room of the wing or module `parent`, placed in the parent's own ordering.
    Room { parent: String, place: Place },
}

/// The parsed plan.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The floors' labels, lowest first.
    pub floors: Vec<String>,
    /// Every module the plan names, by its path (`memory::vmm`).
    pub units: BTreeMap<String, Standing>,
    /// The raw crates a module may name, where not `cuda_sys` alone.
    pub raw: BTreeMap<String, Vec<String>>,
}

impl Plan {
    /// The plan in `markdown`: the first fenced block after the marker comment.
    pub fn from_markdown(markdown: &str) -> Result<Self, String> {
        let start = markdown
            .find(MARKER)
            .ok_or("no `<!-- floors plan` marker in the document")?;
        let mut lines = markdown[start..].lines().skip(1);
        if lines.next().map(str::trim) != Some("```text") {
            return Err("the marker must be followed by a ```text block".into());
        }
        let block: Vec<&str> = lines.take_while(|line| line.trim() != "```").collect();
        Self::parse(&block)
    }

    /// The plan written as `lines` (the block's text).
    pub fn parse(lines: &[&str]) -> Result<Self, String> {
        let rows: Vec<(&str, &str)> = lines
            .iter()
            .map(|line| line.trim())
            .filter(|line| !line.is_empty())
            .map(|line| line.split_once(char::is_whitespace).unwrap_or((line, "")))
            .map(|(label, rest)| (label, rest.trim()))
            .collect();
        let wings: Vec<&str> = rows
            .iter()
            .filter(|(label, _)| *label == "beside")
            .filter_map(|(_, rest)| rest.split_whitespace().next())
            .collect();
        // Floor lines are written from the top down.
        let floor_rows: Vec<(&str, &str)> = rows
            .iter()
            .copied()
            .filter(|(label, _)| !matches!(*label, "beside" | "raw") && !wings.contains(label))
            .rev()
            .collect();
        let mut plan = Plan {
            floors: floor_rows
                .iter()
                .map(|(label, _)| label.to_string())
                .collect(),
            units: BTreeMap::new(),
            raw: BTreeMap::new(),
        };
        for (floor, (_, entries)) in floor_rows.iter().enumerate() {
            for (name, place) in places(entries, floor) {
                plan.add(name, Standing::Floor(place))?;
            }
        }
        for (label, rest) in &rows {
            match *label {
                "beside" => {
                    let parts: Vec<&str> = rest.split_whitespace().collect();
                    let [name, "on", floor] = parts[..] else {
                        return Err(format!("`beside {rest}`: write `beside NAME on FLOOR`"));
                    };
                    let on = plan
                        .floors
                        .iter()
                        .position(|label| label == floor)
                        .ok_or_else(|| format!("`beside {rest}`: no floor {floor}"))?;
                    plan.add(name.to_owned(), Standing::Beside { on })?;
                }
                "raw" => {
                    let (name, crates) = rest
                        .split_once(':')
                        .ok_or_else(|| format!("`raw {rest}`: write `raw NAME: CRATES`"))?;
                    let crates: Vec<String> =
                        crates.split_whitespace().map(str::to_owned).collect();
                    if let Some(unknown) = crates.iter().find(|c| !RAW_CRATES.contains(&c.as_str()))
                    {
                        return Err(format!("`raw {rest}`: {unknown} is no raw crate"));
                    }
                    plan.raw.insert(name.trim().to_owned(), crates);
                }
                parent if wings.contains(&parent) => {
                    for (name, place) in places(rest, 0) {
                        if !name.starts_with(&format!("{parent}::")) {
                            return Err(format!("{name} is listed as a room of {parent}"));
                        }
                        plan.add(
                            name,
                            Standing::Room {
                                parent: parent.to_owned(),
                                place,
                            },
                        )?;
                    }
                }
                _ => {}
            }
        }
        if let Some(name) = plan.raw.keys().find(|name| !plan.units.contains_key(*name)) {
            return Err(format!("`raw {name}`: {name} is not in the plan"));
        }
        Ok(plan)
    }

    fn add(&mut self, name: String, standing: Standing) -> Result<(), String> {
        if self.units.insert(name.clone(), standing).is_some() {
            return Err(format!("{name} stands twice in the plan"));
        }
        Ok(())
    }

    /// The module of the plan that `path` (segments from the crate root) lies in: the longest
    /// one that is a prefix of it.
    pub fn unit_of(&self, path: &[String]) -> Option<String> {
        (1..=path.len())
            .rev()
            .map(|len| path[..len].join("::"))
            .find(|candidate| self.units.contains_key(candidate))
    }

    /// The raw crates `unit` may name: its own `raw` line, its wing's, or `cuda_sys`.
    pub fn raw_crates_of(&self, unit: &str) -> Vec<String> {
        let wing = match self.units.get(unit) {
            Some(Standing::Room { parent, .. }) => parent.as_str(),
            _ => unit,
        };
        self.raw
            .get(unit)
            .or_else(|| self.raw.get(wing))
            .cloned()
            .unwrap_or_else(|| vec!["cuda_sys".to_owned()])
    }

    /// The label of floor `floor`.
    pub fn floor_label(&self, floor: usize) -> &str {
        self.floors.get(floor).map_or("?", String::as_str)
    }
}

/// The modules of one floor line (`a < b, c; d e`) and their places.
fn places(entries: &str, floor: usize) -> Vec<(String, Place)> {
    let mut found = Vec::new();
    for (row, chain) in entries.split(';').enumerate() {
        for (rank, groups) in chain.split('<').enumerate() {
            for (group, names) in groups.split(',').enumerate() {
                for name in names.split_whitespace() {
                    let place = Place {
                        floor,
                        row,
                        rank,
                        group,
                    };
                    found.push((name.to_owned(), place));
                }
            }
        }
    }
    found
}
