"""The Llama-3 vocabulary every engine is given: 128,000 BPE ranks read from
the tiktoken-format file plus the 256 special tokens at 128000..128255.

Kept free of third-party imports (tiktoken is imported lazily) so the
formcast worker can import it from the project venv, which has no tiktoken.
"""

import base64
import os

TOKENIZER_PATH = os.environ.get(
    "FORMCAST_BENCH_TOKENIZER", "/work/shared/tokenizers/llama3-tokenizer.model"
)

# The pre-tokenization regex Llama-3 ships with; tokenizing the documents
# with anything else would give ids no Llama-3 model would emit.
LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)

N_SPECIAL = 256
EOT_ID = 128009  # <|eot_id|>: end of turn, the usual stop token in chat
EOS_ID = 128001  # <|end_of_text|>
EOM_ID = 128008  # <|eom_id|>
STOP_IDS = [EOS_ID, EOM_ID, EOT_ID]


def special_token_names():
    """Llama-3.1 names of ids 128000..128255, in order."""
    named = [
        "<|begin_of_text|>",
        "<|end_of_text|>",
        "<|reserved_special_token_0|>",
        "<|reserved_special_token_1|>",
        "<|finetune_right_pad_id|>",
        "<|reserved_special_token_2|>",
        "<|start_header_id|>",
        "<|end_header_id|>",
        "<|eom_id|>",
        "<|eot_id|>",
        "<|python_tag|>",
    ]
    reserved = [f"<|reserved_special_token_{i}|>" for i in range(3, 3 + N_SPECIAL - len(named))]
    return named + reserved


def load_ranks(path=TOKENIZER_PATH):
    """Token bytes indexed by rank (0..127999), from 'base64 rank' lines."""
    ranks = {}
    with open(path, "rb") as f:
        for line in f:
            if line.strip():
                b64, rank = line.split()
                ranks[int(rank)] = base64.b64decode(b64)
    n = len(ranks)
    assert sorted(ranks) == list(range(n)), "ranks must be dense"
    return [ranks[i] for i in range(n)]


def special_tokens(n_ranks):
    """{name: id} for the special tokens, numbered after the ranks."""
    return {name: n_ranks + i for i, name in enumerate(special_token_names())}


def tiktoken_encoding(path=TOKENIZER_PATH):
    """A tiktoken Encoding equal to Llama-3's (needs tiktoken installed)."""
    import tiktoken

    ranks = load_ranks(path)
    return tiktoken.Encoding(
        name="llama3",
        pat_str=LLAMA3_PATTERN,
        mergeable_ranks={b: i for i, b in enumerate(ranks)},
        special_tokens=special_tokens(len(ranks)),
    )
