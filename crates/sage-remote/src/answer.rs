//! Reading an embedding answer as it streams in, with memory bounded by what the request can
//! legitimately return.
//!
//! A server the user does not control may send anything: a body of hundreds of megabytes, a
//! gzip bomb, a vector of a billion values, more vectors than texts. Parsing the whole body into
//! a JSON tree first costs about 17 times its size (a `serde_json::Value` per number), so a
//! 500 MB answer once aborted the process. Here the body is read through a byte cap and parsed
//! straight into `f32` rows: a vector may hold at most [`MAX_WIDTH`] values (or exactly the
//! width already known), and a list at most one vector per text, each refused the moment it goes
//! past. What is held is at most `texts × width × 4` bytes, whatever the server sends.

use std::cell::Cell;
use std::fmt;
use std::io::Read;

use serde::de::{self, DeserializeSeed, Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use super::protocol::Protocol;

/// One parsed answer: the vectors in input order and the tokens the server billed, if it said.
#[derive(Debug)]
pub struct Answer {
    /// One vector per input, in input order.
    pub vectors: Vec<Vec<f32>>,
    /// Tokens the server reported for the request.
    pub tokens: Option<u64>,
}

/// The widest vector accepted from a server whose width is not yet known. The widest embedding
/// models in use give 4,096 values (NV-Embed-v2, e5-mistral, Qwen3-Embedding-8B); OpenAI's
/// widest gives 3,072.
pub const MAX_WIDTH: usize = 16_384;

/// Bytes of JSON allowed per value: a float printed in full (`-0.012345678901234567`), its comma,
/// and pretty-printing's newline and indentation.
const BYTES_PER_VALUE: u64 = 64;
/// Bytes allowed per text for everything around its vector (`index`, `object`, ...).
const BYTES_PER_TEXT: u64 = 4096;
/// Bytes allowed for the rest of an answer (`usage`, `model`, `meta`).
const BYTES_BASE: u64 = 1 << 20;

/// The most bytes a correct answer to `count` texts of `width` values (or up to [`MAX_WIDTH`])
/// can take: a longer body is refused without being read (by its `Content-Length`) or the moment
/// it passes this, decoded.
pub fn byte_cap(count: usize, width: Option<usize>) -> u64 {
    let width = width.unwrap_or(MAX_WIDTH) as u64;
    BYTES_BASE + count as u64 * (BYTES_PER_TEXT + width * BYTES_PER_VALUE)
}

/// Why an answer was refused; `oversized` when it is larger than the request can legitimately
/// return, which asking again cannot fix.
#[derive(Debug)]
pub struct Refused {
    /// What was wrong.
    pub message: String,
    /// Too large for its request (not worth a retry).
    pub oversized: bool,
}

impl Refused {
    fn new(message: impl Into<String>) -> Refused {
        Refused {
            message: message.into(),
            oversized: false,
        }
    }
}

/// Parses and checks an answer to `count` texts from `body`, read at most up to
/// [`byte_cap`]`(count, width)` bytes: one vector per text, placed by `index` where the protocol
/// has one (each index once), all of one width (`width` when known), all finite.
pub fn read(
    protocol: Protocol,
    body: impl Read,
    count: usize,
    width: Option<usize>,
) -> Result<Answer, Refused> {
    let cap = byte_cap(count, width);
    let over = Cell::new(false);
    let reader = std::io::BufReader::with_capacity(
        64 << 10,
        Capped {
            inner: body,
            left: cap,
            over: &over,
        },
    );
    let limits = Limits {
        count,
        width: Cell::new(width.unwrap_or(0)),
        oversized: Cell::new(false),
    };
    let mut deserializer = serde_json::Deserializer::from_reader(reader);
    let parsed = Top {
        protocol,
        limits: &limits,
    }
    .deserialize(&mut deserializer)
    .and_then(|fields| deserializer.end().map(|()| fields));
    let fields = parsed.map_err(|e| {
        if over.get() {
            Refused {
                message: format!(
                    "the answer is larger than {cap} bytes, the most {count} vectors can take"
                ),
                oversized: true,
            }
        } else if e.is_data() {
            Refused {
                message: strip_position(&e),
                oversized: limits.oversized.get(),
            }
        } else {
            Refused::new(format!("the answer is not JSON ({e})"))
        }
    })?;
    fields.finish(protocol, count)
}

/// A data error's message without serde's "at line 1 column 93" (the column of a streamed
/// body is noise to a user; the message names the vector).
fn strip_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}

