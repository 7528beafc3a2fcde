//! JSON Schema to formcast grammars, exactly or not at all.
//!
//! ```
//! use formcast_jsonschema::{json_schema_str_to_grammar, SchemaOptions, Whitespace};
//! let opts = SchemaOptions { whitespace: Whitespace::Compact, ..Default::default() };
//! let (grammar, warnings) = json_schema_str_to_grammar(
//!     r#"{"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}, "required": ["n"]}"#,
//!     &opts,
//! ).unwrap();
//! assert!(warnings.is_empty());
//! assert_eq!(grammar.root_rule().name, "root");
//! ```
//!
//! Pipeline: the document is indexed for references ([`refs`]); each
//! subschema becomes a [`schema::Shape`] — the set of values it accepts,
//! split by JSON type — with `allOf`/`anyOf`/`oneOf`/`not`/`if` resolved by
//! the shape algebra ([`normalize`]); shapes are lowered to grammar rules
//! ([`lower`], [`objects`], [`arrays`], or [`xml_styles`]). Strings and
//! numbers are regular languages ([`strings`], [`numbers`]) built from
//! character expressions ([`re`]) and, where needed, automata
//! ([`automata`]).
//!
//! Anything that cannot be enforced exactly is an error naming the keyword
//! and its JSON pointer; with [`SchemaOptions::lenient`] it is dropped and
//! reported as a [`Warning`].

pub mod arrays;
pub mod automata;
pub mod decimal;
pub mod ecma;
pub mod emit;
pub mod error;
pub mod formats;
pub mod json;
pub mod keywords;
pub mod lower;
pub mod normalize;
pub mod numbers;
pub mod objects;
pub mod options;
pub mod re;
pub mod refs;
pub mod schema;
pub mod strings;
pub mod uri;
pub mod values;
pub mod xml_styles;

use formcast_grammar::{Expr, Grammar, GrammarError};

pub use error::{SchemaError, Warning};
pub use json::Json;
pub use options::{exclude_problem, FormatMode, SchemaOptions, Style, Whitespace, DEFAULT_MAX_WHITESPACE};

use emit::{seq, Layout};
use lower::Lowerer;
use schema::Builder;

/// Compiles a schema given as a serde_json value.
///
/// Property order follows the value's key order, which serde_json keeps
/// only with its `preserve_order` feature; pass the JSON text to
/// [`json_schema_str_to_grammar`] to keep the schema's own order.
pub fn json_schema_to_grammar(schema: &serde_json::Value, opts: &SchemaOptions) -> Result<(Grammar, Vec<Warning>), SchemaError> {
    let json = Json::from_serde(schema).map_err(|reason| SchemaError::Limit { pointer: String::new(), reason })?;
    compile_json(&json, opts)
}

/// Compiles a schema given as JSON text (key order and number precision
/// are kept exactly).
pub fn json_schema_str_to_grammar(text: &str, opts: &SchemaOptions) -> Result<(Grammar, Vec<Warning>), SchemaError> {
    compile_json(&parse_schema_str(text, opts)?, opts)
}

/// Parses schema text within `opts.max_schema_bytes` and the parser's
/// depth limit (what [`json_schema_str_to_grammar`] compiles).
pub fn parse_schema_str(text: &str, opts: &SchemaOptions) -> Result<Json, SchemaError> {
    if text.len() > opts.max_schema_bytes {
        return Err(SchemaError::Limit {
            pointer: String::new(),
            reason: format!("the schema is {} bytes, more than the limit of {}", text.len(), opts.max_schema_bytes),
        });
    }
    json::parse(text).map_err(|e| match e.too_deep {
        true => SchemaError::Limit { pointer: String::new(), reason: e.message },
        false => SchemaError::Json(e.message),
    })
}

/// Texts after which a compile of `schema`'s grammar should compute the
/// mask ahead (formcast-engine's `CompileOptions::prepare_texts`). An
/// object that takes any keys and any values (`{"type": "object"}`,
/// annotations aside: the OpenAI `json_object` response format) gets the
/// built-in JSON grammar's
/// [`BUILTIN_JSON_PREPARED`](formcast_grammar::json::BUILTIN_JSON_PREPARED):
/// its first key, first value and a value after a comma, whose state does
/// not depend on the key or the values before it, and whose masks were such
/// a document's slowest. Any other schema, or an indented layout (which
/// the compact texts do not match), gets none.
pub fn prepared_texts(schema: &Json, opts: &SchemaOptions) -> &'static [&'static str] {
    let Some(keys) = schema.as_obj() else { return &[] };
    let any_object = schema.get("type").and_then(Json::as_str) == Some("object")
        && keys.iter().all(|(k, _)| k == "type" || k == "$schema" || schema::ignored_keyword(k));
    let compact_texts_fit = opts.style == Style::Json && !matches!(opts.whitespace, Whitespace::Indent { .. });
    if any_object && compact_texts_fit {
        &formcast_grammar::json::BUILTIN_JSON_PREPARED
    } else {
        &[]
    }
}

/// Compiles a parsed schema.
pub fn compile_json(schema: &Json, opts: &SchemaOptions) -> Result<(Grammar, Vec<Warning>), SchemaError> {
    for x in &opts.excludes {
        if let Some(reason) = exclude_problem(x) {
            return Err(SchemaError::Unsupported { keyword: "excludes".into(), pointer: String::new(), reason });
        }
    }
    let ix = refs::Index::build(schema);
    let mut b = Builder::new(ix, opts.clone());
    let root = b.raw_node(b.ix.root(), 0, false, true);
    let shape = b.shape(root)?;
    if b.shape_empty(&shape, 2)? {
        return Err(SchemaError::Unsatisfiable);
    }
    let grammar = match opts.style {
        Style::Json => {
            let mut lw = Lowerer::new(&mut b, Layout::new(opts.whitespace.clone()));
            let root_rule = lw.em.reserve("root").map_err(|r| SchemaError::Limit { pointer: String::new(), reason: r })?;
            let gap = lw.layout.gap_body();
            if gap != Expr::Empty {
                let ws = lw.em.reserve("ws").map_err(|r| SchemaError::Limit { pointer: String::new(), reason: r })?;
                lw.em.set(ws, gap);
                lw.layout.gap_rule = Some(ws);
            }
            let v = lw.value(root, 0)?;
            lw.drain()?;
            lw.em.set(root_rule, seq(vec![v]));
            Grammar { rules: std::mem::take(&mut lw.em.rules), root: root_rule }
        }
        style => xml_styles::lower(&mut b, root, style)?,
    };
    let mut grammar = grammar;
    // The merge hashes and compares bodies recursively: depth first.
    let checked = formcast_grammar::check_depth(&grammar).and_then(|()| {
        grammar.merge_duplicate_rules();
        formcast_grammar::validate(&grammar)
    });
    match checked {
        Ok(()) => {}
        Err(GrammarError::EmptyLanguage(_)) => return Err(SchemaError::Unsatisfiable),
        Err(GrammarError::Limit(m)) => return Err(SchemaError::Limit { pointer: String::new(), reason: m }),
        Err(e) => return Err(SchemaError::Grammar(e.to_string())),
    }
    let mut warnings = b.warnings;
    warnings.dedup();
    Ok((grammar, warnings))
}
