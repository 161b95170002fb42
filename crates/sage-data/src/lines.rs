//! The one reading of line-oriented text that every loader and the `sage` command share: how a
//! file splits into numbered lines, and how one line of JSON becomes an object.
//!
//! Both are strict where leniency would change a number silently: invalid UTF-8 is an error
//! naming its line, and a key repeated in a JSON object is an error (serde_json keeps the last
//! copy, Python's json keeps the last, some tools keep the first: the same file would mean
//! different rows to different readers). What is only spelling is accepted: a UTF-8 byte-order
//! mark at the start, `\r\n` line ends, and one final newline (which ends a line rather than
//! starting an empty one). Whether a blank line is an error or nothing is the caller's choice:
//! the `sage` command answers input line i on output line i, so for it a blank line is an error;
//! a dataset file is a set of rows, so its loaders pass over them.

use std::io::{BufRead, Read};

use serde_json::{Map, Value};

/// A line that is not valid UTF-8.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotUtf8 {
    /// 1-based number of the line.
    pub line: usize,
    /// What the decoder said.
    pub message: String,
}

/// Every line of `bytes` with its 1-based number: a leading byte-order mark and one final newline
/// removed, `\r\n` read as `\n`. An empty input has no lines.
pub fn numbered_lines(bytes: &[u8]) -> Result<Vec<(usize, &str)>, NotUtf8> {
    let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let body = body.strip_suffix(b"\n").unwrap_or(body);
    if body.is_empty() {
        return Ok(Vec::new());
    }
    body.split(|&b| b == b'\n')
        .enumerate()
        .map(|(i, raw)| {
            let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
            std::str::from_utf8(raw)
                .map(|text| (i + 1, text))
                .map_err(|e| NotUtf8 {
                    line: i + 1,
                    message: e.to_string(),
                })
        })
        .collect()
}

/// The longest line read from a file: longer is an error naming its line, raised while reading
/// (at most this much of the line is ever held), so one runaway line or a file without newlines
/// costs an error, not the machine's memory.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// Why a streamed line could not be had: the reader failed, or the line is too long or not UTF-8.
#[derive(Debug)]
pub enum LineError<E> {
    /// Reading failed (the message is the I/O error's).
    Read {
        /// 1-based line being read.
        line: usize,
        /// What the reader said.
        message: String,
    },
    /// A line over [`MAX_LINE_BYTES`] or not valid UTF-8.
    Bad {
        /// 1-based line.
        line: usize,
        /// What is wrong, in words.
        message: String,
    },
    /// What the caller's function returned.
    Caller(E),
}

/// Calls `each` with every non-blank line of `reader` and its 1-based number, read the way
/// [`numbered_lines`] reads (byte-order mark, `\r\n`), holding one line at a time and never more
/// than [`MAX_LINE_BYTES`] of it. A dataset file is a set of rows: blank lines are nothing.
pub fn for_each_line<R: BufRead, E>(
    reader: R,
    each: &mut dyn FnMut(usize, &str) -> Result<(), E>,
) -> Result<(), LineError<E>> {
    for_each_line_with_blanks(reader, &mut |line, text| {
        if is_blank(text) {
            Ok(())
        } else {
            each(line, text)
        }
    })
}

/// [`for_each_line`] with the blank lines given too: for the `sage` command, whose output line i
/// answers input line i, a blank line is an error the caller names.
pub fn for_each_line_with_blanks<R: BufRead, E>(
    mut reader: R,
    each: &mut dyn FnMut(usize, &str) -> Result<(), E>,
) -> Result<(), LineError<E>> {
    let mut buf = Vec::new();
    let mut line = 0;
    loop {
        line += 1;
        buf.clear();
        // the line, its `\r\n` and one byte more: enough to tell a line of exactly the cap from
        // a longer one
        let read = (&mut reader)
            .take(MAX_LINE_BYTES as u64 + 3)
            .read_until(b'\n', &mut buf)
            .map_err(|e| LineError::Read {
                line,
                message: e.to_string(),
            })?;
        if read == 0 {
            return Ok(());
        }
        let body = if line == 1 {
            buf.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&buf)
        } else {
            &buf[..]
        };
        let ended = body.last() == Some(&b'\n');
        let body = body.strip_suffix(b"\n").unwrap_or(body);
        let body = body.strip_suffix(b"\r").unwrap_or(body);
        if body.len() > MAX_LINE_BYTES || (!ended && buf.len() > MAX_LINE_BYTES + 2) {
            return Err(LineError::Bad {
                line,
                message: format!("line longer than {} MiB", MAX_LINE_BYTES >> 20),
            });
        }
        let text = std::str::from_utf8(body).map_err(|e| LineError::Bad {
            line,
            message: format!("not valid UTF-8: {e}"),
        })?;
        // a file of one newline has no lines, as `numbered_lines` reads it (the newline ends a
        // line rather than starting one)
        if line == 1 && text.is_empty() {
            let rest = reader.fill_buf().map_err(|e| LineError::Read {
                line,
                message: e.to_string(),
            })?;
            if rest.is_empty() {
                return Ok(());
            }
        }
        each(line, text).map_err(LineError::Caller)?;
    }
}

