//! ECMA-262 regular expressions rewritten into `regex-syntax` syntax.
//!
//! Two readings share this scanner:
//!
//! * [`EcmaMode::Unicode`]: exactly the pattern syntax of ECMAScript's
//!   `new RegExp(pattern, "u")` (code points, `\u{...}`, `\p{...}`), with the
//!   strict syntax that the `u` flag implies: identity escapes only for
//!   syntax characters and `/` (and `-` in a class), no lone `{`, `}` or
//!   `]`, no class escape as a range bound, no quantifier on an assertion or
//!   after another quantifier. This is the `"ecma"` dialect of
//!   `Grammar.from_regex`.
//! * [`EcmaMode::Lenient`]: the reading JSON Schema `pattern` has always had
//!   here: the same meaning, plus the web-compatibility forms of Annex B
//!   that real schemas use (`\-`, `\@`, a literal `{` or `]`, `[\w-.]`).
//!
//! Meaning, in both: `\d` and `\w` are ASCII-only, `\s` is ECMA's own white
//! space and line-terminator set, `.` excludes the four line terminators,
//! `[^]` is any character and `[]` none; `[`, `&`, `~` inside a class are
//! literals. Refused, by name: backreferences (`\1`, `\k<n>`), lookaround,
//! word boundaries, modifier groups (`(?i:...)`), lone surrogates, and
//! Unicode properties `regex-syntax` has no table for.
//!
//! The output remembers, for every piece it emits, the byte offset of the
//! source text it came from, so errors found later (by `regex-syntax` or the
//! anchor checks) point into the user's pattern.

use crate::GrammarError;

/// Which ECMA reading to apply; see the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EcmaMode {
    /// `new RegExp(p, "u")`, strict.
    Unicode,
    /// JSON Schema `pattern`: the `u` meaning with Annex B's lenient syntax.
    Lenient,
}

/// A translated pattern and where its pieces came from.
#[derive(Debug, Clone)]
pub struct Translated {
    /// The pattern in `regex-syntax` syntax.
    pub text: String,
    /// `(output byte offset, source byte offset)`, increasing.
    marks: Vec<(usize, usize)>,
}

impl Translated {
    /// The source offset of the piece that produced output byte `out`.
    pub fn source_offset(&self, out: usize) -> usize {
        match self.marks.binary_search_by(|m| m.0.cmp(&out)) {
            Ok(i) => self.marks[i].1,
            Err(0) => 0,
            Err(i) => self.marks[i - 1].1,
        }
    }
}

/// ECMA `\s`: WhiteSpace and LineTerminator code points.
pub const ECMA_SPACE: &str =
    r"\t\n\x{0B}\x{0C}\r\x{20}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}";
const ECMA_DOT: &str = r"[^\n\r\x{2028}\x{2029}]";
const NOTHING: &str = r"[^\x{0}-\x{10FFFF}]";
const ANYTHING: &str = r"[\x{0}-\x{10FFFF}]";

/// One class atom: a character, or a set (a class escape) as class items.
enum ClassAtom {
    Char(u32),
    Set(String),
}

struct Scanner<'p> {
    src: &'p str,
    cs: Vec<(usize, char)>,
    i: usize,
    out: String,
    marks: Vec<(usize, usize)>,
    strict: bool,
    group_names: Vec<String>,
}

fn syntax_char(c: char) -> bool {
    matches!(c, '^' | '$' | '\\' | '.' | '*' | '+' | '?' | '(' | ')' | '[' | ']' | '{' | '}' | '|')
}

fn lit(c: u32) -> String {
    match char::from_u32(c) {
        Some(ch) if ch.is_ascii_alphanumeric() => ch.to_string(),
        _ => format!(r"\x{{{c:X}}}"),
    }
}

impl<'p> Scanner<'p> {
    fn pos(&self) -> usize {
        self.cs.get(self.i).map_or(self.src.len(), |&(o, _)| o)
    }
    fn peek(&self, k: usize) -> Option<char> {
        self.cs.get(self.i + k).map(|&(_, c)| c)
    }
    fn err(&self, at: usize, msg: impl Into<String>) -> GrammarError {
        GrammarError::RegexSyntax { position: at, message: msg.into() }
    }
    fn emit(&mut self, at: usize, s: &str) {
        self.marks.push((self.out.len(), at));
        self.out.push_str(s);
    }

