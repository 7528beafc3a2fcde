//! The Lark dialect of llguidance (also read by xgrammar) to formcast's
//! grammar IR.
//!
//! ```
//! use formcast_lark::{parse_lark, LarkOptions};
//! let g = parse_lark(r#"
//! start: expr
//! expr: term (("+" | "-") term)*
//! term: NUMBER | "(" expr ")"
//! %import common.NUMBER
//! %ignore " "
//! "#, &LarkOptions::default()).unwrap();
//! assert_eq!(g.grammar.rules[g.grammar.root as usize].name, "start^root");
//! ```
//!
//! What is read (see README.md's "Lark" section for the user-facing list):
//!
//! * rules `name: ...` (lower case) and terminals `NAME: ...` (upper case;
//!   regular, inlined, never recursive); `?name` / `!name` prefixes,
//!   `-> alias` and `[capture]` (they shape a parse tree only); `|`,
//!   `( )`, `[ ]`, `? * +`, `~ n`, `~ n..m`, `{n}`, `{m,}`, `{,n}`, `{m,n}`;
//!   line breaks continue a definition only before `|`; `//` and `#`
//!   comments; `-` in names;
//! * strings `"..."` (escapes `\n \t \r \f \v \b \a \0 \\ \" \' \/ \xHH
//!   \uHHHH \UHHHHHHHH`), `"..."i`, ranges `"a".."z"`; regexes `/.../flags`
//!   in Rust `regex` syntax (formcast's regex front-end, as llguidance),
//!   flags `i m s x u`;
//! * `%import common.NAME [-> ALIAS]`, `%import common (A, B)`;
//! * `%ignore` (see [`lower`] for exactly where skipped text may occur);
//! * special tokens `<|name|>` / `<name>`, `<[id]>`, `<[a-b,c]>`,
//!   `<[^...]>`, `<[*]>`; `%json {...}`; `%regex {"substring_chunks"|
//!   "substring_chars": ...}`; `@name` references to named grammars;
//! * `%llguidance {...}` options `no_forcing`, `allow_initial_skip`,
//!   `allow_invalid_utf8: false`, `skip_repetition`.
//!
//! Everything else is an [`LarkError`] naming the construct, with line,
//! column and the offending line: priorities, templates, `%declare`,
//! `%override`, other imports, `lazy`/`stop`/`suffix`/`max_tokens`/
//! `temperature`, the regex operators `&` and `~`, the `l` flag.
//!
//! One difference from llguidance is not detected: llguidance's lexer is
//! greedy (a lexeme ends where the next byte cannot extend it), while
//! formcast reads the grammar as a context-free language over characters,
//! where any split of the text into lexemes counts. Where a lexeme could
//! swallow the start of the next one (`/a+/ "ab"` on `aab`), llguidance
//! rejects what formcast accepts.

pub mod common;
pub mod error;
pub mod lower;
pub mod syntax;

use formcast_grammar::{Grammar, TokenId};

pub use error::{ErrorKind, LarkError};

/// Largest Lark text accepted, in bytes.
pub const MAX_LARK_BYTES: usize = 32 << 20;
/// Most token ids one `<[...]>` reference may list.
pub const MAX_TOKEN_IDS: usize = 1 << 20;
/// Deepest chain of named grammars referring to named grammars.
pub const MAX_GRAMMAR_NESTING: usize = 16;
/// Most chunks of one `%regex` substring.
pub const MAX_SUBSTRING_CHUNKS: usize = 100_000;
/// Largest body of one rule copied to forbid skipped text before the first
/// lexeme (expression nodes).
pub const MAX_STRIPPED_NODES: usize = 1_000_000;

/// Resolves special tokens.
pub struct Tokens<'a> {
    /// The id of the token whose text is the whole reference (`<|eot_id|>`).
    pub resolve: &'a dyn Fn(&str) -> Option<TokenId>,
    /// Number of token ids: `<[n]>` must be below it.
    pub vocab_size: u32,
}

/// A grammar that `@name` may refer to.
#[derive(Debug, Clone)]
pub enum Named {
    /// Lark text with its own `start` rule.
    Lark(String),
    /// A grammar built by any front-end.
    Grammar(Grammar),
}

/// How the text is cut into lexemes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lexer {
    /// As llguidance's lexer: a lexeme is as long as it can be (while a
    /// lexeme under way can take the next byte, none ends), and a lazy
    /// lexeme (`x[lazy]`, `x[suffix=...]`) ends at its first match and
    /// ends the others going on beside it.
    #[default]
    Llguidance,
    /// As a context-free grammar over characters (as xgrammar reads
    /// Lark): any split of the text into lexemes counts. Lazy lexemes are
    /// an error.
    ContextFree,
}

/// Options of [`parse_lark`].
pub struct LarkOptions<'a> {
    /// Without it, `<name>` special tokens are an error; `<[id]>` works.
    pub tokens: Option<Tokens<'a>>,
    /// The grammars `@name` refers to.
    pub named: Vec<(String, Named)>,
    /// Time budget of each `%json` translation (milliseconds).
    pub json_time_budget_ms: u64,
    /// Largest number of grammar rules, embedded grammars included.
    pub max_rules: usize,
    /// How lexemes are cut.
    pub lexer: Lexer,
}

impl Default for LarkOptions<'_> {
    fn default() -> Self {
        LarkOptions { tokens: None, named: Vec::new(), json_time_budget_ms: 10_000, max_rules: 500_000, lexer: Lexer::default() }
    }
}

/// A parsed Lark grammar.
#[derive(Debug, Clone)]
pub struct LarkGrammar {
    pub grammar: Grammar,
    /// Remarks of the embedded JSON-schema translations (formats that are
    /// only annotations, lenient drops).
    pub warnings: Vec<String>,
}

/// Parses Lark text into a grammar whose root is the `start` rule.
pub fn parse_lark(text: &str, opts: &LarkOptions<'_>) -> Result<LarkGrammar, LarkError> {
    let (grammar, warnings) = lower_text(text, opts, &[])?;
    Ok(LarkGrammar { grammar, warnings })
}

pub(crate) fn lower_text(text: &str, opts: &LarkOptions<'_>, stack: &[String]) -> Result<(Grammar, Vec<String>), LarkError> {
    if text.len() > MAX_LARK_BYTES {
        return Err(LarkError {
            kind: ErrorKind::Limit,
            line: 1,
            column: 1,
            message: format!("the Lark text is {} bytes, more than the limit of {MAX_LARK_BYTES}", text.len()),
            source_line: String::new(),
        });
    }
    let stmts = syntax::Parser::new(text).statements()?;
    lower::Lowerer::new(text, opts, stack).run(&stmts)
}

/// A resolver for [`Tokens`] over a vocabulary: the special token whose
/// text is the reference, else the first token with exactly that text.
pub fn vocab_resolver(vocab: &formcast_tokenizer::Vocab) -> impl Fn(&str) -> Option<TokenId> + '_ {
    move |s: &str| vocab.special_id(s).or_else(|| vocab.tokens.iter().position(|t| t == s.as_bytes()).map(|i| i as TokenId))
}