/// True for a line with nothing but white space.
pub fn is_blank(line: &str) -> bool {
    line.trim().is_empty()
}

/// One line of JSON as an object. The error says what is wrong in words, without the file and
/// line, which the caller knows: not JSON, not an object, or a key that appears twice.
pub fn json_object(line: &str) -> Result<Map<String, Value>, String> {
    let Strict(value) = serde_json::from_str(line).map_err(|e| format!("not valid JSON: {e}"))?;
    match value {
        Value::Object(object) => Ok(object),
        _ => Err("expected a JSON object".to_owned()),
    }
}

/// A JSON value whose objects never repeat a key (at any depth).
struct Strict(Value);

impl<'de> serde::Deserialize<'de> for Strict {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> serde::de::Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Strict(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let Strict(value) = map.next_value()?;
            if object.contains_key(&key) {
                return Err(serde::de::Error::custom(format_args!(
                    "key {key:?} appears twice in one object"
                )));
            }
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_numbered_from_one_with_their_spelling_removed() {
        let lines = numbered_lines(b"\xEF\xBB\xBFa\r\n\nb\n").unwrap();
        assert_eq!(lines, vec![(1, "a"), (2, ""), (3, "b")]);
        assert!(numbered_lines(b"").unwrap().is_empty());
        assert!(numbered_lines(b"\n").unwrap().is_empty());
        // a second final newline is an empty line of its own
        assert_eq!(numbered_lines(b"a\n\n").unwrap(), vec![(1, "a"), (2, "")]);
    }

    #[test]
    fn streamed_lines_read_as_numbered_lines_do_less_the_blank_ones() {
        let bytes = b"\xEF\xBB\xBFa\r\n\n  \nb\n";
        let mut streamed = Vec::new();
        for_each_line::<_, ()>(&bytes[..], &mut |n, l| {
            streamed.push((n, l.to_owned()));
            Ok(())
        })
        .unwrap();
        let whole: Vec<(usize, String)> = numbered_lines(bytes)
            .unwrap()
            .into_iter()
            .filter(|(_, l)| !is_blank(l))
            .map(|(n, l)| (n, l.to_owned()))
            .collect();
        assert_eq!(streamed, whole);
    }

    #[test]
    fn streamed_lines_with_blanks_read_as_numbered_lines_do() {
        for bytes in [
            &b""[..],
            b"\n",
            b"\xEF\xBB\xBF\n",
            b"a\n\n",
            b"\n\na",
            b"a\r\n\r\nb",
        ] {
            let mut streamed = Vec::new();
            for_each_line_with_blanks::<_, ()>(bytes, &mut |n, l| {
                streamed.push((n, l.to_owned()));
                Ok(())
            })
            .unwrap();
            let whole: Vec<(usize, String)> = numbered_lines(bytes)
                .unwrap()
                .into_iter()
                .map(|(n, l)| (n, l.to_owned()))
                .collect();
            assert_eq!(streamed, whole, "{bytes:?}");
        }
    }

    #[test]
    fn a_streamed_line_over_the_cap_is_refused_without_reading_the_rest() {
        // a reader that never ends: the cap, not the input, must stop it
        let endless = std::io::BufReader::new(std::io::repeat(b'x'));
        let e = for_each_line::<_, ()>(endless, &mut |_, _| Ok(())).unwrap_err();
        assert!(
            matches!(&e, LineError::Bad { line: 1, message } if message.contains("64 MiB")),
            "{e:?}"
        );
    }

    #[test]
    fn invalid_utf8_names_its_line() {
        let e = numbered_lines(b"ok\nok\n\xFFbad\n").unwrap_err();
        assert_eq!(e.line, 3);
    }

    #[test]
    fn a_repeated_key_is_an_error_at_any_depth() {
        assert!(json_object(r#"{"a":1,"a":2}"#)
            .unwrap_err()
            .contains("\"a\" appears twice"));
        assert!(json_object(r#"{"x":[{"b":1,"b":1}]}"#).is_err());
        assert!(json_object(r#"{"a":{"a":1}}"#).is_ok());
        assert_eq!(json_object("[1]").unwrap_err(), "expected a JSON object");
        assert!(json_object("{").unwrap_err().starts_with("not valid JSON"));
    }

    #[test]
    fn a_long_number_survives_a_write_and_read_back() {
        // the fuzz target `lines` found this: without correctly rounded parsing the 89-digit
        // integer read as 7.888888888888889e88 and, written and read again, as 7.88888888888889e88
        let line = format!(r#"{{"6-": 7{}}}"#, "8".repeat(88));
        let object = json_object(&line).unwrap();
        let again = serde_json::to_string(&object).unwrap();
        assert_eq!(json_object(&again).unwrap(), object);
        assert_eq!(object["6-"].as_f64(), Some(7.888888888888889e88));
    }
}
