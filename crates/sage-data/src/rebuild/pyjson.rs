//! JSON lines exactly as Python's `json.dumps` writes them, so a rebuilt file is byte-identical to
//! the pinned one (the mirror was written by Python): `", "` and `": "` separators, keys in the
//! order given, floats as Python's `repr` (`5.0`, `1e-05`, `1e+16`), strings escaped with or
//! without `ensure_ascii`.

use std::fmt::Write as _;

/// One JSON value as the converters build it (keys keep their order).
#[derive(Clone, Debug, PartialEq)]
pub enum PyValue {
    /// A string.
    Str(String),
    /// A Python float.
    Float(f64),
    /// A Python int.
    Int(i64),
    /// A list.
    List(Vec<PyValue>),
    /// An object, keys in order.
    Object(Vec<(String, PyValue)>),
    /// `null`.
    Null,
}

impl From<&str> for PyValue {
    fn from(s: &str) -> PyValue {
        PyValue::Str(s.to_owned())
    }
}

impl From<String> for PyValue {
    fn from(s: String) -> PyValue {
        PyValue::Str(s)
    }
}

/// Writes one value as `json.dumps(value, ensure_ascii=ensure_ascii)` would.
pub fn write_value(out: &mut String, value: &PyValue, ensure_ascii: bool) {
    match value {
        PyValue::Str(s) => write_str(out, s, ensure_ascii),
        PyValue::Float(f) => out.push_str(&float_repr(*f)),
        PyValue::Int(i) => {
            let _ = write!(out, "{i}");
        }
        PyValue::Null => out.push_str("null"),
        PyValue::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(out, item, ensure_ascii);
            }
            out.push(']');
        }
        PyValue::Object(fields) => {
            out.push('{');
            for (i, (key, item)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_str(out, key, ensure_ascii);
                out.push_str(": ");
                write_value(out, item, ensure_ascii);
            }
            out.push('}');
        }
    }
}

/// One object as a JSON line (with its `\n`).
pub fn line(fields: Vec<(&str, PyValue)>, ensure_ascii: bool, out: &mut String) {
    let object = PyValue::Object(fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect());
    write_value(out, &object, ensure_ascii);
    out.push('\n');
}

fn write_str(out: &mut String, s: &str, ensure_ascii: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            // ensure_ascii escapes DEL too (Python's ESCAPE_ASCII matches [^ -~])
            c if ensure_ascii && (c as u32) > 0x7e => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Python's `repr(float)`: the shortest digits that round-trip, positional for decimal exponents
/// from -4 to 15, scientific (`1e-05`, `1.5e+16`) outside that, `.0` on integral values.
pub fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    // Rust's `{:e}` gives the same shortest round-trip digits as Python's repr
    let sci = format!("{:e}", f.abs());
    let (mantissa, exponent) = sci.split_once('e').expect("{:e} has an exponent");
    let exponent: i32 = exponent.parse().expect("{:e} exponent is an integer");
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let sign = if f < 0.0 { "-" } else { "" };
    if !(-4..16).contains(&exponent) {
        let (first, rest) = digits.split_at(1);
        let fraction = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let exp_sign = if exponent < 0 { '-' } else { '+' };
        return format!("{sign}{first}{fraction}e{exp_sign}{:02}", exponent.abs());
    }
    let point = exponent + 1; // digits before the decimal point
    if point <= 0 {
        format!("{sign}0.{}{digits}", "0".repeat((-point) as usize))
    } else if point as usize >= digits.len() {
        format!(
            "{sign}{digits}{}.0",
            "0".repeat(point as usize - digits.len())
        )
    } else {
        let (int, frac) = digits.split_at(point as usize);
        format!("{sign}{int}.{frac}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected strings are Python 3.11's `repr(float)` and `json.dumps` output.
    #[test]
    fn floats_as_python_repr() {
        for (value, python) in [
            (5.0, "5.0"),
            (2.5, "2.5"),
            (0.1, "0.1"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (1.5e-7, "1.5e-07"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (-3.25, "-3.25"),
            (0.0, "0.0"),
            (4.333333333333333, "4.333333333333333"),
            (1e300, "1e+300"),
        ] {
            assert_eq!(float_repr(value), python, "{value}");
        }
    }

    #[test]
    fn strings_as_json_dumps() {
        let mut ascii = String::new();
        write_str(&mut ascii, "é\u{7f}\u{1}😀\"\\\n\t", true);
        assert_eq!(ascii, r#""\u00e9\u007f\u0001\ud83d\ude00\"\\\n\t""#);
        let mut raw = String::new();
        write_str(&mut raw, "é\u{7f}\u{1}😀", false);
        assert_eq!(raw, "\"é\u{7f}\\u0001😀\"");
    }

    #[test]
    fn objects_with_python_separators() {
        let mut out = String::new();
        line(
            vec![
                ("a", PyValue::Float(1e16)),
                ("b", PyValue::Int(3)),
                ("c", PyValue::List(vec!["x".into(), PyValue::Null])),
            ],
            true,
            &mut out,
        );
        assert_eq!(out, "{\"a\": 1e+16, \"b\": 3, \"c\": [\"x\", null]}\n");
    }
}