/// A reader that stops with an error once `left` bytes were read, and says so in `over`.
struct Capped<'a, R> {
    inner: R,
    left: u64,
    over: &'a Cell<bool>,
}

impl<R: Read> Read for Capped<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            // one byte more tells a body of exactly the cap from a longer one
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => {
                    self.over.set(true);
                    Err(std::io::Error::other("answer over its size cap"))
                }
            };
        }
        let want = buf.len().min(self.left.min(usize::MAX as u64) as usize);
        let n = self.inner.read(&mut buf[..want])?;
        self.left -= n as u64;
        Ok(n)
    }
}

/// What a vector list may hold: `count` vectors, each `width` wide once known (0: not yet).
struct Limits {
    count: usize,
    width: Cell<usize>,
    oversized: Cell<bool>,
}

impl Limits {
    fn too_many<E: de::Error>(&self) -> E {
        self.oversized.set(true);
        E::custom(format!("more than {0} vectors for {0} texts", self.count))
    }
}

/// The fields of an answer found so far, whatever the protocol.
#[derive(Default)]
struct Fields {
    /// OpenAI/Voyage's `data`, placed by `index`.
    indexed: Option<Vec<Option<Vec<f32>>>>,
    /// Cohere's `embeddings.float` or Gemini's `embeddings`, in order.
    listed: Option<Vec<Vec<f32>>>,
    tokens: Option<u64>,
}

impl Fields {
    fn finish(self, protocol: Protocol, count: usize) -> Result<Answer, Refused> {
        let vectors = match protocol {
            Protocol::OpenAi | Protocol::Voyage => {
                let slots = self
                    .indexed
                    .ok_or_else(|| Refused::new("the answer has no `data` list"))?;
                let given = slots.iter().filter(|s| s.is_some()).count();
                if given != count {
                    return Err(Refused::new(format!("{given} vectors for {count} texts")));
                }
                slots.into_iter().flatten().collect()
            }
            Protocol::Cohere | Protocol::Gemini => {
                let list = self.listed.ok_or_else(|| {
                    Refused::new(if protocol == Protocol::Cohere {
                        "the answer has no `embeddings.float` list"
                    } else {
                        "the answer has no `embeddings` list"
                    })
                })?;
                if list.len() != count {
                    return Err(Refused::new(format!(
                        "{} vectors for {count} texts",
                        list.len()
                    )));
                }
                list
            }
        };
        Ok(Answer {
            vectors,
            tokens: self.tokens,
        })
    }
}

/// The answer's top-level object.
struct Top<'a> {
    protocol: Protocol,
    limits: &'a Limits,
}

