"""A model runtime over a byte vocabulary, for driving the server's decode
loop (formcast.server.engine) without a model: ids 0-255 are the bytes and
256 is ``<eos>`` (the only stop and special token); text tokenizes to its
UTF-8 bytes; no chat template, no BOS. Subclasses give the logits
(``forward``) and what clearing a slot does (``clear_slot``)."""

from __future__ import annotations

from typing import Optional

import formcast as fc
from formcast.runtime.base import ModelRuntime

VOCAB = [bytes([i]) for i in range(256)] + [b"<eos>"]
EOS = 256


class ByteRuntime(ModelRuntime):
    """The byte-vocabulary runtime; ``forward`` and ``clear_slot`` are left
    to subclasses."""

    def __init__(self, model_id: str, *, n_ctx: int, num_slots: int, kv_capacity: int, max_batch_tokens: int) -> None:
        self.model_id = model_id
        self.tokenizer = fc.TokenizerInfo.from_vocab(VOCAB, stop_token_ids=[EOS], special_token_ids=[EOS])
        self.n_ctx = n_ctx
        self.num_slots = num_slots
        self.kv_capacity = kv_capacity
        self.max_batch_tokens = max_batch_tokens

    def tokenize(self, text: str, *, add_special: bool = False, parse_special: bool = True) -> list[int]:
        return list(text.encode())

    @property
    def chat_template(self) -> Optional[str]:
        return None

    @property
    def bos_token(self) -> str:
        return ""

    @property
    def eos_token(self) -> str:
        return "<eos>"
