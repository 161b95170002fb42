//! The workspace's shape, checked: no two files of one crate import each other, however long the
//! loop. A circle means neither file can be read, tested or moved without the other, and it is
//! how a crate's layers quietly stop being layers; the guide's crate map
//! (`docs/src/crate-map.md`) depends on every crate reading top-down.
//!
//! The module graph is read from the sources themselves: every `crate::`, `super::` and `self::`
//! path (in `use` and inline), resolved to the file that defines its module, and through a
//! facade's (`lib.rs`, `mod.rs`) `pub use` to the file the name comes from; a glob (`crate::*`)
//! depends on the module it empties. Test modules (`#[cfg(test)] mod … {`) are left out, and so
//! is a submodule file's reading of its own parent: both are one module in several files.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace")
        .to_owned()
}

/// One crate's library modules: module path → file.
struct ModuleTree {
    files: BTreeMap<Vec<String>, PathBuf>,
}

impl ModuleTree {
    fn read(src: &Path) -> ModuleTree {
        let mut files = BTreeMap::new();
        let mut stack = vec![src.to_owned()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    if path.file_name().is_some_and(|n| n != "bin") {
                        stack.push(path);
                    }
                    continue;
                }
                if path.extension().is_none_or(|e| e != "rs") || path.ends_with("main.rs") {
                    continue;
                }
                let relative = path.strip_prefix(src).unwrap();
                let mut module: Vec<String> = relative
                    .with_extension("")
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                if matches!(module.last().map(String::as_str), Some("lib" | "mod")) {
                    module.pop();
                }
                files.insert(module, path);
            }
        }
        ModuleTree { files }
    }

    fn is_facade(&self, module: &[String]) -> bool {
        self.files
            .get(module)
            .is_some_and(|f| f.ends_with("lib.rs") || f.ends_with("mod.rs"))
    }
}

/// The text with comments and test modules removed.
fn code_of(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let mut kept = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("//") {
            continue;
        }
        if trimmed.starts_with("#[cfg(test)]")
            && lines
                .peek()
                .is_some_and(|next| next.trim_start().starts_with("mod ") && next.ends_with('{'))
        {
            // the test module runs to the end of the file by this workspace's convention
            break;
        }
        let code = line.split(" // ").next().unwrap_or(line);
        kept.push_str(code);
        kept.push('\n');
    }
    kept
}

/// Every path that follows `prefix` (`crate::`, `super::`, `self::`), groups expanded: `a::{b, c::D}`
/// gives `a::b` and `a::c::D`.
fn paths_after(code: &str, prefix: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find(prefix) {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let mut chars = rest.char_indices().peekable();
        let mut base = Vec::new();
        parse_tree(rest, &mut chars, &mut base, &mut found);
    }
    found
}

type Chars<'a> = std::iter::Peekable<std::str::CharIndices<'a>>;

fn parse_tree(text: &str, chars: &mut Chars, base: &mut Vec<String>, found: &mut Vec<Vec<String>>) {
    loop {
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        match chars.peek().copied() {
            Some((_, '{')) => {
                chars.next();
                let group = base.len();
                loop {
                    parse_tree(text, chars, base, found);
                    base.truncate(group);
                    while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
                    match chars.next() {
                        Some((_, ',')) => {
                            while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
                            if chars.next_if(|(_, c)| *c == '}').is_some() {
                                return;
                            }
                        }
                        _ => return,
                    }
                }
            }
            Some((start, c)) if c.is_alphanumeric() || c == '_' => {
                let mut end = start;
                while let Some((i, c)) = chars.next_if(|(_, c)| c.is_alphanumeric() || *c == '_') {
                    end = i + c.len_utf8();
                }
                base.push(text[start..end].to_owned());
                if text[end..].starts_with("::") {
                    chars.next();
                    chars.next();
                    continue;
                }
                found.push(base.clone());
                // `as Alias` and anything else up to the group's end is not part of the path
                while chars
                    .next_if(|(_, c)| !matches!(c, ',' | '}' | ';' | '\n'))
                    .is_some()
                {}
                return;
            }
            Some((_, '*')) => {
                // a glob names the module itself: `crate::*` depends on the crate root
                chars.next();
                found.push(base.clone());
                return;
            }
            _ => {
                if !base.is_empty() {
                    found.push(base.clone());
                }
                return;
            }
        }
    }
}

