//! Reading line-oriented input with errors that name the file and line.

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use sage_data::lines;
use serde_json::{Map, Value};

/// Where input comes from: a file, or standard input for `-`.
pub fn open(path: &Path) -> Result<Box<dyn BufRead>> {
    if path == Path::new("-") {
        return Ok(Box::new(BufReader::new(io::stdin())));
    }
    let file = File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    Ok(Box::new(BufReader::new(file)))
}

/// How a path appears in messages: `<stdin>` for `-`.
pub fn shown(path: &Path) -> String {
    if path == Path::new("-") {
        "<stdin>".to_owned()
    } else {
        path.display().to_string()
    }
}

/// One JSON object of a JSON-lines file, with where it came from.
pub struct Record {
    pub path: PathBuf,
    pub line: usize,
    pub object: Map<String, Value>,
}

impl Record {
    fn fail(&self, message: impl std::fmt::Display) -> anyhow::Error {
        anyhow!("{}:{}: {message}", shown(&self.path), self.line)
    }

    fn field(&self, key: &str) -> Result<&Value> {
        self.object
            .get(key)
            .ok_or_else(|| self.fail(format_args!("missing key {key:?}")))
    }

    pub fn str(&self, key: &str) -> Result<&str> {
        self.field(key)?
            .as_str()
            .ok_or_else(|| self.fail(format_args!("{key:?} must be a string")))
    }

    pub fn f64(&self, key: &str) -> Result<f64> {
        let v = self.field(key)?;
        match v.as_f64() {
            Some(x) if x.is_finite() => Ok(x),
            _ => Err(self.fail(format_args!("{key:?} must be a finite number, got {v}"))),
        }
    }

    /// A label: any JSON string, number or boolean, compared by its JSON text.
    pub fn label(&self, key: &str) -> Result<String> {
        match self.field(key)? {
            Value::String(s) => Ok(s.clone()),
            v @ (Value::Number(_) | Value::Bool(_)) => Ok(v.to_string()),
            v => Err(self.fail(format_args!(
                "{key:?} must be a string, number or boolean, got {v}"
            ))),
        }
    }

    /// A binary label: true/false or 1/0.
    pub fn bool(&self, key: &str) -> Result<bool> {
        match self.field(key)? {
            Value::Bool(b) => Ok(*b),
            Value::Number(n) if n.as_f64() == Some(1.0) => Ok(true),
            Value::Number(n) if n.as_f64() == Some(0.0) => Ok(false),
            v => Err(self.fail(format_args!("{key:?} must be true/false or 1/0, got {v}"))),
        }
    }
}

/// Reads every line of a JSON-lines file as an object: output line i answers input line i, so a
/// blank line is an error naming it (one final newline is not a line), as is a key repeated in
/// an object (see [`sage_data::lines`]). A UTF-8 byte-order mark at the start is accepted.
/// Errors on the first bad line (naming file and line) and on a file with no records.
///
/// Streamed: a line over [`lines::MAX_LINE_BYTES`] is an error found while it is read, so a
/// runaway line costs an error, not the machine's memory.
pub fn read_records(path: &Path) -> Result<Vec<Record>> {
    let mut records = Vec::new();
    lines::for_each_line_with_blanks(open(path)?, &mut |i, line| -> Result<()> {
        if lines::is_blank(line) {
            bail!(
                "{}:{i}: blank line: each line must be one JSON object (output line i answers \
                 input line i)",
                shown(path)
            );
        }
        let object = lines::json_object(line).map_err(|e| anyhow!("{}:{i}: {e}", shown(path)))?;
        records.push(Record {
            path: path.to_owned(),
            line: i,
            object,
        });
        Ok(())
    })
    .map_err(|e| match e {
        lines::LineError::Read { line, message } => {
            anyhow!("{}:{line}: cannot read: {message}", shown(path))
        }
        lines::LineError::Bad { line, message } => anyhow!("{}:{line}: {message}", shown(path)),
        lines::LineError::Caller(e) => e,
    })?;
    if records.is_empty() {
        bail!("{}: no input lines", shown(path));
    }
    Ok(records)
}
