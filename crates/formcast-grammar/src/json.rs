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

/// Texts after which a compile of the built-in JSON grammar computes the
/// mask ahead (`CompileOptions::prepare_texts` of formcast-engine): the
/// first key of an object, the first value, and a value after a comma.
/// Nearly every document passes these places (an object's first key and
/// value are its first steps; each later pair is in the state of the
/// second), and their masks were a document's slowest: every token that
/// can open a key or any value, walked through the parser (90–170 µs each
/// on Llama-3; the three cost about 0.3 ms of compile). The key's name and
/// the value do not matter: the parser's state after them is the same.
pub const BUILTIN_JSON_PREPARED: [&str; 3] = ["{\"", "{\"a\":", "{\"a\":1,\"b\":"];

/// The built-in grammar for any JSON value.
pub fn builtin_json_grammar() -> Grammar {
    crate::ebnf::parse_ebnf(JSON_GBNF, "root").expect("the built-in JSON grammar is valid")
}
