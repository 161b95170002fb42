//! `cargo xtask book`: the guide in `docs/` built with mdBook, and every relative link in it and
//! in the README checked.
//!
//! mdBook reports a chapter missing from disk and a bad `{{#include}}`, but not a link to a file
//! that is not there or to a heading that was renamed; those are what a reshuffled guide breaks
//! first, so they are checked here on the sources, where an error can name the file and line.
//! Anchors follow mdBook's (and GitHub's) rule for heading ids, so one check serves the rendered
//! book and the repository browser.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// `cargo xtask book [--mdbook PATH] [--check-only]`.
pub(crate) fn book(args: &[String]) -> Result<()> {
    let mut mdbook = None;
    let mut check_only = false;
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--mdbook" => mdbook = Some(PathBuf::from(crate::flag_value(&mut it, flag)?)),
            "--check-only" => check_only = true,
            other => bail!("unknown option {other:?} (expected --mdbook PATH or --check-only)"),
        }
    }
    let root = crate::workspace_root();
    let problems = check_book(&root)?;
    if !problems.is_empty() {
        bail!(
            "{} broken link(s) in the README and the guide:\n  {}",
            problems.len(),
            problems.join("\n  ")
        );
    }
    println!("book: every relative link in README.md and docs/src resolves");
    if check_only {
        return Ok(());
    }
    let mdbook = match mdbook {
        Some(path) => path,
        None => find_mdbook().context(
            "mdbook not found on PATH nor in ~/.cache/sage-rs/tools/bin: \
             `cargo install --locked mdbook --version 0.4.52` (or --check-only)",
        )?,
    };
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let dest = target.join("book");
    let status = Command::new(&mdbook)
        .arg("build")
        .arg(root.join("docs"))
        .arg("--dest-dir")
        .arg(&dest)
        .status()
        .with_context(|| format!("running {}", mdbook.display()))?;
    if !status.success() {
        bail!("mdbook build docs failed ({status})");
    }
    println!("book: {}", dest.join("index.html").display());
    Ok(())
}

fn find_mdbook() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("mdbook"))
            .find(|p| p.is_file())
    });
    on_path.or_else(|| {
        let home = PathBuf::from(std::env::var_os("HOME")?);
        Some(home.join(".cache/sage-rs/tools/bin/mdbook")).filter(|p| p.is_file())
    })
}

/// Every broken link in `README.md` and `docs/src/**/*.md`, and every chapter file that
/// `docs/src/SUMMARY.md` does not list, as `file:line: what` lines.
pub(crate) fn check_book(root: &Path) -> Result<Vec<String>> {
    let src = root.join("docs/src");
    let mut files = vec![root.join("README.md")];
    let mut chapters = markdown_files(&src)?;
    chapters.sort();
    files.extend(chapters.iter().cloned());
    let mut problems = Vec::new();
    for file in &files {
        problems.extend(check_file(root, file)?);
    }
    let summary = std::fs::read_to_string(src.join("SUMMARY.md"))
        .with_context(|| format!("reading {}", src.join("SUMMARY.md").display()))?;
    let listed: HashSet<PathBuf> = links(&summary)
        .into_iter()
        .map(|(_, target)| src.join(target.split('#').next().unwrap_or_default()))
        .collect();
    for chapter in &chapters {
        if chapter.file_name().is_some_and(|n| n != "SUMMARY.md") && !listed.contains(chapter) {
            problems.push(format!(
                "{}: not listed in docs/src/SUMMARY.md, so the book leaves it out",
                shown(root, chapter)
            ));
        }
    }
    Ok(problems)
}

fn markdown_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            out.extend(markdown_files(&path)?);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
    Ok(out)
}

fn shown(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

fn check_file(root: &Path, file: &Path) -> Result<Vec<String>> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let dir = file.parent().expect("a file has a folder");
    let mut problems = Vec::new();
    for (line, target) in links(&text) {
        if target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let (path, anchor) = match target.split_once('#') {
            Some((path, anchor)) => (path, Some(anchor)),
            None => (target.as_str(), None),
        };
        let linked = if path.is_empty() {
            file.to_owned()
        } else {
            dir.join(path)
        };
        let at = format!("{}:{line}", shown(root, file));
        if !linked.exists() {
            problems.push(format!("{at}: {target} does not exist"));
            continue;
        }
        if let Some(anchor) = anchor {
            if linked.extension().is_some_and(|e| e == "md") {
                let headings = heading_ids(&std::fs::read_to_string(&linked)?);
                if !headings.contains(anchor) {
                    problems.push(format!(
                        "{at}: {target}: no heading with the id {anchor:?} in {}",
                        shown(root, &linked)
                    ));
                }
            }
        }
    }
    for (line, include) in includes(&text) {
        let (path, anchor) = match include.split_once(':') {
            Some((path, anchor)) => (path, Some(anchor)),
            None => (include.as_str(), None),
        };
        let at = format!("{}:{line}", shown(root, file));
        let Ok(included) = std::fs::read_to_string(dir.join(path)) else {
            problems.push(format!(
                "{at}: {{{{#include {include}}}}}: {path} does not exist"
            ));
            continue;
        };
        if let Some(anchor) = anchor {
            let start = format!("ANCHOR: {anchor} ");
            let end = format!("ANCHOR_END: {anchor} ");
            let has = |marker: &str| included.lines().any(|l| format!("{l} ").contains(marker));
            if !has(&start) || !has(&end) {
                problems.push(format!(
                    "{at}: {{{{#include {include}}}}}: {path} has no ANCHOR / ANCHOR_END {anchor}"
                ));
            }
        }
    }
    Ok(problems)
}

