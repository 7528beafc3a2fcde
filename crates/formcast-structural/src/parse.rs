//! JSON → the typed tree of [`crate::format`], enforcing every rule of the
//! reference engine plus the ones it misses (empty dispatch patterns,
//! excludes that hide a trigger, negative token ids, fractional counts,
//! unknown fields). Messages keep the reference wording where it has one;
//! the error adds the path, the format type and the field.

use formcast_grammar::TokenId;
use formcast_jsonschema::{Json, Style};

use crate::error::{ErrorKind, Result, StructuralError};
use crate::format::{Begin, End, Format, Node, Tag};

/// Resolves a token string to the first id whose decoded text matches it.
pub type Resolver<'a> = &'a dyn Fn(&str) -> Option<TokenId>;

/// Deepest nesting of format objects accepted. Real tags nest a handful of
/// levels; each level costs several stack frames in every pass (tens of KB
/// in debug builds), so the bound keeps 2 MB thread stacks safe.
pub const MAX_FORMAT_DEPTH: usize = 48;

const STYLES_MSG: &str = "style must be \"json\", \"qwen_xml\", \"minimax_xml\", \"minimax_m3_xml\", \"deepseek_xml\", \"glm_xml\", \"cohere_xml\", \"kimi_k3_xml\", or \"deepseek_v4_1_xml\"";

/// Reads structural tags. Holds the token resolver and collects warnings.
pub struct Reader<'a> {
    resolve: Option<Resolver<'a>>,
    pub warnings: Vec<String>,
}

fn invalid(path: &str, format: &str, field: &str, msg: impl Into<String>) -> StructuralError {
    StructuralError::new(ErrorKind::Invalid, path, format, field, msg)
}

fn join(path: &str, field: &str) -> String {
    format!("{path}.{field}")
}

/// An object being read as format `ty` at `path`.
struct Obj<'j> {
    m: &'j [(String, Json)],
    path: String,
    ty: &'static str,
}

/// An integer value, or why it is not one.
enum Int {
    Yes(i64),
    Fraction,
    /// Beyond i64 (sign kept).
    Huge(bool),
    NotNumber,
}

fn int_of(j: &Json) -> Int {
    match j {
        Json::Num(d) if !d.is_integer() => Int::Fraction,
        Json::Num(d) => match d.to_plain().parse::<i64>() {
            Ok(v) => Int::Yes(v),
            Err(_) => Int::Huge(d.neg),
        },
        _ => Int::NotNumber,
    }
}

impl<'j> Obj<'j> {
    fn get(&self, name: &str) -> Option<&'j Json> {
        self.m.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v)
    }

    fn at(&self, field: &str) -> String {
        join(&self.path, field)
    }

    fn err(&self, field: &str, msg: impl Into<String>) -> StructuralError {
        let path = if field.is_empty() { self.path.clone() } else { self.at(field) };
        invalid(&path, self.ty, field, msg)
    }

    /// Unknown fields are refused: a misspelt option must not be silently
    /// ignored (the reference ignores them).
    fn only(&self, allowed: &[&str]) -> Result<()> {
        for (k, _) in self.m {
            if k != "type" && !allowed.contains(&k.as_str()) {
                let list = if allowed.is_empty() { "none".to_string() } else { allowed.join(", ") };
                return Err(self.err(k, format!("unknown field '{k}' for a {} format (fields: {list})", self.ty)));
            }
        }
        Ok(())
    }

    fn bool_or(&self, name: &str, default: bool) -> Result<bool> {
        match self.get(name) {
            None => Ok(default),
            Some(Json::Bool(b)) => Ok(*b),
            Some(_) => Err(self.err(name, format!("{name} must be a boolean"))),
        }
    }

    /// `null`/absent → None; otherwise a non-negative 32-bit integer.
    fn budget(&self, name: &str) -> Result<Option<u32>> {
        let msg = || format!("{name} in {} must be a non-negative 32-bit integer or null", self.ty);
        match self.get(name) {
            None | Some(Json::Null) => Ok(None),
            Some(j) => match int_of(j) {
                Int::Yes(v) if (0..=i32::MAX as i64).contains(&v) => Ok(Some(v as u32)),
                _ => Err(self.err(name, msg())),
            },
        }
    }

    /// A list of strings; `""` elements are refused (an empty stop string
    /// would either mean nothing or forbid everything).
    fn strings(&self, name: &str, what: &str) -> Result<Vec<String>> {
        let Some(j) = self.get(name) else { return Ok(Vec::new()) };
        let Some(arr) = j.as_arr() else {
            return Err(self.err(name, format!("{what} must be an array of non-empty strings")));
        };
        arr.iter()
            .enumerate()
            .map(|(i, e)| match e.as_str() {
                Some(s) if !s.is_empty() => Ok(s.to_string()),
                _ => Err(invalid(&format!("{}[{i}]", self.at(name)), self.ty, name, format!("{what} must be an array of non-empty strings"))),
            })
            .collect()
    }
}

