"""Bad grammars get clear errors; pathological ones hit limits instead of
hanging or exhausting memory; panics never escape as crashes."""

from __future__ import annotations

import threading

import pytest

import formcast as fc

BYTES = fc.TokenizerInfo.from_vocab([bytes([i]) for i in range(256)])


@pytest.mark.parametrize(
    "text, message",
    [
        ('root ::= "a" b', "undefined rule 'b' referenced at line 1, column 14"),
        ('root ::= "a', "line 1, column 10: unterminated string literal"),
        ("root ::= [a-", "unterminated character class"),
        ('root := "a"', "expected '::=' after rule name 'root'"),
        ('x ::= "a"', "root rule 'root' is not defined"),
        ('root ::= "a"{3,1}', "repetition minimum 3 is greater than maximum 1"),
        ('root ::= a\na ::= "x" a', "rule 'a' can never finish"),
        ('root ::= "\\q"', "unknown escape sequence"),
        ('root ::= "a"\nroot ::= "b"', "defined twice"),
    ],
)
def test_ebnf_errors_name_the_problem_and_place(text, message):
    with pytest.raises(fc.GrammarError, match=message.replace("(", r"\(").replace("[", r"\[")):
        fc.Grammar.from_ebnf(text)


@pytest.mark.parametrize(
    "pattern, message",
    [
        (r"(a)\1", "position 3: backreferences are not supported"),
        (r"a(?=b)", "lookaround is not supported"),
        (r"(?<!a)b", "lookaround is not supported"),
        (r"a[", "unclosed character class"),
        (r"\bfoo", "word boundaries"),
        (r"a^b", "anchor '\\^' is only supported at the start"),
    ],
)
def test_regex_errors_name_the_problem_and_position(pattern, message):
    with pytest.raises(fc.GrammarError, match=message):
        fc.Grammar.from_regex(pattern)


def test_regex_anchors_at_the_ends_are_accepted():
    m = fc.GrammarMatcher(fc.GrammarCompiler(BYTES).compile(fc.Grammar.from_regex("^ab+$")))
    assert m.accept_string("abbb") and m.can_terminate()


def test_huge_repetition_bounds_are_refused():
    with pytest.raises(fc.LimitError, match="exceeds the limit"):
        fc.Grammar.from_ebnf('root ::= "a"{1,1000000}')
    with pytest.raises(fc.LimitError):
        fc.Grammar.from_regex("a{1,1000000}")


def test_deep_nesting_is_refused_not_a_stack_overflow():
    with pytest.raises(fc.LimitError, match="nested deeper"):
        fc.Grammar.from_ebnf("root ::= " + "(" * 100_000 + '"a"' + ")" * 100_000)
    with pytest.raises(fc.LimitError, match="nested deeper"):
        fc.Grammar.from_regex("(" * 100_000 + "a" + ")" * 100_000)


def test_multiplied_repetitions_hit_the_automaton_limit():
    compiler = fc.GrammarCompiler(BYTES)
    with pytest.raises(fc.LimitError, match="too large"):
        compiler.compile(fc.Grammar.from_ebnf('root ::= ("ab"{1,2000}){1,2000}'))


def test_exponential_dfa_blowup_stops_at_the_time_budget():
    compiler = fc.GrammarCompiler(BYTES)
    grammar = fc.Grammar.from_regex("[ab]*a[ab]{24}")
    with pytest.raises((fc.CompileTimeoutError, fc.LimitError)):
        compiler.compile(grammar, timeout_s=0.5)


def test_compilation_can_be_cancelled_from_another_thread():
    compiler = fc.GrammarCompiler(BYTES)
    grammar = fc.Grammar.from_regex("[ab]*a[ab]{24}")
    cancel = fc.CancelToken()
    threading.Timer(0.2, cancel.cancel).start()
    with pytest.raises((fc.CancelledError, fc.LimitError)):
        compiler.compile(grammar, cancel=cancel)
    assert cancel.cancelled


def test_bad_timeout_is_a_value_error():
    with pytest.raises(ValueError, match="timeout_s"):
        fc.GrammarCompiler(BYTES).compile(fc.Grammar.from_regex("a"), timeout_s=-1)


def test_ambiguous_grammar_stays_usable():
    # Exponentially many parses; the item sets stay polynomial.
    compiler = fc.GrammarCompiler(BYTES)
    m = fc.GrammarMatcher(compiler.compile(fc.Grammar.from_ebnf('root ::= root root | "a" | ""')))
    bm = fc.allocate_token_bitmask(1, 256)
    for _ in range(60):
        assert m.accept_token(ord("a"))
        m.fill_next_token_bitmask(bm)
    assert m.can_terminate()


def test_bad_bitmask_shapes_are_value_errors():
    m = fc.GrammarMatcher(fc.GrammarCompiler(BYTES).compile(fc.Grammar.from_regex("a")))
    import numpy as np

    with pytest.raises(ValueError, match="words"):
        m.fill_next_token_bitmask(np.zeros((1, 2), dtype=np.int32))
    with pytest.raises(IndexError):
        m.fill_next_token_bitmask(fc.allocate_token_bitmask(1, 256), 3)
    with pytest.raises(ValueError, match="contiguous"):
        m.fill_next_token_bitmask(np.zeros((1, 16), dtype=np.int32)[:, ::2])
    with pytest.raises(TypeError):
        m.fill_next_token_bitmask(np.zeros((1, 8), dtype=np.int64))


def test_out_of_range_tokens_are_refused_not_crashes():
    m = fc.GrammarMatcher(fc.GrammarCompiler(BYTES).compile(fc.Grammar.from_regex("a")))
    assert not m.accept_token(-1)
    assert not m.accept_token(10**12)
    assert not m.accept_token(256)


def test_compiler_cache_is_shared_and_bounded():
    compiler = fc.GrammarCompiler(BYTES, cache_limit_bytes=1)
    a = compiler.compile(fc.Grammar.from_regex("a+"))
    assert compiler.compile(fc.Grammar.from_regex("a+")) is a
    compiler.compile(fc.Grammar.from_regex("b+"))
    # Over the byte limit the least recently used grammar is dropped.
    assert compiler.compile(fc.Grammar.from_regex("a+")) is not a
    results = []
    threads = [threading.Thread(target=lambda: results.append(compiler.compile(fc.Grammar.from_regex("c{3}")))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(r) for r in results}) == 1


def test_compiler_cache_stays_within_its_byte_limit_over_many_grammars():
    one = fc.GrammarCompiler(BYTES).compile(fc.Grammar.from_regex("x0+")).memory_bytes
    compiler = fc.GrammarCompiler(BYTES, cache_limit_bytes=20 * one)
    compiled = [compiler.compile(fc.Grammar.from_regex(f"x{i}+")) for i in range(200)]
    assert compiler.cache_size_bytes <= 21 * one
    # The most recent grammars are the ones kept, the oldest were dropped.
    assert compiler.compile(fc.Grammar.from_regex("x199+")) is compiled[199]
    assert compiler.compile(fc.Grammar.from_regex("x0+")) is not compiled[0]
