//! The converters: one per source format, each turning the bytes of its pinned inputs into the
//! bytes of one file of our layout. They are pure (bytes in, bytes out), so each is tested on a
//! few lines written in its source's format, and the rebuilt file is checked against its pinned
//! sha256 by the caller.
//!
//! Every converter reproduces what the mirror's producer did, quirks included (a score of
//! `5.000` read as a float and written `5.0`, a trailing space dropped, a Latin-1 byte read as
//! Latin-1): the published numbers were computed on those bytes.

use std::fmt;

use super::pyjson::{self, PyValue};
use crate::pins::FilePin;

/// One input of a converter: what the pin calls it (`URL` or `URL#MEMBER`) and its bytes.
pub struct Input<'a> {
    /// The pin's name for it, for messages.
    pub name: &'a str,
    /// Its content.
    pub bytes: &'a [u8],
}

/// A converter's failure, naming the input and, where there is one, its line.
#[derive(Debug, PartialEq)]
pub struct ConvertError {
    /// The input (`URL` or `URL#MEMBER`), or the output when no one input is at fault.
    pub input: String,
    /// 1-based line of the input.
    pub line: Option<usize>,
    /// What was wrong.
    pub message: String,
}

impl fmt::Display for ConvertError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.input, self.message),
            None => write!(f, "{}: {}", self.input, self.message),
        }
    }
}

type Result<T> = std::result::Result<T, ConvertError>;

fn fail(input: &Input<'_>, line: Option<usize>, message: impl Into<String>) -> ConvertError {
    ConvertError {
        input: input.name.to_owned(),
        line,
        message: message.into(),
    }
}

/// Every converter's name, for the table's test and `sage data list`.
pub const CONVERTERS: &[&str] = &[
    "copy",
    "tab-rows",
    "csv-rows",
    "labelled-lines",
    "sst-binary",
    "sst-fine",
    "trec-coarse",
    "semeval-sts",
    "semeval-sts-gold",
    "fasttext-reviews",
    "jsonl-rows",
    "numbered-files",
    "bartscore-pickle",
    "text-block",
    "lf-lines",
    "trec-docs",
    "trec-qrels",
    "labelled-files",
    "newsgroup-subjects",
];

/// Runs the pin's converter on its inputs (in the pin's `from` order).
pub fn convert(pin: &FilePin, inputs: &[Input<'_>]) -> Result<Vec<u8>> {
    let options = Options { pin };
    let whole = |message: String| ConvertError {
        input: pin.path.clone(),
        line: None,
        message,
    };
    if inputs.len() != pin.from.len() {
        return Err(whole(format!(
            "{} inputs for {} named",
            inputs.len(),
            pin.from.len()
        )));
    }
    let rows: Vec<Vec<(String, PyValue)>> = match pin.convert.as_str() {
        "copy" => {
            let [input] = inputs else {
                return Err(whole("copy takes one input".into()));
            };
            return Ok(input.bytes.to_vec());
        }
        "tab-rows" => tab_rows(inputs, &options)?,
        "csv-rows" => csv_rows(inputs, &options)?,
        "labelled-lines" => owned(labelled_lines(inputs, &options)?),
        "sst-binary" => owned(sst_binary(inputs)?),
        "sst-fine" => owned(sst_fine(inputs)?),
        "trec-coarse" => owned(trec_coarse(inputs)?),
        "semeval-sts" => owned(semeval_sts(inputs, &options)?),
        "semeval-sts-gold" => owned(semeval_sts_gold(inputs, &options)?),
        "fasttext-reviews" => owned(fasttext_reviews(inputs)?),
        "jsonl-rows" => jsonl_rows(inputs, &options)?,
        "numbered-files" => numbered_files(inputs, &options)?,
        "bartscore-pickle" => owned(bartscore_pickle(inputs, &options)?),
        "text-block" => return text_block(inputs, &options),
        "lf-lines" => return lf_lines(inputs),
        "trec-docs" => owned(trec_docs(inputs)?),
        "trec-qrels" => return trec_qrels(inputs),
        "labelled-files" => owned(labelled_files(inputs)?),
        "newsgroup-subjects" => owned(newsgroup_subjects(inputs, &options)?),
        other => return Err(whole(format!("no converter named {other:?}"))),
    };
    Ok(jsonl(rows))
}

type Row = Vec<(&'static str, PyValue)>;

fn owned(rows: Vec<Row>) -> Vec<Vec<(String, PyValue)>> {
    rows.into_iter()
        .map(|r| r.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
        .collect()
}

fn jsonl(rows: Vec<Vec<(impl AsRef<str>, PyValue)>>) -> Vec<u8> {
    let mut out = String::new();
    for row in rows {
        let fields = row
            .into_iter()
            .map(|(k, v)| (k.as_ref().to_owned(), v))
            .collect();
        pyjson::write_value(&mut out, &PyValue::Object(fields), false);
        out.push('\n');
    }
    out.into_bytes()
}

/// The pin's options, read with errors that name the file.
struct Options<'a> {
    pin: &'a FilePin,
}

impl Options<'_> {
    fn error(&self, message: String) -> ConvertError {
        ConvertError {
            input: format!("sources.toml [{}]", self.pin.path),
            line: None,
            message,
        }
    }

    fn strings(&self, key: &str) -> Result<Vec<String>> {
        let values = self
            .pin
            .options
            .get(key)
            .and_then(|v| v.as_array())
            .ok_or_else(|| self.error(format!("option {key:?}: a list of strings is needed")))?;
        values
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| self.error(format!("option {key:?}: {v:?} is not a string")))
            })
            .collect()
    }

    fn integer(&self, key: &str, default: i64) -> Result<i64> {
        match self.pin.options.get(key) {
            None => Ok(default),
            Some(v) => v
                .as_integer()
                .ok_or_else(|| self.error(format!("option {key:?}: {v:?} is not an integer"))),
        }
    }

    /// `fields = [["ours", "theirs or column index", "str|float|int"], ...]`.
    fn fields(&self) -> Result<Vec<Field>> {
        let values = self
            .pin
            .options
            .get("fields")
            .and_then(|v| v.as_array())
            .ok_or_else(|| {
                self.error("option \"fields\": a list of [ours, column, type] is needed".into())
            })?;
        values
            .iter()
            .map(|v| {
                let parts = v.as_array().filter(|p| p.len() == 3);
                let parts = parts.ok_or_else(|| {
                    self.error(format!("field {v:?}: [ours, column, type] expected"))
                })?;
                let ours = parts[0]
                    .as_str()
                    .ok_or_else(|| self.error(format!("field {v:?}: ours is a string")))?;
                let column = match &parts[1] {
                    toml::Value::Integer(i) => Column::Index(*i as usize),
                    toml::Value::String(s) => Column::Name(s.clone()),
                    other => {
                        return Err(self.error(format!(
                            "field {v:?}: column {other:?} is an index or a name"
                        )))
                    }
                };
                let kind = match parts[2].as_str() {
                    Some("str") => FieldType::Str,
                    Some("float") => FieldType::Float,
                    Some("int") => FieldType::Int,
                    Some("const") => FieldType::Const,
                    Some("mapped") => FieldType::Mapped,
                    Some("line1") => FieldType::Line(0),
                    Some("line2") => FieldType::Line(1),
                    Some("numpy-strings") => FieldType::NumpyStrings,
                    Some("senteval-letters") => FieldType::SentEvalLetters,
                    _ => {
                        return Err(self.error(format!(
                            "field {v:?}: type is str, float, int, const, mapped, line1, line2, \
                             numpy-strings or senteval-letters"
                        )))
                    }
                };
                Ok(Field {
                    ours: ours.to_owned(),
                    column,
                    kind,
                })
            })
            .collect()
    }
}

