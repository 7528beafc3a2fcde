"""Constrained decoding end to end with the embedded SmolLM2 model.

Generates a JSON answer with llama-cpp-python's logits and formcast's masks:
at every step the grammar's mask is applied to the logits, the best token is
taken, and the matcher advances. Run: .venv/bin/python examples/constrained_json.py
"""

from __future__ import annotations

import json

import numpy as np

import formcast as fc
from formcast.tokenizer_sources import default_model_path

GRAMMAR = r'''
root    ::= "{" ws "\"city\":" ws string "," ws "\"country\":" ws string ws "}"
string  ::= "\"" [A-Za-z ]{1,40} "\""
ws      ::= [ ]{0,1}
'''


def main() -> None:
    from llama_cpp import Llama

    llm = Llama(model_path=str(default_model_path()), n_ctx=512, n_threads=1, logits_all=False, verbose=False)
    tok = fc.TokenizerInfo.from_llama(llm)
    compiled = fc.GrammarCompiler(tok).compile(fc.Grammar.from_ebnf(GRAMMAR))
    matcher = fc.GrammarMatcher(compiled)
    bitmask = fc.allocate_token_bitmask(1, tok.logits_size)

    prompt = "<|im_start|>user\nWhich city is the Eiffel Tower in? Answer in JSON.<|im_end|>\n<|im_start|>assistant\n"
    # One token per eval call: this llama-cpp-python build crashes on
    # multi-token batches on some CPUs (AMX kernels); the prompt is short.
    for t in llm.tokenize(prompt.encode(), add_bos=False, special=True):
        llm.eval([t])
    out = bytearray()
    for _ in range(64):
        logits = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)[None, :]
        matcher.fill_next_token_bitmask(bitmask)
        fc.apply_token_bitmask_inplace(logits, bitmask)
        token = int(np.argmax(logits[0]))
        assert matcher.accept_token(token)
        if matcher.is_terminated():
            break
        out += tok.token_bytes(token)
        llm.eval([token])
    text = out.decode("utf-8")
    print(text)
    print(json.loads(text))


if __name__ == "__main__":
    main()
