//! The validated, typed structural-tag tree. Every node keeps the path it
//! was read from so later stages (end detection, lowering) can report errors
//! at the right place. Token strings are already resolved to ids.

use formcast_grammar::TokenId;
use formcast_jsonschema::{Json, Style};

/// A format object and where it was found.
#[derive(Debug, Clone)]
pub struct Node {
    pub path: String,
    pub format: Format,
}

/// `begin` of a tag.
#[derive(Debug, Clone)]
pub enum Begin {
    Str(String),
    Token(TokenId),
}

/// `end` of a tag: one or several strings (any of them ends the tag), or a
/// token.
#[derive(Debug, Clone)]
pub enum End {
    Strs(Vec<String>),
    Token(TokenId),
}

/// A `tag` format.
#[derive(Debug, Clone)]
pub struct Tag {
    pub path: String,
    pub begin: Begin,
    pub content: Box<Node>,
    pub end: End,
}

/// Every structural-tag format type (the deprecated `qwen_xml_parameter` is
/// read as `JsonSchema` with the `qwen_xml` style).
#[derive(Debug, Clone)]
pub enum Format {
    ConstString { value: String },
    JsonSchema { schema: Json, style: Style, any_order: bool, max_whitespace_cnt: Option<u32>, excludes: Vec<String> },
    Grammar { ebnf: String },
    /// Lark text in llguidance's dialect (formcast extension; OpenAI custom
    /// tools' `lark` grammars). Special tokens resolve through the
    /// vocabulary the tag is compiled for (see `LowerOptions::vocab_size`).
    Lark { text: String },
    Regex { pattern: String },
    AnyText { excludes: Vec<String>, max_tokens: Option<u32>, max_chars: Option<u32> },
    Sequence { elements: Vec<Node> },
    Or { elements: Vec<Node> },
    Optional { content: Box<Node> },
    Plus { content: Box<Node> },
    Star { content: Box<Node> },
    /// `max: None` is unbounded.
    Repeat { min: u32, max: Option<u32>, content: Box<Node> },
    Tag(Tag),
    TriggeredTags { triggers: Vec<String>, tags: Vec<Tag>, excludes: Vec<String>, at_least_one: bool, stop_after_first: bool },
    TagsWithSeparator { tags: Vec<Tag>, separator: String, at_least_one: bool, stop_after_first: bool },
    Dispatch { rules: Vec<(String, Node)>, repeat: bool, excludes: Vec<String> },
    Token { id: TokenId },
    ExcludeToken { excludes: Vec<TokenId> },
    AnyTokens { excludes: Vec<TokenId>, max_tokens: Option<u32> },
    TokenTriggeredTags { triggers: Vec<TokenId>, tags: Vec<Tag>, excludes: Vec<TokenId>, at_least_one: bool, stop_after_first: bool },
    TokenDispatch { rules: Vec<(TokenId, Node)>, repeat: bool, excludes: Vec<TokenId> },
}

impl Format {
    /// The `type` name of the format.
    pub fn type_name(&self) -> &'static str {
        match self {
            Format::ConstString { .. } => "const_string",
            Format::JsonSchema { .. } => "json_schema",
            Format::Grammar { .. } => "grammar",
            Format::Lark { .. } => "lark",
            Format::Regex { .. } => "regex",
            Format::AnyText { .. } => "any_text",
            Format::Sequence { .. } => "sequence",
            Format::Or { .. } => "or",
            Format::Optional { .. } => "optional",
            Format::Plus { .. } => "plus",
            Format::Star { .. } => "star",
            Format::Repeat { .. } => "repeat",
            Format::Tag(_) => "tag",
            Format::TriggeredTags { .. } => "triggered_tags",
            Format::TagsWithSeparator { .. } => "tags_with_separator",
            Format::Dispatch { .. } => "dispatch",
            Format::Token { .. } => "token",
            Format::ExcludeToken { .. } => "exclude_token",
            Format::AnyTokens { .. } => "any_tokens",
            Format::TokenTriggeredTags { .. } => "token_triggered_tags",
            Format::TokenDispatch { .. } => "token_dispatch",
        }
    }

    /// Whether the format can match unboundedly long output (then, inside a
    /// tag, it needs a non-empty end to stop at). Same rule as the reference
    /// engine, so the same configurations are accepted.
    pub fn is_unlimited(&self) -> bool {
        match self {
            Format::AnyText { .. }
            | Format::AnyTokens { .. }
            | Format::TriggeredTags { .. }
            | Format::TokenTriggeredTags { .. }
            | Format::Dispatch { .. }
            | Format::TokenDispatch { .. }
            | Format::TagsWithSeparator { .. }
            | Format::Star { .. }
            | Format::Plus { .. } => true,
            Format::Repeat { max, content, .. } => match max {
                None => true,
                Some(0) => false,
                Some(_) => content.format.is_unlimited(),
            },
            Format::Optional { content } => content.format.is_unlimited(),
            Format::Sequence { elements } | Format::Or { elements } => {
                elements.iter().any(|e| e.format.is_unlimited() && !e.format.is_excluded())
            }
            _ => false,
        }
    }

    /// Whether the format carries its own explicit stop strings/tokens.
    pub fn is_excluded(&self) -> bool {
        match self {
            Format::AnyText { excludes, .. }
            | Format::TriggeredTags { excludes, .. }
            | Format::Dispatch { excludes, .. }
            | Format::JsonSchema { excludes, .. } => !excludes.is_empty(),
            Format::ExcludeToken { excludes }
            | Format::AnyTokens { excludes, .. }
            | Format::TokenTriggeredTags { excludes, .. }
            | Format::TokenDispatch { excludes, .. } => !excludes.is_empty(),
            _ => false,
        }
    }
}
