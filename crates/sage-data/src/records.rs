//! Records of a user's file, whatever its format: JSON lines, CSV, TSV or Parquet, each record a
//! JSON object with its 1-based line (the row, for Parquet), read one at a time.
//!
//! Every format becomes the same thing — an object of cells by column name — so that one typed
//! reading ([`crate::rows`]) serves them all, and the same rows in two formats are the same rows.
//! CSV and TSV have no types: their cells arrive as strings, and the typed reading parses numbers
//! and labels from them ([`Cells::Text`]). A line or cell is bounded ([`MAX_LINE_BYTES`]) so a
//! hostile file costs an error, not the machine's memory.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::error::{parse_error, DataError, Result};
use crate::lines;
use crate::regular_file::open;

pub use crate::lines::MAX_LINE_BYTES;

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
            let mut file = csv_reader(open(path)?, delimiter);
            header(path, &mut file)
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

/// Calls `each` with every non-blank line of the file at `path` and its number, streamed and
/// capped at [`MAX_LINE_BYTES`] a line ([`lines::for_each_line`]); errors name the file and line.
pub(crate) fn for_each_line(
    path: &Path,
    each: &mut dyn FnMut(usize, &str) -> Result<()>,
) -> Result<()> {
    for_each_line_in(path, BufReader::new(open(path)?), each)
}

/// [`for_each_line`] of any reader; `path` names it in errors.
pub(crate) fn for_each_line_in(
    path: &Path,
    reader: impl BufRead,
    each: &mut dyn FnMut(usize, &str) -> Result<()>,
) -> Result<()> {
    lines::for_each_line(reader, each).map_err(|e| match e {
        lines::LineError::Read { line, message } => {
            parse_error(path, line, format!("cannot read: {message}"))
        }
        lines::LineError::Bad { line, message } => parse_error(path, line, message),
        lines::LineError::Caller(e) => e,
    })
}

fn json_lines(
    path: &Path,
    each: &mut dyn FnMut(usize, Map<String, Value>) -> Result<()>,
) -> Result<()> {
    for_each_line(path, &mut |line, text| {
        let object = lines::json_object(text).map_err(|e| parse_error(path, line, e))?;
        each(line, object)
    })
}

/// The bytes the CSV reader buffers ahead of the record it parses.
const CSV_BUFFER_BYTES: usize = 64 << 10;

/// The most fields a CSV or TSV record may have: a 64 MiB line of commas would be 64 million
/// fields, and the csv crate keeps eight bytes of bookkeeping for each (a header, a string each).
pub const MAX_FIELDS: usize = 1 << 20;

/// The bytes of a CSV file kept after they are read: enough to look back over the reader's
/// buffer at the byte that ended the last record.
const RECENT_BYTES: usize = 2 * CSV_BUFFER_BYTES;

/// Why a [`CappedFile`] stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tripped {
    /// Not stopped.
    No,
    /// A record over [`MAX_LINE_BYTES`].
    Long,
    /// A record of more than [`MAX_FIELDS`] fields.
    Wide,
}

/// A file that refuses to be read past a limit the CSV loop moves after every record, so a record
/// over [`MAX_LINE_BYTES`] is stopped while it is read rather than after it is all in memory
/// (the csv crate grows its record buffer to whatever the file holds).
///
/// It also keeps what lines and fields are counted from: the last [`RECENT_BYTES`] read (the
/// csv crate numbers a record's line from where the previous one ended, one low after `\r\n`
/// or blank lines, so sage numbers it from the bytes), and the offsets of the delimiters since
/// the record began (at most [`MAX_FIELDS`] of them, so the count costs megabytes at most).
struct CappedFile<R> {
    file: R,
    read: u64,
    delimiter: u8,
    recent: std::collections::VecDeque<u8>,
    delimiters: std::collections::VecDeque<u64>,
    record_start: std::rc::Rc<std::cell::Cell<u64>>,
    limit: std::rc::Rc<std::cell::Cell<u64>>,
    tripped: std::rc::Rc<std::cell::Cell<Tripped>>,
}