impl<'a> Reader<'a> {
    pub fn new(resolve: Option<Resolver<'a>>) -> Self {
        Reader { resolve, warnings: Vec::new() }
    }

    /// Reads a whole request: `{"type": "structural_tag", "format": {...}}`,
    /// the legacy `{"type": "structural_tag", "structures": [...],
    /// "triggers": [...]}`, or a bare format object.
    pub fn request(&mut self, j: &Json) -> Result<Node> {
        let Some(m) = j.as_obj() else {
            return Err(invalid("<root>", "structural_tag", "", "Structural tag must be an object"));
        };
        let ty = m.iter().rev().find(|(k, _)| k == "type").map(|(_, v)| v);
        match ty {
            Some(Json::Str(t)) if t == "structural_tag" => {}
            Some(Json::Str(_)) | None => return self.format(j, "format", 0),
            Some(_) => {
                return Err(invalid("<root>.type", "structural_tag", "type", "Structural tag's type must be a string \"structural_tag\""))
            }
        }
        let o = Obj { m, path: "<root>".into(), ty: "structural_tag" };
        o.only(&["format", "structures", "triggers", "at_least_one"])?;
        if let Some(f) = o.get("format") {
            if o.get("structures").is_some() || o.get("triggers").is_some() || o.get("at_least_one").is_some() {
                return Err(o.err("structures", "a structural tag has either a format field or the legacy structures and triggers fields, not both"));
            }
            return self.format(f, "format", 0);
        }
        if o.get("structures").is_some() || o.get("triggers").is_some() {
            return self.legacy(&o);
        }
        Err(o.err("format", "Structural tag must have a format field"))
    }

    /// Legacy form: each structure `{begin, schema, end}` is a tag whose
    /// content is a JSON schema, dispatched on `triggers` in free text (a
    /// `triggered_tags`); `at_least_one` (SGLang sends it for
    /// `tool_choice: "required"`) requires a tag before the text may end.
    fn legacy(&mut self, o: &Obj) -> Result<Node> {
        let structures = o
            .get("structures")
            .and_then(Json::as_arr)
            .ok_or_else(|| o.err("structures", "Structural tag must have a structures field with an array"))?;
        let mut tags = Vec::new();
        for (i, s) in structures.iter().enumerate() {
            let path = format!("structures[{i}]");
            let Some(m) = s.as_obj() else { return Err(invalid(&path, "structure", "", "a structure must be an object")) };
            let so = Obj { m, path: path.clone(), ty: "structure" };
            so.only(&["begin", "schema", "end"])?;
            let begin = so.get("begin").and_then(Json::as_str).ok_or_else(|| so.err("begin", "a structure's begin must be a string"))?;
            let end = so.get("end").and_then(Json::as_str).ok_or_else(|| so.err("end", "a structure's end must be a string"))?;
            let schema = match so.get("schema") {
                Some(j @ (Json::Obj(_) | Json::Bool(_))) => j.clone(),
                // Some clients send the schema as JSON text.
                Some(Json::Str(text)) => formcast_jsonschema::json::parse(text)
                    .map_err(|e| so.err("schema", format!("the schema text is not valid JSON: {e}")))?,
                _ => return Err(so.err("schema", "a structure must have a schema field with an object or boolean value")),
            };
            let content = Node {
                path: so.at("schema"),
                format: Format::JsonSchema { schema, style: Style::Json, any_order: false, max_whitespace_cnt: None, excludes: Vec::new() },
            };
            tags.push(Tag { path, begin: Begin::Str(begin.into()), content: Box::new(content), end: End::Strs(vec![end.into()]) });
        }
        let triggers = o.strings("triggers", "triggers")?;
        let node = Node {
            path: "<root>".into(),
            format: Format::TriggeredTags {
                triggers,
                tags,
                excludes: Vec::new(),
                at_least_one: o.bool_or("at_least_one", false)?,
                stop_after_first: false,
            },
        };
        check_triggered(&node.path, &node.format)?;
        Ok(node)
    }

