//! A pickle reader that builds plain data only: dicts, lists, strings, floats and ints, from the
//! opcodes of protocols 0–3 that such data uses. Any opcode that names a class or calls one
//! (GLOBAL, REDUCE, BUILD, NEWOBJ, ...) is refused, so a hostile pickle cannot run code or make
//! objects: it is read as data or not at all (BARTScore ships SummEval and REALSumm this way).

/// A plain Python value.
#[derive(Clone, Debug, PartialEq)]
pub enum Pickled {
    /// `str`.
    Str(String),
    /// `float`.
    Float(f64),
    /// `int` (up to 64 bits).
    Int(i64),
    /// `None`.
    None,
    /// `bool`.
    Bool(bool),
    /// `list` or `tuple`.
    List(Vec<Pickled>),
    /// `dict`, in insertion order.
    Dict(Vec<(Pickled, Pickled)>),
}

impl Pickled {
    /// The value of `key` in a dict.
    pub fn get(&self, key: &str) -> Option<&Pickled> {
        match self {
            Pickled::Dict(items) => items
                .iter()
                .find(|(k, _)| matches!(k, Pickled::Str(s) if s == key))
                .map(|(_, v)| v),
            _ => None,
        }
    }
}

enum Slot {
    Value(Pickled),
    Mark,
}