impl<'de> DeserializeSeed<'de> for Top<'_> {
    type Value = Fields;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Fields, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Top<'_> {
    type Value = Fields;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an answer object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields, A::Error> {
        let mut fields = Fields::default();
        let twice = |key: &str| A::Error::custom(format!("`{key}` given twice"));
        while let Some(key) = map.next_key::<Key>()? {
            match (self.protocol, key.0.as_str()) {
                (Protocol::OpenAi | Protocol::Voyage, "data") => {
                    if fields.indexed.is_some() {
                        return Err(twice("data"));
                    }
                    fields.indexed = Some(map.next_value_seed(Indexed(self.limits))?);
                }
                (Protocol::OpenAi | Protocol::Voyage, "usage") => {
                    let usage: Option<Usage> = map.next_value()?;
                    fields.tokens = usage.and_then(|u| u.total_tokens.or(u.prompt_tokens));
                }
                (Protocol::Cohere, "embeddings") => {
                    if fields.listed.is_some() {
                        return Err(twice("embeddings"));
                    }
                    fields.listed = map.next_value_seed(CohereEmbeddings(self.limits))?;
                }
                (Protocol::Cohere, "meta") => {
                    let meta: Option<CohereMeta> = map.next_value()?;
                    fields.tokens = meta
                        .and_then(|m| m.billed_units)
                        .and_then(|b| b.input_tokens);
                }
                (Protocol::Gemini, "embeddings") => {
                    if fields.listed.is_some() {
                        return Err(twice("embeddings"));
                    }
                    fields.listed = Some(map.next_value_seed(Listed {
                        limits: self.limits,
                        inner: Holder::GeminiValues,
                    })?);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(fields)
    }
}

/// A map key, kept only when short (a long one is not one of ours, and is not held).
struct Key(String);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
                Ok(Key(if v.len() <= 64 {
                    v.to_owned()
                } else {
                    String::new()
                }))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

#[derive(Deserialize)]
struct Usage {
    total_tokens: Option<u64>,
    prompt_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct CohereMeta {
    billed_units: Option<CohereBilled>,
}

#[derive(Deserialize)]
struct CohereBilled {
    input_tokens: Option<u64>,
}

/// OpenAI's `data`: objects with `index` and `embedding`, placed by index (input order when a
/// server omits `index`).
struct Indexed<'a>(&'a Limits);

impl<'de> DeserializeSeed<'de> for Indexed<'_> {
    type Value = Vec<Option<Vec<f32>>>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Indexed<'_> {
    type Value = Vec<Option<Vec<f32>>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a `data` list")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let limits = self.0;
        let mut slots: Vec<Option<Vec<f32>>> = vec![None; limits.count];
        let mut position = 0usize;
        while let Some((index, vector)) = seq.next_element_seed(Item { limits, position })? {
            let index = index.unwrap_or(position);
            let slot = slots.get_mut(index).ok_or_else(|| {
                A::Error::custom(format!(
                    "`index` {index} out of range for {} texts",
                    limits.count
                ))
            })?;
            if slot.is_some() {
                return Err(A::Error::custom(format!("`index` {index} answered twice")));
            }
            *slot = Some(vector);
            position += 1;
        }
        Ok(slots)
    }
}

/// One object of OpenAI's `data`: `(index, embedding)`.
struct Item<'a> {
    limits: &'a Limits,
    position: usize,
}

impl<'de> DeserializeSeed<'de> for Item<'_> {
    type Value = (Option<usize>, Vec<f32>);
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Item<'_> {
    type Value = (Option<usize>, Vec<f32>);
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object with an `embedding`")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        if self.position >= self.limits.count {
            return Err(self.limits.too_many());
        }
        let mut index = None;
        let mut embedding = None;
        while let Some(key) = map.next_key::<Key>()? {
            match key.0.as_str() {
                "index" => {
                    let value: serde_json::Value = map.next_value()?;
                    index = Some(value.as_u64().ok_or_else(|| {
                        A::Error::custom(format!("`index` {value} is not a count"))
                    })? as usize);
                }
                "embedding" => {
                    if embedding.is_some() {
                        return Err(A::Error::custom("`embedding` given twice"));
                    }
                    // the vector's number in messages is its index when already read
                    let number = index.unwrap_or(self.position);
                    embedding = Some(map.next_value_seed(Vector {
                        limits: self.limits,
                        number,
                    })?);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let number = index.unwrap_or(self.position);
        let embedding = embedding
            .ok_or_else(|| A::Error::custom(format!("vector {number} is not a list of numbers")))?;
        Ok((index, embedding))
    }
}

/// Where a listed vector sits: bare (Cohere) or as an object's `values` (Gemini).
#[derive(Clone, Copy)]
enum Holder {
    Bare,
    GeminiValues,
}

/// Cohere's `embeddings`: an object whose `float` is the list of vectors.
struct CohereEmbeddings<'a>(&'a Limits);