enum Column {
    Index(usize),
    Name(String),
}

#[derive(Clone, Copy)]
enum FieldType {
    Str,
    Float,
    Int,
    /// The column names the value itself.
    Const,
    /// The cell looked up in the option `label_map` (an integer, or `"drop"`: the row is left out).
    Mapped,
    /// One line of a cell of exactly two lines (STR-2022 keeps a pair in one cell).
    Line(usize),
    /// numpy's `str()` of an array of strings (a SciFact abstract), its items joined by a space.
    NumpyStrings,
    /// The text as SentEval's `scicite.py` gives it to the encoder: lower-cased (Unicode), every
    /// character but `a`–`z` and the space removed (a newline too: the words on either side
    /// join), then split on whitespace and joined by one space (its batcher's `' '.join`).
    SentEvalLetters,
}

/// [`FieldType::SentEvalLetters`].
fn senteval_letters(text: &str) -> String {
    let kept: String = text
        .to_lowercase()
        .chars()
        .filter(|c| c.is_ascii_lowercase() || *c == ' ')
        .collect();
    kept.split_whitespace().collect::<Vec<_>>().join(" ")
}

struct Field {
    ours: String,
    column: Column,
    kind: FieldType,
}

/// A source string as the field's type: a float parsed as Python's `float()` reads it (surrounding
/// whitespace allowed), an int as `int()`.
fn typed(kind: FieldType, text: &str) -> std::result::Result<PyValue, String> {
    match kind {
        FieldType::Str => Ok(PyValue::Str(text.to_owned())),
        FieldType::Float => text
            .trim()
            .parse::<f64>()
            .map(PyValue::Float)
            .map_err(|_| format!("{text:?} is not a number")),
        FieldType::Int => text
            .trim()
            .parse::<i64>()
            .map(PyValue::Int)
            .map_err(|_| format!("{text:?} is not an integer")),
        FieldType::Const | FieldType::Mapped => Ok(PyValue::Str(text.to_owned())),
        FieldType::NumpyStrings => numpy_strings(text).map(PyValue::Str),
        FieldType::SentEvalLetters => Ok(PyValue::Str(senteval_letters(text))),
        FieldType::Line(k) => {
            let lines: Vec<&str> = text.split('\n').collect();
            match lines.as_slice() {
                [_, _] => Ok(PyValue::Str(lines[k].to_owned())),
                _ => Err(format!("{} lines in a cell that holds a pair", lines.len())),
            }
        }
    }
}

