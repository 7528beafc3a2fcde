"""Structural tags compiled against real vocabularies and driven through a
GrammarMatcher: what each format accepts and rejects, the typed models,
validation errors with their paths, and properties against a small oracle
of the trigger/exclude semantics."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import formcast as fc
from formcast import structural_tag as S

# Llama-3 special tokens used as token-level delimiters.
PY_TAG = "<|python_tag|>"
EOM = "<|eom_id|>"
EOT = "<|eot_id|>"
RES0 = "<|reserved_special_token_0|>"


@pytest.fixture(scope="module")
def compiler(llama3) -> fc.GrammarCompiler:
    return fc.GrammarCompiler(llama3)


def tid(tok: fc.TokenizerInfo, text: str) -> int:
    i = tok._native.token_id(text)
    assert i is not None, text
    return i


def matcher(compiler, tag) -> fc.GrammarMatcher:
    return fc.GrammarMatcher(compiler.compile_structural_tag(tag))


def run(compiler, tag, *steps) -> bool:
    """Whether the output (strings and token ids) is accepted and complete."""
    m = matcher(compiler, tag)
    for s in steps:
        ok = m.accept_string(s) if isinstance(s, str) else m.accept_token(s)
        if not ok:
            return False
    return m.can_terminate()


def allowed(m, tok) -> np.ndarray:
    bm = fc.allocate_token_bitmask(1, tok.logits_size)
    m.fill_next_token_bitmask(bm)
    return fc.bitmask_to_bool(bm, tok.logits_size)[0]


def wrap(fmt) -> dict:
    return {"type": "structural_tag", "format": fmt}


THINK = {"type": "tag", "begin": "<think>", "content": {"type": "any_text"}, "end": "</think>"}
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOLS = {
    "type": "triggered_tags",
    "triggers": ["<function="],
    "tags": [
        {"begin": "<function=get_weather>", "content": {"type": "json_schema", "json_schema": SCHEMA}, "end": "</function>"},
        {"begin": "<function=noop>", "content": {"type": "const_string", "value": "{}"}, "end": "</function>"},
    ],
}


# ---------------------------------------------------------------- formats --

def test_const_string_and_tag(compiler):
    assert run(compiler, wrap({"type": "const_string", "value": "Let's think"}), "Let's think")
    assert not run(compiler, wrap({"type": "const_string", "value": "Let's think"}), "Let's")
    assert run(compiler, wrap(THINK), "<think>abc</think>")
    assert run(compiler, wrap(THINK), "<think></think>")
    assert not run(compiler, wrap(THINK), "<think>a</think>b</think>")
    assert not run(compiler, wrap(THINK), "<think>abc")


def test_tag_mask_allows_the_end_and_blocks_text_after_it(compiler, llama3):
    m = matcher(compiler, wrap(THINK))
    assert m.accept_string("<think>reasoning")
    mask = allowed(m, llama3)
    assert mask[tid(llama3, "</")] and mask[tid(llama3, " world")]
    assert m.accept_string("</think>")
    mask = allowed(m, llama3)
    assert mask[llama3.stop_token_ids].any() and mask.sum() <= len(llama3.stop_token_ids)


def test_json_schema_styles_and_options(compiler):
    tag = wrap({"type": "tag", "begin": "<args>", "content": {"type": "json_schema", "json_schema": SCHEMA}, "end": "</args>"})
    assert run(compiler, tag, '<args>{"city": "Paris"}</args>')
    assert not run(compiler, tag, '<args>{"town": "Paris"}</args>')
    xml = wrap({"type": "json_schema", "json_schema": SCHEMA, "style": "qwen_xml"})
    assert run(compiler, xml, "<parameter=city>Paris</parameter>")
    assert not run(compiler, xml, '{"city": "Paris"}')
    legacy = wrap({"type": "qwen_xml_parameter", "json_schema": SCHEMA})
    assert run(compiler, legacy, "<parameter=city>\nParis\n</parameter>")
    two = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}
    assert run(compiler, wrap({"type": "json_schema", "json_schema": two, "any_order": True}), '{"b": 1, "a": 2}')
    assert not run(compiler, wrap({"type": "json_schema", "json_schema": two}), '{"b": 1, "a": 2}')
    assert not run(compiler, wrap({"type": "json_schema", "json_schema": two, "max_whitespace_cnt": 1}), '{  "a": 1, "b": 2}')


def test_grammar_and_regex(compiler, llama3):
    g = wrap({"type": "grammar", "grammar": 'root ::= ("yes" | "no") " " [0-9]+'})
    assert run(compiler, g, "yes 42") and not run(compiler, g, "maybe 1")
    r = wrap({"type": "regex", "pattern": "[A-Z]{3}-[0-9]{4}"})
    assert run(compiler, r, "ABC-1234") and not run(compiler, r, "AB-1234")
    # Token references inside a grammar resolve through the compiler's vocabulary.
    gt = wrap({"type": "grammar", "grammar": 'root ::= <|python_tag|> "x"'})
    assert run(compiler, gt, tid(llama3, PY_TAG), "x")


def test_any_text_excludes_and_budgets(compiler):
    assert run(compiler, wrap({"type": "any_text"}), "")
    assert run(compiler, wrap({"type": "any_text"}), "anything </think> goes")
    ex = wrap({"type": "any_text", "excludes": ["<tool_call>"]})
    assert run(compiler, ex, "a <tool_cal b") and not run(compiler, ex, "a <tool_call> b")
    mc = wrap({"type": "tag", "begin": "<s>", "content": {"type": "any_text", "max_chars": 3}, "end": "</s>"})
    assert run(compiler, mc, "<s>中文字</s>") and not run(compiler, mc, "<s>abcd</s>")


def test_composition(compiler):
    x = {"type": "const_string", "value": "x"}
    assert run(compiler, wrap({"type": "sequence", "elements": [x, {"type": "or", "elements": [x, {"type": "const_string", "value": "y"}]}]}), "xy")
    assert run(compiler, wrap({"type": "optional", "content": x}), "")
    assert not run(compiler, wrap({"type": "plus", "content": x}), "")
    assert run(compiler, wrap({"type": "star", "content": x}), "xxxx")
    rep = wrap({"type": "repeat", "min": 2, "max": 3, "content": x})
    assert [run(compiler, rep, "x" * n) for n in range(5)] == [False, False, True, True, False]


def test_triggered_tags(compiler):
    t = wrap(TOOLS)
    assert run(compiler, t, "")
    assert run(compiler, t, 'Let me check. <function=get_weather>{"city": "Paris"}</function> Done.')
    assert run(compiler, t, "text <functi")  # a partial trigger is still text
    assert not run(compiler, t, "text <function=")  # a complete trigger commits
    assert not run(compiler, t, "<function=get_time>{}</function>")
    assert not run(compiler, t, '<function=get_weather>{"town": "x"}</function>')
    one = wrap({**TOOLS, "at_least_one": True, "stop_after_first": True})
    assert run(compiler, one, "<function=noop>{}</function>")
    assert not run(compiler, one, "x<function=noop>{}</function>")
    assert not run(compiler, one, "<function=noop>{}</function><function=noop>{}</function>")
    first = wrap({**TOOLS, "stop_after_first": True})
    assert run(compiler, first, "hi <function=noop>{}</function>")
    assert not run(compiler, first, "hi <function=noop>{}</function> more")


def test_reasoning_then_tool_calls(compiler):
    tag = wrap({"type": "sequence", "elements": [THINK, TOOLS]})
    assert run(compiler, tag, '<think>I should call it</think>Sure. <function=get_weather>{"city": "Oslo"}</function>')
    assert not run(compiler, tag, "Sure.")


def test_tags_with_separator(compiler):
    tws = wrap({"type": "tags_with_separator", "tags": TOOLS["tags"], "separator": "\n"})
    assert run(compiler, tws, "")
    assert run(compiler, tws, '<function=noop>{}</function>\n<function=get_weather>{"city": "a"}</function>')
    assert not run(compiler, tws, "<function=noop>{}</function> x")


def test_dispatch(compiler):
    d = {"type": "dispatch", "rules": [["<calc>", {"type": "regex", "pattern": "[0-9+]+="}]], "excludes": ["</r>"]}
    tag = wrap({"type": "tag", "begin": "<r>", "content": d, "end": "</r>"})
    assert run(compiler, tag, "<r>sum <calc>1+2= ok</r>")
    assert not run(compiler, tag, "<r>sum <calc>x</r>")
    assert not run(compiler, tag, "<r>a</r>b</r>")


def test_token_level_formats(compiler, llama3):
    py, eom, eot = tid(llama3, PY_TAG), tid(llama3, EOM), tid(llama3, EOT)
    tag = wrap({
        "type": "tag",
        "begin": {"type": "token", "token": PY_TAG},
        "content": {"type": "any_tokens", "exclude_tokens": [EOT]},
        "end": {"type": "token", "token": EOM},
    })
    assert run(compiler, tag, py, 15339, 1917, eom)
    assert not run(compiler, tag, py, eot, eom)
    assert not run(compiler, tag, PY_TAG + "hello" + EOM)  # token boundaries are not text
    m = matcher(compiler, tag)
    assert m.accept_token(py)
    mask = allowed(m, llama3)
    assert mask[eom] and mask[15339] and not mask[eot]
    budget = wrap({"type": "sequence", "elements": [{"type": "any_tokens", "max_tokens": 2}, {"type": "token", "token": EOM}]})
    m = matcher(compiler, budget)
    assert m.accept_token(15339) and m.accept_token(1917)
    mask = allowed(m, llama3)
    assert mask[eom] and mask.sum() == 1  # budget spent: only leaving the region
    ex = wrap({"type": "sequence", "elements": [{"type": "exclude_token", "exclude_tokens": [15339, EOT]}, {"type": "const_string", "value": "!"}]})
    assert run(compiler, ex, 1917, "!") and not run(compiler, ex, 15339, "!")
    ttt = wrap({
        "type": "token_triggered_tags",
        "trigger_tokens": [PY_TAG],
        "tags": [{"begin": {"type": "token", "token": PY_TAG}, "content": {"type": "json_schema", "json_schema": SCHEMA}, "end": {"type": "token", "token": EOM}}],
        "exclude_tokens": [RES0],
    })
    assert run(compiler, ttt, 15339, py, '{"city": "x"}', eom, 1917)
    assert not run(compiler, ttt, py, '{"town": "x"}', eom)
    assert not run(compiler, ttt, 15339, tid(llama3, RES0))
    td = wrap({"type": "token_dispatch", "rules": [[PY_TAG, {"type": "const_string", "value": "go"}]], "loop": False})
    assert run(compiler, td, 15339, py, "go") and not run(compiler, td, py, "go", 15339)


def test_legacy_form(compiler):
    legacy = {"type": "structural_tag", "triggers": ["<function="], "structures": [{"begin": "<function=f>", "schema": SCHEMA, "end": "</function>"}]}
    assert run(compiler, legacy, 'x <function=f>{"city": "a"}</function>')
    assert not run(compiler, legacy, "<function=f>{}</function>")


# ------------------------------------------------------------ typed models --

def test_models_serialize_to_the_same_json_and_compile_alike(compiler):
    model = S.StructuralTag(format=S.SequenceFormat(elements=[
        S.TagFormat(begin="<think>", content=S.AnyTextFormat(), end="</think>"),
        S.TriggeredTagsFormat(
            triggers=["<function="],
            tags=[S.TagFormat(begin="<function=get_weather>", content=S.JSONSchemaFormat(json_schema=SCHEMA), end="</function>")],
        ),
    ]))
    as_dict = model.model_dump(mode="json", by_alias=True)
    assert S.StructuralTag.model_validate(as_dict) == model
    assert json.loads(S.structural_tag_json(model)) == as_dict
    text = '<think>x</think>ok <function=get_weather>{"city": "Rome"}</function>'
    assert run(compiler, model, text) and run(compiler, as_dict, text) and run(compiler, json.dumps(as_dict), text)
    assert not run(compiler, model, "ok")
    # The discriminated union reads dicts back into the right classes.
    parsed = S.StructuralTag.model_validate(wrap({"type": "token_dispatch", "rules": [[5, {"type": "any_text"}]]}))
    assert isinstance(parsed.format, S.TokenDispatchFormat) and isinstance(parsed.format.rules[0][1], S.AnyTextFormat)
    legacy = S.LegacyStructuralTag(structures=[S.StructuralTagItem(begin="<f>", schema=SCHEMA, end="</f>")], triggers=["<f>"])
    assert run(compiler, legacy, '<f>{"city": "a"}</f>')


def test_models_reject_what_pydantic_can_see():
    with pytest.raises(Exception):
        S.AnyTextFormat(max_tokens=-1)
    with pytest.raises(Exception):
        S.TagFormat(begin="a", content=S.AnyTextFormat(), end=[])
    with pytest.raises(Exception):
        S.StructuralTag.model_validate(wrap({"type": "no_such_type"}))
    with pytest.raises(Exception):
        S.ConstStringFormat(value="x", valu="y")


# -------------------------------------------------------------- validation --

@pytest.mark.parametrize(
    ("fmt", "path", "field", "fragment"),
    [
        ({"type": "tag", "begin": "<a>", "content": {"type": "any_text"}, "end": ""}, "format.end", "end", "at least one end string must be non-empty"),
        ({"type": "sequence", "elements": [THINK, {**TOOLS, "tags": [TOOLS["tags"][0], {**TOOLS["tags"][1], "end": []}]}]}, "format.elements[1].tags[1].end", "end", "end array cannot be empty"),
        ({"type": "repeat", "min": 1.5, "max": 2, "content": THINK}, "format.min", "min", "must be an integer"),
        ({"type": "dispatch", "rules": [["", THINK]]}, "format.rules[0][0]", "rules", "non-empty"),
        ({"type": "dispatch", "rules": [["<tool>", THINK]], "excludes": ["<to"]}, "format.excludes[0]", "excludes", "occurs inside the trigger"),
        ({"type": "token_dispatch", "rules": [[-1, THINK]]}, "format.rules[0][0]", "rules", "non-negative"),
        ({"type": "token", "token": "<|no such token|>"}, "format.token", "token", "not found in vocabulary"),
        ({"type": "json_schema", "json_schema": {"type": "integer", "minimum": 3, "maximum": 1}}, "format.json_schema", "json_schema", "unsatisfiable"),
    ],
)
def test_validation_errors_name_type_field_and_path(compiler, fmt, path, field, fragment):
    with pytest.raises(fc.StructuralTagError) as info:
        compiler.compile_structural_tag(wrap(fmt))
    e = info.value
    assert e.path == path and e.field == field, str(e)
    assert fragment in str(e) and path in str(e)
    assert isinstance(e, fc.GrammarError)


def test_token_strings_need_a_tokenizer():
    with pytest.raises(fc.StructuralTagError, match="requires tokenizer_info"):
        fc.Grammar.from_structural_tag(wrap({"type": "token", "token": PY_TAG}))
    fc.Grammar.from_structural_tag(wrap({"type": "token", "token": 7}))


def test_hostile_inputs_raise_limit_errors(compiler):
    deep = {"type": "any_text"}
    for _ in range(100):
        deep = {"type": "optional", "content": deep}
    with pytest.raises(fc.LimitError):
        fc.Grammar.from_structural_tag(wrap(deep))
    with pytest.raises(fc.LimitError):
        fc.Grammar.from_structural_tag(wrap({"type": "repeat", "min": 0, "max": 10**9, "content": {"type": "const_string", "value": "x"}}))
    with pytest.raises(fc.LimitError) as info:
        fc.Grammar.from_structural_tag(wrap({"type": "any_text", "max_chars": 10**9}))
    assert info.value.path == "format.max_chars"
    # Nested counted repetitions multiply: their product is bounded.
    nested = {"type": "optional", "content": {"type": "const_string", "value": "ab"}}
    for _ in range(4):
        nested = {"type": "repeat", "min": 0, "max": 90, "content": nested}
    with pytest.raises(fc.LimitError) as info:
        fc.Grammar.from_structural_tag(wrap(nested))
    assert info.value.path == "format.content.content.max"
    small = {"type": "repeat", "min": 0, "max": 20, "content": {"type": "repeat", "min": 1, "max": 30, "content": {"type": "optional", "content": {"type": "const_string", "value": "ab"}}}}
    m = fc.GrammarMatcher(compiler.compile_structural_tag(wrap(small), timeout_s=30))
    assert m.accept_string("ab" * 5) and not m.accept_string("x")
    with pytest.raises(TypeError):
        fc.Grammar.from_structural_tag(42)


# -------------------------------------------------------------- properties --

def oracle_triggered(text: str, trigger: str, body: str, excludes: list[str]) -> bool:
    """Reference semantics: scan left to right; the first completed trigger
    or exclude decides (an exclude is a dead end, a trigger commits to its
    body); text with neither is accepted."""
    i = 0
    while True:
        hits = [(text.find(p, i) + len(p), kind, p) for kind, ps in (("x", excludes), ("t", [trigger])) for p in ps if text.find(p, i) >= 0]
        if not hits:
            return True
        end, kind, _ = min(hits, key=lambda h: (h[0], h[1] != "x"))
        if kind == "x":
            return False
        if not text.startswith(body, end):
            return False
        i = end + len(body)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet="<f=>ab!", max_size=14))
def test_triggered_tags_match_the_scanning_oracle(compiler, text):
    tag = wrap({
        "type": "triggered_tags",
        "triggers": ["<f="],
        "tags": [{"begin": "<f=a>", "content": {"type": "const_string", "value": "b"}, "end": ">"}],
        "excludes": ["!!"],
    })
    # Body after the trigger: rest of begin + content + end.
    expected = oracle_triggered(text, "<f=", "a>b>", ["!!"])
    assert run(compiler, tag, text) == expected, text


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=st.sampled_from(list("ab</>tkx中")), max_size=16), st.sampled_from(["</t>", "</k>"]))
def test_tag_any_text_stops_exactly_at_the_end(compiler, inner, end):
    tag = wrap({"type": "tag", "begin": "<t>", "content": {"type": "any_text"}, "end": ["</t>", "</k>"]})
    # Neither end has a border, so appending one cannot complete an end early.
    expected = "</t>" not in inner and "</k>" not in inner
    assert run(compiler, tag, "<t>" + inner + end) == expected, inner


def test_dict_tags_compile_without_building_the_pydantic_models():
    # Building ~30 pydantic model classes on import once made a server's
    # first structural-tag compile ~250 ms slower; dicts and JSON text must
    # not need them. Run in a fresh interpreter: this one imported them.
    import subprocess
    import sys

    code = (
        "import sys, formcast as fc\n"
        "g = fc.Grammar.from_structural_tag({'type': 'structural_tag', 'format': "
        "{'type': 'const_string', 'value': 'x'}})\n"
        "g2 = fc.Grammar.from_structural_tag('{\"type\": \"const_string\", \"value\": \"x\"}')\n"
        "assert 'formcast.structural_tag' not in sys.modules, 'models were imported'\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_tools_with_equal_schemas_share_their_rules(compiler):
    # Duplicated sub-grammars were determinized once per tool (100 tools of
    # four shapes built 114k automaton states); equal schemas and equal
    # sub-schemas now reuse one set of rules, and dispatch still tells the
    # tools apart by name.
    schema = {"type": "object", "properties": {"q": {"type": "string", "maxLength": 40}}, "required": ["q"]}

    def tag(n):
        return {"type": "structural_tag", "format": {"type": "triggered_tags", "triggers": ["<call>"], "tags": [
            {"type": "tag", "begin": f"<call>f{i}:", "content": {"type": "json_schema", "json_schema": schema},
             "end": "</call>"} for i in range(n)]}}

    one = fc.Grammar.from_structural_tag(tag(1))
    many = fc.Grammar.from_structural_tag(tag(20))
    assert len(many.rule_names) == len(one.rule_names)
    for text, ok in [('hi <call>f7:{"q": "x"}</call>', True), ('<call>f19:{"q": "y"}</call> ok', True),
                     ('<call>f20:{"q": "x"}</call>', False), ('<call>f3:{"r": "x"}</call>', False)]:
        assert run(compiler, tag(20), text) == ok, text


# ------------------------------------------- special tokens, real vocabularies --
# Token-level delimiters on vocabularies whose delimiters are special tokens:
# SmolLM2's ChatML <|im_start|>/<|im_end|> (tokenized by its real BPE) and
# Llama-3's <|python_tag|>/<|eom_id|>/<|eot_id|>. Every output is fed token by
# token with the mask checked before each token (tokenwalk.walk).

from tokenwalk import allowed as allowed_mask
from tokenwalk import can_stop, tokens_of, walk


@pytest.fixture(scope="module")
def smol_compiler(smollm2) -> fc.GrammarCompiler:
    return fc.GrammarCompiler(smollm2)


@pytest.fixture(scope="module")
def smol_bpe():
    tokenizers = pytest.importorskip("tokenizers")
    from conftest import TOKENIZERS

    bpe = tokenizers.Tokenizer.from_file(str(TOKENIZERS / "smollm2-tokenizer.json"))
    return lambda text: bpe.encode(text, add_special_tokens=False).ids


IM_START, IM_END = "<|im_start|>", "<|im_end|>"
CHATML_MESSAGE = wrap({
    "type": "tag",
    "begin": {"type": "token", "token": IM_START},
    "content": {"type": "sequence", "elements": [{"type": "const_string", "value": "assistant\n"}, {"type": "any_text"}]},
    "end": {"type": "token", "token": IM_END},
})


def test_chatml_message_between_special_tokens(smol_compiler, smollm2, smol_bpe):
    ims, ime = tid(smollm2, IM_START), tid(smollm2, IM_END)
    assert {ims, ime} <= set(smollm2.special_token_ids)
    m = matcher(smol_compiler, CHATML_MESSAGE)
    mask = allowed_mask(m, smollm2)
    assert mask[ims] and mask.sum() == 1  # only the begin token
    walk(m, smollm2, [ims, *smol_bpe("assistant\nHello <b>there</b>! 1+1=2")])
    mask = allowed_mask(m, smollm2)
    # Text goes on or the end token closes; the other special tokens never
    # appear in text.
    assert mask[ime] and not mask[ims] and mask[smol_bpe(" more")[0]]
    assert not mask[[t for t in smollm2.special_token_ids if t not in smollm2.stop_token_ids]].any()
    # Text spelling the end token is text: the message stays open.
    assert m.accept_string(" <|im_end|>") and not m.can_terminate()
    walk(m, smollm2, [ime])
    assert m.can_terminate()
    # Without the begin token the message cannot start, even spelled as text.
    assert not matcher(smol_compiler, CHATML_MESSAGE).accept_string("<|im_start|>assistant\n")


def test_string_delimiters_are_not_special_tokens(smol_compiler, smollm2):
    """A string ``end`` equal to a special token's text is matched by the
    text, never by the special token: token delimiters must be token formats."""
    tag = wrap({"type": "tag", "begin": "<think>", "content": {"type": "any_text"}, "end": IM_END})
    m = matcher(smol_compiler, tag)
    assert m.accept_string("<think>hm")
    assert not allowed_mask(m, smollm2)[tid(smollm2, IM_END)]
    assert not m.accept_token(tid(smollm2, IM_END))
    assert m.accept_string("<|im_end|>") and m.can_terminate()


def test_chatml_tool_messages_in_free_tokens(smol_compiler, smollm2, smol_bpe):
    ims, ime = tid(smollm2, IM_START), tid(smollm2, IM_END)
    sep = tid(smollm2, "<file_sep>")
    tag = wrap({
        "type": "token_triggered_tags",
        "trigger_tokens": [IM_START],
        "tags": [{
            "type": "tag",
            "begin": {"type": "token", "token": IM_START},
            "content": {"type": "sequence", "elements": [{"type": "const_string", "value": "tool\n"}, {"type": "json_schema", "json_schema": SCHEMA}]},
            "end": {"type": "token", "token": IM_END},
        }],
        "exclude_tokens": ["<file_sep>"],
    })
    m = matcher(smol_compiler, tag)
    walk(m, smollm2, smol_bpe("Let me look it up."))
    mask = allowed_mask(m, smollm2)
    # Free tokens: any but the excluded one, special tokens included.
    assert mask[ims] and mask[smol_bpe(" ok")[0]] and mask[tid(smollm2, "<filename>")] and not mask[sep]
    walk(m, smollm2, [ims, *smol_bpe('tool\n{"city": "Paris"')])
    mask = allowed_mask(m, smollm2)
    assert not mask[ime] and not mask[ims]  # the JSON is not complete
    walk(m, smollm2, smol_bpe("}"))
    mask = allowed_mask(m, smollm2)
    assert mask[ime] and not mask[ims] and not mask[smol_bpe(" x")[0]]
    walk(m, smollm2, [ime, *smol_bpe(" Done."), ims, *smol_bpe('tool\n{"city": "Oslo"}'), ime])
    assert m.can_terminate()
    assert not run(smol_compiler, tag, sep)
    assert not run(smol_compiler, tag, ims, 'assistant\n{"city": "x"}', ime)  # not a tool message
    assert not run(smol_compiler, tag, ims, 'tool\n{"city": "x"}', "<|im_end|>")  # the end's text is not the end


def test_any_tokens_between_chatml_tokens_stop_at_the_end_token(smol_compiler, smollm2, smol_bpe):
    ims, ime = tid(smollm2, IM_START), tid(smollm2, IM_END)
    tag = wrap({"type": "sequence", "elements": [
        {"type": "tag", "begin": {"type": "token", "token": IM_START}, "content": {"type": "any_tokens"}, "end": {"type": "token", "token": IM_END}},
        {"type": "const_string", "value": "\n"},
    ]})
    m = matcher(smol_compiler, tag)
    walk(m, smollm2, [ims, *smol_bpe("user\nhi"), ims])  # special tokens are tokens too
    walk(m, smollm2, [ime])  # the end token is excluded from the content: it closes the tag
    mask = allowed_mask(m, smollm2)
    assert mask[smol_bpe("\n")[0]] and not mask[ime] and not mask[ims]
    walk(m, smollm2, smol_bpe("\n"))
    assert m.can_terminate()


LLAMA_SEARCH = {"type": "regex", "pattern": r'brave_search\.call\(query="[^"]*"\)'}


def test_llama31_builtin_call_between_python_tag_and_eom(compiler, llama3):
    py, eom, eot = tid(llama3, PY_TAG), tid(llama3, EOM), tid(llama3, EOT)
    tag = wrap({
        "type": "token_triggered_tags",
        "trigger_tokens": [PY_TAG],
        "tags": [{"type": "tag", "begin": {"type": "token", "token": PY_TAG}, "content": LLAMA_SEARCH, "end": {"type": "token", "token": EOM}}],
        "stop_after_first": True,
    })
    m = matcher(compiler, tag)
    walk(m, llama3, tokens_of(llama3, ["I'll search for that. "]))
    walk(m, llama3, tokens_of(llama3, [py, 'brave_search.call(query="weather in Paris"']))
    mask = allowed_mask(m, llama3)
    assert not mask[eom] and not mask[eot] and not mask[py]  # the call is not complete
    walk(m, llama3, tokens_of(llama3, [")"]))
    mask = allowed_mask(m, llama3)
    assert mask[eom] and mask.sum() == 1  # only the end token
    walk(m, llama3, [eom])
    mask = allowed_mask(m, llama3)
    assert not mask[py] and can_stop(m, llama3)  # stop_after_first: nothing more but the stop
    # The call is only opened by the token: the tag's text is not the token.
    assert not run(compiler, tag, PY_TAG + 'brave_search.call(query="x")', eom)
    # Free tokens may spell the tag's text with ordinary tokens.
    m = matcher(compiler, tag)
    walk(m, llama3, tokens_of(llama3, ["text about <|python_tag|> as text"]))
    assert m.can_terminate()


def test_llama31_json_call_then_eot(compiler, llama3):
    """Llama 3.1's JSON tool call (the llama style) closed by <|eot_id|> as a
    token element: special tokens never enter the JSON or the text."""
    from formcast.styles import structural_tag_for

    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": SCHEMA}}]
    inner = structural_tag_for("llama", tools, "required", parallel_tool_calls=False)["format"]
    tag = wrap({"type": "sequence", "elements": [inner, {"type": "token", "token": EOT}]})
    py, eom, eot = tid(llama3, PY_TAG), tid(llama3, EOM), tid(llama3, EOT)
    m = matcher(compiler, tag)
    walk(m, llama3, tokens_of(llama3, ['{"name": "get_weather", "parameters": {"city": "Par']))
    mask = allowed_mask(m, llama3)
    assert not mask[[py, eom, eot, *llama3.stop_token_ids]].any()
    walk(m, llama3, tokens_of(llama3, ['is"}}']))
    mask = allowed_mask(m, llama3)
    assert mask[eot] and not mask[py] and not mask[eom]
    walk(m, llama3, [eot])
    assert m.can_terminate()
    assert not run(compiler, tag, '{"name": "get_weather", "parameters": {"city": "Paris"}}<|eot_id|>')  # text is not the token


@pytest.mark.parametrize("prefix", ["", "Sure.<", "<tool", "Sure.<tool_call", "a < b, <tool_"])
def test_masks_inside_a_trigger_equal_token_acceptance(llama3, prefix):
    # Inside a trigger's first bytes, the walks down the free text's cover
    # come from the grammar's memo, filled by the start's mask at compile
    # (`MaskWalker::skeleton_below`): every token is checked against
    # acceptance, in one grammar whose matchers go one after another.
    from conftest import mask_after

    compiled = fc.GrammarCompiler(llama3).compile_structural_tag(wrap({
        "type": "triggered_tags",
        "triggers": ["<tool_call>"],
        "tags": [{"begin": "<tool_call>\n", "content": {"type": "json_schema", "json_schema": SCHEMA}, "end": "\n</tool_call>"}],
    }))
    for text in ["Sure.<", prefix]:
        bits = mask_after(fc.GrammarMatcher(compiled), llama3, text)
        assert bits.sum() > llama3.vocab_size // 2