/// The file that `path` (absolute within the crate) leads to: the deepest module file on it, and
/// through a facade's re-export of the name that follows.
fn resolve(
    tree: &ModuleTree,
    reexports: &BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>>,
    path: &[String],
    hops: usize,
) -> Option<PathBuf> {
    let mut module: Vec<String> = Vec::new();
    for segment in path {
        let mut deeper = module.clone();
        deeper.push(segment.clone());
        if tree.files.contains_key(&deeper) {
            module = deeper;
            continue;
        }
        if hops < 8 && tree.is_facade(&module) {
            if let Some(target) = reexports.get(&module).and_then(|names| names.get(segment)) {
                return resolve(tree, reexports, target, hops + 1);
            }
        }
        break;
    }
    tree.files.get(&module).cloned()
}

fn absolute(module: &[String], is_facade: bool, prefix: &str, path: &[String]) -> Vec<String> {
    let mut base: Vec<String> = match prefix {
        "crate::" => Vec::new(),
        "self::" => module.to_vec(),
        _ => {
            let mut parent = module.to_vec();
            // `super` of a module file is its parent, whether the file is `x.rs` or `x/mod.rs`
            let _ = is_facade;
            parent.pop();
            parent
        }
    };
    let mut rest = path;
    // `super::super::x`
    while let Some(("super", tail)) = rest.split_first().map(|(h, t)| (h.as_str(), t)) {
        base.pop();
        rest = tail;
    }
    base.extend(rest.iter().cloned());
    base
}

fn circles_of(src: &Path) -> Vec<Vec<PathBuf>> {
    let tree = ModuleTree::read(src);
    let mut code: BTreeMap<Vec<String>, String> = BTreeMap::new();
    for (module, file) in &tree.files {
        code.insert(module.clone(), code_of(file));
    }
    // a facade's `pub use` is the crate's face, not a dependency of the facade: a module that
    // names `crate::Result` depends on the module defining it, not on lib.rs
    let mut own_code: BTreeMap<Vec<String>, String> = BTreeMap::new();
    for (module, text) in &code {
        let own = if tree.is_facade(module) {
            text.split_inclusive(';')
                .filter(|statement| !statement.contains("pub use "))
                .collect()
        } else {
            text.clone()
        };
        own_code.insert(module.clone(), own);
    }
    // what each facade re-exports: name → absolute path of the item
    let mut reexports: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    for (module, text) in &code {
        if !tree.is_facade(module) {
            continue;
        }
        let names = reexports.entry(module.clone()).or_default();
        for statement in text.split(';') {
            let Some(at) = statement.find("pub use ") else {
                continue;
            };
            let used = &statement[at + "pub use ".len()..];
            let (prefix, relative) = if let Some(r) = used.strip_prefix("crate::") {
                ("crate::", r)
            } else if let Some(r) = used.strip_prefix("self::") {
                ("self::", r)
            } else if let Some(r) = used.strip_prefix("super::") {
                ("super::", r)
            } else {
                ("self::", used)
            };
            let mut found = Vec::new();
            let mut chars = relative.char_indices().peekable();
            parse_tree(relative, &mut chars, &mut Vec::new(), &mut found);
            for path in found {
                let target = absolute(module, true, prefix, &path);
                if let Some(name) = target.last() {
                    names.insert(name.clone(), target.clone());
                }
            }
        }
    }
    let mut edges: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    for (module, text) in &own_code {
        let from = tree.files[module].clone();
        let facade = tree.is_facade(module);
        let mut targets = BTreeSet::new();
        let mut named: Vec<Vec<String>> = Vec::new();
        for prefix in ["crate::", "super::", "self::"] {
            for path in paths_after(text, prefix) {
                named.push(absolute(module, facade, prefix, &path));
            }
        }
        // `use child::X` in a facade names its own child module without a prefix
        for path in paths_after(text, "use ") {
            let mut child = module.clone();
            child.extend(path.iter().cloned());
            if !path.is_empty() && tree.files.contains_key(&child[..module.len() + 1]) {
                named.push(child);
            }
        }
        // a file's own parent module is not an arrow: a submodule file that reads its parent
        // (`use super::*`) is that module in two files, as a test module is
        let parent = module
            .split_last()
            .and_then(|(_, parent)| tree.files.get(parent));
        for target in named {
            if let Some(to) = resolve(&tree, &reexports, &target, 0) {
                if to != from && Some(&to) != parent {
                    targets.insert(to);
                }
            }
        }
        edges.insert(from, targets);
    }
    strongly_connected(&edges)
        .into_iter()
        .filter(|component| component.len() > 1)
        .collect()
}

