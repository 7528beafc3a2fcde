//! Structural tags: a JSON tree of formats (tags, triggered regions,
//! dispatch on strings or tokens, JSON schemas, grammars, free text...) that
//! describes a whole model output, compiled to a formcast [`Grammar`].
//!
//! ```
//! use formcast_structural::{compile_str, Options};
//! let tag = r#"{"type": "structural_tag", "format": {
//!     "type": "tag", "begin": "<think>", "content": {"type": "any_text"}, "end": "</think>"}}"#;
//! let compiled = compile_str(tag, None, &Options::default()).unwrap();
//! assert_eq!(compiled.grammar.root_rule().name, "root");
//! ```
//!
//! Pipeline: [`parse`] reads the JSON into the typed tree of [`format`],
//! checking every field (errors carry the path, the format type and the
//! field) and resolving token strings; [`lower`] turns the tree into the
//! grammar IR, doing automatic end detection and embedding the sub-grammars
//! of `json_schema`, `grammar` and `regex` formats.

pub mod error;
pub mod format;
pub mod lower;
pub mod parse;

use formcast_grammar::{Grammar, GrammarError};
use formcast_jsonschema::Json;

pub use error::{ErrorKind, StructuralError};
pub use format::{Format, Node};
pub use lower::LowerOptions;
pub use parse::{Resolver, MAX_FORMAT_DEPTH};

/// Compilation options.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub lower: LowerOptions,
}

/// A compiled structural tag.
#[derive(Debug, Clone)]
pub struct Compiled {
    pub grammar: Grammar,
    /// Non-fatal remarks (JSON-schema warnings, bounds treated as unbounded).
    pub warnings: Vec<String>,
}

/// Largest structural tag accepted, in bytes of JSON text.
pub const MAX_TAG_BYTES: usize = 32 << 20;

/// Compiles a structural tag given as JSON text. `resolve` maps a token
/// string to its id (the first vocabulary token whose text is exactly that
/// string); without it, token strings are an error.
pub fn compile_str(text: &str, resolve: Option<Resolver<'_>>, opts: &Options) -> Result<Compiled, StructuralError> {
    if text.len() > MAX_TAG_BYTES {
        return Err(StructuralError::new(
            ErrorKind::Limit,
            "<root>",
            "structural_tag",
            "",
            format!("the structural tag is {} bytes, more than the limit of {MAX_TAG_BYTES}", text.len()),
        ));
    }
    let json = formcast_jsonschema::json::parse(text)
        .map_err(|e| {
            let kind = if e.too_deep { ErrorKind::Limit } else { ErrorKind::Invalid };
            StructuralError::new(kind, "<root>", "structural_tag", "", format!("not valid JSON: {e}"))
        })?;
    compile(&json, resolve, opts)
}

/// Compiles a parsed structural tag (see [`compile_str`]).
pub fn compile(json: &Json, resolve: Option<Resolver<'_>>, opts: &Options) -> Result<Compiled, StructuralError> {
    let mut reader = parse::Reader::new(resolve);
    let root = reader.request(json)?;
    let mut warnings = std::mem::take(&mut reader.warnings);
    let (grammar, w) = lower::Lowerer::new(resolve, opts.lower.clone()).grammar(&root)?;
    warnings.extend(w);
    formcast_grammar::validate(&grammar).map_err(|e| {
        let kind = match e {
            GrammarError::Limit(_) => ErrorKind::Limit,
            _ => ErrorKind::Invalid,
        };
        StructuralError::new(kind, &root.path, root.format.type_name(), "", format!("the resulting grammar is invalid: {e}"))
    })?;
    Ok(Compiled { grammar, warnings })
}