/// The input as UTF-8 text, split on `\n` (the final newline ends the last line rather than
/// starting an empty one): `(1-based line, text)`.
fn text_lines<'a>(input: &'a Input<'a>) -> Result<Vec<(usize, &'a str)>> {
    let text = std::str::from_utf8(input.bytes).map_err(|e| {
        let line = input.bytes[..e.valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        fail(input, Some(line), "not UTF-8")
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let text = text.strip_suffix('\n').unwrap_or(text);
    if text.is_empty() {
        return Ok(Vec::new());
    }
    Ok(text
        .split('\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .collect())
}

/// Tab-separated lines, split on every TAB with no quoting (the STS releases' format: a `"` is
/// text); `skip` header lines; empty lines skipped; each field taken by column index.
fn tab_rows(inputs: &[Input<'_>], options: &Options<'_>) -> Result<Vec<Vec<(String, PyValue)>>> {
    let fields = options.fields()?;
    let skip = options.integer("skip", 0)? as usize;
    let drop_empty = options.integer("drop_empty", -1)?;
    let mut rows = Vec::new();
    for input in inputs {
        for (line, text) in text_lines(input)?.into_iter().skip(skip) {
            let text = text.strip_suffix('\r').unwrap_or(text);
            if text.is_empty() {
                continue;
            }
            let columns: Vec<&str> = text.split('\t').collect();
            if drop_empty >= 0
                && columns
                    .get(drop_empty as usize)
                    .is_some_and(|c| c.is_empty())
            {
                continue;
            }
            let mut row = Vec::with_capacity(fields.len());
            let mut dropped = false;
            for f in &fields {
                let i = match (&f.column, f.kind) {
                    (Column::Name(value), FieldType::Const) => {
                        row.push((f.ours.clone(), PyValue::Str(value.clone())));
                        continue;
                    }
                    (Column::Index(i), _) => *i,
                    _ => return Err(options.error("tab-rows takes column indices".into())),
                };
                let cell = columns.get(i).ok_or_else(|| {
                    fail(
                        input,
                        Some(line),
                        format!("{} columns, column {i} needed", columns.len()),
                    )
                })?;
                if let FieldType::Mapped = f.kind {
                    match options
                        .pin
                        .options
                        .get("label_map")
                        .and_then(|m| m.get(*cell))
                    {
                        Some(toml::Value::Integer(v)) => {
                            row.push((f.ours.clone(), PyValue::Int(*v)))
                        }
                        Some(toml::Value::String(d)) if d == "drop" => dropped = true,
                        _ => {
                            return Err(fail(
                                input,
                                Some(line),
                                format!("{cell:?} is not in the label map"),
                            ))
                        }
                    }
                    continue;
                }
                row.push((
                    f.ours.clone(),
                    typed(f.kind, cell).map_err(|m| fail(input, Some(line), m))?,
                ));
            }
            if !dropped {
                rows.push(row);
            }
        }
    }
    Ok(rows)
}

/// RFC 4180 CSV with a header (quoted fields may hold newlines), each field taken by header name.
fn csv_rows(inputs: &[Input<'_>], options: &Options<'_>) -> Result<Vec<Vec<(String, PyValue)>>> {
    let fields = options.fields()?;
    let delimiter = match options
        .pin
        .options
        .get("delimiter")
        .and_then(|v| v.as_str())
    {
        None => b',',
        Some(d) if d.len() == 1 => d.as_bytes()[0],
        Some(d) => return Err(options.error(format!("delimiter {d:?} is not one byte"))),
    };
    let subsets = language_subsets(inputs, options)?;
    let mut rows = Vec::new();
    for (k, input) in inputs.iter().enumerate() {
        let mut reader = csv::ReaderBuilder::new()
            .flexible(false)
            .delimiter(delimiter)
            .from_reader(input.bytes);
        let header = reader
            .headers()
            .map_err(|e| fail(input, Some(1), e.to_string()))?
            .clone();
        let mut index = Vec::new();
        for f in &fields {
            index.push(match &f.column {
                Column::Index(i) => Some(*i),
                // the record's 0-based number, as a string (an id the source does not have)
                Column::Name(name) if name == "{row}" => None,
                Column::Name(name) => {
                    Some(header.iter().position(|h| h == name).ok_or_else(|| {
                        fail(input, Some(1), format!("no column {name:?} in the header"))
                    })?)
                }
            });
        }
        for (number, record) in reader.records().enumerate() {
            let record = record.map_err(|e| {
                let line = e.position().map(|p| p.line() as usize);
                fail(input, line, e.to_string())
            })?;
            let line = record.position().map(|p| p.line() as usize);
            let mut row = Vec::with_capacity(fields.len());
            for (f, &i) in fields.iter().zip(&index) {
                let number = number.to_string();
                let cell = match i {
                    Some(i) => record.get(i).unwrap_or_default(),
                    None => &number,
                };
                row.push((
                    f.ours.clone(),
                    typed(f.kind, cell).map_err(|m| fail(input, line, m))?,
                ));
            }
            if let Some(subset) = subsets.get(k) {
                row.push(("subset".into(), subset.as_str().into()));
            }
            rows.push(row);
        }
    }
    Ok(rows)
}

/// Option `subsets`, one per input, when a dataset's language subsets come in files of their
/// own (AmazonCounterfactual's `DE_test.tsv`): each row of input k gets subset k, named as MTEB
/// names it (`de`, `en-ext`), which the loader reads its language from; empty when absent.
fn language_subsets(inputs: &[Input<'_>], options: &Options<'_>) -> Result<Vec<String>> {
    if options.pin.options.get("subsets").is_none() {
        return Ok(Vec::new());
    }
    let subsets = options.strings("subsets")?;
    if subsets.len() != inputs.len() {
        return Err(options.error(format!(
            "{} subsets for {} inputs: one per input",
            subsets.len(),
            inputs.len()
        )));
    }
    for subset in &subsets {
        if crate::languages::subset_languages(subset).is_none() {
            return Err(options.error(format!(
                "subset {subset:?} names no language this harness knows"
            )));
        }
    }
    Ok(subsets)
}

/// SentEval's one-sentence-per-line files, one file per label (`labels`, in input order): the
/// text without its trailing spaces, empty lines dropped.
fn labelled_lines(inputs: &[Input<'_>], options: &Options<'_>) -> Result<Vec<Row>> {
    let labels = options.strings("labels")?;
    if labels.len() != inputs.len() {
        return Err(options.error(format!(
            "{} labels for {} inputs",
            labels.len(),
            inputs.len()
        )));
    }
    let mut rows = Vec::new();
    for (input, label) in inputs.iter().zip(&labels) {
        for (_, text) in text_lines(input)? {
            let text = text.trim_end_matches(' ');
            if text.is_empty() {
                continue;
            }
            rows.push(vec![
                ("text", text.into()),
                ("label", label.as_str().into()),
            ]);
        }
    }
    Ok(rows)
}

/// SentEval's SST-2 lines: `TEXT <space><TAB>LABEL`.
fn sst_binary(inputs: &[Input<'_>]) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for input in inputs {
        for (line, text) in text_lines(input)? {
            let (sentence, label) = text
                .split_once('\t')
                .ok_or_else(|| fail(input, Some(line), "no TAB before the label"))?;
            let sentence = sentence.strip_suffix(' ').unwrap_or(sentence);
            rows.push(vec![("text", sentence.into()), ("label", label.into())]);
        }
    }
    Ok(rows)
}

/// SentEval's SST-5 lines: `LABEL TEXT`.
fn sst_fine(inputs: &[Input<'_>]) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for input in inputs {
        for (line, text) in text_lines(input)? {
            let (label, sentence) = text
                .split_once(' ')
                .ok_or_else(|| fail(input, Some(line), "no space after the label"))?;
            rows.push(vec![("text", sentence.into()), ("label", label.into())]);
        }
    }
    Ok(rows)
}

/// TREC question classification (`COARSE:fine question ...`), read as Latin-1 as the release is
/// (one byte of the training file is not UTF-8); the coarse class is the label.
fn trec_coarse(inputs: &[Input<'_>]) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for input in inputs {
        let text: String = input.bytes.iter().map(|&b| b as char).collect();
        let text = text.strip_suffix('\n').unwrap_or(&text);
        for (i, line) in text.split('\n').enumerate() {
            let (class, _) = line
                .split_once(':')
                .ok_or_else(|| fail(input, Some(i + 1), "no `:` after the class"))?;
            let (_, question) = line
                .split_once(' ')
                .ok_or_else(|| fail(input, Some(i + 1), "no question after the class"))?;
            rows.push(vec![
                ("text", question.trim_end_matches(' ').into()),
                ("label", class.into()),
            ]);
        }
    }
    Ok(rows)
}

/// numpy's `str()` of a 1-D array of strings: `[` items `]`, each a Python string literal in `'`
/// or `"`, separated by spaces or newlines. Each item is taken as the mirror took it: its raw
/// characters with `\'` read as `'` and no other escape decoded (a `\n` stays two characters).
fn numpy_strings(cell: &str) -> std::result::Result<String, String> {
    let inner = cell
        .strip_prefix('[')
        .and_then(|c| c.strip_suffix(']'))
        .ok_or("not an array of strings: no [ ... ]")?;
    let mut items = Vec::new();
    let mut chars = inner.chars().peekable();
    loop {
        while chars.next_if(|c| *c == ' ' || *c == '\n').is_some() {}
        let Some(quote) = chars.next() else { break };
        if quote != '\'' && quote != '"' {
            return Err(format!("an array item starts with {quote:?}, not a quote"));
        }
        let mut raw = String::new();
        loop {
            match chars.next() {
                None => return Err("an array item is not closed".into()),
                Some('\\') => {
                    raw.push('\\');
                    raw.push(chars.next().ok_or("an array item ends in a backslash")?);
                }
                Some(c) if c == quote => break,
                Some(c) => raw.push(c),
            }
        }
        items.push(raw.replace("\\'", "'"));
    }
    Ok(items.join(" "))
}

/// One file of texts per label (the label its file name without `.txt`, as TWEAC keeps Reddit and
/// Stack Exchange titles): a row per line, verbatim, in the inputs' order.
fn labelled_files(inputs: &[Input<'_>]) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for input in inputs {
        let name = input.name.rsplit('/').next().unwrap_or(input.name);
        let label = name.strip_suffix(".txt").unwrap_or(name);
        for (_, text) in text_lines(input)? {
            rows.push(vec![("text", text.into()), ("label", label.into())]);
        }
    }
    Ok(rows)
}

/// 20 Newsgroups messages in a repository tarball (GitHub's: one top folder), those under the
/// folder `under` as `GROUP/ID`: each message's first `Subject:` line (read as Latin-1, the
/// messages' own encoding), trimmed, labelled with its group; groups and messages in bytewise
/// name order, as git lists them.
fn newsgroup_subjects(inputs: &[Input<'_>], options: &Options<'_>) -> Result<Vec<Row>> {
    let [input] = inputs else {
        return Err(options.error("newsgroup-subjects takes one tarball".into()));
    };
    let under = options.strings("under")?.concat();
    let limit = options.integer("max_unpacked", 1 << 30)? as u64;
    let tar = super::archive::gunzip(input.bytes, limit).map_err(|e| fail(input, None, e))?;
    let members = super::archive::tar_members(&tar).map_err(|e| fail(input, None, e))?;
    let mut messages: Vec<(&str, &str, &[u8])> = Vec::new();
    for m in &members {
        let Some((_, inside)) = m.path.split_once('/') else {
            continue;
        };
        let Some(rest) = inside.strip_prefix(under.as_str()) else {
            continue;
        };
        if let Some((group, id)) = rest.split_once('/') {
            if !id.contains('/') && !id.is_empty() {
                messages.push((group, id, m.data));
            }
        }
    }
    if messages.is_empty() {
        return Err(fail(input, None, format!("no messages under {under:?}")));
    }
    messages
        .sort_by(|a, b| (a.0.as_bytes(), a.1.as_bytes()).cmp(&(b.0.as_bytes(), b.1.as_bytes())));
    let mut rows = Vec::with_capacity(messages.len());
    for (group, id, data) in messages {
        let text: String = data.iter().map(|&b| b as char).collect();
        let subject = text
            .split('\n')
            .find_map(|line| line.strip_prefix("Subject:"))
            .ok_or_else(|| ConvertError {
                input: format!("{}#{group}/{id}", input.name),
                line: None,
                message: "no Subject: line".into(),
            })?;
        rows.push(vec![
            ("text", subject.trim().into()),
            ("label", group.into()),
        ]);
    }
    Ok(rows)
}

/// The input with CRLF line ends made LF (BEIR qrels written on Windows).
fn lf_lines(inputs: &[Input<'_>]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    for input in inputs {
        let mut bytes = input.bytes.iter().peekable();
        while let Some(&b) = bytes.next() {
            if b == b'\r' && bytes.peek() == Some(&&b'\n') {
                continue;
            }
            out.push(b);
        }
    }
    Ok(out)
}

/// TREC-style document files (`DOCID<TAB>TEXT` per line), several merged: a document already read
/// from an earlier file is not repeated. No titles.
fn trec_docs(inputs: &[Input<'_>]) -> Result<Vec<Row>> {
    let mut seen = std::collections::HashSet::new();
    let mut rows = Vec::new();
    for input in inputs {
        for (line, text) in text_lines(input)? {
            let (id, body) = text
                .split_once('\t')
                .ok_or_else(|| fail(input, Some(line), "no TAB after the document id"))?;
            if seen.insert(id.to_owned()) {
                rows.push(vec![
                    ("_id", id.into()),
                    ("title", "".into()),
                    ("text", body.into()),
                ]);
            }
        }
    }
    Ok(rows)
}

/// TREC qrels (`QID 0 DOCID LEVEL`, tab-separated) as BEIR's qrels TSV, header included.
fn trec_qrels(inputs: &[Input<'_>]) -> Result<Vec<u8>> {
    let mut out = String::from("query-id\tcorpus-id\tscore\n");
    for input in inputs {
        for (line, text) in text_lines(input)? {
            let c: Vec<&str> = text.split('\t').collect();
            let [query, _, doc, level] = c.as_slice() else {
                return Err(fail(
                    input,
                    Some(line),
                    format!("{} columns, 4 expected", c.len()),
                ));
            };
            out.push_str(&format!("{query}\t{doc}\t{level}\n"));
        }
    }
    Ok(out.into_bytes())
}

/// SemEval STS test files (`SCORE<TAB>S1<TAB>S2`, unscored pairs dropped), each input the subset
/// named at its place in `subsets`. The subset named `stsb_subset` (2012's MSRvid, which no
/// public copy of the SemEval files has) is taken from the STS Benchmark release files among the
/// inputs: its `main-captions` / `2012test` rows, in the order of their SemEval ids.
fn semeval_sts(inputs: &[Input<'_>], options: &Options<'_>) -> Result<Vec<Row>> {
    let subsets = options.strings("subsets")?;
    if subsets.len() != inputs.len() {
        return Err(options.error(format!(
            "{} subsets for {} inputs",
            subsets.len(),
            inputs.len()
        )));
    }
    let from_stsb = options
        .pin
        .options
        .get("stsb_subset")
        .and_then(|v| v.as_str());
    let row = |s1: &str, s2: &str, score: f64, subset: &str| -> Row {
        vec![
            ("sentence1", s1.into()),
            ("sentence2", s2.into()),
            ("score", PyValue::Float(score)),
            ("subset", subset.into()),
        ]
    };
    let mut rows = Vec::new();
    let mut k = 0;
    while k < inputs.len() {
        let subset = subsets[k].as_str();
        if Some(subset) == from_stsb {
            let mut found: Vec<(u64, Row)> = Vec::new();
            while k < inputs.len() && subsets[k] == subset {
                let input = &inputs[k];
                for (line, text) in text_lines(input)? {
                    let c: Vec<&str> = text.split('\t').collect();
                    if c.len() < 7
                        || c[0] != "main-captions"
                        || c[1] != subset
                        || c[2] != "2012test"
                    {
                        continue;
                    }
                    let bad = |m: String| fail(input, Some(line), m);
                    let id = c[3]
                        .parse()
                        .map_err(|_| bad(format!("id {:?} is not a number", c[3])))?;
                    let score = c[4]
                        .trim()
                        .parse()
                        .map_err(|_| bad(format!("{:?} is not a number", c[4])))?;
                    found.push((id, row(c[5], c[6], score, subset)));
                }
                k += 1;
            }
            found.sort_by_key(|(id, _)| *id);
            rows.extend(found.into_iter().map(|(_, r)| r));
            continue;
        }
        let input = &inputs[k];
        for (line, text) in text_lines(input)? {
            let c: Vec<&str> = text.split('\t').collect();
            let [score, s1, s2] = c.as_slice() else {
                return Err(fail(
                    input,
                    Some(line),
                    format!("{} columns, 3 expected", c.len()),
                ));
            };
            if score.is_empty() {
                continue;
            }
            let score = score
                .trim()
                .parse()
                .map_err(|_| fail(input, Some(line), format!("{score:?} is not a number")))?;
            rows.push(row(s1, s2, score, subset));
        }
        k += 1;
    }
    Ok(rows)
}

/// The SemEval releases from 2017 on, where each track is two files: the pairs
/// (`STS.input.*`: `sentence1 TAB sentence2`) and their gold scores (`STS.gs.*`, one per line,
/// in the same order). Inputs alternate pairs, gold; option `subsets` names each track's
/// subset. A track whose pairs file is longer than its gold file is an error, unless the
/// subset is listed in `gold_covers_first`: STS 2017's Turkish–English file holds 500 pairs
/// and its gold the first 250 only (the 250 that were scored, and the 250 MTEB's `en-tr` has).
fn semeval_sts_gold(inputs: &[Input<'_>], options: &Options<'_>) -> Result<Vec<Row>> {
    let subsets = options.strings("subsets")?;
    if inputs.len() != 2 * subsets.len() {
        return Err(options.error(format!(
            "{} inputs for {} subsets: each subset takes its pairs file, then its gold file",
            inputs.len(),
            subsets.len()
        )));
    }
    let shorter_gold = match options.pin.options.get("gold_covers_first") {
        None => Vec::new(),
        Some(_) => options.strings("gold_covers_first")?,
    };
    let mut rows = Vec::new();
    for (k, subset) in subsets.iter().enumerate() {
        let (pairs_input, gold_input) = (&inputs[2 * k], &inputs[2 * k + 1]);
        let pairs = text_lines(pairs_input)?;
        let gold = text_lines(gold_input)?;
        let covers_first = shorter_gold.contains(subset);
        if pairs.len() != gold.len() && !(covers_first && gold.len() < pairs.len()) {
            return Err(fail(
                pairs_input,
                None,
                format!(
                    "{} pairs but {} gold scores in {}",
                    pairs.len(),
                    gold.len(),
                    gold_input.name
                ),
            ));
        }
        for ((line, pair), (gold_line, score)) in pairs.iter().zip(&gold) {
            let c: Vec<&str> = pair.split('\t').collect();
            let [s1, s2] = c.as_slice() else {
                return Err(fail(
                    pairs_input,
                    Some(*line),
                    format!("{} columns, 2 expected", c.len()),
                ));
            };
            let score: f64 = score.trim().parse().map_err(|_| {
                fail(
                    gold_input,
                    Some(*gold_line),
                    format!("{score:?} is not a number"),
                )
            })?;
            rows.push(vec![
                ("sentence1", (*s1).into()),
                ("sentence2", (*s2).into()),
                ("score", PyValue::Float(score)),
                ("subset", subset.as_str().into()),
            ]);
        }
    }
    Ok(rows)
}

/// fastText-labelled reviews (`__label__N TITLE: CONTENT`, Amazon polarity's form): label 1 is
/// negative (0), 2 positive (1); the text is title and content on two lines.
fn fasttext_reviews(inputs: &[Input<'_>]) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for input in inputs {
        for (line, text) in text_lines(input)? {
            let bad = |m: &str| fail(input, Some(line), m);
            let (tag, review) = text
                .split_once(' ')
                .ok_or_else(|| bad("no space after the label"))?;
            let label = match tag {
                "__label__1" => 0,
                "__label__2" => 1,
                _ => return Err(bad("the label is neither __label__1 nor __label__2")),
            };
            let (title, content) = review
                .split_once(": ")
                .ok_or_else(|| bad("no `: ` after the title"))?;
            rows.push(vec![
                ("id", (rows.len()).to_string().into()),
                ("text", format!("{title}\n{content}").into()),
                ("title", title.into()),
                ("label", PyValue::Int(label)),
            ]);
        }
    }
    Ok(rows)
}

/// JSON lines (a `\r` before each `\n` allowed), each field taken by key.
fn jsonl_rows(inputs: &[Input<'_>], options: &Options<'_>) -> Result<Vec<Vec<(String, PyValue)>>> {
    let fields = options.fields()?;
    let mut rows = Vec::new();
    for input in inputs {
        for (line, text) in text_lines(input)? {
            let text = text.strip_suffix('\r').unwrap_or(text);
            if text.is_empty() {
                continue;
            }
            let object: serde_json::Value = serde_json::from_str(text)
                .map_err(|e| fail(input, Some(line), format!("not JSON: {e}")))?;
            let mut row = Vec::with_capacity(fields.len());
            for f in &fields {
                let Column::Name(key) = &f.column else {
                    return Err(options.error("jsonl-rows takes keys".into()));
                };
                let value = object
                    .get(key)
                    .ok_or_else(|| fail(input, Some(line), format!("no key {key:?}")))?;
                let value = match (value, f.kind) {
                    (serde_json::Value::String(s), FieldType::Str) => PyValue::Str(s.clone()),
                    (serde_json::Value::String(s), FieldType::SentEvalLetters) => {
                        PyValue::Str(senteval_letters(s))
                    }
                    (serde_json::Value::Number(n), FieldType::Str) => PyValue::Str(n.to_string()),
                    (serde_json::Value::Number(n), FieldType::Float) => {
                        PyValue::Float(n.as_f64().unwrap_or(f64::NAN))
                    }
                    (serde_json::Value::Number(n), FieldType::Int) => {
                        PyValue::Int(n.as_i64().ok_or_else(|| {
                            fail(input, Some(line), format!("{key:?} is not an integer"))
                        })?)
                    }
                    (other, _) => {
                        return Err(fail(
                            input,
                            Some(line),
                            format!("{key:?} is {other}, not of its type"),
                        ))
                    }
                };
                row.push((f.ours.clone(), value));
            }
            rows.push(row);
        }
    }
    Ok(rows)
}

/// One row per group of whole files (SumPubMed's `text_i.txt` and `abstract_i.txt`): the inputs
/// in consecutive groups, one per key of `keys`; the id counts groups from `first_id`.
fn numbered_files(
    inputs: &[Input<'_>],
    options: &Options<'_>,
) -> Result<Vec<Vec<(String, PyValue)>>> {
    let keys = options.strings("keys")?;
    let first = options.integer("first_id", 1)?;
    if keys.is_empty() || !inputs.len().is_multiple_of(keys.len()) {
        return Err(options.error(format!(
            "{} inputs are not groups of {} files",
            inputs.len(),
            keys.len()
        )));
    }
    inputs
        .chunks(keys.len())
        .enumerate()
        .map(|(i, group)| {
            let mut row = vec![(
                "id".to_owned(),
                PyValue::Str((first + i as i64).to_string()),
            )];
            for (key, input) in keys.iter().zip(group) {
                let text =
                    std::str::from_utf8(input.bytes).map_err(|_| fail(input, None, "not UTF-8"))?;
                row.push((key.clone(), PyValue::Str(text.to_owned())));
            }
            Ok(row)
        })
        .collect()
}

/// BARTScore's SummEval and REALSumm pickles (read as plain data: [`super::pickle`]): `layout`
/// `ratings` (one row per document and system, the `dimensions` as floats) or `docs` (one per
/// document; `references` too where the pickle has them).
fn bartscore_pickle(inputs: &[Input<'_>], options: &Options<'_>) -> Result<Vec<Row>> {
    use super::pickle::{self, Pickled};
    let [input] = inputs else {
        return Err(options.error("bartscore-pickle takes one input".into()));
    };
    let layout = options.strings("layout")?;
    let dimensions = options.strings("dimensions").unwrap_or_default();
    let with_references = options
        .pin
        .options
        .get("references")
        .and_then(|v| v.as_bool())
        == Some(true);
    let data = pickle::read(input.bytes).map_err(|e| fail(input, None, e))?;
    let Pickled::Dict(docs) = &data else {
        return Err(fail(input, None, "the pickle is not a dict of documents"));
    };
    let text = |v: Option<&Pickled>, what: &str, doc: &str| -> Result<PyValue> {
        match v {
            Some(Pickled::Str(s)) => Ok(PyValue::Str(s.clone())),
            _ => Err(fail(
                input,
                None,
                format!("document {doc}: {what} is not a string"),
            )),
        }
    };
    let mut rows = Vec::new();
    for (id, doc) in docs {
        let id = match id {
            Pickled::Str(s) => s.clone(),
            Pickled::Int(i) => i.to_string(),
            other => return Err(fail(input, None, format!("a document id {other:?}"))),
        };
        if layout.iter().any(|l| l == "ratings") {
            let Some(Pickled::Dict(systems)) = doc.get("sys_summs") else {
                return Err(fail(
                    input,
                    None,
                    format!("document {id}: no sys_summs dict"),
                ));
            };
            for (system, summary) in systems {
                let Pickled::Str(system) = system else {
                    return Err(fail(
                        input,
                        None,
                        format!("document {id}: a system name is not a string"),
                    ));
                };
                let mut row: Row = vec![
                    ("doc_id", id.clone().into()),
                    ("source", text(doc.get("src"), "src", &id)?),
                    ("summary", text(summary.get("sys_summ"), "sys_summ", &id)?),
                    ("system", system.clone().into()),
                ];
                for dimension in &dimensions {
                    let score = match summary.get("scores").and_then(|s| s.get(dimension)) {
                        Some(Pickled::Float(f)) => *f,
                        Some(Pickled::Int(i)) => *i as f64,
                        _ => {
                            return Err(fail(
                                input,
                                None,
                                format!("document {id}, {system}: no score {dimension}"),
                            ))
                        }
                    };
                    // dimension names are few and fixed; leak-free static keys via the list below
                    row.push((
                        static_key(dimension).ok_or_else(|| {
                            options.error(format!("dimension {dimension:?} is not known"))
                        })?,
                        PyValue::Float(score),
                    ));
                }
                rows.push(row);
            }
        }
        if layout.iter().any(|l| l == "docs") {
            let mut row: Row = vec![
                ("doc_id", id.clone().into()),
                ("source", text(doc.get("src"), "src", &id)?),
                ("reference", text(doc.get("ref_summ"), "ref_summ", &id)?),
            ];
            if with_references {
                let Some(Pickled::List(refs)) = doc.get("ref_summs") else {
                    return Err(fail(
                        input,
                        None,
                        format!("document {id}: no ref_summs list"),
                    ));
                };
                let refs = refs
                    .iter()
                    .map(|r| text(Some(r), "a reference", &id))
                    .collect::<Result<Vec<_>>>()?;
                row.push(("references", PyValue::List(refs)));
            }
            rows.push(row);
        }
    }
    Ok(rows)
}

/// The rating dimensions the human-preference files carry.
fn static_key(name: &str) -> Option<&'static str> {
    [
        "coherence",
        "consistency",
        "fluency",
        "relevance",
        "litepyramid_recall",
    ]
    .into_iter()
    .find(|k| *k == name)
}

/// The lines after the line `after`, up to the line `until` (neither included), verbatim: a
/// file quoted whole inside another (WordNet's `lexnames` in a Lisp comment).
fn text_block(inputs: &[Input<'_>], options: &Options<'_>) -> Result<Vec<u8>> {
    let [input] = inputs else {
        return Err(options.error("text-block takes one input".into()));
    };
    let after = options.strings("after")?.concat();
    let until = options.strings("until")?.concat();
    let lines = text_lines(input)?;
    let start = lines
        .iter()
        .position(|(_, l)| *l == after)
        .ok_or_else(|| fail(input, None, format!("no line {after:?}")))?;
    let mut out = String::new();
    for (_, line) in &lines[start + 1..] {
        if *line == until {
            return Ok(out.into_bytes());
        }
        out.push_str(line);
        out.push('\n');
    }
    Err(fail(
        input,
        Some(lines[start].0),
        format!("no line {until:?} after this one"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SentEval's scicite.py: `"".join(c for c in text.lower() if c in 'a..z ')`, then its
    /// tokens joined by one space; values from running those two lines of Python.
    #[test]
    fn senteval_letters_is_scicites_cleaning() {
        assert_eq!(
            senteval_letters("In the study by Hickey et al. (2012), spikes at\nrobinson et al.:"),
            "in the study by hickey et al spikes atrobinson et al"
        );
        // Python's str.lower() of İ is i + U+0307: the i survives
        assert_eq!(senteval_letters("İSTANBUL  3x"), "istanbul x");
        assert_eq!(senteval_letters("–20°C"), "c");
    }

    fn pin(convert: &str, inputs: usize, options: &str) -> FilePin {
        FilePin {
            path: "out.jsonl".into(),
            bytes: 0,
            sha256: String::new(),
            convert: convert.into(),
            from: (0..inputs)
                .map(|i| format!("https://example.org/{i}"))
                .collect(),
            options: toml::from_str(options).unwrap(),
        }
    }

    fn run(convert: &str, options: &str, inputs: &[&[u8]]) -> std::result::Result<String, String> {
        let names: Vec<String> = (0..inputs.len()).map(|i| format!("in{i}")).collect();
        let inputs: Vec<Input<'_>> = inputs
            .iter()
            .zip(&names)
            .map(|(bytes, name)| Input { name, bytes })
            .collect();
        super::convert(&pin(convert, inputs.len(), options), &inputs)
            .map(|b| String::from_utf8(b).unwrap())
            .map_err(|e| e.to_string())
    }

    // Lines in the STS Benchmark release's format (sts-test.csv): 7 or 9 TAB-separated columns,
    // quotes as text, scores written 5.000 / 4 / 0.666667.
    #[test]
    fn stsb_tab_lines() {
        let source = b"main-captions\tMSRvid\t2012test\t0001\t5.000\tA girl is styling her hair.\tA girl is \"brushing\" her hair.\n\
main-news\theadlines\t2015\t0002\t0.666667\t A\tB \textra\tcols\n";
        let options =
            r#"fields = [["sentence1", 5, "str"], ["sentence2", 6, "str"], ["score", 4, "float"]]"#;
        assert_eq!(
            run("tab-rows", options, &[source]).unwrap(),
            "{\"sentence1\": \"A girl is styling her hair.\", \"sentence2\": \"A girl is \\\"brushing\\\" her hair.\", \"score\": 5.0}\n\
{\"sentence1\": \" A\", \"sentence2\": \"B \", \"score\": 0.666667}\n"
        );
        let short = run("tab-rows", options, &[b"a\tb\n"]).unwrap_err();
        assert_eq!(short, "in0:1: 2 columns, column 5 needed");
        let bad = run("tab-rows", options, &[b"g\tf\ty\ti\tfive\ta\tb\n"]).unwrap_err();
        assert_eq!(bad, "in0:1: \"five\" is not a number");
    }

    // banking77's CSV: a header, CRLF records, quoted fields with bare LF newlines and "".
    #[test]
    fn csv_with_quoted_newlines() {
        let source = b"text,category\r\n\"\nI can't use my \"\"card\"\"\n\",card_not_working\r\nplain,top_up\r\n";
        let options = r#"fields = [["text", "text", "str"], ["label", "category", "str"]]"#;
        assert_eq!(
            run("csv-rows", options, &[source]).unwrap(),
            "{\"text\": \"\\nI can't use my \\\"card\\\"\\n\", \"label\": \"card_not_working\"}\n\
{\"text\": \"plain\", \"label\": \"top_up\"}\n"
        );
        let missing = run(
            "csv-rows",
            r#"fields = [["text", "body", "str"]]"#,
            &[source],
        )
        .unwrap_err();
        assert_eq!(missing, "in0:1: no column \"body\" in the header");
    }

    // SentEval's rt-polarity.pos/.neg: a trailing space on every line, empty lines dropped.
    #[test]
    fn senteval_label_files() {
        let pos = b"the rock is destined . \n\nsimply brilliant . \n";
        let neg = "na\u{ef}ve and dull . \n".as_bytes();
        assert_eq!(
            run("labelled-lines", r#"labels = ["1", "0"]"#, &[pos, neg]).unwrap(),
            "{\"text\": \"the rock is destined .\", \"label\": \"1\"}\n\
{\"text\": \"simply brilliant .\", \"label\": \"1\"}\n\
{\"text\": \"na\u{ef}ve and dull .\", \"label\": \"0\"}\n"
        );
        let latin1 = run("labelled-lines", r#"labels = ["1"]"#, &[b"ok\nna\xefve\n"]).unwrap_err();
        assert_eq!(latin1, "in0:2: not UTF-8");
    }

    // SentEval's SST files: binary `text \tlabel`, fine `label text`.
    #[test]
    fn sst_lines() {
        assert_eq!(
            run("sst-binary", "", &[b"a cr\\/eme film . \t1\n"]).unwrap(),
            "{\"text\": \"a cr\\\\/eme film .\", \"label\": \"1\"}\n"
        );
        assert_eq!(
            run("sst-fine", "", &[b"4 a gorgeous film .\n"]).unwrap(),
            "{\"text\": \"a gorgeous film .\", \"label\": \"4\"}\n"
        );
        assert_eq!(
            run("sst-binary", "", &[b"no tab\n"]).unwrap_err(),
            "in0:1: no TAB before the label"
        );
    }

    // TREC's train_5500.label: COARSE:fine, Latin-1, trailing spaces, inner double spaces kept.
    #[test]
    fn trec_latin1_lines() {
        assert_eq!(
            run(
                "trec-coarse",
                "",
                &[b"DESC:manner How did serfdom  develop ? \nHUM:ind Who is \xf0 ?\n"]
            )
            .unwrap(),
            "{\"text\": \"How did serfdom  develop ?\", \"label\": \"DESC\"}\n\
{\"text\": \"Who is \u{f0} ?\", \"label\": \"HUM\"}\n"
        );
    }

    // SciFact's corpus_train.csv: the abstract is numpy's str() of a list of sentences.
    #[test]
    fn numpy_string_arrays() {
        assert_eq!(
            numpy_strings(
                "['Alterations of the white matter.'\n \"It's \\\\n kept.\" 'a \\'b\\'']"
            )
            .unwrap(),
            "Alterations of the white matter. It's \\\\n kept. a 'b'"
        );
        assert!(numpy_strings("no brackets").is_err());
        assert!(numpy_strings("['open").is_err());
    }

    // NFCorpus's .docs and .2-1-0.qrel files; BEIR qrels with CRLF.
    #[test]
    fn trec_files() {
        assert_eq!(
            run(
                "trec-docs",
                "",
                &[
                    b"MED-1\tfirst text \nMED-2\tsecond",
                    b"MED-2\tsecond\nMED-3\tthird"
                ]
            )
            .unwrap(),
            "{\"_id\": \"MED-1\", \"title\": \"\", \"text\": \"first text \"}\n\
{\"_id\": \"MED-2\", \"title\": \"\", \"text\": \"second\"}\n\
{\"_id\": \"MED-3\", \"title\": \"\", \"text\": \"third\"}\n"
        );
        assert_eq!(
            run("trec-qrels", "", &[b"PLAIN-1\t0\tMED-2\t2\n"]).unwrap(),
            "query-id\tcorpus-id\tscore\nPLAIN-1\tMED-2\t2\n"
        );
        assert_eq!(
            run("lf-lines", "", &[b"q\tc\r\n1\t2\t1\r\n"]).unwrap(),
            "q\tc\n1\t2\t1\n"
        );
    }

    // TWEAC's data/reddit/test/<subreddit>.txt: one title per line, the label the file name.
    #[test]
    fn label_per_file() {
        let inputs = [
            Input {
                name: "https://example.org/data/reddit/test/AFL.txt",
                bytes: b"Grand final \x10 day\n",
            },
            Input {
                name: "https://example.org/data/reddit/test/academia.stackexchange.com.txt",
                bytes: b" spaced \n",
            },
        ];
        let rows = labelled_files(&inputs).unwrap();
        assert_eq!(
            String::from_utf8(jsonl(owned(rows))).unwrap(),
            "{\"text\": \"Grand final \\u0010 day\", \"label\": \"AFL\"}\n\
{\"text\": \" spaced \", \"label\": \"academia.stackexchange.com\"}\n"
        );
    }

    // A GitHub tarball of 20news-bydate: one top folder, messages as GROUP/ID, Latin-1 headers.
    #[test]
    fn newsgroup_subject_lines() {
        use super::super::archive::tests::{gzip_of, tar_of};
        let tgz = gzip_of(&tar_of(&[
            (
                "repo-abc/20news/sci.med/9999",
                b"From: a\nSubject:  Re: caf\xe9 \t\n\nSubject: quoted\n",
            ),
            ("repo-abc/20news/alt.atheism/10000", b"Subject: God\n"),
            ("repo-abc/20news/alt.atheism/9", b"Subject: first\n"),
            ("repo-abc/readme.txt", b"not a message"),
        ]));
        let options = "under = [\"20news/\"]";
        assert_eq!(
            run("newsgroup-subjects", options, &[&tgz]).unwrap(),
            "{\"text\": \"God\", \"label\": \"alt.atheism\"}\n\
{\"text\": \"first\", \"label\": \"alt.atheism\"}\n\
{\"text\": \"Re: caf\u{e9}\", \"label\": \"sci.med\"}\n"
        );
        let bad = gzip_of(&tar_of(&[("repo-abc/20news/sci.med/1", b"From: a\n")]));
        assert_eq!(
            run("newsgroup-subjects", options, &[&bad]).unwrap_err(),
            "in0#sci.med/1: no Subject: line"
        );
    }

    // STS 2017's layout (Sts2017.eval.v1.1.zip, Sts2017.gs.zip): pairs and gold in two files;
    // the gold written 2.400000, track 4b's as 5; the Turkish–English pairs file twice as long as
    // its gold.
    #[test]
    fn semeval_gold_files_pair_by_line() {
        let options = r#"subsets = ["en-en", "en-tr"]
gold_covers_first = ["en-tr"]"#;
        let en = b"A person is on a baseball team.\tA person is playing basketball.\nB\tC\n";
        let en_gold = b"2.400000\n5\n";
        let tr = b"The lady is blonde.\tKad\xc4\xb1n sar\xc4\xb1\xc5\x9f\xc4\xb1n.\nx\ty\n";
        let tr_gold = b"4.000000\n";
        assert_eq!(
            run("semeval-sts-gold", options, &[en, en_gold, tr, tr_gold]).unwrap(),
            "{\"sentence1\": \"A person is on a baseball team.\", \"sentence2\": \"A person is playing basketball.\", \"score\": 2.4, \"subset\": \"en-en\"}\n\
{\"sentence1\": \"B\", \"sentence2\": \"C\", \"score\": 5.0, \"subset\": \"en-en\"}\n\
{\"sentence1\": \"The lady is blonde.\", \"sentence2\": \"Kadın sarışın.\", \"score\": 4.0, \"subset\": \"en-tr\"}\n"
        );
        // a short gold file is an error unless the subset says its gold covers the first pairs
        let strict = r#"subsets = ["en-tr"]"#;
        let err = run("semeval-sts-gold", strict, &[tr, tr_gold]).unwrap_err();
        assert!(err.contains("2 pairs but 1 gold scores in in1"), "{err}");
        let err = run("semeval-sts-gold", strict, &[b"a\tb\tc\n", b"1\n"]).unwrap_err();
        assert_eq!(err, "in0:1: 3 columns, 2 expected");
        let err = run("semeval-sts-gold", strict, &[b"a\tb\n", b"high\n"]).unwrap_err();
        assert_eq!(err, "in1:1: \"high\" is not a number");
        let err = run("semeval-sts-gold", strict, &[b"a\tb\n"]).unwrap_err();
        assert!(err.contains("1 inputs for 1 subsets"), "{err}");
    }

    // SemEval STS 2012's files as brmson/dataset-sts keeps them (`SCORE<TAB>S1<TAB>S2`, unscored
    // pairs with an empty score), and MSRvid taken from the STS Benchmark release by its ids.
    #[test]
    fn semeval_subsets_and_msrvid_from_stsb() {
        let msrpar = b"4.400\tThe cat sat.\tA cat sat.\n\tunscored\tpair\n";
        let stsb_train = b"main-captions\tMSRvid\t2012test\t0002\tx\tthird\tthird b\n\
main-captions\tMSRvid\t2012train\t0000\t1.0\tnot test\tnot test\n";
        let stsb_test = b"main-captions\tMSRvid\t2012test\t0000\t5.000\tfirst\tfirst b\n";
        let options = r#"subsets = ["MSRpar", "MSRvid", "MSRvid"]
stsb_subset = "MSRvid""#;
        let bad = run("semeval-sts", options, &[msrpar, stsb_train, stsb_test]).unwrap_err();
        assert_eq!(bad, "in1:1: \"x\" is not a number");
        let stsb_train = b"main-captions\tMSRvid\t2012test\t0002\t0.5\tthird\tthird b\n";
        assert_eq!(
            run("semeval-sts", options, &[msrpar, stsb_train, stsb_test]).unwrap(),
            "{\"sentence1\": \"The cat sat.\", \"sentence2\": \"A cat sat.\", \"score\": 4.4, \"subset\": \"MSRpar\"}\n\
{\"sentence1\": \"first\", \"sentence2\": \"first b\", \"score\": 5.0, \"subset\": \"MSRvid\"}\n\
{\"sentence1\": \"third\", \"sentence2\": \"third b\", \"score\": 0.5, \"subset\": \"MSRvid\"}\n"
        );
    }

    // Amazon polarity in fastText's form (test.ft.txt): the first `: ` ends the title.
    #[test]
    fn fasttext_reviews_lines() {
        assert_eq!(
            run("fasttext-reviews", "", &[b"__label__1 :\\: If I could: I would\n__label__2 Great: works\n"]).unwrap(),
            "{\"id\": \"0\", \"text\": \":\\\\\\nIf I could: I would\", \"title\": \":\\\\\", \"label\": 0}\n\
{\"id\": \"1\", \"text\": \"Great\\nworks\", \"title\": \"Great\", \"label\": 1}\n"
        );
        assert_eq!(
            run("fasttext-reviews", "", &[b"__label__3 a: b\n"]).unwrap_err(),
            "in0:1: the label is neither __label__1 nor __label__2"
        );
    }

    // BillSum's us_train_data.jsonl (CRLF lines, compact JSON, \u escapes) and AFIN's splits.
    #[test]
    fn json_lines_by_key() {
        let options = r#"fields = [["id", "bill_id", "str"], ["text", "text", "str"]]"#;
        assert_eq!(
            run("jsonl-rows", options, &[b"{\"bill_id\":\"110_hr37\",\"text\":\"SECTION 1.\\u001a caf\\u00e9\",\"sum_len\":3}\r\n"]).unwrap(),
            "{\"id\": \"110_hr37\", \"text\": \"SECTION 1.\\u001a caf\u{e9}\"}\n"
        );
        assert_eq!(
            run("jsonl-rows", options, &[b"{\"bill_id\":\"1\"}\n"]).unwrap_err(),
            "in0:1: no key \"text\""
        );
    }

    // SumPubMed's text_<i>.txt and abstract_<i>.txt, used whole.
    #[test]
    fn numbered_file_pairs() {
        assert_eq!(
            run(
                "numbered-files",
                "keys = [\"text\", \"summary\"]\nfirst_id = 1",
                &[b"body one\n", b"abs one\n", b"body two\n", b"abs two\n"]
            )
            .unwrap(),
            "{\"id\": \"1\", \"text\": \"body one\\n\", \"summary\": \"abs one\\n\"}\n\
{\"id\": \"2\", \"text\": \"body two\\n\", \"summary\": \"abs two\\n\"}\n"
        );
    }

    // BARTScore's data.pkl layout, written by Python 3.11's pickle (protocol 3):
    // {"dm-1": {"src": "a", "ref_summs": ["r"], "sys_summs": {"M0": {"sys_summ": "s",
    // "scores": {"coherence": 1.5}}}, "ref_summ": "r"}}
    #[test]
    fn bartscore_ratings_and_docs() {
        let pickled = b"\x80\x03}q\x00X\x04\x00\x00\x00dm-1q\x01}q\x02(X\x03\x00\x00\x00srcq\x03X\x01\x00\x00\x00aq\x04X\t\x00\x00\x00ref_summsq\x05]q\x06X\x01\x00\x00\x00rq\x07aX\t\x00\x00\x00sys_summsq\x08}q\tX\x02\x00\x00\x00M0q\n}q\x0b(X\x08\x00\x00\x00sys_summq\x0cX\x01\x00\x00\x00sq\rX\x06\x00\x00\x00scoresq\x0e}q\x0fX\t\x00\x00\x00coherenceq\x10G?\xf8\x00\x00\x00\x00\x00\x00susX\x08\x00\x00\x00ref_summq\x11h\x07us.";
        assert_eq!(
            run("bartscore-pickle", "layout = [\"ratings\"]\ndimensions = [\"coherence\"]", &[pickled]).unwrap(),
            "{\"doc_id\": \"dm-1\", \"source\": \"a\", \"summary\": \"s\", \"system\": \"M0\", \"coherence\": 1.5}\n"
        );
        assert_eq!(
            run("bartscore-pickle", "layout = [\"docs\"]\nreferences = true", &[pickled]).unwrap(),
            "{\"doc_id\": \"dm-1\", \"source\": \"a\", \"reference\": \"r\", \"references\": [\"r\"]}\n"
        );
    }

    // WordNet's lexnames as the Lisp source quotes it, trailing spaces kept.
    #[test]
    fn a_block_of_lines() {
        let lisp = b"(defun x ())\n#|  usr/local/share/wordnet/WordNet-3.0/dict/lexnames\n00\tadj.all\t3\n01\tadj.pert\t3 \n|#\n(more)\n";
        let options =
            "after = [\"#|  usr/local/share/wordnet/WordNet-3.0/dict/lexnames\"]\nuntil = [\"|#\"]";
        assert_eq!(
            run("text-block", options, &[lisp]).unwrap(),
            "00\tadj.all\t3\n01\tadj.pert\t3 \n"
        );
        assert!(run(
            "text-block",
            options,
            &[b"#|  usr/local/share/wordnet/WordNet-3.0/dict/lexnames\nno end\n"]
        )
        .unwrap_err()
        .contains("no line \"|#\""));
    }

    // PIT-2015's dev.data: labels as (yes, no) vote counts, the debatable (2, 3) dropped.
    #[test]
    fn mapped_labels_and_dropped_rows() {
        let options = r#"fields = [["sentence1", 2, "str"], ["sentence2", 3, "str"], ["label", 4, "mapped"]]
label_map = { "(3, 2)" = 1, "(1, 4)" = 0, "(2, 3)" = "drop" }"#;
        let data = b"4\tTopic\tA\tB\t(3, 2)\ttags\ttags\n4\tTopic\tC\tD\t(2, 3)\tt\tt\n4\tTopic\tE\tF\t(1, 4)\tt\tt\n";
        assert_eq!(
            run("tab-rows", options, &[data]).unwrap(),
            "{\"sentence1\": \"A\", \"sentence2\": \"B\", \"label\": 1}\n{\"sentence1\": \"E\", \"sentence2\": \"F\", \"label\": 0}\n"
        );
        assert_eq!(
            run("tab-rows", options, &[b"4\tT\tA\tB\t(9, 9)\tt\tt\n"]).unwrap_err(),
            "in0:1: \"(9, 9)\" is not in the label map"
        );
    }

    #[test]
    fn copy_is_the_input() {
        assert_eq!(
            run("copy", "", &[b"word1\tword2\t1.0\r\n"]).unwrap(),
            "word1\tword2\t1.0\r\n"
        );
        assert!(run("nope", "", &[b""])
            .unwrap_err()
            .contains("no converter named"));
    }
}
