//! Records of a user's file, whatever its format: JSON lines, CSV, TSV or Parquet, each record a
//! JSON object with its 1-based line (the row, for Parquet), read one at a time.
//!
//! Every format becomes the same thing — an object of cells by column name — so that one typed
//! reading ([`crate::rows`]) serves them all, and the same rows in two formats are the same rows.
//! CSV and TSV have no types: their cells arrive as strings, and the typed reading parses numbers
//! and labels from them ([`Cells::Text`]). A line or cell is bounded ([`MAX_LINE_BYTES`]) so a
//! hostile file costs an error, not the machine's memory.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::error::{parse_error, DataError, Result};
use crate::lines;

/// The longest line (JSON lines) or record (CSV, TSV) read: longer is an error naming its line,
/// so one runaway cell or a file without newlines cannot take the machine's memory.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// How a user's file is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// One JSON object a line (`.jsonl`, `.ndjson`, `.json`).
    JsonLines,
    /// Comma-separated values with a header line (`.csv`).
    Csv,
    /// Tab-separated values with a header line (`.tsv`, `.tab`).
    Tsv,
    /// Apache Parquet (`.parquet`), as HF datasets stores its splits.
    Parquet,
}

impl Format {
    /// The format a file's extension names; `None` for any other.
    pub fn of(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match ext.as_str() {
            "jsonl" | "ndjson" | "json" => Format::JsonLines,
            "csv" => Format::Csv,
            "tsv" | "tab" => Format::Tsv,
            "parquet" => Format::Parquet,
            _ => return None,
        })
    }

    /// The extensions [`Format::of`] knows, for error messages.
    pub const EXTENSIONS: &'static str = ".jsonl, .ndjson, .json, .csv, .tsv, .tab, .parquet";

    /// How the format's cells are typed.
    pub fn cells(self) -> Cells {
        match self {
            Format::Csv | Format::Tsv => Cells::Text,
            Format::JsonLines | Format::Parquet => Cells::Typed,
        }
    }
}

/// Whether a format's cells carry their types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cells {
    /// JSON and Parquet: a number is a number.
    Typed,
    /// CSV and TSV: every cell is a string; numbers and labels are parsed from it, and an empty
    /// cell of an optional column is absent.
    Text,
}

/// Calls `each` with every record of `path` in order: its 1-based line (Parquet: row) and cells.
/// Stops at the first error, which names the file and the line.
pub fn for_each(
    path: &Path,
    format: Format,
    each: &mut dyn FnMut(usize, Map<String, Value>) -> Result<()>,
) -> Result<()> {
    match format {
        Format::JsonLines => json_lines(path, each),
        Format::Csv => delimited(path, b',', each),
        Format::Tsv => delimited(path, b'\t', each),
        Format::Parquet => parquet(path, each),
    }
}

/// The columns of `path`: the header of CSV and TSV, the schema of Parquet, the keys of the first
/// object of JSON lines (in file order).
pub fn columns(path: &Path, format: Format) -> Result<Vec<String>> {
    match format {
        Format::Csv | Format::Tsv => {
            let delimiter = if format == Format::Csv { b',' } else { b'\t' };
            let mut reader = csv_reader(path, delimiter)?;
            header(path, &mut reader)
        }
        Format::JsonLines => {
            let mut first = None;
            // a sentinel error stops the walk after the first record
            let stop = DataError::Empty {
                path: PathBuf::new(),
            };
            let mut stop = Some(stop);
            let walked = json_lines(path, &mut |_, object| {
                first = Some(object.keys().cloned().collect::<Vec<_>>());
                Err(stop.take().expect("called once"))
            });
            match (walked, first) {
                (_, Some(keys)) => Ok(keys),
                (Err(e), None) => Err(e),
                (Ok(()), None) => Err(DataError::Empty {
                    path: path.to_owned(),
                }),
            }
        }
        Format::Parquet => parquet_columns(path),
    }
}

fn open(path: &Path) -> Result<File> {
    File::open(path).map_err(|e| DataError::Io {
        path: path.to_owned(),
        message: format!("cannot read: {e}"),
    })
}

fn json_lines(
    path: &Path,
    each: &mut dyn FnMut(usize, Map<String, Value>) -> Result<()>,
) -> Result<()> {
    let mut reader = BufReader::new(open(path)?);
    let mut buf = Vec::new();
    let mut line = 0;
    loop {
        line += 1;
        buf.clear();
        let read = (&mut reader)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| parse_error(path, line, format!("cannot read: {e}")))?;
        if read == 0 {
            return Ok(());
        }
        if buf.len() > MAX_LINE_BYTES && buf.last() != Some(&b'\n') {
            return Err(parse_error(
                path,
                line,
                format!("line longer than {} MiB", MAX_LINE_BYTES >> 20),
            ));
        }
        let body = if line == 1 {
            buf.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&buf)
        } else {
            &buf[..]
        };
        let body = body.strip_suffix(b"\n").unwrap_or(body);
        let body = body.strip_suffix(b"\r").unwrap_or(body);
        let text = std::str::from_utf8(body)
            .map_err(|e| parse_error(path, line, format!("not valid UTF-8: {e}")))?;
        if lines::is_blank(text) {
            continue;
        }
        let object = lines::json_object(text).map_err(|e| parse_error(path, line, e))?;
        each(line, object)?;
    }
}

