//! Compilation options.

/// Whitespace the grammar allows between JSON tokens.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Whitespace {
    /// No whitespace at all: `{"a":1,"b":[1,2]}`.
    Compact,
    /// Any JSON whitespace (space, tab, newline, carriage return), at most
    /// `max_per_gap` characters after `{`, `[` and `,` and before `}` and
    /// `]`, and at most one space after `:` (every common layout —
    /// compact, `json.dumps`, indented — fits). Bounded so that a model
    /// cannot emit whitespace until it runs out of tokens.
    Any { max_per_gap: u32 },
    /// Exactly the layout of Python's `json.dumps(indent=..., separators=...)`:
    /// `indent: None` puts everything on one line; `Some(n)` puts each member
    /// on its own line indented by `n` spaces per level. `separators` are the
    /// item and key separators (json.dumps' defaults are `(", ", ": ")`
    /// without indent and `(",", ": ")` with one).
    Indent { indent: Option<usize>, separators: (String, String) },
}

impl Whitespace {
    /// `json.dumps`-compatible layout with Python's default separators.
    pub fn dumps(indent: Option<usize>) -> Whitespace {
        let item = if indent.is_some() { "," } else { ", " };
        Whitespace::Indent { indent, separators: (item.to_string(), ": ".to_string()) }
    }
}

impl Default for Whitespace {
    fn default() -> Self {
        Whitespace::Any { max_per_gap: DEFAULT_MAX_WHITESPACE }
    }
}

/// Default bound on whitespace characters between two JSON tokens.
pub const DEFAULT_MAX_WHITESPACE: u32 = 8;

/// How parameters are written: plain JSON, or one of the XML tool-call
/// parameter styles of model families (the root must then be an object).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Style {
    #[default]
    Json,
    QwenXml,
    MinimaxXml,
    MinimaxM3Xml,
    DeepseekXml,
    DeepseekV41Xml,
    GlmXml,
    CohereXml,
    KimiK3Xml,
}

impl Style {
    /// Every style, in the order of the Python API's documentation.
    pub const ALL: [Style; 9] = [
        Style::Json,
        Style::QwenXml,
        Style::MinimaxXml,
        Style::MinimaxM3Xml,
        Style::DeepseekXml,
        Style::DeepseekV41Xml,
        Style::GlmXml,
        Style::CohereXml,
        Style::KimiK3Xml,
    ];

    /// The snake_case name used by the Python API (`"qwen_xml"`...).
    pub fn name(self) -> &'static str {
        match self {
            Style::Json => "json",
            Style::QwenXml => "qwen_xml",
            Style::MinimaxXml => "minimax_xml",
            Style::MinimaxM3Xml => "minimax_m3_xml",
            Style::DeepseekXml => "deepseek_xml",
            Style::DeepseekV41Xml => "deepseek_v4_1_xml",
            Style::GlmXml => "glm_xml",
            Style::CohereXml => "cohere_xml",
            Style::KimiK3Xml => "kimi_k3_xml",
        }
    }

    /// Parses the snake_case names used by the Python API (`"qwen_xml"`...).
    pub fn parse(name: &str) -> Option<Style> {
        Style::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// Whether `format` constrains strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FormatMode {
    /// Known formats are enforced (what constrained generation wants, and
    /// the format-assertion vocabulary of 2020-12). Unknown formats are
    /// annotations and reported as warnings.
    #[default]
    Assert,
    /// Formats are annotations only (the 2020-12 default for validators).
    Annotate,
}

/// Options of [`crate::json_schema_to_grammar`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SchemaOptions {
    pub whitespace: Whitespace,
    /// When `additionalProperties` (and `unevaluatedProperties` /
    /// `unevaluatedItems`) are absent, treat them as `false`: objects carry
    /// only the declared properties. JSON Schema itself says `true`.
    pub strict: bool,
    /// Properties in any order (declared properties at most once, required
    /// ones tracked) instead of the schema's order.
    pub any_order: bool,
    /// Drop what cannot be enforced exactly (reported as warnings) instead of
    /// failing.
    pub lenient: bool,
    pub style: Style,
    pub format: FormatMode,
    /// Largest schema text accepted (bytes of the JSON text).
    pub max_schema_bytes: usize,
    /// Largest number of schema nodes (subschemas after `$ref`, `allOf`...
    /// expansion) built before giving up.
    pub max_nodes: usize,
    /// Largest number of grammar rules produced.
    pub max_rules: usize,
    /// Deepest nesting of a recursive schema in `Indent` layout (indentation
    /// depends on depth, so each level is a separate set of rules).
    pub max_indent_depth: usize,
    /// Wall-clock budget for the translation, in milliseconds (0: none).
    pub time_budget_ms: u64,
    /// Substrings the generated text must not contain (structural tags'
    /// `json_schema.excludes`), matched on the emitted bytes: an escaped
    /// form such as `\u003c` does not match `<`. They are removed from the
    /// text of every JSON string — property names and values at any depth,
    /// `const`/`enum`/`pattern`/`format` strings included — and, in the XML
    /// styles, from parameter names and raw string values. Each must pass
    /// [`exclude_problem`], which makes that the whole JSON text (XML
    /// styles: each parameter value) free of them: outside strings only
    /// whitespace, punctuation, numbers and literals occur.
    pub excludes: Vec<String>,
}

/// Characters that JSON text can hold outside string contents: whitespace,
/// punctuation, the quotes, numbers and the literals `true`/`false`/`null`.
const OUTSIDE_STRINGS: &str = " \t\n\r{}[]:,\"0123456789-+.eEtruefalsn";

/// Why `exclude` cannot be enforced on the whole text when it is only
/// removed from strings, if so: it must not contain a quote (an occurrence
/// could span a string's delimiter) and must contain a character that
/// JSON text outside strings never has.
pub fn exclude_problem(exclude: &str) -> Option<String> {
    if exclude.is_empty() {
        return Some("an exclude must be a non-empty string".into());
    }
    if exclude.contains('"') {
        return Some(format!("{exclude:?} contains '\"', so it could span the quotes of a JSON string, where excludes are not enforced"));
    }
    if exclude.chars().all(|c| OUTSIDE_STRINGS.contains(c)) {
        return Some(format!(
            "{exclude:?} could occur outside JSON strings (in whitespace, punctuation, numbers or true/false/null), where excludes are not enforced; an exclude needs a character that only strings can hold"
        ));
    }
    None
}

impl Default for SchemaOptions {
    fn default() -> Self {
        SchemaOptions {
            whitespace: Whitespace::default(),
            strict: true,
            any_order: false,
            lenient: false,
            style: Style::Json,
            format: FormatMode::Assert,
            max_schema_bytes: 32 << 20,
            max_nodes: 200_000,
            max_rules: 200_000,
            max_indent_depth: 24,
            time_budget_ms: 10_000,
            excludes: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::exclude_problem;

    #[test]
    fn excludes_must_be_confined_to_strings() {
        for ok in ["</tool_call>", "bad", "<", "\\n", "é"] {
            assert_eq!(exclude_problem(ok), None, "{ok}");
        }
        assert!(exclude_problem("a\"").unwrap().contains("quotes"));
        for outside in ["\n\n", "null", "-1.5e+3", "],", "tea"] {
            assert!(exclude_problem(outside).unwrap().contains("outside JSON strings"), "{outside}");
        }
    }
}
