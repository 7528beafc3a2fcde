//! The built-in "any JSON value" grammar.

use crate::Grammar;

/// GBNF text of the built-in grammar for any JSON value (RFC 8259).
pub const JSON_GBNF: &str = r#"
root   ::= value
value  ::= object | array | string | number | ("true" | "false" | "null")
object ::= "{" ws ( string ws ":" ws value ws ( "," ws string ws ":" ws value ws )* )? "}"
array  ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
string ::= "\"" ( [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""
number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws     ::= [ \t\n\r]*
"#;

/// The built-in grammar for any JSON value.
pub fn builtin_json_grammar() -> Grammar {
    crate::ebnf::parse_ebnf(JSON_GBNF, "root").expect("the built-in JSON grammar is valid")
}
