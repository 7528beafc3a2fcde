//! The terminals of `%import common.NAME`, as regexes (Rust `regex`
//! syntax, read by formcast's regex front-end). Written from the meaning
//! of Lark's `common` module; each one accepts exactly the strings that
//! llguidance's accepts (checked string by string against llguidance 1.7.6
//! over exhaustive short strings and random longer ones).

/// `(name, regex)`, in the order llguidance lists them.
pub const COMMON: &[(&str, &str)] = &[
    ("DIGIT", r"[0-9]"),
    ("HEXDIGIT", r"[a-fA-F0-9]"),
    ("INT", r"[0-9]+"),
    ("SIGNED_INT", r"[+\-]?[0-9]+"),
    ("DECIMAL", r"[0-9]+\.[0-9]*|\.[0-9]+"),
    ("_EXP", r"[eE][+\-]?[0-9]+"),
    ("FLOAT", r"[0-9]+[eE][+\-]?[0-9]+|(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+\-]?[0-9]+)?"),
    ("SIGNED_FLOAT", r"[+\-]?(?:[0-9]+[eE][+\-]?[0-9]+|(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+\-]?[0-9]+)?)"),
    ("NUMBER", r"[0-9]+[eE][+\-]?[0-9]+|(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+\-]?[0-9]+)?|[0-9]+"),
    (
        "SIGNED_NUMBER",
        r"[+\-]?(?:[0-9]+[eE][+\-]?[0-9]+|(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+\-]?[0-9]+)?|[0-9]+)",
    ),
    // Any character but a quote or a backslash, or a backslash and any
    // character but a line break.
    ("ESCAPED_STRING", r#""(?:[^"\\]|\\.)*""#),
    ("LCASE_LETTER", r"[a-z]"),
    ("UCASE_LETTER", r"[A-Z]"),
    ("LETTER", r"[A-Za-z]"),
    ("WORD", r"[A-Za-z]+"),
    ("CNAME", r"[_A-Za-z][_A-Za-z0-9]*"),
    ("WS_INLINE", r"[ \t]+"),
    ("WS", r"[ \t\x0C\r\n]+"),
    ("CR", r"\r"),
    ("LF", r"\n"),
    ("NEWLINE", r"(?:\r?\n)+"),
    ("SH_COMMENT", r"#[^\n]*"),
    ("CPP_COMMENT", r"//[^\n]*"),
    // The shortest match of `/*` ... `*/`: no `*/` before the end.
    ("C_COMMENT", r"/\*(?:[^*]|\*+[^*/])*\*+/"),
    ("SQL_COMMENT", r"--[^\n]*"),
];

/// The regex of a common terminal.
pub fn lookup(name: &str) -> Option<&'static str> {
    COMMON.iter().find(|(n, _)| *n == name).map(|(_, r)| *r)
}

/// The names, for error messages.
pub fn names() -> String {
    COMMON.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
}