    /// Reads the format object `j` found at `path`.
    pub fn format(&mut self, j: &Json, path: &str, depth: usize) -> Result<Node> {
        if depth > MAX_FORMAT_DEPTH {
            return Err(StructuralError::new(
                ErrorKind::Limit,
                path,
                "structural_tag",
                "",
                format!("formats are nested more than {MAX_FORMAT_DEPTH} levels deep"),
            ));
        }
        let Some(m) = j.as_obj() else { return Err(invalid(path, "format", "", "Format must be an object")) };
        let ty: &str = match m.iter().rev().find(|(k, _)| k == "type").map(|(_, v)| v) {
            Some(Json::Str(t)) => t,
            Some(_) => return Err(invalid(&join(path, "type"), "format", "type", "Format's type must be a string")),
            None => infer_type(m).ok_or_else(|| {
                invalid(path, "format", "type", format!("Invalid format: {} (add a \"type\" field)", j.to_text()))
            })?,
        };
        let ty: &'static str = match TYPES.iter().find(|t| **t == ty) {
            Some(t) => t,
            None => return Err(invalid(&join(path, "type"), "format", "type", format!("Format type not recognized: {ty}"))),
        };
        let o = Obj { m, path: path.to_string(), ty };
        let format = self.body(&o, depth)?;
        Ok(Node { path: path.to_string(), format })
    }

    fn child(&mut self, o: &Obj, field: &str, depth: usize, missing: &str) -> Result<Box<Node>> {
        let j = o.get(field).ok_or_else(|| o.err(field, missing.to_string()))?;
        Ok(Box::new(self.format(j, &o.at(field), depth + 1)?))
    }

    fn elements(&mut self, o: &Obj, depth: usize, name: &str) -> Result<Vec<Node>> {
        o.only(&["elements"])?;
        let arr = o
            .get("elements")
            .and_then(Json::as_arr)
            .ok_or_else(|| o.err("elements", format!("{name} format must have an elements field with an array")))?;
        if arr.is_empty() {
            return Err(o.err("elements", format!("{name} format must have at least one element")));
        }
        arr.iter().enumerate().map(|(i, e)| self.format(e, &format!("{}[{i}]", o.at("elements")), depth + 1)).collect()
    }

    fn body(&mut self, o: &Obj, depth: usize) -> Result<Format> {
        Ok(match o.ty {
            "const_string" => {
                o.only(&["value"])?;
                let value = o.get("value").and_then(Json::as_str).ok_or_else(|| o.err("value", "ConstString format must have a value field with a string"))?;
                Format::ConstString { value: value.into() }
            }
            "json_schema" | "qwen_xml_parameter" => self.json_schema(o)?,
            "grammar" => {
                o.only(&["grammar"])?;
                match o.get("grammar").and_then(Json::as_str) {
                    Some(g) if !g.is_empty() => Format::Grammar { ebnf: g.into() },
                    _ => return Err(o.err("grammar", "Grammar format must have a grammar field with a non-empty string")),
                }
            }
            "lark" => {
                o.only(&["grammar"])?;
                match o.get("grammar").and_then(Json::as_str) {
                    Some(g) if !g.is_empty() => Format::Lark { text: g.into() },
                    _ => return Err(o.err("grammar", "Lark format must have a grammar field with a non-empty string")),
                }
            }
            "regex" => {
                o.only(&["pattern"])?;
                match o.get("pattern").and_then(Json::as_str) {
                    Some(p) if !p.is_empty() => Format::Regex { pattern: p.into() },
                    _ => return Err(o.err("pattern", "Regex format must have a pattern field with a non-empty string")),
                }
            }
            "any_text" => {
                o.only(&["excludes", "max_tokens", "max_chars"])?;
                // The reference accepts "" here (and ignores it); refused
                // like everywhere else.
                let excludes = o.strings("excludes", "AnyText format's excludes")?;
                Format::AnyText { excludes, max_tokens: o.budget("max_tokens")?, max_chars: o.budget("max_chars")? }
            }
            "sequence" => Format::Sequence { elements: self.elements(o, depth, "Sequence")? },
            "or" => Format::Or { elements: self.elements(o, depth, "Or")? },
            "optional" | "plus" | "star" => {
                o.only(&["content"])?;
                let name = match o.ty {
                    "optional" => "Optional",
                    "plus" => "Plus",
                    _ => "Star",
                };
                let content = self.child(o, "content", depth, &format!("{name} format must have a content field"))?;
                match o.ty {
                    "optional" => Format::Optional { content },
                    "plus" => Format::Plus { content },
                    _ => Format::Star { content },
                }
            }
            "repeat" => self.repeat(o, depth)?,
            "tag" => Format::Tag(self.tag_body(o, depth)?),
            "triggered_tags" => {
                o.only(&["triggers", "tags", "excludes", "at_least_one", "stop_after_first"])?;
                let triggers = match o.get("triggers").and_then(Json::as_arr) {
                    None => return Err(o.err("triggers", "Triggered tags format must have a triggers field with an array")),
                    Some([]) => return Err(o.err("triggers", "Triggered tags format's triggers must be non-empty")),
                    Some(_) => o.strings("triggers", "Triggered tags format's triggers")?,
                };
                let tags = self.tag_list(o, depth, "Triggered tags format")?;
                let excludes = o.strings("excludes", "Triggered tags format's excludes")?;
                let f = Format::TriggeredTags {
                    triggers,
                    tags,
                    excludes,
                    at_least_one: o.bool_or("at_least_one", false)?,
                    stop_after_first: o.bool_or("stop_after_first", false)?,
                };
                check_triggered(&o.path, &f)?;
                f
            }
            "tags_with_separator" => {
                o.only(&["tags", "separator", "at_least_one", "stop_after_first"])?;
                let tags = self.tag_list(o, depth, "Tags with separator format")?;
                let separator = o
                    .get("separator")
                    .and_then(Json::as_str)
                    .ok_or_else(|| o.err("separator", "Tags with separator format's separator field must be a string"))?;
                Format::TagsWithSeparator {
                    tags,
                    separator: separator.into(),
                    at_least_one: o.bool_or("at_least_one", false)?,
                    stop_after_first: o.bool_or("stop_after_first", false)?,
                }
            }
            "dispatch" => self.dispatch(o, depth)?,
            "token" => {
                o.only(&["token"])?;
                let j = o.get("token").ok_or_else(|| o.err("token", "TokenFormat must have a token field"))?;
                Format::Token { id: self.token(j, &o.at("token"), o.ty, "token")? }
            }
            "exclude_token" => {
                o.only(&["exclude_tokens"])?;
                Format::ExcludeToken { excludes: self.token_list(o, "exclude_tokens")? }
            }
            "any_tokens" => {
                o.only(&["exclude_tokens", "max_tokens"])?;
                Format::AnyTokens { excludes: self.token_list(o, "exclude_tokens")?, max_tokens: o.budget("max_tokens")? }
            }
            "token_triggered_tags" => self.token_triggered(o, depth)?,
            "token_dispatch" => self.token_dispatch(o, depth)?,
            other => unreachable!("type {other} is in TYPES"),
        })
    }

    fn json_schema(&mut self, o: &Obj) -> Result<Format> {
        let legacy = o.ty == "qwen_xml_parameter";
        if legacy {
            o.only(&["json_schema"])?;
        } else {
            o.only(&["json_schema", "style", "any_order", "max_whitespace_cnt", "excludes"])?;
        }
        let schema = match o.get("json_schema") {
            // A JSON *string* is refused like in the reference: it is almost
            // always a schema serialized twice by mistake.
            Some(j @ (Json::Obj(_) | Json::Bool(_))) => j.clone(),
            _ => return Err(o.err("json_schema", "JSON schema format must have a json_schema field with a object or boolean value")),
        };
        let style = if legacy {
            Style::QwenXml
        } else {
            match o.get("style") {
                None => Style::Json,
                // The reference silently treats a non-string style as "json".
                Some(Json::Str(s)) => Style::parse(s).ok_or_else(|| o.err("style", STYLES_MSG))?,
                Some(_) => return Err(o.err("style", STYLES_MSG)),
            }
        };
        let any_order = o.bool_or("any_order", false)?;
        let max_whitespace_cnt = match o.get("max_whitespace_cnt") {
            None | Some(Json::Null) => None,
            Some(j) => match int_of(j) {
                Int::Yes(v) if v > 0 && v <= u32::MAX as i64 => Some(v as u32),
                Int::Yes(_) | Int::Huge(true) => return Err(o.err("max_whitespace_cnt", "max_whitespace_cnt must be positive.")),
                Int::Huge(false) => return Err(o.err("max_whitespace_cnt", "max_whitespace_cnt must be at most 4294967295")),
                _ => return Err(o.err("max_whitespace_cnt", "max_whitespace_cnt must be an integer or null")),
            },
        };
        let excludes = o.strings("excludes", "JSONSchema format's excludes")?;
        if !excludes.is_empty() {
            if matches!(style, Style::CohereXml | Style::MinimaxM3Xml) {
                let name = if style == Style::CohereXml { "cohere_xml" } else { "minimax_m3_xml" };
                return Err(o.err("excludes", format!("JSONSchemaFormat.excludes is not supported for {name}")));
            }
            // Formatting whitespace next to an XML value is not part of it:
            // an exclude there would depend on the layout.
            let formatting = |c: char| matches!(c, ' ' | '\t' | '\n' | '\r');
            if style != Style::Json {
                if let Some(i) = excludes.iter().position(|e| e.starts_with(formatting) || e.ends_with(formatting)) {
                    return Err(invalid(&format!("{}[{i}]", o.at("excludes")), o.ty, "excludes", "XML JSONSchemaFormat.excludes must not start or end with formatting whitespace"));
                }
            }
            // Excludes are removed from strings; these checks make that the
            // whole text (see formcast_jsonschema::SchemaOptions::excludes).
            for (i, x) in excludes.iter().enumerate() {
                if let Some(reason) = formcast_jsonschema::exclude_problem(x) {
                    return Err(invalid(&format!("{}[{i}]", o.at("excludes")), o.ty, "excludes", format!("JSONSchemaFormat.excludes: {reason}")));
                }
            }
        }
        Ok(Format::JsonSchema { schema, style, any_order, max_whitespace_cnt, excludes })
    }

    fn repeat(&mut self, o: &Obj, depth: usize) -> Result<Format> {
        o.only(&["min", "max", "content"])?;
        let min = match o.get("min").map(int_of) {
            None | Some(Int::NotNumber) => return Err(o.err("min", "Repeat format must have a min field (number)")),
            // The reference crashes with an internal error here.
            Some(Int::Fraction) => return Err(o.err("min", "Repeat min must be an integer")),
            Some(Int::Yes(v)) if v < 0 => return Err(o.err("min", "Repeat min must be >= 0")),
            Some(Int::Huge(true)) => return Err(o.err("min", "Repeat min must be >= 0")),
            Some(Int::Yes(v)) if v <= i32::MAX as i64 => v as u32,
            Some(_) => return Err(o.err("min", "Repeat min is too large, must be <= 2147483647")),
        };
        let max = match o.get("max").map(int_of) {
            None | Some(Int::NotNumber) => return Err(o.err("max", "Repeat format must have a max field (number)")),
            Some(Int::Fraction) => return Err(o.err("max", "Repeat max must be an integer")),
            Some(Int::Yes(-1)) => None,
            Some(Int::Yes(v)) if v < -1 => return Err(o.err("max", "Repeat max must be -1 (unbounded) or >= 0")),
            Some(Int::Huge(true)) => return Err(o.err("max", "Repeat max must be -1 (unbounded) or >= 0")),
            Some(Int::Yes(v)) if v <= i32::MAX as i64 => Some(v as u32),
            Some(_) => {
                self.warnings.push(format!("{}: Repeat max is larger than 2147483647 and is treated as unbounded", o.at("max")));
                None
            }
        };
        if let Some(mx) = max {
            if min > mx {
                return Err(o.err("min", format!("Repeat min must be <= max (min {min}, max {mx})")));
            }
        }
        let content = self.child(o, "content", depth, "Repeat format must have a content field")?;
        Ok(Format::Repeat { min, max, content })
    }

    /// A tag inside `tags` lists: `"type": "tag"` may be omitted.
    fn tag(&mut self, j: &Json, path: &str, depth: usize) -> Result<Tag> {
        let Some(m) = j.as_obj() else { return Err(invalid(path, "tag", "", "a tag must be an object")) };
        match m.iter().rev().find(|(k, _)| k == "type").map(|(_, v)| v) {
            None => {}
            Some(Json::Str(t)) if t == "tag" => {}
            Some(other) => {
                return Err(invalid(&join(path, "type"), "tag", "type", format!("the elements of tags must be tag formats, not {}", other.to_text())))
            }
        }
        self.tag_body(&Obj { m, path: path.to_string(), ty: "tag" }, depth)
    }

    fn tag_body(&mut self, o: &Obj, depth: usize) -> Result<Tag> {
        o.only(&["begin", "content", "end"])?;
        let begin = match o.get("begin") {
            Some(Json::Str(s)) => Begin::Str(s.clone()),
            Some(j @ Json::Obj(_)) => Begin::Token(self.token_format(j, &o.at("begin"))?),
            _ => return Err(o.err("begin", "Tag format's begin field must be a string or a token format")),
        };
        let content = self.child(o, "content", depth, "Tag format must have a content field")?;
        let end = match o.get("end") {
            None => return Err(o.err("end", "Tag format must have an end field")),
            Some(Json::Str(s)) => End::Strs(vec![s.clone()]),
            Some(Json::Arr(a)) => {
                if a.is_empty() {
                    return Err(o.err("end", "Tag format's end array cannot be empty"));
                }
                let mut ends = Vec::new();
                for (i, e) in a.iter().enumerate() {
                    match e.as_str() {
                        Some(s) => ends.push(s.to_string()),
                        None => return Err(invalid(&format!("{}[{i}]", o.at("end")), "tag", "end", "Tag format's end array must contain only strings")),
                    }
                }
                End::Strs(ends)
            }
            Some(j @ Json::Obj(_)) => End::Token(self.token_format(j, &o.at("end"))?),
            Some(_) => return Err(o.err("end", "Tag format's end field must be a string, an array of strings or a token format")),
        };
        Ok(Tag { path: o.path.clone(), begin, content, end })
    }

    /// `{"type": "token", "token": ...}` used as a tag's begin or end.
    fn token_format(&mut self, j: &Json, path: &str) -> Result<TokenId> {
        let m = j.as_obj().expect("caller checked");
        match m.iter().rev().find(|(k, _)| k == "type").map(|(_, v)| v) {
            Some(Json::Str(t)) if t == "token" => {}
            _ => return Err(invalid(path, "tag", "", "a tag's begin and end must be strings or token formats ({\"type\": \"token\", ...})")),
        }
        let o = Obj { m, path: path.to_string(), ty: "token" };
        o.only(&["token"])?;
        let t = o.get("token").ok_or_else(|| o.err("token", "TokenFormat must have a token field"))?;
        self.token(t, &o.at("token"), "token", "token")
    }

    fn tag_list(&mut self, o: &Obj, depth: usize, name: &str) -> Result<Vec<Tag>> {
        let arr = o.get("tags").and_then(Json::as_arr).ok_or_else(|| o.err("tags", format!("{name} must have a tags field with an array")))?;
        if arr.is_empty() {
            return Err(o.err("tags", format!("{name}'s tags must be non-empty")));
        }
        arr.iter().enumerate().map(|(i, t)| self.tag(t, &format!("{}[{i}]", o.at("tags")), depth + 1)).collect()
    }

    /// A token id or token string (resolved through the tokenizer).
    fn token(&self, j: &Json, path: &str, ty: &str, field: &str) -> Result<TokenId> {
        match j {
            Json::Str(s) if s.is_empty() => Err(invalid(path, ty, field, "Token string must be non-empty")),
            Json::Str(s) => {
                let Some(resolve) = self.resolve else {
                    return Err(StructuralError::new(ErrorKind::Token, path, ty, field, format!("Token string resolution requires tokenizer_info (token \"{s}\")")));
                };
                resolve(s).ok_or_else(|| StructuralError::new(ErrorKind::Token, path, ty, field, format!("Token string \"{s}\" not found in vocabulary")))
            }
            Json::Num(_) => match int_of(j) {
                Int::Fraction => Err(invalid(path, ty, field, "Token ID must be an integer, not a float")),
                Int::Yes(v) if v < 0 => Err(invalid(path, ty, field, "Token ID must be non-negative")),
                Int::Huge(true) => Err(invalid(path, ty, field, "Token ID must be non-negative")),
                Int::Yes(v) if v <= u32::MAX as i64 => Ok(v as TokenId),
                _ => Err(invalid(path, ty, field, "Token ID is too large (at most 4294967295)")),
            },
            _ => Err(invalid(path, ty, field, format!("{field} must be a token id (integer) or a token string"))),
        }
    }

    fn token_list(&self, o: &Obj, name: &str) -> Result<Vec<TokenId>> {
        let Some(j) = o.get(name) else { return Ok(Vec::new()) };
        let arr = j.as_arr().ok_or_else(|| o.err(name, format!("{name} must be an array")))?;
        arr.iter().enumerate().map(|(i, e)| self.token(e, &format!("{}[{i}]", o.at(name)), o.ty, name)).collect()
    }

    fn dispatch(&mut self, o: &Obj, depth: usize) -> Result<Format> {
        o.only(&["rules", "loop", "excludes"])?;
        let arr = o.get("rules").and_then(Json::as_arr).ok_or_else(|| o.err("rules", "TagDispatch format must have a rules field with an array"))?;
        if arr.is_empty() {
            return Err(o.err("rules", "TagDispatch format rules must be non-empty"));
        }
        let mut rules = Vec::new();
        for (i, pair) in arr.iter().enumerate() {
            let path = format!("{}[{i}]", o.at("rules"));
            let Some([pattern, content]) = pair.as_arr() else {
                return Err(invalid(&path, "dispatch", "rules", "TagDispatch pair must be a 2-element array"));
            };
            let pattern = match pattern.as_str() {
                // The reference accepts "" (a trigger that fires before any
                // text, which then can never be plain text).
                Some("") => return Err(invalid(&format!("{path}[0]"), "dispatch", "rules", "a dispatch pattern must be a non-empty string")),
                Some(p) => p.to_string(),
                None => return Err(invalid(&format!("{path}[0]"), "dispatch", "rules", "TagDispatch pair first element must be a string")),
            };
            let node = self.format(content, &format!("{path}[1]"), depth + 1)?;
            rules.push((pattern, node));
        }
        let excludes = o.strings("excludes", "Dispatch format's excludes")?;
        let patterns: Vec<&str> = rules.iter().map(|(p, _)| p.as_str()).collect();
        check_patterns(&o.path, "dispatch", "rules", &patterns, &excludes)?;
        Ok(Format::Dispatch { rules, repeat: o.bool_or("loop", true)?, excludes })
    }

    fn token_triggered(&mut self, o: &Obj, depth: usize) -> Result<Format> {
        o.only(&["trigger_tokens", "tags", "exclude_tokens", "at_least_one", "stop_after_first"])?;
        if o.get("trigger_tokens").is_none() {
            return Err(o.err("trigger_tokens", "TokenTriggeredTagsFormat must have a trigger_tokens field"));
        }
        let triggers = self.token_list(o, "trigger_tokens")?;
        if triggers.is_empty() {
            return Err(o.err("trigger_tokens", "trigger_tokens must be non-empty"));
        }
        let tags = self.tag_list(o, depth, "TokenTriggeredTagsFormat")?;
        let excludes = self.token_list(o, "exclude_tokens")?;
        for (i, t) in tags.iter().enumerate() {
            let Begin::Token(b) = t.begin else {
                return Err(invalid(&join(&t.path, "begin"), "token_triggered_tags", "tags", "Tags in token_triggered_tags must have a token format begin, not a string"));
            };
            match triggers.iter().filter(|&&x| x == b).count() {
                0 => return Err(invalid(&join(&t.path, "begin"), "token_triggered_tags", "tags", format!("Tag does not match any trigger (tags[{i}] begins with token {b})"))),
                1 => {}
                _ => return Err(invalid(&o.at("trigger_tokens"), "token_triggered_tags", "trigger_tokens", format!("Tag matches multiple triggers (token {b} is listed twice)"))),
            }
            if excludes.contains(&b) {
                return Err(invalid(&o.at("exclude_tokens"), "token_triggered_tags", "exclude_tokens", format!("trigger token {b} is also excluded, so its tags could never start")));
            }
        }
        Ok(Format::TokenTriggeredTags {
            triggers,
            tags,
            excludes,
            at_least_one: o.bool_or("at_least_one", false)?,
            stop_after_first: o.bool_or("stop_after_first", false)?,
        })
    }

    fn token_dispatch(&mut self, o: &Obj, depth: usize) -> Result<Format> {
        o.only(&["rules", "loop", "exclude_tokens"])?;
        let arr = o.get("rules").and_then(Json::as_arr).ok_or_else(|| o.err("rules", "TokenTagDispatch format must have a rules field with an array"))?;
        if arr.is_empty() {
            return Err(o.err("rules", "TokenTagDispatch format rules must be non-empty"));
        }
        let excludes = self.token_list(o, "exclude_tokens")?;
        let mut rules: Vec<(TokenId, Node)> = Vec::new();
        for (i, pair) in arr.iter().enumerate() {
            let path = format!("{}[{i}]", o.at("rules"));
            let Some([tok, content]) = pair.as_arr() else {
                return Err(invalid(&path, "token_dispatch", "rules", "TokenTagDispatch pair must be a 2-element array"));
            };
            if !matches!(tok, Json::Num(_) | Json::Str(_)) {
                return Err(invalid(&format!("{path}[0]"), "token_dispatch", "rules", "TokenTagDispatch pair first element must be an integer or string"));
            }
            // Negative ids are refused here (the reference accepts them).
            let id = self.token(tok, &format!("{path}[0]"), "token_dispatch", "rules")?;
            if rules.iter().any(|(t, _)| *t == id) {
                return Err(invalid(&format!("{path}[0]"), "token_dispatch", "rules", format!("token {id} is dispatched twice")));
            }
            if excludes.contains(&id) {
                return Err(invalid(&format!("{path}[0]"), "token_dispatch", "rules", format!("token {id} is both a dispatch token and excluded")));
            }
            let node = self.format(content, &format!("{path}[1]"), depth + 1)?;
            rules.push((id, node));
        }
        Ok(Format::TokenDispatch { rules, repeat: o.bool_or("loop", true)?, excludes })
    }
}