/// Tarjan's strongly connected components.
fn strongly_connected(edges: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    struct State<'a> {
        edges: &'a BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        index: BTreeMap<&'a PathBuf, usize>,
        low: BTreeMap<&'a PathBuf, usize>,
        stack: Vec<&'a PathBuf>,
        on_stack: BTreeSet<&'a PathBuf>,
        components: Vec<Vec<PathBuf>>,
    }
    fn visit<'a>(state: &mut State<'a>, node: &'a PathBuf) {
        let n = state.index.len();
        state.index.insert(node, n);
        state.low.insert(node, n);
        state.stack.push(node);
        state.on_stack.insert(node);
        if let Some(targets) = state.edges.get(node) {
            for next in targets {
                if !state.index.contains_key(next) {
                    visit(state, next);
                    let low = state.low[node].min(state.low[next]);
                    state.low.insert(node, low);
                } else if state.on_stack.contains(next) {
                    let low = state.low[node].min(state.index[next]);
                    state.low.insert(node, low);
                }
            }
        }
        if state.low[node] == state.index[node] {
            let mut component = Vec::new();
            while let Some(top) = state.stack.pop() {
                state.on_stack.remove(top);
                component.push(top.clone());
                if top == node {
                    break;
                }
            }
            component.sort();
            state.components.push(component);
        }
    }
    let mut state = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        components: Vec::new(),
    };
    for node in edges.keys() {
        if !state.index.contains_key(node) {
            visit(&mut state, node);
        }
    }
    state.components
}

fn crate_sources() -> Vec<PathBuf> {
    let root = workspace();
    let mut sources: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path().join("src"))
        .filter(|src| src.is_dir())
        .collect();
    sources.push(root.join("xtask/src"));
    sources.sort();
    sources
}

#[test]
fn no_crate_has_an_import_circle() {
    let root = workspace();
    let mut said = Vec::new();
    for src in crate_sources() {
        for circle in circles_of(&src) {
            let files: Vec<String> = circle
                .iter()
                .map(|f| f.strip_prefix(&root).unwrap().display().to_string())
                .collect();
            said.push(files.join(" ↔ "));
        }
    }
    assert!(
        said.is_empty(),
        "files that import each other in a circle:\n{}",
        said.join("\n")
    );
}

/// The reader itself: a circle made on purpose is found, a line of layers is not.
#[test]
fn a_circle_made_on_purpose_is_found() {
    let dir = tempdir();
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("deep")).unwrap();
    std::fs::write(
        src.join("lib.rs"),
        "mod a;\nmod b;\nmod deep;\npub use a::Alpha;\n",
    )
    .unwrap();
    std::fs::write(
        src.join("a.rs"),
        "use crate::{b::Beta, deep::{self, inner::Gamma}};\npub struct Alpha;\n",
    )
    .unwrap();
    std::fs::write(src.join("b.rs"), "pub struct Beta;\n").unwrap();
    std::fs::write(
        src.join("deep/mod.rs"),
        "pub mod inner;\npub use inner::Gamma;\n",
    )
    .unwrap();
    std::fs::write(src.join("deep/inner.rs"), "pub struct Gamma;\n// crate::Alpha in a comment is no import\n#[cfg(test)]\nmod tests {\n    use crate::Alpha;\n}\n").unwrap();
    assert_eq!(circles_of(&src), Vec::<Vec<PathBuf>>::new());

    // inner.rs now names Alpha through the crate root's re-export: a → deep/inner → a
    std::fs::write(
        src.join("deep/inner.rs"),
        "pub struct Gamma(crate::Alpha);\n",
    )
    .unwrap();
    let circles = circles_of(&src);
    assert_eq!(circles.len(), 1, "{circles:?}");
    let names: Vec<_> = circles[0]
        .iter()
        .map(|f| f.strip_prefix(&src).unwrap().to_owned())
        .collect();
    assert_eq!(
        names,
        [PathBuf::from("a.rs"), PathBuf::from("deep/inner.rs")]
    );

    // and through `super::`
    std::fs::write(src.join("deep/inner.rs"), "pub struct Gamma;\n").unwrap();
    std::fs::write(
        src.join("deep/mod.rs"),
        "pub mod inner;\npub use inner::Gamma;\npub struct Delta(crate::a::Alpha);\n",
    )
    .unwrap();
    std::fs::write(
        src.join("a.rs"),
        "pub struct Alpha;\npub struct Uses(super::deep::Delta);\n",
    )
    .unwrap();
    let circles = circles_of(&src);
    assert_eq!(circles.len(), 1, "{circles:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

fn tempdir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sage-structure-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