/// The prose lines of a markdown text, numbered from 1, without fenced code blocks and, unless
/// `keep_code_spans`, with inline code spans emptied: a `[x](y)` inside code is an example, not
/// a link, but a heading's code span is part of its id.
fn prose(text: &str, keep_code_spans: bool) -> Vec<(usize, String)> {
    let mut in_fence = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let mut kept = String::with_capacity(line.len());
        let mut in_code = false;
        for ch in line.chars() {
            if ch == '`' {
                in_code = !in_code;
                kept.push(ch);
            } else if !in_code || keep_code_spans {
                kept.push(ch);
            }
        }
        out.push((i + 1, kept));
    }
    out
}

/// Every inline link target `[text](target)`, with its line.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (line, prose) in prose(text, false) {
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            let target = after[..end].trim();
            if !target.is_empty() {
                out.push((line, target.to_owned()));
            }
            rest = &after[end..];
        }
    }
    out
}

/// Every mdBook `{{#include path}}` (or `path:anchor`), with its line.
fn includes(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("{{#include ") {
            let after = &rest[at + "{{#include ".len()..];
            let Some(end) = after.find("}}") else { break };
            out.push((i + 1, after[..end].trim().to_owned()));
            rest = &after[end..];
        }
    }
    out
}

/// The ids mdBook gives a file's headings: lower case, spaces as `-`, only letters, digits, `-`
/// and `_` kept; a repeated id gets `-1`, `-2`, ...
fn heading_ids(text: &str) -> HashSet<String> {
    let mut ids = HashSet::new();
    for (_, line) in prose(text, true) {
        let Some(title) = line
            .strip_prefix('#')
            .map(|t| t.trim_start_matches('#'))
            .filter(|t| t.starts_with(' '))
        else {
            continue;
        };
        let mut visible = String::new();
        let mut rest = title.trim();
        // a link in a heading shows its text only
        while let Some(open) = rest.find('[') {
            visible.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            match (after.find("]("), after.find(')')) {
                (Some(close), Some(end)) if close < end => {
                    visible.push_str(&after[..close]);
                    rest = &after[end + 1..];
                }
                _ => {
                    visible.push('[');
                    rest = after;
                }
            }
        }
        visible.push_str(rest);
        let id: String = visible
            .chars()
            .filter_map(|c| {
                if c.is_alphanumeric() || c == '_' || c == '-' {
                    Some(c.to_lowercase().next().unwrap_or(c))
                } else if c.is_whitespace() {
                    Some('-')
                } else {
                    None
                }
            })
            .collect();
        let mut unique = id.clone();
        let mut n = 1;
        while ids.contains(&unique) {
            unique = format!("{id}-{n}");
            n += 1;
        }
        ids.insert(unique);
    }
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heading_ids_follow_mdbooks_rule() {
        let ids = heading_ids(
            "# The `sage` command\n## Beyond one box: sharded runs and Slurm\n\
             ```\n# not a heading\n```\n## Notes\n## Notes\n#hashtag\n",
        );
        let mut ids: Vec<_> = ids.into_iter().collect();
        ids.sort();
        assert_eq!(
            ids,
            [
                "beyond-one-box-sharded-runs-and-slurm",
                "notes",
                "notes-1",
                "the-sage-command"
            ]
        );
    }

    #[test]
    fn broken_links_and_includes_are_named_with_their_line() {
        let root = tempfile::tempdir().unwrap();
        let src = root.path().join("docs/src");
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(
            root.path().join("README.md"),
            "see [a](docs/src/a.md) and [gone](docs/src/gone.md)\n",
        )
        .unwrap();
        std::fs::write(src.join("SUMMARY.md"), "- [A](a.md)\n").unwrap();
        std::fs::write(
            src.join("a.md"),
            "# A\n## Second part\n[ok](#second-part) [bad](#third-part)\n\
             `[code](nowhere.md)`\n```\n[block](nowhere.md)\n```\n\
             [web](https://example.org/x) {{#include ../../README.md:intro}}\n",
        )
        .unwrap();
        std::fs::write(src.join("orphan.md"), "# Orphan\n").unwrap();
        let problems = check_book(root.path()).unwrap();
        assert_eq!(
            problems,
            [
                "README.md:1: docs/src/gone.md does not exist",
                "docs/src/a.md:3: #third-part: no heading with the id \"third-part\" in docs/src/a.md",
                "docs/src/a.md:8: {{#include ../../README.md:intro}}: ../../README.md has no \
                 ANCHOR / ANCHOR_END intro",
                "docs/src/orphan.md: not listed in docs/src/SUMMARY.md, so the book leaves it out",
            ]
        );
    }

    /// The repository's own guide: a renamed heading or moved chapter fails `cargo test`, with or
    /// without mdbook installed.
    #[test]
    fn the_repositorys_readme_and_guide_have_no_broken_links() {
        let problems = check_book(&crate::workspace_root()).unwrap();
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }
}
