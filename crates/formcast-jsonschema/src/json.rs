//! A JSON value type for schemas and instances: objects keep their key
//! order (property order is the default output order) and numbers are exact
//! decimals (bounds such as `972783798187987123879878123.18878137` must not
//! be rounded to a float).

use crate::decimal::Decimal;

#[derive(Debug, Clone)]
pub enum Json {
    Null,
    Bool(bool),
    Num(Decimal),
    Str(String),
    Arr(Vec<Json>),
    /// Keys in document order; a duplicated key keeps its last value.
    Obj(Vec<(String, Json)>),
}

/// Deepest nesting accepted by the parser.
pub const MAX_JSON_DEPTH: usize = 512;

impl Json {
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(m) => m.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_obj(&self) -> Option<&[(String, Json)]> {
        match self {
            Json::Obj(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_arr(&self) -> Option<&[Json]> {
        match self {
            Json::Arr(a) => Some(a),
            _ => None,
        }
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "boolean",
            Json::Num(_) => "number",
            Json::Str(_) => "string",
            Json::Arr(_) => "array",
            Json::Obj(_) => "object",
        }
    }

    /// JSON Schema equality: numbers by value, objects regardless of key
    /// order.
    pub fn schema_eq(&self, other: &Json) -> bool {
        match (self, other) {
            (Json::Null, Json::Null) => true,
            (Json::Bool(a), Json::Bool(b)) => a == b,
            (Json::Num(a), Json::Num(b)) => a == b,
            (Json::Str(a), Json::Str(b)) => a == b,
            (Json::Arr(a), Json::Arr(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.schema_eq(y)),
            (Json::Obj(a), Json::Obj(b)) => {
                let a = dedup_keys(a);
                let b = dedup_keys(b);
                a.len() == b.len()
                    && a.iter().all(|(k, v)| b.iter().any(|(k2, v2)| k == k2 && v.schema_eq(v2)))
            }
            _ => false,
        }
    }

    /// Compact JSON text (keys in stored order, numbers in plain decimal).
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        self.write(&mut s);
        s
    }

    fn write(&self, out: &mut String) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Num(d) => out.push_str(&d.to_plain()),
            Json::Str(s) => write_string(s, out),
            Json::Arr(a) => {
                out.push('[');
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    v.write(out);
                }
                out.push(']');
            }
            Json::Obj(m) => {
                out.push('{');
                for (i, (k, v)) in m.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_string(k, out);
                    out.push(':');
                    v.write(out);
                }
                out.push('}');
            }
        }
    }

    /// Converts a serde_json value. Object key order is whatever serde_json
    /// kept (sorted unless its `preserve_order` feature is on); numbers are
    /// exact for integers and the shortest round-trip text of floats.
    /// A value nested deeper than [`MAX_JSON_DEPTH`] is an error, as in
    /// [`parse`] (a `Value` built in code has no depth limit).
    pub fn from_serde(v: &serde_json::Value) -> Result<Json, String> {
        // The depth first, without recursion; then a conversion that
        // recurses at most that deep.
        let mut stack = vec![(v, 1usize)];
        while let Some((x, d)) = stack.pop() {
            if d > MAX_JSON_DEPTH {
                return Err(format!("the value is nested deeper than {MAX_JSON_DEPTH} levels"));
            }
            match x {
                serde_json::Value::Array(a) => stack.extend(a.iter().map(|y| (y, d + 1))),
                serde_json::Value::Object(m) => stack.extend(m.values().map(|y| (y, d + 1))),
                _ => {}
            }
        }
        Ok(Json::convert_serde(v))
    }

    fn convert_serde(v: &serde_json::Value) -> Json {
        match v {
            serde_json::Value::Null => Json::Null,
            serde_json::Value::Bool(b) => Json::Bool(*b),
            serde_json::Value::Number(n) => {
                let d = if let Some(i) = n.as_i64() {
                    Decimal::from_i64(i)
                } else if let Some(u) = n.as_u64() {
                    Decimal::parse(&u.to_string()).expect("integer")
                } else {
                    Decimal::from_f64(n.as_f64().unwrap_or(0.0)).unwrap_or_else(Decimal::zero)
                };
                Json::Num(d)
            }
            serde_json::Value::String(s) => Json::Str(s.clone()),
            serde_json::Value::Array(a) => Json::Arr(a.iter().map(Json::convert_serde).collect()),
            serde_json::Value::Object(m) => Json::Obj(m.iter().map(|(k, v)| (k.clone(), Json::convert_serde(v))).collect()),
        }
    }
}