/// Reads one pickle of plain data.
pub fn read(bytes: &[u8]) -> Result<Pickled, String> {
    let mut stack: Vec<Slot> = Vec::new();
    let mut memo: std::collections::HashMap<u32, Pickled> = Default::default();
    let mut at = 0usize;
    let take = |at: &mut usize, n: usize| -> Result<&[u8], String> {
        let slice = bytes
            .get(*at..*at + n)
            .ok_or_else(|| format!("truncated at byte {at}"))?;
        *at += n;
        Ok(slice)
    };
    let pop = |stack: &mut Vec<Slot>, at: usize| -> Result<Pickled, String> {
        match stack.pop() {
            Some(Slot::Value(v)) => Ok(v),
            _ => Err(format!("a value was expected on the stack at byte {at}")),
        }
    };
    let since_mark = |stack: &mut Vec<Slot>, at: usize| -> Result<Vec<Pickled>, String> {
        let mark = stack
            .iter()
            .rposition(|s| matches!(s, Slot::Mark))
            .ok_or_else(|| format!("no MARK before byte {at}"))?;
        Ok(stack
            .drain(mark..)
            .skip(1)
            .map(|s| match s {
                Slot::Value(v) => v,
                Slot::Mark => Pickled::None,
            })
            .collect())
    };
    loop {
        let op_at = at;
        let op = *take(&mut at, 1)?.first().unwrap_or(&0);
        match op {
            0x80 => {
                let proto = take(&mut at, 1)?[0];
                if proto > 3 {
                    return Err(format!("pickle protocol {proto} (only 0–3 are read)"));
                }
            }
            b'.' => {
                let value = pop(&mut stack, op_at)?;
                if at != bytes.len() {
                    return Err(format!("{} bytes after STOP", bytes.len() - at));
                }
                return Ok(value);
            }
            b'(' => stack.push(Slot::Mark),
            b'}' => stack.push(Slot::Value(Pickled::Dict(Vec::new()))),
            b']' => stack.push(Slot::Value(Pickled::List(Vec::new()))),
            b')' => stack.push(Slot::Value(Pickled::List(Vec::new()))),
            b'N' => stack.push(Slot::Value(Pickled::None)),
            0x88 => stack.push(Slot::Value(Pickled::Bool(true))),
            0x89 => stack.push(Slot::Value(Pickled::Bool(false))),
            b'X' => {
                let len =
                    u32::from_le_bytes(take(&mut at, 4)?.try_into().expect("4 bytes")) as usize;
                let text = std::str::from_utf8(take(&mut at, len)?)
                    .map_err(|_| format!("a string at byte {op_at} is not UTF-8"))?;
                stack.push(Slot::Value(Pickled::Str(text.to_owned())));
            }
            0x8c => {
                let len = take(&mut at, 1)?[0] as usize;
                let text = std::str::from_utf8(take(&mut at, len)?)
                    .map_err(|_| format!("a string at byte {op_at} is not UTF-8"))?;
                stack.push(Slot::Value(Pickled::Str(text.to_owned())));
            }
            b'G' => {
                let raw: [u8; 8] = take(&mut at, 8)?.try_into().expect("8 bytes");
                stack.push(Slot::Value(Pickled::Float(f64::from_be_bytes(raw))));
            }
            b'K' => stack.push(Slot::Value(Pickled::Int(take(&mut at, 1)?[0] as i64))),
            b'M' => {
                let raw: [u8; 2] = take(&mut at, 2)?.try_into().expect("2 bytes");
                stack.push(Slot::Value(Pickled::Int(u16::from_le_bytes(raw) as i64)));
            }
            b'J' => {
                let raw: [u8; 4] = take(&mut at, 4)?.try_into().expect("4 bytes");
                stack.push(Slot::Value(Pickled::Int(i32::from_le_bytes(raw) as i64)));
            }
            b'q' | b'r' => {
                let index = if op == b'q' {
                    take(&mut at, 1)?[0] as u32
                } else {
                    u32::from_le_bytes(take(&mut at, 4)?.try_into().expect("4 bytes"))
                };
                // containers are memoised empty and filled later; only values are ever read
                // back from the memo in plain data, and a container read back is refused below
                match stack.last() {
                    Some(Slot::Value(v)) => {
                        memo.insert(index, v.clone());
                    }
                    _ => return Err(format!("PUT with nothing on the stack at byte {op_at}")),
                }
            }
            b'h' | b'j' => {
                let index = if op == b'h' {
                    take(&mut at, 1)?[0] as u32
                } else {
                    u32::from_le_bytes(take(&mut at, 4)?.try_into().expect("4 bytes"))
                };
                let value = memo
                    .get(&index)
                    .ok_or_else(|| format!("GET of unset memo {index} at byte {op_at}"))?;
                if matches!(value, Pickled::Dict(_) | Pickled::List(_)) {
                    return Err(format!(
                        "a shared container at byte {op_at} (only plain, unshared data is read)"
                    ));
                }
                stack.push(Slot::Value(value.clone()));
            }
            b's' | b'u' => {
                let items = if op == b's' {
                    let value = pop(&mut stack, op_at)?;
                    let key = pop(&mut stack, op_at)?;
                    vec![key, value]
                } else {
                    since_mark(&mut stack, op_at)?
                };
                if !items.len().is_multiple_of(2) {
                    return Err(format!("odd SETITEMS at byte {op_at}"));
                }
                match stack.last_mut() {
                    Some(Slot::Value(Pickled::Dict(dict))) => {
                        let mut items = items.into_iter();
                        while let (Some(k), Some(v)) = (items.next(), items.next()) {
                            dict.push((k, v));
                        }
                    }
                    _ => return Err(format!("SETITEM(S) without a dict at byte {op_at}")),
                }
            }
            b'a' | b'e' => {
                let items = if op == b'a' {
                    vec![pop(&mut stack, op_at)?]
                } else {
                    since_mark(&mut stack, op_at)?
                };
                match stack.last_mut() {
                    Some(Slot::Value(Pickled::List(list))) => list.extend(items),
                    _ => return Err(format!("APPEND(S) without a list at byte {op_at}")),
                }
            }
            b't' => {
                let items = since_mark(&mut stack, op_at)?;
                stack.push(Slot::Value(Pickled::List(items)));
            }
            b'c' | 0x93 | b'R' | b'b' | 0x81 | 0x92 | b'i' | b'o' | b'P' | b'Q' | 0x82..=0x84 => {
                return Err(format!(
                    "opcode 0x{op:02x} at byte {op_at} names or calls a class; only plain data is read"
                ));
            }
            other => return Err(format!("opcode 0x{other:02x} at byte {op_at} is not read")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // `pickle.dumps({"a": [1.5, "x"], "b": {"c": 7}}, protocol=3)` in Python 3.11, and the same
    // structure with a memoised string read back by BINGET.
    #[test]
    fn plain_data() {
        let bytes = b"\x80\x03}q\x00(X\x01\x00\x00\x00aq\x01]q\x02(G?\xf8\x00\x00\x00\x00\x00\x00X\x01\x00\x00\x00xq\x03eX\x01\x00\x00\x00bq\x04}q\x05X\x01\x00\x00\x00cq\x06K\x07su.";
        let value = read(bytes).unwrap();
        assert_eq!(
            value.get("a"),
            Some(&Pickled::List(vec![
                Pickled::Float(1.5),
                Pickled::Str("x".into())
            ]))
        );
        assert_eq!(
            value.get("b").and_then(|b| b.get("c")),
            Some(&Pickled::Int(7))
        );
        let shared = b"\x80\x03]q\x00(X\x01\x00\x00\x00sq\x01h\x01e.";
        assert_eq!(
            read(shared).unwrap(),
            Pickled::List(vec![Pickled::Str("s".into()), Pickled::Str("s".into())])
        );
    }

    // `pickle.dumps(os.system)`-style payloads: GLOBAL then REDUCE.
    #[test]
    fn classes_refused() {
        let evil = b"\x80\x03cposix\nsystem\nq\x00X\x02\x00\x00\x00idq\x01\x85q\x02Rq\x03.";
        assert!(read(evil).unwrap_err().contains("names or calls a class"));
        assert!(read(b"\x80\x03}").unwrap_err().contains("truncated"));
        assert!(read(b"\x80\x05}.").unwrap_err().contains("protocol 5"));
    }
}
