//! The `sage` commands of the README's and the guide's shell blocks, read as the shell reads
//! them (for `tests/guide_examples.rs`).

use std::path::{Path, PathBuf};

/// One example: where it is and its words.
#[derive(Debug)]
pub struct Example {
    /// `FILE:LINE`.
    pub at: String,
    /// The words after `sage`, as the shell splits them.
    pub args: Vec<String>,
}

/// The README and every page of the guide.
pub fn pages(repo: &Path) -> Vec<PathBuf> {
    let mut pages = vec![repo.join("README.md")];
    let mut guide: Vec<PathBuf> = std::fs::read_dir(repo.join("docs/src"))
        .expect("docs/src is in the checkout")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    guide.sort();
    pages.extend(guide);
    pages
}

/// Every `sage` command line in the shell blocks of `page` (continuations joined, comments and a
/// `$ ` prompt dropped).
pub fn examples(page: &Path, text: &str) -> Vec<Example> {
    let mut out = Vec::new();
    let mut in_fence = false;
    let mut in_shell = false;
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if let Some(fence) = trimmed.strip_prefix("```") {
            in_shell =
                !in_fence && matches!(fence.trim(), "bash" | "sh" | "shell" | "console" | "");
            in_fence = !in_fence;
            pending = None;
            continue;
        }
        if !in_shell {
            continue;
        }
        let (start, command) = match pending.take() {
            Some((start, so_far)) => (start, so_far + " " + trimmed),
            None => {
                let line = trimmed.strip_prefix("$ ").unwrap_or(trimmed);
                if !line.starts_with("sage ") {
                    continue;
                }
                (i + 1, line.to_owned())
            }
        };
        if let Some(rest) = command.strip_suffix('\\') {
            pending = Some((start, rest.trim_end().to_owned()));
            continue;
        }
        if let Some(words) = split(&command) {
            out.push(Example {
                at: format!("{}:{start}", page.display()),
                args: words.into_iter().skip(1).collect(),
            });
        }
    }
    out
}

/// The shell's words of `line` (quotes removed, `# comment` dropped); `None` for a line that
/// pipes or chains into another command, which is not one example.
fn split(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '#') if !in_word => break,
            (None, '|' | ';' | '&' | '>' | '<') => return None,
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Some(words)
}

#[test]
fn examples_are_read_as_the_shell_reads_them() {
    let page = "text\n```bash\n# a comment\nsage run retrieval --similarity bm25 \\\n  --dataset 'my file.jsonl'  # why\n$ sage data list | head\ncargo test\n```\n```toml\nsage = 1\n```\n";
    let found = examples(Path::new("p.md"), page);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].at, "p.md:4");
    assert_eq!(
        found[0].args,
        [
            "run",
            "retrieval",
            "--similarity",
            "bm25",
            "--dataset",
            "my file.jsonl"
        ]
    );
}