fn dedup_keys(m: &[(String, Json)]) -> Vec<(&String, &Json)> {
    let mut out: Vec<(&String, &Json)> = Vec::with_capacity(m.len());
    for (k, v) in m {
        if let Some(slot) = out.iter_mut().find(|(k2, _)| *k2 == k) {
            slot.1 = v;
        } else {
            out.push((k, v));
        }
    }
    out
}

/// Writes `s` as a JSON string the way `json.dumps(ensure_ascii=False)` does.
pub fn write_string(s: &str, out: &mut String) {
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
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Why JSON text was not parsed: its message carries the byte offset;
/// `too_deep` tells a nesting limit ([`MAX_JSON_DEPTH`]) from bad syntax.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonError {
    pub message: String,
    pub too_deep: bool,
}

impl std::fmt::Display for JsonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Parses JSON text. Error messages carry the byte offset.
pub fn parse(text: &str) -> Result<Json, JsonError> {
    let mut p = Parser { b: text.as_bytes(), i: 0, text };
    p.ws();
    let v = p.value(0).map_err(|message| {
        let too_deep = message.starts_with(TOO_DEEP);
        JsonError { message, too_deep }
    })?;
    p.ws();
    if p.i != p.b.len() {
        return Err(JsonError { message: p.err("trailing characters after the JSON value"), too_deep: false });
    }
    Ok(v)
}

const TOO_DEEP: &str = "arrays and objects nested deeper than";

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
    text: &'a str,
}

