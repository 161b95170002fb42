//! A Parquet file's footer and page headers checked before any Parquet library reads it.
//!
//! polars (like every Parquet reader we know) trusts what a file says of itself: a column chunk
//! whose offset points past the end makes it panic on a slice, a schema nested 50,000 deep
//! overflows its stack while the tree is built, and a footer that claims 10^12 rows sends the
//! reader after them. A user's file may come from anyone, so sage reads the footer first with a
//! decoder of its own that holds nothing but what it checks, never recurses deeper than
//! [`MAX_NESTING`], and refuses a file whose claims do not hold together:
//!
//! - the footer lies inside the file, and is at most [`MAX_FOOTER_BYTES`];
//! - the schema is a tree no deeper than [`MAX_SCHEMA_DEPTH`] whose leaves are the column chunks
//!   of every row group;
//! - the row groups' rows add up to the file's, and each column chunk has at least as many values
//!   as its row group has rows;
//! - every column chunk lies in the file, before the footer, and is in this file (not another
//!   one a path names);
//! - every page header in a chunk decodes, its pages run from the chunk's start through its end
//!   (a little past it is allowed: parquet-mr before 1.2.9 left the dictionary page's header out
//!   of the chunk's size), no page claims more than [`MAX_PAGE_BYTES`] uncompressed or
//!   [`MAX_PAGE_VALUES`] values (what a reader allocates for it before it looks at the data), and
//!   the data pages' values add up to the chunk's (and, for data pages v2, their rows to the row
//!   group's): a footer cannot claim rows its pages do not hold.
//!
//! The decoder keeps only what the checks read (fields 1 to 11 of each structure, the first of
//! each, and lists of structures), so its memory is bounded by the footer's size, itself at most
//! [`MAX_FOOTER_BYTES`].
//!
//! The format is Apache Parquet's `parquet.thrift`, in Thrift's compact protocol. The limits are
//! far above what Parquet writers make (pyarrow and polars write pages of about 1 MiB and 20,000
//! rows; HF datasets nests a few levels at most) and far below what would take the machine.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use crate::error::{DataError, Result};

/// The deepest the decoder goes into nested Thrift structures and lists.
pub const MAX_NESTING: usize = 64;
/// The deepest schema accepted (the root is depth 0).
pub const MAX_SCHEMA_DEPTH: usize = 64;
/// The largest footer read.
pub const MAX_FOOTER_BYTES: u64 = 16 << 20;
/// The most bytes one page may claim uncompressed.
pub const MAX_PAGE_BYTES: i64 = 256 << 20;
/// The most values one page may claim.
pub const MAX_PAGE_VALUES: i64 = 1 << 24;
/// The longest page header decoded.
const MAX_PAGE_HEADER_BYTES: u64 = 1 << 20;

/// A decoded Thrift value: only what the checks read is kept (a string or binary is its length).
#[derive(Debug)]
enum Thrift {
    Int(i64),
    Binary(u64),
    List(Vec<Thrift>),
    Struct(Vec<(i16, Thrift)>),
    Other,
}

impl Thrift {
    fn field(&self, id: i16) -> Option<&Thrift> {
        match self {
            Thrift::Struct(fields) => fields.iter().find(|(f, _)| *f == id).map(|(_, v)| v),
            _ => None,
        }
    }

    fn int(&self, id: i16) -> Option<i64> {
        match self.field(id) {
            Some(Thrift::Int(v)) => Some(*v),
            _ => None,
        }
    }

    fn list(&self, id: i16) -> &[Thrift] {
        match self.field(id) {
            Some(Thrift::List(items)) => items,
            _ => &[],
        }
    }
}