impl<'de> DeserializeSeed<'de> for CohereEmbeddings<'_> {
    type Value = Option<Vec<Vec<f32>>>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for CohereEmbeddings<'_> {
    type Value = Option<Vec<Vec<f32>>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an `embeddings` object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut float = None;
        while let Some(key) = map.next_key::<Key>()? {
            if key.0 == "float" {
                if float.is_some() {
                    return Err(A::Error::custom("`float` given twice"));
                }
                float = Some(map.next_value_seed(Listed {
                    limits: self.0,
                    inner: Holder::Bare,
                })?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(float)
    }
}

/// A list of vectors in input order.
struct Listed<'a> {
    limits: &'a Limits,
    inner: Holder,
}

impl<'de> DeserializeSeed<'de> for Listed<'_> {
    type Value = Vec<Vec<f32>>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Listed<'_> {
    type Value = Vec<Vec<f32>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of vectors")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        loop {
            let number = out.len();
            let vector = match self.inner {
                Holder::Bare => seq.next_element_seed(Vector {
                    limits: self.limits,
                    number,
                })?,
                Holder::GeminiValues => seq.next_element_seed(GeminiItem(Vector {
                    limits: self.limits,
                    number,
                }))?,
            };
            match vector {
                Some(v) if number < self.limits.count => out.push(v),
                Some(_) => return Err(self.limits.too_many()),
                None => return Ok(out),
            }
        }
    }
}

/// One of Gemini's `embeddings`: an object whose `values` is the vector.
struct GeminiItem<'a>(Vector<'a>);

impl<'de> DeserializeSeed<'de> for GeminiItem<'_> {
    type Value = Vec<f32>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Vec<f32>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for GeminiItem<'_> {
    type Value = Vec<f32>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object with `values`")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<f32>, A::Error> {
        let number = self.0.number;
        let mut values = None;
        while let Some(key) = map.next_key::<Key>()? {
            if key.0 == "values" && values.is_none() {
                values = Some(map.next_value_seed(Vector { ..self.0 })?);
            } else if key.0 == "values" {
                return Err(A::Error::custom("`values` given twice"));
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        values.ok_or_else(|| A::Error::custom(format!("vector {number} is not a list of numbers")))
    }
}

/// One vector: finite numbers, at most the known width (or [`MAX_WIDTH`]); the first vector
/// read fixes the width for the rest.
struct Vector<'a> {
    limits: &'a Limits,
    number: usize,
}