impl<'a> Parser<'a> {
    fn err(&self, m: &str) -> String {
        format!("{m} at byte {}", self.i)
    }

    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json, String> {
        if depth > MAX_JSON_DEPTH {
            return Err(self.err(&format!("{TOO_DEEP} {MAX_JSON_DEPTH} levels")));
        }
        match self.b.get(self.i) {
            None => Err(self.err("unexpected end of input")),
            Some(b'{') => {
                self.i += 1;
                let mut m: Vec<(String, Json)> = Vec::new();
                self.ws();
                if self.b.get(self.i) == Some(&b'}') {
                    self.i += 1;
                    return Ok(Json::Obj(m));
                }
                loop {
                    self.ws();
                    if self.b.get(self.i) != Some(&b'"') {
                        return Err(self.err("expected a string key"));
                    }
                    let k = self.string()?;
                    self.ws();
                    if self.b.get(self.i) != Some(&b':') {
                        return Err(self.err("expected ':'"));
                    }
                    self.i += 1;
                    self.ws();
                    let v = self.value(depth + 1)?;
                    if let Some(slot) = m.iter_mut().find(|(k2, _)| *k2 == k) {
                        slot.1 = v;
                    } else {
                        m.push((k, v));
                    }
                    self.ws();
                    match self.b.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            return Ok(Json::Obj(m));
                        }
                        _ => return Err(self.err("expected ',' or '}'")),
                    }
                }
            }
            Some(b'[') => {
                self.i += 1;
                let mut a = Vec::new();
                self.ws();
                if self.b.get(self.i) == Some(&b']') {
                    self.i += 1;
                    return Ok(Json::Arr(a));
                }
                loop {
                    self.ws();
                    a.push(self.value(depth + 1)?);
                    self.ws();
                    match self.b.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return Ok(Json::Arr(a));
                        }
                        _ => return Err(self.err("expected ',' or ']'")),
                    }
                }
            }
            Some(b'"') => Ok(Json::Str(self.string()?)),
            Some(b't') => self.lit("true", Json::Bool(true)),
            Some(b'f') => self.lit("false", Json::Bool(false)),
            Some(b'n') => self.lit("null", Json::Null),
            Some(c) if *c == b'-' || c.is_ascii_digit() => self.number(),
            Some(_) => Err(self.err("unexpected character")),
        }
    }

    fn lit(&mut self, word: &str, v: Json) -> Result<Json, String> {
        if self.b[self.i..].starts_with(word.as_bytes()) {
            self.i += word.len();
            Ok(v)
        } else {
            Err(self.err("invalid literal"))
        }
    }

    fn number(&mut self) -> Result<Json, String> {
        let start = self.i;
        if self.b.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        let int_start = self.i;
        while self.i < self.b.len() && self.b[self.i].is_ascii_digit() {
            self.i += 1;
        }
        let int_len = self.i - int_start;
        if int_len == 0 || (int_len > 1 && self.b[int_start] == b'0') {
            return Err(self.err("invalid number"));
        }
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            let f = self.i;
            while self.i < self.b.len() && self.b[self.i].is_ascii_digit() {
                self.i += 1;
            }
            if self.i == f {
                return Err(self.err("invalid number"));
            }
        }
        if matches!(self.b.get(self.i), Some(b'e') | Some(b'E')) {
            self.i += 1;
            if matches!(self.b.get(self.i), Some(b'+') | Some(b'-')) {
                self.i += 1;
            }
            let e = self.i;
            while self.i < self.b.len() && self.b[self.i].is_ascii_digit() {
                self.i += 1;
            }
            if self.i == e {
                return Err(self.err("invalid number"));
            }
        }
        Decimal::parse(&self.text[start..self.i])
            .map(Json::Num)
            .ok_or_else(|| self.err("number out of the supported range"))
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let h = self.b.get(self.i..self.i + 4).ok_or_else(|| self.err("truncated \\u escape"))?;
        let s = std::str::from_utf8(h).map_err(|_| self.err("invalid \\u escape"))?;
        let v = u32::from_str_radix(s, 16).map_err(|_| self.err("invalid \\u escape"))?;
        self.i += 4;
        Ok(v)
    }

    fn string(&mut self) -> Result<String, String> {
        self.i += 1; // opening quote
        let mut out = String::new();
        loop {
            let start = self.i;
            while self.i < self.b.len() && self.b[self.i] != b'"' && self.b[self.i] != b'\\' && self.b[self.i] >= 0x20 {
                self.i += 1;
            }
            out.push_str(&self.text[start..self.i]);
            match self.b.get(self.i) {
                None => return Err(self.err("unterminated string")),
                Some(b'"') => {
                    self.i += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.i += 1;
                    let c = *self.b.get(self.i).ok_or_else(|| self.err("unterminated escape"))?;
                    self.i += 1;
                    match c {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let mut cp = self.hex4()?;
                            if (0xD800..0xDC00).contains(&cp) && self.b[self.i..].starts_with(b"\\u") {
                                self.i += 2;
                                let lo = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return Err(self.err("unpaired surrogate in \\u escape"));
                                }
                                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                            }
                            out.push(char::from_u32(cp).ok_or_else(|| self.err("unpaired surrogate in \\u escape"))?);
                        }
                        _ => return Err(self.err("invalid escape")),
                    }
                }
                Some(_) => return Err(self.err("control character in string")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_order_and_precision() {
        let v = parse(r#"{"b": 1, "a": [true, null, "x\n\u00e9\ud83d\ude00"], "n": 972783798187987123879878123.18878137}"#).unwrap();
        assert_eq!(v.to_text(), "{\"b\":1,\"a\":[true,null,\"x\\né😀\"],\"n\":972783798187987123879878123.18878137}");
        assert!(parse("[1,]").is_err());
        assert!(parse("01").is_err());
        assert!(parse(r#""\ud800""#).is_err());
    }

    #[test]
    fn schema_equality() {
        let a = parse(r#"{"a": 1, "b": [1.0]}"#).unwrap();
        let b = parse(r#"{"b": [1], "a": 1.00}"#).unwrap();
        assert!(a.schema_eq(&b));
        assert!(!parse("[1,2]").unwrap().schema_eq(&parse("[2,1]").unwrap()));
        assert!(!parse("false").unwrap().schema_eq(&parse("0").unwrap()));
    }
}
