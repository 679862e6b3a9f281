//! Reading one source file as the check sees it: its module path, its child modules, and every
//! path it names (in `use` statements, expanded, and in code), each with its line.

/// A source file of `src/`: its path under `src/` and its text.
#[derive(Debug, Clone)]
pub struct Source {
    pub path: String,
    pub text: String,
}

impl Source {
    /// A source at `path` (under `src/`) holding `text`.
    pub fn new(path: &str, text: &str) -> Self {
        Self {
            path: path.to_owned(),
            text: text.to_owned(),
        }
    }

    /// The module the file is: `memory/vmm/mod.rs` and `memory/vmm.rs` are `memory::vmm`;
    /// `lib.rs` is the root (no segment).
    pub fn module(&self) -> Vec<String> {
        let trimmed = self.path.trim_end_matches(".rs");
        let mut segments: Vec<String> = trimmed.split('/').map(str::to_owned).collect();
        if matches!(segments.last().map(String::as_str), Some("mod" | "lib")) {
            segments.pop();
        }
        segments
    }

    /// Whether the whole file is test code (a `tests.rs` module or a file under a `tests/`
    /// folder of `src/`).
    pub fn is_test_file(&self) -> bool {
        self.path.ends_with("/tests.rs") || self.path.contains("/tests/")
    }
}

/// One line's code: comments removed, and whether it is test code.
#[derive(Debug, Clone)]
pub struct Line<'a> {
    pub number: usize,
    pub code: &'a str,
    pub in_test: bool,
}

/// The code of a line: a `//` comment (doc comments included) removed.
pub fn code_of(line: &str) -> &str {
    match line.find("//") {
        Some(index) => &line[..index],
        None => line,
    }
}

/// The file's lines; everything after a `#[cfg(test)]` module opens is test code.
pub fn lines(source: &Source) -> Vec<Line<'_>> {
    let mut in_test = source.is_test_file();
    let mut test_attribute = false;
    let mut found = Vec::new();
    for (index, raw) in source.text.lines().enumerate() {
        let code = code_of(raw);
        let trimmed = code.trim();
        if trimmed == "#[cfg(test)]" {
            test_attribute = true;
        } else if test_attribute && !trimmed.is_empty() {
            if is_inline_module(trimmed) {
                in_test = true;
            }
            test_attribute = false;
        }
        found.push(Line {
            number: index + 1,
            code,
            in_test,
        });
    }
    found
}

/// Whether `code` opens an inline module (`mod tests {`).
fn is_inline_module(code: &str) -> bool {
    let rest = code.strip_prefix("pub(crate) ").unwrap_or(code);
    rest.starts_with("mod ") && rest.trim_end().ends_with('{')
}

/// The modules the file declares (`mod a;`, `pub mod b;`, `pub(crate) mod c { ... }`).
pub fn child_modules(source: &Source) -> Vec<String> {
    lines(source)
        .iter()
        .filter_map(|line| {
            let trimmed = line.code.trim();
            let rest = ["pub(crate) mod ", "pub(super) mod ", "pub mod ", "mod "]
                .iter()
                .find_map(|prefix| trimmed.strip_prefix(prefix))?;
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            (!name.is_empty()).then_some(name)
        })
        .collect()
}

/// A `use` statement, gathered over its lines: its text from `use` to `;`, the line it starts
/// on, and whether it is test code.
#[derive(Debug, Clone)]
pub struct UseStatement {
    pub number: usize,
    pub last: usize,
    pub tree: String,
    pub in_test: bool,
}