    /// Exactly `n` hex digits, consumed.
    fn hex(&mut self, n: usize, what: &str, at: usize) -> Result<u32, GrammarError> {
        let mut v = 0u32;
        for k in 0..n {
            let d = self.peek(k).and_then(|c| c.to_digit(16)).ok_or_else(|| self.err(at, format!("invalid {what} escape")))?;
            v = v * 16 + d;
        }
        self.i += n;
        Ok(v)
    }

    /// After `\u`: `XXXX` (a surrogate pair of two escapes combined) or
    /// `{X...}`.
    fn unicode_escape(&mut self, at: usize) -> Result<u32, GrammarError> {
        if self.peek(0) == Some('{') {
            self.i += 1;
            let mut v: u32 = 0;
            let mut digits = 0;
            while let Some(d) = self.peek(0).and_then(|c| c.to_digit(16)) {
                v = v.saturating_mul(16).saturating_add(d);
                digits += 1;
                self.i += 1;
            }
            if digits == 0 || self.peek(0) != Some('}') || v > 0x10FFFF {
                return Err(self.err(at, r"invalid \u{...} escape"));
            }
            self.i += 1;
            return self.not_surrogate(v, at);
        }
        let v = self.hex(4, r"\u", at)?;
        if (0xD800..0xDC00).contains(&v) && self.peek(0) == Some('\\') && self.peek(1) == Some('u') {
            let save = self.i;
            self.i += 2;
            match self.hex(4, r"\u", at) {
                Ok(lo) if (0xDC00..0xE000).contains(&lo) => return Ok(0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00)),
                _ => self.i = save,
            }
        }
        self.not_surrogate(v, at)
    }

    fn not_surrogate(&self, v: u32, at: usize) -> Result<u32, GrammarError> {
        if (0xD800..0xE000).contains(&v) {
            return Err(self.err(at, "lone surrogates are not supported (text is UTF-8: they never occur)"));
        }
        Ok(v)
    }

    /// `\p{...}` / `\P{...}` after the `p`/`P`, as class items.
    fn property(&mut self, negated: bool, at: usize) -> Result<String, GrammarError> {
        if self.peek(0) != Some('{') {
            return Err(self.err(at, r"invalid \p escape (expected \p{...})"));
        }
        let start = self.i + 1;
        let end = (start..self.cs.len()).find(|&k| self.cs[k].1 == '}').ok_or_else(|| self.err(at, r"invalid \p escape"))?;
        let body: String = self.cs[start..end].iter().map(|&(_, c)| c).collect();
        self.i = end + 1;
        let set = property_items(&body, self.strict).map_err(|m| self.err(at, m))?;
        Ok(match (set, negated) {
            (Prop::Nothing, false) | (Prop::Anything, true) => NOTHING.into(),
            (Prop::Nothing, true) | (Prop::Anything, false) => ANYTHING.into(),
            (Prop::Named(n), false) => format!(r"\p{{{n}}}"),
            (Prop::Named(n), true) => format!(r"\P{{{n}}}"),
        })
    }

    /// An escape after the backslash (consumed), in or out of a class.
    fn escape(&mut self, in_class: bool) -> Result<ClassAtom, GrammarError> {
        let at = self.pos();
        self.i += 1;
        let n = self.peek(0).ok_or_else(|| self.err(at, "pattern ends with a lone backslash"))?;
        self.i += 1;
        let set = |s: &str| ClassAtom::Set(s.into());
        Ok(match n {
            'd' => set("0-9"),
            'D' => set("[^0-9]"),
            'w' => set("0-9A-Za-z_"),
            'W' => set("[^0-9A-Za-z_]"),
            's' => set(ECMA_SPACE),
            'S' => ClassAtom::Set(format!("[^{ECMA_SPACE}]")),
            'b' if in_class => ClassAtom::Char(8),
            'b' | 'B' => return Err(self.err(at, format!(r"word boundaries ('\{n}') are not supported"))),
            't' => ClassAtom::Char(9),
            'n' => ClassAtom::Char(10),
            'v' => ClassAtom::Char(11),
            'f' => ClassAtom::Char(12),
            'r' => ClassAtom::Char(13),
            '0' if !self.peek(0).is_some_and(|d| d.is_ascii_digit()) => ClassAtom::Char(0),
            '0' => return Err(self.err(at, r"invalid escape '\0' followed by a digit (no octal escapes)")),
            '0'..='9' => return Err(self.err(at, "backreferences are not supported")),
            'k' if self.peek(0) == Some('<') => return Err(self.err(at, "backreferences are not supported")),
            'c' => {
                let l = self.peek(0).filter(|l| l.is_ascii_alphabetic()).ok_or_else(|| self.err(at, r"invalid \c escape (a letter must follow)"))?;
                self.i += 1;
                ClassAtom::Char(l as u32 % 32)
            }
            'x' => ClassAtom::Char(self.hex(2, r"\x", at)?),
            'u' => ClassAtom::Char(self.unicode_escape(at)?),
            'p' | 'P' => ClassAtom::Set(self.property(n == 'P', at)?),
            n if syntax_char(n) || n == '/' => ClassAtom::Char(n as u32),
            '-' if in_class || !self.strict => ClassAtom::Char('-' as u32),
            n if self.strict => return Err(self.err(at, format!(r"invalid escape '\{n}' (with the u flag only syntax characters and '/' may be escaped)"))),
            n if n.is_ascii_alphanumeric() => return Err(self.err(at, format!(r"unknown escape \{n}"))),
            n => ClassAtom::Char(n as u32),
        })
    }

    fn class_atom(&mut self) -> Result<ClassAtom, GrammarError> {
        match self.peek(0) {
            Some('\\') => self.escape(true),
            Some(c) => {
                self.i += 1;
                Ok(ClassAtom::Char(c as u32))
            }
            None => Err(self.err(self.src.len(), "unterminated character class")),
        }
    }

    /// A class, from its `[`.
    fn class(&mut self) -> Result<(), GrammarError> {
        let at = self.pos();
        self.i += 1;
        let negated = self.peek(0) == Some('^');
        if negated {
            self.i += 1;
        }
        let mut items = String::new();
        loop {
            match self.peek(0) {
                None => return Err(self.err(at, "unterminated character class")),
                Some(']') => {
                    self.i += 1;
                    break;
                }
                _ => {}
            }
            let a_at = self.pos();
            let a = self.class_atom()?;
            if self.peek(0) == Some('-') && self.peek(1).is_some_and(|c| c != ']') {
                self.i += 1;
                let b = self.class_atom()?;
                match (a, b) {
                    (ClassAtom::Char(lo), ClassAtom::Char(hi)) => {
                        if lo > hi {
                            return Err(self.err(a_at, "range out of order in character class"));
                        }
                        items.push_str(&format!(r"\x{{{lo:X}}}-\x{{{hi:X}}}"));
                    }
                    (a, b) => {
                        if self.strict {
                            return Err(self.err(a_at, "a class escape (\\d, \\w, \\s, \\p{...}) cannot bound a range"));
                        }
                        // Annex B: the escape, '-' and the other bound.
                        for x in [a, ClassAtom::Char('-' as u32), b] {
                            match x {
                                ClassAtom::Char(c) => items.push_str(&format!(r"\x{{{c:X}}}")),
                                ClassAtom::Set(s) => items.push_str(&s),
                            }
                        }
                    }
                }
            } else {
                match a {
                    ClassAtom::Char(c) => items.push_str(&format!(r"\x{{{c:X}}}")),
                    ClassAtom::Set(s) => items.push_str(&s),
                }
            }
        }
        let text = match (items.is_empty(), negated) {
            (true, false) => NOTHING.to_string(),
            (true, true) => ANYTHING.to_string(),
            (false, false) => format!("[{items}]"),
            (false, true) => format!("[^{items}]"),
        };
        self.emit(at, &text);
        Ok(())
    }

    /// `{n}`, `{n,}`, `{n,m}` at the current `{`: its length in chars.
    fn braces(&self) -> Option<usize> {
        let mut j = 1;
        let digits = |j: &mut usize| {
            let s = *j;
            while self.peek(*j).is_some_and(|c| c.is_ascii_digit()) {
                *j += 1;
            }
            *j > s
        };
        if !digits(&mut j) {
            return None;
        }
        if self.peek(j) == Some(',') {
            j += 1;
            digits(&mut j);
        }
        (self.peek(j) == Some('}')).then_some(j + 1)
    }

    fn group(&mut self) -> Result<(), GrammarError> {
        let at = self.pos();
        if self.peek(1) != Some('?') {
            self.i += 1;
            self.emit(at, "(");
            return Ok(());
        }
        match (self.peek(2), self.peek(3)) {
            (Some(':'), _) => {
                self.i += 3;
                self.emit(at, "(?:");
            }
            (Some('=') | Some('!'), _) | (Some('<'), Some('=') | Some('!')) => {
                return Err(self.err(at, "lookaround is not supported"));
            }
            (Some('<'), _) => {
                self.i += 3;
                let mut name = String::new();
                while let Some(c) = self.peek(0) {
                    if c == '>' {
                        break;
                    }
                    let ok = if name.is_empty() {
                        c == '$' || c == '_' || c.is_alphabetic()
                    } else {
                        c == '$' || c == '_' || c.is_alphanumeric() || c == '\u{200C}' || c == '\u{200D}'
                    };
                    if !ok {
                        return Err(self.err(at, "invalid capture group name"));
                    }
                    name.push(c);
                    self.i += 1;
                }
                if name.is_empty() || self.peek(0) != Some('>') {
                    return Err(self.err(at, "invalid capture group name"));
                }
                self.i += 1;
                if self.group_names.contains(&name) {
                    return Err(self.err(at, format!("duplicate capture group name '{name}'")));
                }
                self.group_names.push(name);
                self.emit(at, "(");
            }
            (Some(c), _) if self.strict && matches!(c, 'i' | 'm' | 's' | '-') => {
                return Err(self.err(at, "inline flags and modifier groups ('(?i)', '(?i:...)') are not ECMA-262 with the u flag"));
            }
            _ => return Err(self.err(at, "invalid group syntax")),
        }
        Ok(())
    }

    fn run(mut self) -> Result<Translated, GrammarError> {
        // Whether the last item can take a quantifier (strict checks only).
        let mut quantifiable = false;
        while let Some(c) = self.peek(0) {
            let at = self.pos();
            let mut next_quantifiable = true;
            match c {
                '\\' => match self.escape(false)? {
                    ClassAtom::Char(c) => self.emit(at, &lit(c)),
                    ClassAtom::Set(s) => self.emit(at, &format!("[{s}]")),
                },
                '[' => self.class()?,
                '(' => {
                    self.group()?;
                    next_quantifiable = false;
                }
                ')' | '|' | '^' | '$' => {
                    self.i += 1;
                    self.emit(at, &c.to_string());
                    next_quantifiable = c == ')';
                }
                '*' | '+' | '?' | '{' => {
                    let len = if c == '{' { self.braces() } else { Some(1) };
                    match len {
                        Some(len) => {
                            if self.strict && !quantifiable {
                                return Err(self.err(at, "nothing to repeat (a quantifier must follow an atom)"));
                            }
                            let text: String = self.cs[self.i..self.i + len].iter().map(|&(_, c)| c).collect();
                            self.i += len;
                            self.emit(at, &text);
                            if self.peek(0) == Some('?') {
                                self.i += 1;
                                self.emit(at, "?");
                            }
                            next_quantifiable = false;
                        }
                        None if self.strict => return Err(self.err(at, "lone '{' (write '\\{' for the character)")),
                        None => {
                            self.i += 1;
                            self.emit(at, &lit('{' as u32));
                        }
                    }
                }
                ']' | '}' if self.strict => return Err(self.err(at, format!("lone '{c}' (write '\\{c}' for the character)"))),
                '.' => {
                    self.i += 1;
                    self.emit(at, ECMA_DOT);
                }
                c => {
                    self.i += 1;
                    self.emit(at, &lit(c as u32));
                }
            }
            quantifiable = next_quantifiable;
        }
        Ok(Translated { text: self.out, marks: self.marks })
    }
}