fn csv_reader(path: &Path, delimiter: u8) -> Result<csv::Reader<File>> {
    Ok(csv::ReaderBuilder::new()
        .delimiter(delimiter)
        .has_headers(true)
        // TSV as pandas and HF write it quotes like CSV; a bare quote inside a field stays text
        .quoting(true)
        .from_reader(open(path)?))
}

fn csv_error(path: &Path, e: &csv::Error) -> DataError {
    let line = e.position().map_or(1, |p| (p.line() as usize).max(1));
    let message = match e.kind() {
        csv::ErrorKind::Utf8 { err, .. } => format!("not valid UTF-8 in field {}", err.field() + 1),
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!("{len} fields where the header has {expected_len}"),
        _ => e.to_string(),
    };
    parse_error(path, line, message)
}

fn header(path: &Path, reader: &mut csv::Reader<File>) -> Result<Vec<String>> {
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| csv_error(path, &e))?
        .iter()
        .map(|h| h.trim().to_owned())
        .collect();
    if header.iter().all(String::is_empty) {
        return Err(DataError::Empty {
            path: path.to_owned(),
        });
    }
    for (i, name) in header.iter().enumerate() {
        if name.is_empty() {
            return Err(parse_error(
                path,
                1,
                format!("header field {} has no name", i + 1),
            ));
        }
        if header[..i].contains(name) {
            return Err(parse_error(
                path,
                1,
                format!("column {name:?} appears twice in the header"),
            ));
        }
    }
    Ok(header)
}

fn delimited(
    path: &Path,
    delimiter: u8,
    each: &mut dyn FnMut(usize, Map<String, Value>) -> Result<()>,
) -> Result<()> {
    let mut reader = csv_reader(path, delimiter)?;
    let header = header(path, &mut reader)?;
    let mut record = csv::StringRecord::new();
    loop {
        match reader.read_record(&mut record) {
            Ok(false) => return Ok(()),
            Ok(true) => {}
            Err(e) => return Err(csv_error(path, &e)),
        }
        let line = record.position().map_or(1, |p| (p.line() as usize).max(1));
        if record.as_slice().len() > MAX_LINE_BYTES {
            return Err(parse_error(
                path,
                line,
                format!("record longer than {} MiB", MAX_LINE_BYTES >> 20),
            ));
        }
        if record.iter().all(|cell| cell.trim().is_empty()) {
            continue;
        }
        let object = header
            .iter()
            .zip(record.iter())
            .map(|(name, cell)| (name.clone(), Value::String(cell.to_owned())))
            .collect();
        each(line, object)?;
    }
}

/// Parquet rows read this many at a time, so memory follows the batch and not the file.
#[cfg(feature = "parquet")]
const PARQUET_BATCH_ROWS: usize = 4096;

#[cfg(feature = "parquet")]
fn parquet_fail(path: &Path) -> impl Fn(polars::error::PolarsError) -> DataError + '_ {
    move |e| DataError::Io {
        path: path.to_owned(),
        message: format!("reading Parquet: {e}"),
    }
}

#[cfg(feature = "parquet")]
fn parquet_columns(path: &Path) -> Result<Vec<String>> {
    use polars::prelude::{ParquetReader, SerReader};
    let schema = ParquetReader::new(open(path)?)
        .schema()
        .map_err(parquet_fail(path))?;
    Ok(schema.iter_names().map(|n| n.to_string()).collect())
}

#[cfg(feature = "parquet")]
fn parquet(
    path: &Path,
    each: &mut dyn FnMut(usize, Map<String, Value>) -> Result<()>,
) -> Result<()> {
    use polars::prelude::{JsonFormat, JsonWriter, ParquetReader, SerReader, SerWriter};
    let fail = parquet_fail(path);
    let rows = ParquetReader::new(open(path)?).num_rows().map_err(&fail)?;
    let mut start = 0;
    while start < rows {
        let take = PARQUET_BATCH_ROWS.min(rows - start);
        let mut frame = ParquetReader::new(open(path)?)
            .with_slice(Some((start, take)))
            .finish()
            .map_err(&fail)?;
        let mut lines = Vec::new();
        JsonWriter::new(&mut lines)
            .with_json_format(JsonFormat::JsonLines)
            .finish(&mut frame)
            .map_err(&fail)?;
        for (i, raw) in lines
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .enumerate()
        {
            let row = start + i + 1;
            let object = match serde_json::from_slice(raw) {
                Ok(Value::Object(object)) => object,
                Ok(_) => return Err(parse_error(path, row, "row is not a record")),
                Err(e) => return Err(parse_error(path, row, format!("row as JSON: {e}"))),
            };
            each(row, object)?;
        }
        start += take;
    }
    Ok(())
}

#[cfg(not(feature = "parquet"))]
fn parquet_unsupported(path: &Path) -> DataError {
    DataError::Io {
        path: path.to_owned(),
        message: "Parquet needs sage-data's `parquet` feature (the `sage` command has it); \
                  convert the file to JSON lines or CSV, or build with it"
            .into(),
    }
}

#[cfg(not(feature = "parquet"))]
fn parquet_columns(path: &Path) -> Result<Vec<String>> {
    Err(parquet_unsupported(path))
}

#[cfg(not(feature = "parquet"))]
fn parquet(
    path: &Path,
    _each: &mut dyn FnMut(usize, Map<String, Value>) -> Result<()>,
) -> Result<()> {
    Err(parquet_unsupported(path))
}