/// Every `use` statement of the file (`pub use` and `pub(crate) use` included).
pub fn use_statements(source: &Source) -> Vec<UseStatement> {
    let mut found = Vec::new();
    let mut open: Option<UseStatement> = None;
    for line in lines(source) {
        let trimmed = line.code.trim();
        if let Some(statement) = open.as_mut() {
            statement.tree.push(' ');
            statement.tree.push_str(trimmed);
            statement.last = line.number;
        } else if let Some(rest) = use_start(trimmed) {
            open = Some(UseStatement {
                number: line.number,
                last: line.number,
                tree: rest.to_owned(),
                in_test: line.in_test,
            });
        }
        let done = open.as_ref().is_some_and(|s| s.tree.contains(';'));
        if done && let Some(mut statement) = open.take() {
            let end = statement.tree.find(';').unwrap_or(statement.tree.len());
            statement.tree.truncate(end);
            found.push(statement);
        }
    }
    found
}

/// The tree of a line that starts a `use` statement, after `use`.
fn use_start(code: &str) -> Option<&str> {
    let rest = ["pub(crate) ", "pub(super) ", "pub "]
        .iter()
        .find_map(|prefix| code.strip_prefix(prefix))
        .unwrap_or(code);
    rest.strip_prefix("use ")
}

/// The paths of a use tree (`a::{b, c::{d as e, *}}` gives `a::b`, `a::c::d`, `a::c::*`), each
/// as its segments; `self` inside braces names the prefix itself.
pub fn expand(tree: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    expand_into(&without_renames(tree), &[], &mut paths);
    paths
}

/// `tree` with its renames (`as NAME`) and its white space removed.
fn without_renames(tree: &str) -> String {
    let mut compact = String::new();
    let mut words = tree.split_whitespace();
    while let Some(word) = words.next() {
        if word == "as" {
            let renamed = words.next().unwrap_or("");
            compact.extend(
                renamed
                    .chars()
                    .skip_while(|c| c.is_alphanumeric() || *c == '_'),
            );
        } else {
            compact.push_str(word);
        }
    }
    compact
}

fn expand_into(tree: &str, prefix: &[String], paths: &mut Vec<Vec<String>>) {
    for item in split_top_level(tree) {
        if item.is_empty() {
            continue;
        }
        let (head, group) = match item.find('{') {
            Some(open) if item.ends_with('}') => {
                (&item[..open], Some(&item[open + 1..item.len() - 1]))
            }
            _ => (item, None),
        };
        let mut path: Vec<String> = prefix.to_vec();
        for segment in head.trim_end_matches("::").split("::") {
            let names_prefix = segment == "self" && group.is_none() && !path.is_empty();
            if segment.is_empty() || names_prefix {
                continue;
            }
            path.push(segment.to_owned());
        }
        match group {
            Some(inner) => expand_into(inner, &path, paths),
            None => paths.push(path),
        }
    }
}

/// `tree`'s items at the top level, split at commas outside braces.
fn split_top_level(tree: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (index, c) in tree.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                items.push(&tree[start..index]);
                start = index + 1;
            }
            _ => {}
        }
    }
    items.push(&tree[start..]);
    items
}

/// Every path in `code` that starts with `crate::`, `$crate::` or `super::`, as its segments
/// (identifiers joined by `::`; a path stops at the first other character).
pub fn code_paths(code: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    for start in ["crate::", "super::"] {
        let mut offset = 0;
        while let Some(index) = code[offset..].find(start) {
            let at = offset + index;
            offset = at + start.len();
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| {
                c.is_alphanumeric() || c == '_' || (c == ':' && start == "super::")
            }) {
                continue;
            }
            found.push(path_at(&code[at..]));
        }
    }
    found
}

/// The path at the start of `code`: identifiers (and a `{` or `*` that ends it) joined by `::`.
fn path_at(code: &str) -> Vec<String> {
    let mut segments = Vec::new();
    let mut rest = code;
    loop {
        let segment: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if segment.is_empty() {
            if let Some(c) = rest.chars().next().filter(|c| *c == '{' || *c == '*') {
                segments.push(c.to_string());
            }
            break;
        }
        rest = &rest[segment.len()..];
        segments.push(segment);
        match rest.strip_prefix("::") {
            Some(after) => rest = after,
            None => break,
        }
    }
    segments
}