/// Rewrites an ECMA pattern into `regex-syntax` syntax.
pub fn translate(pattern: &str, mode: EcmaMode) -> Result<Translated, GrammarError> {
    Scanner {
        src: pattern,
        cs: pattern.char_indices().collect(),
        i: 0,
        out: String::with_capacity(pattern.len() + 16),
        marks: Vec::new(),
        strict: mode == EcmaMode::Unicode,
        group_names: Vec::new(),
    }
    .run()
}

enum Prop {
    Nothing,
    Anything,
    Named(String),
}

/// General_Category values ECMA-262 accepts (PropertyValueAliases.txt):
/// each alias with its short name.
const GENERAL_CATEGORY: &[(&str, &str)] = &[
    ("C", "C"), ("Other", "C"), ("Cc", "Cc"), ("Control", "Cc"), ("cntrl", "Cc"), ("Cf", "Cf"), ("Format", "Cf"),
    ("Cn", "Cn"), ("Unassigned", "Cn"), ("Co", "Co"), ("Private_Use", "Co"), ("Cs", "Cs"), ("Surrogate", "Cs"),
    ("L", "L"), ("Letter", "L"), ("LC", "LC"), ("Cased_Letter", "LC"), ("Ll", "Ll"), ("Lowercase_Letter", "Ll"),
    ("Lm", "Lm"), ("Modifier_Letter", "Lm"), ("Lo", "Lo"), ("Other_Letter", "Lo"), ("Lt", "Lt"),
    ("Titlecase_Letter", "Lt"), ("Lu", "Lu"), ("Uppercase_Letter", "Lu"), ("M", "M"), ("Mark", "M"),
    ("Combining_Mark", "M"), ("Mc", "Mc"), ("Spacing_Mark", "Mc"), ("Me", "Me"), ("Enclosing_Mark", "Me"),
    ("Mn", "Mn"), ("Nonspacing_Mark", "Mn"), ("N", "N"), ("Number", "N"), ("Nd", "Nd"), ("Decimal_Number", "Nd"),
    ("digit", "Nd"), ("Nl", "Nl"), ("Letter_Number", "Nl"), ("No", "No"), ("Other_Number", "No"), ("P", "P"),
    ("Punctuation", "P"), ("punct", "P"), ("Pc", "Pc"), ("Connector_Punctuation", "Pc"), ("Pd", "Pd"),
    ("Dash_Punctuation", "Pd"), ("Pe", "Pe"), ("Close_Punctuation", "Pe"), ("Pf", "Pf"),
    ("Final_Punctuation", "Pf"), ("Pi", "Pi"), ("Initial_Punctuation", "Pi"), ("Po", "Po"),
    ("Other_Punctuation", "Po"), ("Ps", "Ps"), ("Open_Punctuation", "Ps"), ("S", "S"), ("Symbol", "S"),
    ("Sc", "Sc"), ("Currency_Symbol", "Sc"), ("Sk", "Sk"), ("Modifier_Symbol", "Sk"), ("Sm", "Sm"),
    ("Math_Symbol", "Sm"), ("So", "So"), ("Other_Symbol", "So"), ("Z", "Z"), ("Separator", "Z"), ("Zl", "Zl"),
    ("Line_Separator", "Zl"), ("Zp", "Zp"), ("Paragraph_Separator", "Zp"), ("Zs", "Zs"),
    ("Space_Separator", "Zs"),
];

