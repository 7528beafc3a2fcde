"""Lark grammars (llguidance's dialect): every construct with strings it
accepts and rejects over SmolLM2's real vocabulary, the examples of
llguidance's syntax documentation (rewritten as tests, with SmolLM2's
special tokens standing in for Llama's), errors with line and column, and
a property test against the same grammars written as GBNF."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import formcast as fc

EOT, IM_START, IM_END = 0, 1, 2  # SmolLM2: <|endoftext|>, <|im_start|>, <|im_end|>


@pytest.fixture(scope="module")
def compiler(smollm2):
    return fc.GrammarCompiler(smollm2)


def accepts(compiled, *steps) -> bool:
    """Steps are text (accepted as a string) or token ids."""
    m = fc.GrammarMatcher(compiled)
    for s in steps:
        ok = m.accept_string(s) if isinstance(s, str) else m.accept_token(s)
        if not ok:
            return False
    return m.can_terminate()


def check(compiler, text, yes=(), no=()):
    compiled = compiler.compile_lark(text)
    for s in yes:
        steps = s if isinstance(s, tuple) else (s,)
        assert accepts(compiled, *steps), (text, s)
    for s in no:
        steps = s if isinstance(s, tuple) else (s,)
        assert not accepts(compiled, *steps), (text, s)


CONSTRUCTS = [
    # rules, alternation, groups, optional, repetition
    ('start: x\nx: "a" | "b"', ["a", "b"], ["", "ab"]),
    ('start: "a" | ', ["a", ""], ["b"]),
    ('start: ["a"] "b"', ["b", "ab"], ["a"]),
    ('start: ("a" | "b")~3', ["aba"], ["ab", "abab"]),
    ('start: "a" ~ 2..3', ["aa", "aaa"], ["a", "aaaa"]),
    ('start: "a"{2,3}', ["aa", "aaa"], ["a", "aaaa"]),
    ('start: "a"{,2} "b"{2,}', ["bb", "aabbb"], ["aaabb", "ab"]),
    ('start: "a"? "b"* "c"+', ["c", "abbcc"], ["", "aac"]),
    # terminals: regular, composed, inlined
    ("start: INT\nINT: \"-\"? UINT\nUINT: DIGIT+\nDIGIT: /[0-9]/", ["-12", "7"], ["-", "1-"]),
    ('start: A\nA: "x" ["y" ["z"]]', ["x", "xyz"], ["xz"]),
    # strings, case-insensitive strings, ranges, escapes
    ('start: "ab"i', ["aB", "AB"], ["a"]),
    ('start: "é"i', ["É"], ["e"]),
    ('start: "a".."c"', ["b"], ["d"]),
    (r'start: "\t\x41\u00e9\""', ['\tAé"'], []),
    # regexes and their flags (Rust regex syntax)
    ("start: /ab/i", ["Ab"], ["abc"]),
    ("start: /a.b/s", ["a\nb"], []),
    ("start: /a.b/", ["axb"], ["a\nb"]),
    ("start: /a b/x", ["ab"], ["a b"]),
    (r"start: /a\/b/", ["a/b"], []),
    (r"start: /\d+/", ["12", "٣"], ["a"]),
    # comments, names with '-', tree-shaping prefixes and aliases
    ('?start: my-rule // c\nmy-rule: _x -> alias # c2\n_x: "a"', ["a"], ["b"]),
    ('start: "a"\n  | "b"\n  | "c"', ["c"], ["d"]),
    ('start: x\nx[capture]: /a+/', ["aaa"], [""]),
    # %import common
    ("start: NUMBER\n%import common.NUMBER", ["1.5e3", ".5", "12"], ["-1"]),
    ("start: SIGNED_NUMBER\n%import common.SIGNED_NUMBER", ["-1.5"], ["--1"]),
    ("start: ESCAPED_STRING\n%import common.ESCAPED_STRING", ['"a\\"b"', '"a\nb"'], ['"a\\\nb"', '"a']),
    ("start: CNAME WS_INLINE WORD\n%import common (CNAME, WS_INLINE, WORD)", ["_a1 \tXy"], ["1a b"]),
    ("start: SP\n%import common.WS -> SP", [" \n"], [""]),
    ("start: C_COMMENT\n%import common.C_COMMENT", ["/* a * b */"], ["/* */ */"]),
    # %ignore: between lexemes, across rules, never first or last
    ('start: "a" "b"\n%ignore " "', ["ab", "a  b"], [" ab", "ab "]),
    ('start: ab\nab: "a" "b"\n%ignore " "', ["a b"], []),
    ('start: AB\nAB: "a" "b"\n%ignore " "', ["ab"], ["a b"]),
    ('start: x "c"\nx: "a" "b"?\n%ignore WS\n%import common.WS', ["a\nb c", "a c"], ["a c\n"]),
    ('start: "a" %json{"type":"integer"} "b"\n%ignore " "', ["a12b"], ["a 12b", "a12 b"]),
    ('%llguidance {"allow_initial_skip": true}\nstart: "a" "b"\n%ignore " "', [" a b"], ["ab "]),
    ('%llguidance {"skip_repetition": "once"}\n%ignore /[ \\t]{1,8}/\nstart: "A" "!"', ["A    !"], ["A         !"]),
    # special tokens
    ("start: <|im_start|> \"a\" <|im_end|>", [(IM_START, "a", IM_END)], [("a",), (IM_START, "a")]),
    ("start: <[1-2]> \"a\"", [(IM_END, "a")], [(EOT, "a")]),
    ("start: <[^0]> \"a\"", [(IM_START, "a")], [(EOT, "a")]),
    ("start: <[*]> \"a\"", [(EOT, "a"), (IM_END, "a")], ["a"]),
    ('start: "a" <[1]> "a"\n%ignore " "', [("a ", IM_START, " a")], []),
    # %json, %regex substrings
    ('start: %json {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}', ['{"a": 1}', '{"a":1,"b":true}'], ['{"b":1}']),
    ('start: %regex {"substring_chunks": ["abc", "de", "fg"]}', ["", "abcde", "defg"], ["ab", "cde"]),
]


@pytest.mark.parametrize("text,yes,no", CONSTRUCTS, ids=[c[0][:40] for c in CONSTRUCTS])
def test_constructs(compiler, text, yes, no):
    check(compiler, text, yes, no)


# ---- llguidance's documentation (docs/syntax.md), as tests ----

WEATHER = """{
  "type": "object",
  "properties": {
    "name": { "const": "get_weather" },
    "parameters": {
      "type": "object",
      "properties": {
        "city": { "type": "string" }
      },
      "required": ["city"]
    }
  },
  "required": ["name", "parameters"]
}"""


def test_doc_inline_json_function_call(compiler):
    check(
        compiler,
        "start: TEXT | fun_call\nTEXT: /[^{](.|\\n)*/\nfun_call: %json " + WEATHER,
        ["There is no function I can call", '{"name":"get_weather", "parameters": {"city":"Seattle"}}'],
        ['{"name":"other", "parameters": {"city":"x"}}', "{"],
    )


def test_doc_special_token_function_call(compiler):
    # <|python_tag|> / <|eom_id|> are Llama's; SmolLM2's tokens stand in.
    g = "start: TEXT | fun_call\nTEXT: /[^{](.|\\n)*/\nfun_call: <|im_start|> json_body <|im_end|>\njson_body: %json " + WEATHER
    check(
        compiler,
        g,
        ["plain text", (IM_START, '{"name": "get_weather", "parameters": {"city": "Paris"}}', IM_END)],
        [(IM_START, '{"name": "get_weather"}', IM_END)],
    )


def test_doc_brave_and_wolfram(compiler):
    g = r"""start: normal_text | brave | wolfram