/// The format types, as spelt in `type`.
const TYPES: &[&str] = &[
    "const_string",
    "json_schema",
    "qwen_xml_parameter",
    "grammar",
    "lark",
    "regex",
    "any_text",
    "sequence",
    "or",
    "optional",
    "plus",
    "star",
    "repeat",
    "tag",
    "triggered_tags",
    "tags_with_separator",
    "dispatch",
    "token",
    "exclude_token",
    "any_tokens",
    "token_triggered_tags",
    "token_dispatch",
];

/// The type of an object without `type`, when its fields say it
/// unambiguously (the reference tries every parser in turn; `elements` could
/// be a sequence or an or, so it needs the type).
fn infer_type(m: &[(String, Json)]) -> Option<&'static str> {
    let has = |k: &str| m.iter().any(|(key, _)| key == k);
    Some(if has("begin") && has("end") {
        "tag"
    } else if has("value") {
        "const_string"
    } else if has("json_schema") {
        "json_schema"
    } else if has("grammar") {
        "grammar"
    } else if has("pattern") {
        "regex"
    } else if has("trigger_tokens") {
        "token_triggered_tags"
    } else if has("triggers") && has("tags") {
        "triggered_tags"
    } else if has("tags") && has("separator") {
        "tags_with_separator"
    } else if has("token") {
        "token"
    } else if has("min") && has("max") && has("content") {
        "repeat"
    } else {
        return None;
    })
}