/// Binary properties ECMA-262 accepts (its table of binary Unicode
/// property aliases), each name or alias.
const BINARY: &[&str] = &[
    "ASCII", "ASCII_Hex_Digit", "AHex", "Alphabetic", "Alpha", "Any", "Assigned", "Bidi_Control", "Bidi_C",
    "Bidi_Mirrored", "Bidi_M", "Case_Ignorable", "CI", "Cased", "Changes_When_Casefolded", "CWCF",
    "Changes_When_Casemapped", "CWCM", "Changes_When_Lowercased", "CWL", "Changes_When_NFKC_Casefolded", "CWKCF",
    "Changes_When_Titlecased", "CWT", "Changes_When_Uppercased", "CWU", "Dash", "Default_Ignorable_Code_Point", "DI",
    "Deprecated", "Dep", "Diacritic", "Dia", "Emoji", "Emoji_Component", "EComp", "Emoji_Modifier", "EMod",
    "Emoji_Modifier_Base", "EBase", "Emoji_Presentation", "EPres", "Extended_Pictographic", "ExtPict", "Extender",
    "Ext", "Grapheme_Base", "Gr_Base", "Grapheme_Extend", "Gr_Ext", "Hex_Digit", "Hex", "IDS_Binary_Operator",
    "IDSB", "IDS_Trinary_Operator", "IDST", "ID_Continue", "IDC", "ID_Start", "IDS", "Ideographic", "Ideo",
    "Join_Control", "Join_C", "Logical_Order_Exception", "LOE", "Lowercase", "Lower", "Math",
    "Noncharacter_Code_Point", "NChar", "Pattern_Syntax", "Pat_Syn", "Pattern_White_Space", "Pat_WS",
    "Quotation_Mark", "QMark", "Radical", "Regional_Indicator", "RI", "Sentence_Terminal", "STerm", "Soft_Dotted",
    "SD", "Terminal_Punctuation", "Term", "Unified_Ideograph", "UIdeo", "Uppercase", "Upper", "Variation_Selector",
    "VS", "White_Space", "space", "XID_Continue", "XIDC", "XID_Start", "XIDS",
];