normal_text: /(.|\n)*/
brave: <|im_start|> "brave_search.call(query=" JSON_STRING ")" <|im_end|>
wolfram: <|im_start|> "wolfram_alpha.call(query=" JSON_STRING ")" <|im_end|>
JSON_CHAR: /(\\([\"\\\/bfnrt]|u[a-fA-F0-9]{4})|[^\"\\\x00-\x1F\x7F])/
JSON_STRING: "\"" JSON_CHAR* "\""
"""
    check(
        compiler,
        g,
        ["anything\nat all", (IM_START, 'brave_search.call(query="a \\"b\\"")', IM_END)],
        [(IM_START, "brave_search.call(query=x)", IM_END), (IM_START, 'wolfram_alpha.call(query="\n")', IM_END)],
    )


def test_doc_reasoning(compiler):
    # <think> is a special token in DeepSeek-R1's vocabulary; SmolLM2's
    # <|im_start|> / <|im_end|> stand in.
    g = """start: <|im_start|> "\\n" /(.|\\n)*/ <|im_end|> address
address: %json {
    "type": "object",
    "properties": {
        "street": { "type": "string" },
        "city": { "type": "string" },
        "zip": { "type": "number" }
    },
    "required": ["street", "city", "zip"]
}"""
    addr = '{"street": "1 Main St", "city": "X", "zip": 12345}'
    check(compiler, g, [(IM_START, "\nhmm, let me think", IM_END, addr)], [(IM_START, "no newline", IM_END, addr), (IM_START, "\n", IM_END, "{}")])
    check(compiler, "start: /(.|\\n){3,5}/ <|im_end|> \"ok\"", [("abc", IM_END, "ok")], [("ab", IM_END, "ok"), ("abcdef", IM_END, "ok")])


def test_doc_structured_regex_equivalence(compiler):
    # "INT is equivalent to /(-)?[0-9]+/"
    a = compiler.compile_lark('start: INT\nINT: "-"? UINT\nUINT: DIGIT+\nDIGIT: /[0-9]/')
    b = compiler.compile_lark("start: /(-)?[0-9]+/")
    for s in ["", "-", "0", "-12", "1-", "--1", "123"]:
        assert accepts(a, s) == accepts(b, s), s


def test_doc_identifier_and_recursion(compiler):
    check(
        compiler,
        "start: IDENTIFIER\nID_START: /[a-zA-Z_]/\nID_CHAR: /[a-zA-Z0-9_]/\nIDENTIFIER: ID_START ID_CHAR*",
        ["_x9", "a"],
        ["9a", ""],
    )
    check(
        compiler,
        'start: expr\nexpr: expr "+" term | term\nterm: term "*" factor | factor\nfactor: "(" expr ")" | NUMBER\nNUMBER: /[0-9]+/',
        ["1+2*3", "(1+2)*3"],
        ["1+", "()"],
    )
    # "digits will match 123 but also 1 2 3" (a lower-case rule: lexemes).
    check(compiler, "start: digits\ndigits: /[0-9]/+\n%ignore \" \"", ["123", "1 2 3", "1 23"], [" 1"])


def test_doc_lazy_lexemes(compiler):
    # "given a string foo<end>bar<end>, they will all match just the prefix
    # foo<end>" (captures change nothing in the language).
    rules = {
        "outer_suffix": 'with_suffix[capture, suffix="<end>"]: /.*/\nouter_suffix[capture]: with_suffix',
        "outer_lazy": "with_lazy[capture, lazy]: /.*<end>/\nouter_lazy[capture]: with_lazy",
    }
    for name, body in rules.items():
        check(compiler, f"start: {name}\n{body}", ["foo<end>"], ["foo<end>bar<end>", "foo"])
        check(compiler, f'start: {name} "bar<end>"\n{body}', ["foo<end>bar<end>"], [])
    # with_stop hides "<end>" from the output by taking its tokens back.
    with pytest.raises(fc.GrammarError, match="'stop'"):
        compiler.compile_lark('start: with_stop\nwith_stop[capture, stop="<end>"]: /.*/')
    # "foo[lazy]: /[0-9]+/ will only match a single digit".
    check(compiler, "start: foo\nfoo[lazy]: /[0-9]+/", ["7"], ["72"])
    # "foo[lazy]: /.*/ will match only the empty string": llguidance 1.9.1
    # takes one character too (the empty match does not end a lexeme), and
    # so does formcast.
    check(compiler, "start: foo\nfoo[lazy]: /.*/", ["", "x"], ["xy"])
    check(compiler, "start: DIGITS\nDIGITS: /[0-9]/+\n%ignore \" \"", ["123"], ["1 2"])


def test_doc_skip_repetition_once(compiler):
    g = '%llguidance { "skip_repetition": "once" }\n%ignore /[ \\t]{1,8}/\nstart: "A" "!"'
    check(compiler, g, ["A!", "A \t !"], ["A" + " " * 9 + "!"])


def test_doc_json_ignore_and_options(compiler):
    check(compiler, "%llguidance {}\nstart: \"a\"", ["a"], [])
    check(compiler, '%llguidance { "no_forcing": true }\nstart: "a"', ["a"], [])
    check(compiler, 'start: "[" NUM ("," NUM)* "]"\nNUM: /[0-9]+/\n%ignore /[ \\t\\n\\r]+/', ["[1, 2 ,\n3]"], ["[1,]"])


def test_doc_multiple_grammars(compiler):
    # llguidance's {"grammars": [...]} / xgrammar's named_grammars.
    g = fc.Grammar.from_lark(
        "start: /(.|\\n)*/ | fun\nfun: <|im_start|> @fcall <|im_end|>",
        compiler.tokenizer,
        named_grammars={"fcall": fc.Grammar.from_json_schema({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]})},
    )
    c = compiler.compile(g)
    assert accepts(c, (IM_START), '{"q": "x"}', IM_END)
    assert not accepts(c, IM_START, '{"r": "x"}', IM_END)
    g2 = fc.Grammar.from_lark('start: "<" @num ">"', named_grammars={"num": "start: /[0-9]+/"})
    assert accepts(compiler.compile(g2), "<42>")


@pytest.mark.parametrize(
    "text,needle,line,column",
    [
        ("start: X\nX[lazy]: /a+/", "go on lower-case rules", 2, 3),
        ("start: x\nx[stop=\"<end>\"]: /.*/", "'stop'", 2, 3),
        ("start: x\nx[lazy]: y\ny: \"a\"", "the lazy rule 'x' uses the rule 'y'", 2, 10),
        ("start: x\nx[max_tokens=10]: /.*/", "'max_tokens'", 2, 3),
        ("start: x\nx[temperature=0.7]: /.*/", "'temperature'", 2, 3),
        ("start: ASCII_LINES\nASCII_LINES: /[a-zA-Z \\n]*/ & ~/(?s:.*)\\n\\n(?s:.*)/", "'&'", 2, 29),
        ("start: X\nX.2: \"a\"", "priorities", 2, 2),
        ("start: \"a\"\n%declare FOO", "%declare", 2, 1),
        ("start: %regex {\"substring_words\": \"foo bar. baz\"}", "substring_words", 1, 8),
        ("start: /a/l", "flag 'l'", 1, 8),
        ("%import other.X\nstart: X", "only the built-in `common`", 1, 9),
        ("start: @fcall", "unknown grammar @fcall", 1, 8),
        ("start: A\nA: \"x\" A?", "refers to itself", 2, 8),
        ("start: A\nA: b\nb: \"x\"", "uses the rule 'b'", 2, 4),
        ("start: A\nA: <|im_end|>", "special tokens cannot be used in terminals", 2, 4),
        ("start: <|nope|>", "is not a token of the vocabulary", 1, 8),
        ("start: <[99999999]>", "outside the vocabulary", 1, 8),
        ("x: \"a\"", "no `start` rule", 1, 1),
        ("start: \"a\"\n    \"b\"", "expected a rule or terminal definition", 2, 5),
        ("start: %json {\"type\": \"strin\"}", "%json", 1, 8),
    ],
)
def test_errors_have_line_column_and_line(smollm2, text, needle, line, column):
    with pytest.raises(fc.GrammarError) as e:
        fc.Grammar.from_lark(text, smollm2)
    assert needle in str(e.value), str(e.value)
    assert (e.value.line, e.value.column) == (line, column), str(e.value)
    offending = text.split("\n")[line - 1]
    assert offending.strip()[:50] in str(e.value)


def test_special_tokens_need_a_tokenizer():
    with pytest.raises(fc.GrammarError, match="needs a tokenizer"):
        fc.Grammar.from_lark("start: <|im_end|>")
    fc.Grammar.from_lark("start: <[2]>")  # numeric ids need none


def test_limits():
    with pytest.raises(fc.LimitError):
        fc.Grammar.from_lark("start: " + "(" * 5000 + '"a"' + ")" * 5000)
    with pytest.raises(fc.LimitError):
        fc.Grammar.from_lark('start: "a"~100001')
    with pytest.raises(fc.LimitError):
        fc.Grammar.from_lark("start: <[0-5000000]>")
    chain = "".join(f"T{i}: T{i + 1}\n" for i in range(3000)) + 'T3000: "x"\nstart: T0'
    with pytest.raises(fc.LimitError):
        fc.Grammar.from_lark(chain)


def test_cache_key(compiler, smollm2):
    a = fc.Grammar.from_lark('start: "a"')
    assert compiler.compile(a) is compiler.compile(fc.Grammar.from_lark('start: "a"'))
    assert fc.Grammar.from_lark('start: "a"', smollm2)._key != a._key
    n1 = fc.Grammar.from_lark("start: @x", named_grammars={"x": 'start: "1"'})
    n2 = fc.Grammar.from_lark("start: @x", named_grammars={"x": 'start: "2"'})
    assert n1._key != n2._key
    assert compiler.compile(n1) is not compiler.compile(n2)


# ---- property: a random Lark grammar accepts what its GBNF translation does ----

ALPHABET = "abc"


def _leaf():
    return st.one_of(
        st.text(alphabet=ALPHABET, min_size=1, max_size=3).map(lambda s: ("lit", s)),
        st.sampled_from([("cls", "ab"), ("cls", "bc"), ("range", "a", "b")]),
    )


def _expr(n_rules):
    refs = st.integers(min_value=0, max_value=n_rules - 1).map(lambda i: ("ref", i))

    def extend(inner):
        return st.one_of(
            st.lists(inner, min_size=2, max_size=3).map(lambda v: ("seq", v)),
            st.lists(inner, min_size=2, max_size=3).map(lambda v: ("alt", v)),
            st.tuples(inner, st.sampled_from(["?", "*", "+", (0, 2), (1, 2), (2, 2)])).map(lambda t: ("rep", t[0], t[1])),
        )

    return st.recursive(st.one_of(_leaf(), refs), extend, max_leaves=5)


def to_lark(e) -> str:
    kind = e[0]
    if kind == "lit":
        return f'"{e[1]}"'
    if kind == "cls":
        return f"/[{e[1]}]/"
    if kind == "range":
        return f'"{e[1]}".."{e[2]}"'
    if kind == "ref":
        return f"r{e[1]}"
    if kind == "seq":
        return "(" + " ".join(to_lark(x) for x in e[1]) + ")"
    if kind == "alt":
        return "(" + " | ".join(to_lark(x) for x in e[1]) + ")"
    op = e[2]
    return f"({to_lark(e[1])})" + (op if isinstance(op, str) else f"~{op[0]}..{op[1]}" if op[0] != op[1] else f"~{op[0]}")


def to_gbnf(e) -> str:
    kind = e[0]
    if kind == "lit":
        return f'"{e[1]}"'
    if kind == "cls":
        return f"[{e[1]}]"
    if kind == "range":
        return f"[{e[1]}-{e[2]}]"
    if kind == "ref":
        return f"r{e[1]}"
    if kind == "seq":
        return "(" + " ".join(to_gbnf(x) for x in e[1]) + ")"
    if kind == "alt":
        return "(" + " | ".join(to_gbnf(x) for x in e[1]) + ")"
    op = e[2]
    return f"({to_gbnf(e[1])})" + (op if isinstance(op, str) else f"{{{op[0]},{op[1]}}}")


def sample(e, rules, rng, depth=0):
    """A string of the language, or None (gave up on deep recursion)."""
    if depth > 12:
        return None
    kind = e[0]
    if kind == "lit":
        return e[1]
    if kind == "cls":
        return rng.choice(e[1])
    if kind == "range":
        return rng.choice("ab")
    if kind == "ref":
        return sample(rules[e[1]], rules, rng, depth + 1)
    if kind == "seq":
        parts = [sample(x, rules, rng, depth + 1) for x in e[1]]
        return None if None in parts else "".join(parts)
    if kind == "alt":
        return sample(rng.choice(e[1]), rules, rng, depth + 1)
    op = e[2]
    lo, hi = {"?": (0, 1), "*": (0, 3), "+": (1, 3)}.get(op, op) if isinstance(op, str) else op
    parts = [sample(e[1], rules, rng, depth + 1) for _ in range(rng.randint(lo, hi))]
    return None if None in parts else "".join(parts)


BYTES = fc.TokenizerInfo.from_vocab([bytes([i]) for i in range(256)])
BYTE_COMPILER = fc.GrammarCompiler(BYTES)


@st.composite
def grammars(draw):
    n = draw(st.integers(min_value=1, max_value=3))
    return [draw(_expr(n)) for _ in range(n)]


@settings(max_examples=150, deadline=None)
@given(grammars(), st.lists(st.text(alphabet=ALPHABET, max_size=6), max_size=8), st.randoms(use_true_random=False))
def test_lark_matches_its_gbnf_translation(rules, randoms, rng):
    lark = "start: r0\n" + "".join(f"r{i}: {to_lark(e)}\n" for i, e in enumerate(rules))
    gbnf = "root ::= r0\n" + "".join(f"r{i} ::= {to_gbnf(e)}\n" for i, e in enumerate(rules))
    try:
        g_ebnf = fc.Grammar.from_ebnf(gbnf)
    except fc.GrammarError:
        with pytest.raises(fc.GrammarError):
            fc.Grammar.from_lark(lark, lexer="context_free")
        return
    # Read as a context-free grammar; llguidance's lexer cuts lexemes
    # (test_lark_lexer.py checks that reading against a reference).
    a = BYTE_COMPILER.compile(fc.Grammar.from_lark(lark, lexer="context_free"))
    b = BYTE_COMPILER.compile(g_ebnf)
    samples = [sample(rules[0], rules, rng) for _ in range(6)]
    for s in [x for x in samples if x is not None] + randoms:
        assert accepts(a, s) == accepts(b, s), (lark, s)
    for s in samples:
        if s is not None:
            assert accepts(a, s), (lark, s)


@settings(max_examples=100, deadline=None)
@given(grammars(), st.randoms(use_true_random=False), st.sampled_from(["llguidance", "context_free"]))
def test_ignore_goes_between_lexemes_only(rules, rng, lexer):
    """With `%ignore " "`, a sampled string with spaces put between its
    lexemes is accepted; with a space before it, rejected, and after it
    too when read as a context-free grammar. (Read as llguidance reads it,
    lexemes written together may be cut otherwise, so there at least one
    space parts them.)"""
    lark = "start: r0\n" + "".join(f"r{i}: {to_lark(e)}\n" for i, e in enumerate(rules)) + '%ignore " "\n'
    try:
        compiled = BYTE_COMPILER.compile(fc.Grammar.from_lark(lark, lexer=lexer))
    except fc.GrammarError:
        return
    least = 1 if lexer == "llguidance" else 0
    for _ in range(5):
        lexemes = sample_lexemes(rules[0], rules, rng)
        if lexemes is None:
            continue
        spaced = "".join(lx + " " * rng.randint(least, 2) for lx in lexemes[:-1]) + (lexemes[-1] if lexemes else "")
        assert accepts(compiled, spaced), (lark, lexemes, spaced)
        if lexemes:
            assert not accepts(compiled, " " + spaced), (lark, spaced)
            if lexer == "context_free":
                # llguidance's reading takes a trailing space where another
                # lexeme could follow (test_lark_lexer.py's pairs).
                assert not accepts(compiled, spaced + " "), (lark, spaced)


def sample_lexemes(e, rules, rng, depth=0):
    """Like `sample`, as the list of lexemes (each literal, class or range)."""
    if depth > 12:
        return None
    kind = e[0]
    if kind in ("lit", "cls", "range"):
        return [sample(e, rules, rng)]
    if kind == "ref":
        return sample_lexemes(rules[e[1]], rules, rng, depth + 1)
    if kind == "seq":
        out = []
        for x in e[1]:
            p = sample_lexemes(x, rules, rng, depth + 1)
            if p is None:
                return None
            out += p
        return out
    if kind == "alt":
        return sample_lexemes(rng.choice(e[1]), rules, rng, depth + 1)
    op = e[2]
    lo, hi = {"?": (0, 1), "*": (0, 3), "+": (1, 3)}.get(op, op) if isinstance(op, str) else op
    out = []
    for _ in range(rng.randint(lo, hi)):
        p = sample_lexemes(e[1], rules, rng, depth + 1)
        if p is None:
            return None
        out += p
    return out


def test_random_strings_never_crash(compiler):
    rng = random.Random(7)
    pieces = ['"a"', "/b+/", "x", "X", "(", ")", "[", "]", "|", "*", "?", "~ 2", "<[1]>", "%ignore", ":", "\n", "start", "{1,2}", '"\\', "/", "%json {", "@g", "->", "%import common.WS"]
    for _ in range(300):
        text = "start: " + " ".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
        try:
            fc.Grammar.from_lark(text, compiler.tokenizer)
        except fc.GrammarError as e:
            assert e.line >= 1 and e.column >= 1
        except fc.LimitError:
            pass