impl<R> CappedFile<R> {
    /// The byte at `offset`, if it is among the last [`RECENT_BYTES`] read.
    fn byte_at(&self, offset: u64) -> Option<u8> {
        let back = self.read.checked_sub(offset)?;
        let back = usize::try_from(back).ok()?;
        (1..=self.recent.len())
            .contains(&back)
            .then(|| self.recent[self.recent.len() - back])
    }
}

impl<R: Read> Read for CappedFile<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let allowed = self.limit.get().saturating_sub(self.read);
        if allowed == 0 {
            self.tripped.set(Tripped::Long);
            return Err(std::io::Error::other("record too long"));
        }
        let take = buf
            .len()
            .min(usize::try_from(allowed).unwrap_or(usize::MAX));
        let n = self.file.read(&mut buf[..take])?;
        let start = self.record_start.get();
        while self.delimiters.front().is_some_and(|&o| o < start) {
            self.delimiters.pop_front();
        }
        for (i, &b) in buf[..n].iter().enumerate() {
            if b == self.delimiter {
                self.delimiters.push_back(self.read + i as u64);
            }
        }
        while self.delimiters.front().is_some_and(|&o| o < start) {
            self.delimiters.pop_front();
        }
        if self.delimiters.len() >= MAX_FIELDS {
            self.tripped.set(Tripped::Wide);
            return Err(std::io::Error::other("record too wide"));
        }
        self.recent.extend(&buf[..n]);
        let over = self.recent.len().saturating_sub(RECENT_BYTES);
        self.recent.drain(..over);
        self.read += n as u64;
        Ok(n)
    }
}

/// A CSV or TSV reader over a [`CappedFile`], and the handles that move and read its cap.
struct CsvFile<R> {
    reader: csv::Reader<CappedFile<R>>,
    record_start: std::rc::Rc<std::cell::Cell<u64>>,
    limit: std::rc::Rc<std::cell::Cell<u64>>,
    tripped: std::rc::Rc<std::cell::Cell<Tripped>>,
}

impl<R: Read> CsvFile<R> {
    /// Lets the next record (starting at byte `from`) be read, and no more than the cap of it.
    fn allow_record_from(&self, from: u64) {
        self.record_start.set(from);
        self.limit
            .set(from + (MAX_LINE_BYTES + CSV_BUFFER_BYTES) as u64 + 1);
    }

    /// The line a record starts on. The csv crate numbers a record from where the previous one
    /// ended: it has not yet counted the `\n` of a `\r\n` that ended it, nor blank lines, so its
    /// own number is one low after `\r\n` (what Excel and pandas on Windows write). The record
    /// starts after the line breaks that lead it: counted from the bytes kept when they are
    /// still there (`start`); else from where the reader stands after it (`end`), less the line
    /// breaks inside it and the one that ended it.
    fn line_of(&self, start: &csv::Position, end: &csv::Position, inner_breaks: usize) -> usize {
        if let Some(line) = self.leading_line(start) {
            return line;
        }
        let ended_by_newline = end
            .byte()
            .checked_sub(1)
            .and_then(|o| self.reader.get_ref().byte_at(o))
            == Some(b'\n');
        (end.line() as usize)
            .saturating_sub(inner_breaks + usize::from(ended_by_newline))
            .max(1)
    }

    /// The line of the first byte after the line breaks at `from`, if the bytes kept reach them.
    fn leading_line(&self, from: &csv::Position) -> Option<usize> {
        let capped = self.reader.get_ref();
        let mut breaks = 0;
        let mut at = from.byte();
        loop {
            match capped.byte_at(at)? {
                b'\n' => breaks += 1,
                b'\r' => {}
                _ => return Some(from.line() as usize + breaks),
            }
            at += 1;
        }
    }

    /// The line the record starting at `from` begins on, for an error that stopped it before its
    /// end: as [`CsvFile::line_of`] counts it, as far as the bytes kept tell.
    fn line_after(&self, from: &csv::Position) -> usize {
        self.leading_line(from).unwrap_or(from.line() as usize)
    }