/// The `regex-syntax` spelling of an ECMA `\p{body}`. Strict: ECMA's
/// names only, spelled exactly (script values are checked by
/// `regex-syntax`'s tables, which match them loosely). Lenient: any
/// property `regex-syntax` knows.
fn property_items(body: &str, strict: bool) -> Result<Prop, String> {
    let gc = |v: &str| GENERAL_CATEGORY.iter().find(|(a, _)| *a == v).map(|(_, s)| *s);
    let named = |short: &str| if short == "Cs" { Prop::Nothing } else { Prop::Named(format!("gc={short}")) };
    match body.split_once('=') {
        Some((name, value)) => match name {
            "General_Category" | "gc" => gc(value).map(named).ok_or_else(|| format!("unknown General_Category value '{value}'")),
            "Script" | "sc" | "Script_Extensions" | "scx" if !value.is_empty() && value.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => {
                let key = if name.starts_with("Script_") || name == "scx" { "scx" } else { "sc" };
                check_known(Prop::Named(format!("{key}={value}")), body)
            }
            _ if strict => Err(format!("unknown Unicode property '{body}'")),
            _ => check_known(Prop::Named(body.into()), body),
        },
        None => {
            if let Some(short) = gc(body) {
                return Ok(named(short));
            }
            if body == "Any" {
                return Ok(Prop::Anything);
            }
            if BINARY.contains(&body) || (!strict && !body.is_empty()) {
                return check_known(Prop::Named(body.into()), body);
            }
            Err(format!("unknown Unicode property '{body}'"))
        }
    }
}

