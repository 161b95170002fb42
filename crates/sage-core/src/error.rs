//! The one error type of sage-rs. Every other crate either returns it or wraps it.

use std::path::PathBuf;

/// Result alias used throughout sage-rs.
pub type Result<T, E = SageError> = std::result::Result<T, E>;

/// Everything that can go wrong in sage-core, and the common currency for errors that cross the
/// [`crate::Similarity`] and [`crate::Embedder`] traits.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SageError {
    /// Two inputs that must be aligned element by element have different lengths.
    #[error("{what}: length mismatch ({left} vs {right})")]
    LengthMismatch {
        /// What was being compared.
        what: &'static str,
        /// Length of the first input.
        left: usize,
        /// Length of the second input.
        right: usize,
    },
    /// A measure needs more data than it was given.
    #[error("{what}: needs at least {needed} values, got {got}")]
    TooFewValues {
        /// The measure.
        what: &'static str,
        /// Minimum number of values.
        needed: usize,
        /// Number given.
        got: usize,
    },
    /// The measure is mathematically undefined for this input (e.g. a correlation of a constant).
    #[error("{what} is undefined: {why}")]
    Undefined {
        /// The measure.
        what: &'static str,
        /// Why it is undefined.
        why: String,
    },
    /// An argument outside its domain (a negative value for a harmonic mean, k = 0, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// Reading a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A file was read but one of its lines is malformed.
    #[error("{}:{line}: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What was wrong.
        message: String,
    },
    /// An error from a similarity or embedding backend (tokenizer, model, ...), kept whole.
    #[error("{context}: {source}")]
    Backend {
        /// What was being done.
        context: String,
        /// The backend's own error.
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
}

impl SageError {
    /// Wraps any backend error with a short description of what was being done.
    pub fn backend(
        context: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> Self {
        SageError::Backend {
            context: context.into(),
            source: source.into(),
        }
    }

    /// A parse error at `path:line`.
    pub fn parse(path: impl Into<PathBuf>, line: usize, message: impl Into<String>) -> Self {
        SageError::Parse {
            path: path.into(),
            line,
            message: message.into(),
        }
    }

    /// A measure undefined on its inputs (`what`), and why.
    pub fn undefined(what: &'static str, why: impl Into<String>) -> Self {
        SageError::Undefined {
            what,
            why: why.into(),
        }
    }
}

/// `e` and each of its causes that its message does not already spell out, joined by `": "`:
/// how every front end (the `sage` binary, bench-all, Python) says an error. The library errors
/// quote their cause in their own message (`{context}: {source}`) and also return it as their
/// source, so walking the chain naively (anyhow's `{:#}`) says it twice.
/// The message is made [`printable`]: file names, column names and server replies are a user's
/// or a stranger's bytes, and an escape sequence in one must not reach the terminal.
pub fn said_once(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text = format!("{text}: {more}");
        }
        source = cause.source();
    }
    printable(&text).into_owned()
}

/// `text` with every control character but line feed and tab written as a Rust escape (`\u{1b}`
/// for ESC, `\u{7}` for BEL): what may be printed to a terminal whatever a file or a server put
/// in it. C1 controls (U+0080 to U+009F) are escaped too; some terminals act on them.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("running: {source}")]
    struct Outer {
        source: SageError,
    }

    /// anyhow's `{:#}` of the same chain once printed `... HTTP 400: bad: HTTP 400: bad`.
    #[test]
    fn each_cause_is_said_once() {
        let inner = SageError::backend("embedding with m", std::io::Error::other("HTTP 400: bad"));
        let outer = Outer { source: inner };
        assert_eq!(
            said_once(&outer),
            "running: embedding with m: HTTP 400: bad"
        );
        let plain = std::io::Error::other("alone");
        assert_eq!(said_once(&plain), "alone");
    }

    /// A column named with ESC and BEL once reached the terminal raw through `sage data check`.
    #[test]
    fn control_characters_never_reach_the_terminal() {
        let hostile = std::io::Error::other("a\u{1b}[31mred\u{7}\u{9b}2J\tand\nmore");
        assert_eq!(
            said_once(&hostile),
            "a\\u{1b}[31mred\\u{7}\\u{9b}2J\tand\nmore"
        );
        assert!(matches!(
            printable("plain é"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