impl<'de> DeserializeSeed<'de> for Vector<'_> {
    type Value = Vec<f32>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Vec<f32>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Vector<'_> {
    type Value = Vec<f32>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "vector {} as a list of numbers", self.number)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<f32>, A::Error> {
        let number = self.number;
        let known = self.limits.width.get();
        let limit = if known == 0 { MAX_WIDTH } else { known };
        let mut values = Vec::with_capacity(limit.min(4096));
        while let Some(x) = seq.next_element_seed(Value { number })? {
            if values.len() == limit {
                self.limits.oversized.set(true);
                return Err(A::Error::custom(if known == 0 {
                    format!("vector {number} has more than {MAX_WIDTH} values, the widest accepted")
                } else {
                    format!("vector {number} has more than the {known} values of the others")
                }));
            }
            values.push(x);
        }
        if values.is_empty() {
            return Err(A::Error::custom(format!("vector {number} is empty")));
        }
        if known == 0 {
            self.limits.width.set(values.len());
        } else if values.len() != known {
            return Err(A::Error::custom(format!(
                "vector {number} has {} values where {known} were expected",
                values.len()
            )));
        }
        Ok(values)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Vec<f32>, E> {
        Err(E::custom(format!(
            "vector {} is not a list of numbers (a string: base64 was not asked for)",
            self.number
        )))
    }
    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<Vec<f32>, A::Error> {
        Err(A::Error::custom(format!(
            "vector {} is not a list of numbers",
            self.number
        )))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Vec<f32>, E> {
        Err(E::custom(format!(
            "vector {} is not a list of numbers",
            self.number
        )))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Vec<f32>, E> {
        self.visit_unit()
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Vec<f32>, E> {
        self.visit_unit()
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Vec<f32>, E> {
        self.visit_unit()
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Vec<f32>, E> {
        self.visit_unit()
    }
}

/// One value of a vector: a number that is finite as an `f32`.
struct Value {
    number: usize,
}

impl<'de> DeserializeSeed<'de> for Value {
    type Value = f32;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<f32, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Value {
    type Value = f32;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a number")
    }
    fn visit_f64<E: de::Error>(self, x: f64) -> Result<f32, E> {
        let f = x as f32;
        if f.is_finite() {
            Ok(f)
        } else {
            Err(E::custom(format!(
                "vector {} holds a non-finite value",
                self.number
            )))
        }
    }
    fn visit_u64<E: de::Error>(self, x: u64) -> Result<f32, E> {
        self.visit_f64(x as f64)
    }
    fn visit_i64<E: de::Error>(self, x: i64) -> Result<f32, E> {
        self.visit_f64(x as f64)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<f32, E> {
        self.non_number()
    }
    fn visit_unit<E: de::Error>(self) -> Result<f32, E> {
        self.non_number()
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<f32, E> {
        self.non_number()
    }
    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<f32, A::Error> {
        self.non_number()
    }
    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<f32, A::Error> {
        self.non_number()
    }
}

impl Value {
    fn non_number<E: de::Error>(self) -> Result<f32, E> {
        Err(E::custom(format!(
            "vector {} holds a non-number",
            self.number
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A whole answer to a request of `count` texts, read as the client reads a streamed one.
    fn parse(protocol: Protocol, body: &str, count: usize) -> Result<Answer, String> {
        read(protocol, body.as_bytes(), count, None).map_err(|r| r.message)
    }

    #[test]
    fn answers_are_placed_by_index_and_checked() {
        let body = r#"{"data":[{"index":1,"embedding":[3,4]},{"index":0,"embedding":[1,2]}],
                       "usage":{"prompt_tokens":5,"total_tokens":5}}"#;
        let a = parse(Protocol::OpenAi, body, 2).unwrap();
        assert_eq!(a.vectors, vec![vec![1.0, 2.0], vec![3.0, 4.0]]);
        assert_eq!(a.tokens, Some(5));
        let bad = [
            (
                r#"{"data":[{"index":0,"embedding":[1,2]}]}"#,
                "1 vectors for 2",
            ),
            (
                r#"{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[2]}]}"#,
                "twice",
            ),
            (
                r#"{"data":[{"index":0,"embedding":[1]},{"index":5,"embedding":[2]}]}"#,
                "out of range",
            ),
            (
                r#"{"data":[{"index":0,"embedding":[1]},{"index":1,"embedding":[2,3]}]}"#,
                "values",
            ),
            (
                r#"{"data":[{"index":0,"embedding":[1]},{"index":1,"embedding":[1e39]}]}"#,
                "non-finite",
            ),
            (
                r#"{"data":[{"index":0,"embedding":[1]},{"index":1,"embedding":[null]}]}"#,
                "non-number",
            ),
            (r#"{"data":[{"index":0,"embedding":[1]},{"ind"#, "not JSON"),
        ];
        for (body, says) in bad {
            let e = parse(Protocol::OpenAi, body, 2).unwrap_err();
            assert!(e.contains(says), "{body}: {e}");
        }
        let c = parse(
            Protocol::Cohere,
            r#"{"id":"x","embeddings":{"float":[[1,2]]},"texts":["a"],"meta":{"billed_units":{"input_tokens":3}}}"#,
            1,
        )
        .unwrap();
        assert_eq!((c.vectors, c.tokens), (vec![vec![1.0, 2.0]], Some(3)));
        let g = parse(
            Protocol::Gemini,
            r#"{"embeddings":[{"values":[0.5]},{"values":[0.25]}]}"#,
            2,
        )
        .unwrap();
        assert_eq!(g.vectors, vec![vec![0.5], vec![0.25]]);
    }

    /// An endless body: `{"data":[{"index":0,"embedding":[0,0,0,...` for as long as it is read.
    struct Endless {
        head: &'static [u8],
        sent: usize,
    }

    impl Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            for (i, b) in buf.iter_mut().enumerate() {
                let at = self.sent + i;
                *b = match self.head.get(at) {
                    Some(&h) => h,
                    None if (at - self.head.len()).is_multiple_of(2) => b'0',
                    None => b',',
                };
            }
            self.sent += buf.len();
            Ok(buf.len())
        }
    }

    #[test]
    fn an_endless_vector_stops_at_the_widest_accepted() {
        let body = Endless {
            head: br#"{"data":[{"index":0,"embedding":["#,
            sent: 0,
        };
        let e = read(Protocol::OpenAi, body, 50, None).unwrap_err();
        assert!(e.oversized, "{e:?}");
        assert!(e.message.contains("more than 16384 values"), "{e:?}");
        // a known width refuses at the first value past it
        let body = Endless {
            head: br#"{"data":[{"index":0,"embedding":["#,
            sent: 0,
        };
        let e = read(Protocol::OpenAi, body, 2, Some(384)).unwrap_err();
        assert!(e.message.contains("the 384 values"), "{e:?}");
    }

    #[test]
    fn an_endless_list_of_vectors_stops_past_the_texts() {
        let body = Endless {
            head: br#"{"embeddings":{"float":[[1],[1],[1],[1]"#,
            sent: 0,
        };
        let e = read(Protocol::Cohere, body, 3, None).unwrap_err();
        assert!(
            e.oversized && e.message.contains("more than 3 vectors"),
            "{e:?}"
        );
        let body = br#"{"data":[{"embedding":[1]},{"embedding":[1]},{"embedding":[1]}]}"#;
        let e = read(Protocol::OpenAi, &body[..], 2, None).unwrap_err();
        assert!(
            e.oversized && e.message.contains("more than 2 vectors"),
            "{e:?}"
        );
    }

    #[test]
    fn whitespace_without_end_stops_at_the_byte_cap() {
        struct Spaces;
        impl Read for Spaces {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                buf.fill(b' ');
                Ok(buf.len())
            }
        }
        let e = read(Protocol::OpenAi, Spaces, 1, Some(4)).unwrap_err();
        assert!(e.oversized, "{e:?}");
        assert!(
            e.message.contains(&byte_cap(1, Some(4)).to_string()),
            "{e:?}"
        );
    }

    #[test]
    fn a_correct_answer_reads_whatever_else_it_carries() {
        let body = br#"{"object":"list","data":[{"object":"embedding","index":1,"embedding":[3,4],
            "extra":{"deep":[[[1]]]}},{"index":0,"embedding":[1,2]}],"model":"m",
            "usage":{"prompt_tokens":5,"total_tokens":7}}"#;
        let a = read(Protocol::OpenAi, &body[..], 2, Some(2)).unwrap();
        assert_eq!(a.vectors, vec![vec![1.0, 2.0], vec![3.0, 4.0]]);
        assert_eq!(a.tokens, Some(7));
        let e = read(Protocol::OpenAi, &body[..], 2, Some(3)).unwrap_err();
        assert!(e.message.contains("where 3 were expected"), "{e:?}");
        let e = read(Protocol::OpenAi, &br#"{"data":[],"data":[]}"#[..], 0, None).unwrap_err();
        assert!(e.message.contains("given twice"), "{e:?}");
    }
}