/// Thrift's compact protocol over a byte slice, bounded in depth.
struct Compact<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Compact<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Compact { bytes, at: 0 }
    }

    fn byte(&mut self) -> std::result::Result<u8, String> {
        let b = *self.bytes.get(self.at).ok_or("ends inside a value")?;
        self.at += 1;
        Ok(b)
    }

    fn varint(&mut self) -> std::result::Result<u64, String> {
        let mut value = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.byte()?;
            if shift == 63 && b > 1 {
                return Err("a varint overflows 64 bits".into());
            }
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err("a varint overflows 64 bits".into())
    }

    fn zigzag(&mut self) -> std::result::Result<i64, String> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    fn skip(&mut self, n: u64) -> std::result::Result<(), String> {
        let left = (self.bytes.len() - self.at) as u64;
        if n > left {
            return Err("a value runs past the end".into());
        }
        self.at += n as usize;
        Ok(())
    }

    /// A value of a list or map: a boolean there is a byte of its own, not part of a header.
    fn element(&mut self, kind: u8, depth: usize) -> std::result::Result<Thrift, String> {
        if kind == 1 || kind == 2 {
            Ok(Thrift::Int(i64::from(self.byte()? == 1)))
        } else {
            self.value(kind, depth)
        }
    }

    fn value(&mut self, kind: u8, depth: usize) -> std::result::Result<Thrift, String> {
        if depth > MAX_NESTING {
            return Err(format!("nested deeper than {MAX_NESTING}"));
        }
        Ok(match kind {
            1 | 2 => Thrift::Int(i64::from(kind == 1)),
            3 => Thrift::Int(i64::from(self.byte()? as i8)),
            4..=6 => Thrift::Int(self.zigzag()?),
            7 => {
                self.skip(8)?;
                Thrift::Other
            }
            8 => {
                let n = self.varint()?;
                self.skip(n)?;
                Thrift::Binary(n)
            }
            9 | 10 => {
                let header = self.byte()?;
                let mut n = u64::from(header >> 4);
                if n == 15 {
                    n = self.varint()?;
                }
                let element = header & 0x0f;
                // every element takes at least a byte, so a count past the bytes left is a lie
                // caught before anything is allocated for it
                if n > (self.bytes.len() - self.at) as u64 {
                    return Err("a list claims more items than the bytes left".into());
                }
                // only lists of structures are read (the schema, row groups, column chunks); the
                // items of any other list are decoded and dropped
                if element != 12 {
                    for _ in 0..n {
                        self.element(element, depth + 1)?;
                    }
                    return Ok(Thrift::Other);
                }
                let mut items = Vec::with_capacity((n as usize).min(1024));
                for _ in 0..n {
                    items.push(self.value(element, depth + 1)?);
                }
                Thrift::List(items)
            }
            11 => {
                let n = self.varint()?;
                if n > (self.bytes.len() - self.at) as u64 {
                    return Err("a map claims more entries than the bytes left".into());
                }
                if n > 0 {
                    let types = self.byte()?;
                    for _ in 0..n {
                        self.element(types >> 4, depth + 1)?;
                        self.element(types & 0x0f, depth + 1)?;
                    }
                }
                Thrift::Other
            }
            12 => self.structure(depth + 1)?,
            other => return Err(format!("unknown value type {other}")),
        })
    }

    fn structure(&mut self, depth: usize) -> std::result::Result<Thrift, String> {
        if depth > MAX_NESTING {
            return Err(format!("nested deeper than {MAX_NESTING}"));
        }
        let mut fields = Vec::new();
        let mut last: i16 = 0;
        loop {
            let header = self.byte()?;
            if header == 0 {
                return Ok(Thrift::Struct(fields));
            }
            let delta = header >> 4;
            let id = if delta == 0 {
                i16::try_from(self.zigzag()?).map_err(|_| "a field id out of range")?
            } else {
                last.checked_add(i16::from(delta))
                    .ok_or("a field id out of range")?
            };
            last = id;
            let value = self.value(header & 0x0f, depth)?;
            // the checks read fields 1 to 11, once each: the rest is decoded and dropped, so a
            // footer of repeated or unknown fields cannot grow the tree
            if (1..=11).contains(&id) && !fields.iter().any(|(f, _)| *f == id) {
                fields.push((id, value));
            }
        }
    }
}

/// An error naming `path` and what does not hold.
fn refuse(path: &Path, what: impl std::fmt::Display) -> DataError {
    DataError::Io {
        path: path.to_owned(),
        message: format!("not a Parquet file sage can trust: {what}"),
    }
}

/// What a checked file's footer says, for sizing the reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checked {
    /// Rows in the file.
    pub rows: u64,
    /// The column chunks' bytes uncompressed, all row groups together.
    pub uncompressed_bytes: u64,
}