fn check_known(p: Prop, body: &str) -> Result<Prop, String> {
    if let Prop::Named(n) = &p {
        if regex_syntax::Parser::new().parse(&format!(r"\p{{{n}}}")).is_err() {
            return Err(format!("the Unicode property '{body}' is not supported"));
        }
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strict(p: &str) -> Result<String, String> {
        translate(p, EcmaMode::Unicode).map(|t| t.text).map_err(|e| e.to_string())
    }

    #[test]
    fn offsets_point_into_the_source() {
        let t = translate(r"é\d(a)", EcmaMode::Unicode).unwrap();
        let paren = t.text.find('(').unwrap();
        assert_eq!(t.source_offset(paren), 4);
        assert_eq!(t.source_offset(0), 0);
    }

    #[test]
    fn strict_refuses_annex_b_forms() {
        for p in [r"\-", r"\@", "a{", "a}", "]", r"[\d-z]", "a**", "a++", "^*", r"\c1", r"\x4", r"\x+1", r"\u{110000}", "(?i:a)", r"\p{Greek}", r"\p{Letter_Foo}"] {
            assert!(strict(p).is_err(), "{p}");
        }
        for p in [r"[\-]", r"\/", "a{2}", "a{2,}?", r"[@[\].]", r"\p{L}", r"\p{Script=Greek}", r"\p{sc=Grek}", r"\P{Lu}", "(?<n>a)b", r"\cJ", r"\0"] {
            assert!(strict(p).is_ok(), "{p}: {:?}", strict(p));
        }
    }

    #[test]
    fn lenient_keeps_annex_b_forms() {
        for p in [r"\-", r"\@", "a{", "a}", "]", r"[\d-z]"] {
            assert!(translate(p, EcmaMode::Lenient).is_ok(), "{p}");
        }
    }
}