    /// `e` as our error: a tripped cap says so, naming the line where the record began.
    fn error(&self, path: &Path, e: &csv::Error, record_line: usize) -> DataError {
        match self.tripped.get() {
            Tripped::Long => parse_error(
                path,
                record_line,
                format!(
                    "record longer than {} MiB (from this line on)",
                    MAX_LINE_BYTES >> 20
                ),
            ),
            Tripped::Wide => parse_error(
                path,
                record_line,
                format!("a record of more than {MAX_FIELDS} fields (from this line on)"),
            ),
            Tripped::No => csv_error(path, e),
        }
    }
}

fn csv_reader<R: Read>(source: R, delimiter: u8) -> CsvFile<R> {
    let limit = std::rc::Rc::new(std::cell::Cell::new(0));
    let record_start = std::rc::Rc::new(std::cell::Cell::new(0));
    let tripped = std::rc::Rc::new(std::cell::Cell::new(Tripped::No));
    let capped = CappedFile {
        file: source,
        read: 0,
        delimiter,
        recent: std::collections::VecDeque::with_capacity(RECENT_BYTES),
        delimiters: std::collections::VecDeque::new(),
        record_start: record_start.clone(),
        limit: limit.clone(),
        tripped: tripped.clone(),
    };
    let reader = csv::ReaderBuilder::new()
        .delimiter(delimiter)
        .has_headers(true)
        // TSV as pandas and HF write it quotes like CSV; a bare quote inside a field stays text
        .quoting(true)
        // a record with another number of fields than the header is our error, with our line
        .flexible(true)
        .buffer_capacity(CSV_BUFFER_BYTES)
        .from_reader(capped);
    let file = CsvFile {
        reader,
        record_start,
        limit,
        tripped,
    };
    file.allow_record_from(0);
    file
}

/// Where a quote that opens a field of `record` (the raw bytes of a file's last record, to its
/// end) is left open at the end: the number of line breaks before it. The csv crate ends such a
/// field silently at the end of the file, so the rest of the file would become one cell. The
/// states are csv_core's for RFC 4180 quoting with doubled quotes: a quote opens a field only as
/// its first byte, and after a closing quote the field goes on unquoted.
fn open_quote(record: &[u8], delimiter: u8) -> Option<usize> {
    #[derive(Clone, Copy)]
    enum State {
        FieldStart,
        Unquoted,
        Quoted,
        QuoteInQuoted,
    }
    let ends_field = |b: u8| b == delimiter || b == b'\n' || b == b'\r';
    let mut state = State::FieldStart;
    let mut line_breaks = 0;
    let mut opened_after = 0;
    for &b in record {
        state = match state {
            State::FieldStart if b == b'"' => {
                opened_after = line_breaks;
                State::Quoted
            }
            State::FieldStart | State::Unquoted if ends_field(b) => State::FieldStart,
            State::FieldStart | State::Unquoted => State::Unquoted,
            State::Quoted if b == b'"' => State::QuoteInQuoted,
            State::Quoted => State::Quoted,
            State::QuoteInQuoted if b == b'"' => State::Quoted,
            State::QuoteInQuoted if ends_field(b) => State::FieldStart,
            State::QuoteInQuoted => State::Unquoted,
        };
        if b == b'\n' {
            line_breaks += 1;
        }
    }
    matches!(state, State::Quoted).then_some(opened_after)
}