/// Checks the Parquet file at `path` as the module docs say; `Ok` means its footer and page
/// headers hold together and a reader may be given it.
pub fn check(path: &Path) -> Result<Checked> {
    let mut file = crate::regular_file::open(path)?;
    let io = |e: std::io::Error| refuse(path, format!("cannot read: {e}"));
    let len = file.metadata().map_err(io)?.len();
    if len < 12 {
        return Err(refuse(path, format!("{len} bytes is too short")));
    }
    let mut head = [0u8; 4];
    file.read_exact(&mut head).map_err(io)?;
    let mut tail = [0u8; 8];
    file.seek(SeekFrom::End(-8)).map_err(io)?;
    file.read_exact(&mut tail).map_err(io)?;
    if &head != b"PAR1" || &tail[4..] != b"PAR1" {
        return Err(refuse(
            path,
            "no PAR1 magic at its start and end (an encrypted footer, PARE, is not read either)",
        ));
    }
    let footer_len = u64::from(u32::from_le_bytes(tail[..4].try_into().expect("4 bytes")));
    if footer_len > len - 12 || footer_len > MAX_FOOTER_BYTES {
        return Err(refuse(
            path,
            format!("its footer claims {footer_len} bytes of a {len}-byte file"),
        ));
    }
    let footer_start = len - 8 - footer_len;
    let mut footer = vec![0u8; footer_len as usize];
    file.seek(SeekFrom::Start(footer_start)).map_err(io)?;
    file.read_exact(&mut footer).map_err(io)?;
    let meta = Compact::new(&footer)
        .structure(0)
        .map_err(|e| refuse(path, format!("its footer does not decode: {e}")))?;
    let leaves = schema_leaves(path, &meta)?;
    let rows = meta.int(3).ok_or_else(|| refuse(path, "no row count"))?;
    if rows < 0 {
        return Err(refuse(path, format!("a row count of {rows}")));
    }
    let mut counted: i128 = 0;
    let mut uncompressed: u64 = 0;
    for (g, group) in meta.list(4).iter().enumerate() {
        let group_rows = group.int(3).unwrap_or(-1);
        if group_rows < 0 {
            return Err(refuse(path, format!("row group {g} has no row count")));
        }
        counted += i128::from(group_rows);
        let columns = group.list(1);
        if columns.len() != leaves {
            return Err(refuse(
                path,
                format!(
                    "row group {g} has {} column chunks for a schema of {leaves} columns",
                    columns.len()
                ),
            ));
        }
        for (c, chunk) in columns.iter().enumerate() {
            let at = format!("row group {g}, column {c}");
            if matches!(chunk.field(1), Some(Thrift::Binary(len)) if *len > 0) {
                return Err(refuse(
                    path,
                    format!("{at} is in another file (a file_path); only one file is read"),
                ));
            }
            let column = chunk
                .field(3)
                .ok_or_else(|| refuse(path, format!("{at} has no metadata")))?;
            let values = column.int(5).unwrap_or(-1);
            if values < group_rows {
                return Err(refuse(
                    path,
                    format!("{at} holds {values} values for {group_rows} rows"),
                ));
            }
            uncompressed = uncompressed.saturating_add(column.int(6).unwrap_or(0).max(0) as u64);
            let size = column.int(7).unwrap_or(-1);
            let data = column.int(9).unwrap_or(-1);
            // the chunk starts at its dictionary page, if any, else at its first data page; a
            // writer may say 0 for either when it has none (pyarrow's empty chunks have a
            // dictionary page at 4 and a data page at 0)
            let start = [column.int(11).unwrap_or(0), data]
                .into_iter()
                .filter(|&offset| offset > 0)
                .min()
                .unwrap_or(-1);
            let end = start.checked_add(size);
            if start < 4 || size < 0 || end.is_none_or(|end| end as u64 > footer_start) {
                return Err(refuse(
                    path,
                    format!(
                        "{at} claims bytes {start}..{} of a file whose data ends at {footer_start}",
                        end.map_or("overflow".to_owned(), |e| e.to_string())
                    ),
                ));
            }
            let chunk = Chunk {
                start: start as u64,
                end: (start + size) as u64,
                data_end: footer_start,
                values,
                rows: group_rows,
            };
            check_pages(path, &mut file, &at, &chunk)?;
        }
    }
    if counted != i128::from(rows) {
        return Err(refuse(
            path,
            format!("its footer claims {rows} rows and its row groups hold {counted}"),
        ));
    }
    Ok(Checked {
        rows: rows as u64,
        uncompressed_bytes: uncompressed,
    })
}

/// A column chunk as its footer describes it.
struct Chunk {
    /// Its first byte (its dictionary page's, or its first data page's).
    start: u64,
    /// Where its size says it ends.
    end: u64,
    /// Where the file's data ends (the footer starts): no page may run past it.
    data_end: u64,
    /// Values the footer says it holds.
    values: i64,
    /// Rows of its row group.
    rows: i64,
}