/// Dispatch patterns and excludes: no duplicates, no exclude inside a
/// pattern (the pattern could never complete; the reference accepts it), no
/// pattern inside another (the inner one always fires first).
fn check_patterns(path: &str, ty: &str, field: &str, patterns: &[&str], excludes: &[String]) -> Result<()> {
    for (i, p) in patterns.iter().enumerate() {
        for (j, q) in patterns.iter().enumerate() {
            if i != j && q.contains(p) && (p != q || i < j) {
                let msg = if p == q {
                    format!("the pattern \"{p}\" is listed twice")
                } else {
                    format!("the pattern \"{p}\" occurs inside the pattern \"{q}\", which therefore can never be reached")
                };
                return Err(invalid(&format!("{path}.{field}[{j}]"), ty, field, msg));
            }
        }
        if let Some((k, e)) = excludes.iter().enumerate().find(|(_, e)| p.contains(e.as_str())) {
            return Err(invalid(
                &format!("{path}.excludes[{k}]"),
                ty,
                "excludes",
                format!("the exclude \"{e}\" occurs inside the trigger \"{p}\", which therefore can never be reached"),
            ));
        }
    }
    Ok(())
}

/// triggered_tags: string begins, each tag under exactly one trigger, and
/// triggers/excludes that can all fire.
fn check_triggered(path: &str, f: &Format) -> Result<()> {
    let Format::TriggeredTags { triggers, tags, excludes, .. } = f else { return Ok(()) };
    for t in tags {
        let Begin::Str(begin) = &t.begin else {
            return Err(invalid(&join(&t.path, "begin"), "triggered_tags", "tags", "Tags in triggered_tags must have a string begin, not a token format"));
        };
        match triggers.iter().filter(|tr| begin.starts_with(tr.as_str())).count() {
            0 => return Err(invalid(&join(&t.path, "begin"), "triggered_tags", "tags", format!("One tag does not match any trigger in a triggered tags format (begin \"{begin}\" starts with none of the triggers)"))),
            1 => {}
            _ => return Err(invalid(&join(&t.path, "begin"), "triggered_tags", "tags", format!("One tag matches multiple triggers in a triggered tags format (begin \"{begin}\")"))),
        }
    }
    let pats: Vec<&str> = triggers.iter().map(String::as_str).collect();
    check_patterns(path, "triggered_tags", "triggers", &pats, excludes)
}