/// An error if the last record of `path`, starting at byte `start` on line `line`, ends inside a
/// quoted field.
fn check_last_record(
    path: &Path,
    mut source: impl Read + std::io::Seek,
    delimiter: u8,
    start: u64,
    line: usize,
) -> Result<()> {
    let mut tail = Vec::new();
    source
        .seek(std::io::SeekFrom::Start(start))
        .and_then(|_| {
            source
                .take((MAX_LINE_BYTES + CSV_BUFFER_BYTES) as u64 + 1)
                .read_to_end(&mut tail)
        })
        .map_err(|e| parse_error(path, line, format!("cannot read: {e}")))?;
    match open_quote(&tail, delimiter) {
        Some(after) => Err(parse_error(
            path,
            line + after,
            "a quote opens a field here and never closes: the rest of the file would be one \
             cell (close it, or double a quote inside a quoted field as \"\")",
        )),
        None => Ok(()),
    }
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

fn header<R: Read>(path: &Path, file: &mut CsvFile<R>) -> Result<Vec<String>> {
    let read = file.reader.headers().cloned();
    let header: Vec<String> = read
        .map_err(|e| file.error(path, &e, 1))?
        .iter()
        .enumerate()
        // Excel's "CSV UTF-8" starts with a byte-order mark, which is no part of a name
        .map(|(i, h)| {
            let h = if i == 0 {
                h.trim_start_matches('\u{feff}')
            } else {
                h
            };
            h.trim().to_owned()
        })
        .collect();
    if header.iter().all(String::is_empty) {
        return Err(DataError::Empty {
            path: path.to_owned(),
        });
    }
    let mut seen = std::collections::HashSet::with_capacity(header.len());
    for (i, name) in header.iter().enumerate() {
        if name.is_empty() {
            return Err(parse_error(
                path,
                1,
                format!("header field {} has no name", i + 1),
            ));
        }
        if !seen.insert(name.as_str()) {
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
    delimited_from(path, open(path)?, delimiter, each)
}

/// [`delimited`] of any seekable source; `path` names it in errors.
fn delimited_from<R: Read + std::io::Seek>(
    path: &Path,
    source: R,
    delimiter: u8,
    each: &mut dyn FnMut(usize, Map<String, Value>) -> Result<()>,
) -> Result<()> {
    let mut file = csv_reader(source, delimiter);
    let header = header(path, &mut file)?;
    let mut record = csv::ByteRecord::new();
    // where the record being read starts: the line a cap error names, the bytes a last record's
    // open quote is looked for in (the header's, when it is the only record)
    let mut next = file.reader.position().clone();
    let mut last: Option<csv::Position> = Some(csv::Position::new());
    // a record is handed on once the next is read: the last one is checked for a quote left open
    // first, so a swallowed rest of the file never reaches the caller
    let mut pending: Option<(usize, Map<String, Value>)> = None;
    loop {
        file.allow_record_from(next.byte());
        match file.reader.read_byte_record(&mut record) {
            Ok(false) => {
                if let Some(last) = &last {
                    let source = file.reader.into_inner().file;
                    check_last_record(path, source, delimiter, last.byte(), last.line() as usize)?;
                }
                return match pending {
                    Some((line, object)) => each(line, object),
                    None => Ok(()),
                };
            }
            Ok(true) => {}
            Err(e) => return Err(file.error(path, &e, file.line_after(&next))),
        }
        last = record.position().cloned();
        let end = file.reader.position().clone();
        let inner_breaks = record.as_slice().iter().filter(|&&b| b == b'\n').count();
        let line = file.line_of(&next, &end, inner_breaks);
        next = end;
        if record.as_slice().len() > MAX_LINE_BYTES {
            return Err(parse_error(
                path,
                line,
                format!("record longer than {} MiB", MAX_LINE_BYTES >> 20),
            ));
        }
        let mut cells = Vec::with_capacity(record.len());
        for (i, cell) in record.iter().enumerate() {
            cells.push(std::str::from_utf8(cell).map_err(|_| {
                parse_error(path, line, format!("not valid UTF-8 in field {}", i + 1))
            })?);
        }
        if cells.iter().all(|cell| cell.trim().is_empty()) {
            continue;
        }
        if cells.len() != header.len() {
            return Err(parse_error(
                path,
                line,
                format!(
                    "{} fields where the header has {}",
                    cells.len(),
                    header.len()
                ),
            ));
        }
        let object = header
            .iter()
            .zip(cells)
            .map(|(name, cell)| (name.clone(), Value::String(cell.to_owned())))
            .collect();
        if let Some((line, object)) = pending.replace((line, object)) {
            each(line, object)?;
        }
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

/// Parquet reads in progress (see [`reading_parquet`]).
static PARQUET_READS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Whether polars is reading a user's Parquet file right now. A panic hook can keep quiet while
/// it is: a panic then (on any of polars' threads) is turned into an error naming the file, and
/// the default hook's backtrace would put a second, misleading message on the terminal.
pub fn reading_parquet() -> bool {
    PARQUET_READS.load(std::sync::atomic::Ordering::SeqCst) > 0
}

/// `read` run with a panic turned into an error naming `path`. The footer and page headers are
/// checked first ([`crate::parquet_check`]), so this is the second line: a page's contents can
/// still surprise the decoder, and a user's file must cost an error, never the process.
#[cfg(feature = "parquet")]
fn guarded<T>(path: &Path, read: impl FnOnce() -> Result<T>) -> Result<T> {
    struct Reading;
    impl Drop for Reading {
        fn drop(&mut self) {
            PARQUET_READS.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        }
    }
    PARQUET_READS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let _reading = Reading;
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(read)).unwrap_or_else(|panic| {
        let said = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("no message");
        Err(DataError::Io {
            path: path.to_owned(),
            message: format!("the Parquet reader failed on this file: {said}"),
        })
    })
}

#[cfg(feature = "parquet")]
fn parquet_columns(path: &Path) -> Result<Vec<String>> {
    use polars::prelude::{ParquetReader, SerReader};
    crate::parquet_check::check(path)?;
    guarded(path, || {
        let schema = ParquetReader::new(open(path)?)
            .schema()
            .map_err(parquet_fail(path))?;
        Ok(schema.iter_names().map(|n| n.to_string()).collect())
    })
}

#[cfg(feature = "parquet")]
fn parquet(
    path: &Path,
    each: &mut dyn FnMut(usize, Map<String, Value>) -> Result<()>,
) -> Result<()> {
    use polars::prelude::{JsonFormat, JsonWriter, ParquetReader, SerReader, SerWriter};
    let checked = crate::parquet_check::check(path)?;
    let fail = parquet_fail(path);
    let rows = guarded(path, || {
        ParquetReader::new(open(path)?).num_rows().map_err(&fail)
    })?;
    // a batch of about 64 MiB uncompressed at the file's mean row size, so wide rows cost what
    // narrow ones do (a row over 64 MiB is refused below)
    let row_bytes = checked.uncompressed_bytes / checked.rows.max(1);
    let batch = usize::try_from((MAX_LINE_BYTES as u64 / row_bytes.max(1)).max(1))
        .unwrap_or(usize::MAX)
        .min(PARQUET_BATCH_ROWS);
    let mut start = 0;
    while start < rows {
        let take = batch.min(rows - start);
        let lines = guarded(path, || {
            let mut frame = ParquetReader::new(open(path)?)
                .with_slice(Some((start, take)))
                .finish()
                .map_err(&fail)?;
            let mut lines = Vec::new();
            JsonWriter::new(&mut lines)
                .with_json_format(JsonFormat::JsonLines)
                .finish(&mut frame)
                .map_err(&fail)?;
            Ok(lines)
        })?;
        for (i, raw) in lines
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .enumerate()
        {
            let row = start + i + 1;
            if raw.len() > MAX_LINE_BYTES {
                return Err(parse_error(
                    path,
                    row,
                    format!("row longer than {} MiB", MAX_LINE_BYTES >> 20),
                ));
            }
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

/// Without polars the footer is still checked first: a file that could never be read says why
/// before it says what the build lacks (and the fuzz target, built without polars, reaches the
/// decoder).
#[cfg(not(feature = "parquet"))]
fn parquet_columns(path: &Path) -> Result<Vec<String>> {
    crate::parquet_check::check(path)?;
    Err(parquet_unsupported(path))
}

#[cfg(not(feature = "parquet"))]
fn parquet(
    path: &Path,
    _each: &mut dyn FnMut(usize, Map<String, Value>) -> Result<()>,
) -> Result<()> {
    crate::parquet_check::check(path)?;
    Err(parquet_unsupported(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `head`, then `fill` for ever: a file with no end, so only a cap held while reading stops
    /// a reader of it.
    struct Endless {
        head: Vec<u8>,
        fill: &'static [u8],
        at: usize,
    }

    impl Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            for b in buf.iter_mut() {
                *b = match self.head.get(self.at) {
                    Some(&h) => h,
                    None => self.fill[(self.at - self.head.len()) % self.fill.len()],
                };
                self.at += 1;
            }
            Ok(buf.len())
        }
    }

    impl std::io::Seek for Endless {
        fn seek(&mut self, _: std::io::SeekFrom) -> std::io::Result<u64> {
            Err(std::io::Error::other(
                "an endless source has no end to look at",
            ))
        }
    }

    fn endless_csv(head: &str, fill: &'static [u8]) -> String {
        let source = Endless {
            head: head.as_bytes().to_vec(),
            fill,
            at: 0,
        };
        delimited_from(Path::new("endless.csv"), source, b',', &mut |_, _| Ok(()))
            .unwrap_err()
            .to_string()
    }

    /// A 3 GiB record once took 4.2 GB before its error: the csv crate grows its buffer to the
    /// record. The cap now holds while the record is read.
    #[test]
    fn a_csv_record_over_the_cap_is_refused_while_it_is_read() {
        let e = endless_csv("text,label\nok,a\nok,b\n", b"x");
        assert!(
            e.contains("endless.csv:4") && e.contains("longer than 64 MiB"),
            "{e}"
        );
        // a quoted field spanning endless short lines is one record too
        let e = endless_csv("text,label\nok,a\nok,\"", b"line\n");
        assert!(
            e.contains("endless.csv:3") && e.contains("longer than 64 MiB"),
            "{e}"
        );
    }

    #[test]
    fn a_quote_left_open_is_found_where_it_opened() {
        let cases: [(&[u8], Option<usize>); 9] = [
            (b"a,b\n", None),
            (b"a,\"b\"\n", None),
            (b"a,\"b", Some(0)),
            (b"a,\"b\nc\nd", Some(0)),
            (b"a,b\n\"c", Some(1)),
            // a doubled quote inside a quoted field is a quote, not its end
            (b"a,\"b\"\"c\"", None),
            (b"a,\"b\"\"c", Some(0)),
            // a bare quote inside an unquoted field is text, as the csv crate reads it
            (b"a,b\"c", None),
            // after a closing quote the field goes on unquoted; a later quote is text
            (b"a,\"b\"c\"d", None),
        ];
        for (record, opened) in cases {
            assert_eq!(
                open_quote(record, b','),
                opened,
                "{}",
                String::from_utf8_lossy(record)
            );
        }
    }

    #[test]
    fn a_quote_left_open_in_the_last_field_is_an_error_and_no_row_is_handed_on() {
        let text = "text,label\nhello,a\nworld,\"b\nmore,c\nlast,d\n";
        let mut rows = Vec::new();
        let e = delimited_from(
            Path::new("open.csv"),
            std::io::Cursor::new(text.as_bytes()),
            b',',
            &mut |line, _| {
                rows.push(line);
                Ok(())
            },
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("open.csv:3") && e.contains("never closes"),
            "{e}"
        );
        // the swallowed record never reached the caller
        assert_eq!(rows, [2]);
        // closed, the same rows read
        let closed = text.replace("\"b\n", "\"b\"\n");
        let mut lines = Vec::new();
        delimited_from(
            Path::new("closed.csv"),
            std::io::Cursor::new(closed.as_bytes()),
            b',',
            &mut |line, _| {
                lines.push(line);
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(lines, [2, 3, 4, 5]);
    }

    fn lines_and_error(text: impl AsRef<[u8]>) -> (Vec<usize>, Option<String>) {
        let mut lines = Vec::new();
        let e = delimited_from(
            Path::new("t.csv"),
            std::io::Cursor::new(text.as_ref()),
            b',',
            &mut |line, _| {
                lines.push(line);
                Ok(())
            },
        )
        .err()
        .map(|e| e.to_string());
        (lines, e)
    }

    /// The csv crate numbers a record from where the previous one ended: after `\r\n` (what
    /// Excel and pandas on Windows write) and after blank lines, one line low. sage numbers
    /// records from their bytes.
    #[test]
    fn records_are_numbered_by_their_first_line_whatever_ends_the_lines() {
        let lf = "text,label\nx,a\n\ny,\"b\nc\"\nz,d\n";
        let crlf = lf.replace('\n', "\r\n");
        for text in [lf.to_owned(), crlf.clone()] {
            assert_eq!(lines_and_error(&text), (vec![2, 4, 6], None), "{text:?}");
        }
        // without a final line break too
        assert_eq!(lines_and_error("a,b\r\nx,y"), (vec![2], None));
        // a quote left open in a record's first field swallows the rest: its unequal fields are
        // named at the record's own line, not the line before
        let (_, e) = lines_and_error("text,label\r\n\"a,b\r\n");
        let e = e.unwrap();
        assert!(
            e.contains("t.csv:2: 1 fields where the header has 2"),
            "{e}"
        );
        // an error names the record's own line
        let (_, e) = lines_and_error(format!("{crlf}w\r\n"));
        let e = e.unwrap();
        assert!(
            e.contains("t.csv:7: 1 fields where the header has 2"),
            "{e}"
        );
        let (_, e) = lines_and_error(b"text,label\r\nok,a\r\n\xff,b\r\n");
        assert!(e.unwrap().contains("t.csv:3: not valid UTF-8 in field 1"));
    }

    #[test]
    fn a_byte_order_mark_is_no_part_of_the_first_column_name() {
        let text = "\u{feff}text,label\nx,a\n";
        let mut file = csv_reader(std::io::Cursor::new(text.as_bytes()), b',');
        assert_eq!(
            header(Path::new("bom.csv"), &mut file).unwrap(),
            ["text", "label"]
        );
    }

    /// A 64 MiB line of commas would be 64 million fields: bookkeeping of gigabytes before the
    /// length cap is reached.
    #[test]
    fn a_record_of_too_many_fields_is_refused_while_it_is_read() {
        let e = endless_csv("text,label\nok,a\n", b",");
        assert!(
            e.contains("endless.csv:3") && e.contains("more than 1048576 fields"),
            "{e}"
        );
    }

    #[test]
    fn a_quote_left_open_in_the_header_is_found() {
        let (_, e) = lines_and_error("text,\"label\nx,a\ny,b\n");
        let e = e.unwrap();
        assert!(e.contains("t.csv:1") && e.contains("never closes"), "{e}");
    }

    /// A header of 500,000 names once hung: each name was compared with every one before it.
    #[test]
    fn a_header_of_half_a_million_columns_is_read_once() {
        let names: Vec<String> = (0..500_000).map(|i| format!("c{i}")).collect();
        let text = format!(
            "{}\n{}\n",
            names.join(","),
            vec!["x"; names.len()].join(",")
        );
        let mut file = csv_reader(std::io::Cursor::new(text.as_bytes()), b',');
        let header = header(Path::new("wide.csv"), &mut file).unwrap();
        assert_eq!(header.len(), 500_000);
        let repeated = format!("{},c7\n", names.join(","));
        let mut file = csv_reader(std::io::Cursor::new(repeated.as_bytes()), b',');
        let e = header_error(&mut file);
        assert!(e.contains("\"c7\" appears twice"), "{e}");
    }

    fn header_error<R: Read>(file: &mut CsvFile<R>) -> String {
        header(Path::new("wide.csv"), file).unwrap_err().to_string()
    }
}