/// The schema's leaf count, after checking it is one tree no deeper than [`MAX_SCHEMA_DEPTH`].
fn schema_leaves(path: &Path, meta: &Thrift) -> Result<usize> {
    let schema = meta.list(2);
    if schema.is_empty() {
        return Err(refuse(path, "no schema"));
    }
    // children still to come at each open level; walked without recursion
    let mut open: Vec<i64> = Vec::new();
    let mut leaves = 0;
    for (i, element) in schema.iter().enumerate() {
        if i > 0 {
            match open.last_mut() {
                Some(left) => *left -= 1,
                None => {
                    return Err(refuse(
                        path,
                        format!("schema element {i} is outside the tree"),
                    ))
                }
            }
        }
        let children = element.int(5).unwrap_or(0);
        if children < 0 || children as u64 > schema.len() as u64 {
            return Err(refuse(
                path,
                format!("schema element {i} claims {children} children"),
            ));
        }
        if children > 0 || i == 0 {
            open.push(children);
            if open.len() > MAX_SCHEMA_DEPTH + 1 {
                return Err(refuse(
                    path,
                    format!("its schema nests deeper than {MAX_SCHEMA_DEPTH} levels"),
                ));
            }
        } else {
            leaves += 1;
        }
        while open.last() == Some(&0) {
            open.pop();
        }
    }
    if !open.is_empty() {
        return Err(refuse(path, "its schema names children it does not have"));
    }
    Ok(leaves)
}

/// Walks the page headers of `chunk`: each must decode and claim sizes within the limits, the
/// pages must run from its start through its end and stay in the file's data, and the data
/// pages' values (and v2 pages' rows) must add up to what the footer says.
fn check_pages(path: &Path, file: &mut std::fs::File, at: &str, chunk: &Chunk) -> Result<()> {
    let io = |e: std::io::Error| refuse(path, format!("cannot read: {e}"));
    let end = chunk.end;
    let mut offset = chunk.start;
    let mut header = Vec::new();
    // values and rows of the data pages (a dictionary page's entries are not values)
    let (mut values, mut v2_rows, mut v1_pages) = (0i64, 0i64, 0usize);
    while offset < end {
        // a header is read through a window that grows while it cuts the header short, so a
        // chunk of many pages costs a few hundred bytes a page, not a megabyte
        let mut window = 512;
        let (page, header_len) = loop {
            header.clear();
            file.seek(SeekFrom::Start(offset)).map_err(io)?;
            let limit = (chunk.data_end - offset).min(window);
            (&mut *file)
                .take(limit)
                .read_to_end(&mut header)
                .map_err(io)?;
            let mut reader = Compact::new(&header);
            match reader.structure(0) {
                Ok(page) => break (page, reader.at as u64),
                Err(_) if limit == window && window < MAX_PAGE_HEADER_BYTES => window *= 8,
                Err(e) => {
                    return Err(refuse(
                        path,
                        format!("{at}: the page header at byte {offset} does not decode: {e}"),
                    ))
                }
            }
        };
        let uncompressed = page.int(2).unwrap_or(-1);
        let compressed = page.int(3).unwrap_or(-1);
        if !(0..=MAX_PAGE_BYTES).contains(&uncompressed) || compressed < 0 {
            return Err(refuse(
                path,
                format!(
                    "{at}: the page at byte {offset} claims {uncompressed} bytes uncompressed \
                     (at most {MAX_PAGE_BYTES} are read)"
                ),
            ));
        }
        // data page v1 (5), dictionary page (7), data page v2 (8): each starts with num_values
        let page_values = [5, 7, 8]
            .iter()
            .find_map(|&f| page.field(f).and_then(|h| h.int(1)))
            .unwrap_or(0);
        if !(0..=MAX_PAGE_VALUES).contains(&page_values) {
            return Err(refuse(
                path,
                format!(
                    "{at}: the page at byte {offset} claims {page_values} values (at most \
                     {MAX_PAGE_VALUES} a page are read)"
                ),
            ));
        }
        if let Some(v1) = page.field(5) {
            values += v1.int(1).unwrap_or(0);
            v1_pages += 1;
        } else if let Some(v2) = page.field(8) {
            values += v2.int(1).unwrap_or(0);
            v2_rows += v2.int(3).unwrap_or(0).max(0);
        }
        offset += header_len + compressed as u64;
        if offset > chunk.data_end {
            return Err(refuse(
                path,
                format!(
                    "{at}: its pages run to byte {offset}, past the file's data at {}",
                    chunk.data_end
                ),
            ));
        }
    }
    if values != chunk.values {
        return Err(refuse(
            path,
            format!(
                "{at}: its pages hold {values} values and its footer claims {}",
                chunk.values
            ),
        ));
    }
    if v1_pages == 0 && values > 0 && v2_rows != chunk.rows {
        return Err(refuse(
            path,
            format!(
                "{at}: its pages hold {v2_rows} rows and its row group claims {}",
                chunk.rows
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
#[path = "parquet_check_tests.rs"]
mod tests;
