"""Vocabularies: what every token id decodes to, and which ids are special or stop."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from . import _engine

__all__ = ["TokenizerInfo"]


class TokenizerInfo:
    """The vocabulary of a model, prepared for matching (token trie included).

    Build it once per model and share it: every grammar compiled against it
    reuses the same index. Constructors:

    - :meth:`from_huggingface` — a ``tokenizer.json`` (byte-level BPE, or
      SentencePiece with ``<0xNN>`` byte fallback);
    - :meth:`from_tiktoken` — a tiktoken ranks file (e.g. Llama-3's
      ``tokenizer.model``);
    - :meth:`from_llama` — the vocabulary of a GGUF model through
      llama-cpp-python;
    - :meth:`from_vocab` — a plain list of token bytes.
    """

    __slots__ = ("_native",)

    def __init__(self, native: _engine.TokenizerInfo) -> None:
        self._native = native

    # ---------------------------------------------------------- sources --
    @classmethod
    def from_huggingface(
        cls,
        source: Any,
        *,
        tokenizer_config: str | os.PathLike[str] | Mapping[str, Any] | None = None,
        stop_token_ids: Sequence[int] | None = None,
        logits_size: int | None = None,
    ) -> "TokenizerInfo":
        """From a Hugging Face tokenizer.

        ``source`` is a path to ``tokenizer.json``, a directory holding it
        (its ``tokenizer_config.json`` is read too, for the EOS token), the
        JSON text itself, or a ``tokenizers.Tokenizer`` object.
        ``stop_token_ids`` overrides the detected end-of-generation ids;
        ``logits_size`` is the model's logits width when it exceeds the
        vocabulary (padding ids are always masked).
        """
        import json

        config_text: str | None = None
        if hasattr(source, "to_str"):  # tokenizers.Tokenizer
            text = source.to_str()
        elif isinstance(source, (str, os.PathLike)) and not str(source).lstrip().startswith("{"):
            path = Path(source)
            if path.is_dir():
                cfg = path / "tokenizer_config.json"
                if cfg.exists() and tokenizer_config is None:
                    config_text = cfg.read_text(encoding="utf-8")
                path = path / "tokenizer.json"
            text = path.read_text(encoding="utf-8")
        else:
            text = str(source)
        if isinstance(tokenizer_config, Mapping):
            config_text = json.dumps(tokenizer_config)
        elif tokenizer_config is not None:
            config_text = Path(tokenizer_config).read_text(encoding="utf-8")
        return cls(
            _engine.TokenizerInfo.from_huggingface_json(
                text,
                tokenizer_config=config_text,
                stop_token_ids=list(stop_token_ids) if stop_token_ids is not None else None,
                logits_size=logits_size,
            )
        )

    @classmethod
    def from_tiktoken(
        cls,
        path: str | os.PathLike[str],
        *,
        special_tokens: Mapping[str, int] | Iterable[tuple[str, int]] | None = None,
        stop_token_ids: Sequence[int] | None = None,
        logits_size: int | None = None,
    ) -> "TokenizerInfo":
        """From a tiktoken ranks file (``base64-token rank`` per line).

        ``special_tokens`` maps names to ids; ``None`` means the 256 Llama-3
        special tokens (ids 128000–128255), whose stop ids are 128001, 128008
        and 128009.
        """
        text = Path(path).read_text(encoding="utf-8")
        specials = None
        if special_tokens is not None:
            items = special_tokens.items() if isinstance(special_tokens, Mapping) else special_tokens
            specials = [(str(k), int(v)) for k, v in items]
        return cls(
            _engine.TokenizerInfo.from_tiktoken_text(
                text,
                special_tokens=specials,
                stop_token_ids=list(stop_token_ids) if stop_token_ids is not None else None,
                logits_size=logits_size,
            )
        )

    @classmethod
    def from_llama(cls, model: Any, *, logits_size: int | None = None) -> "TokenizerInfo":
        """From a llama.cpp model: a ``llama_cpp.Llama`` or a path to a GGUF file.

        Reads every piece with ``llama_token_to_piece`` (pieces of any length
        come back whole); control tokens are special and every
        end-of-generation token is a stop token.
        """
        from .tokenizer_sources import llama_cpp_vocab

        tokens, special, stop = llama_cpp_vocab(model)
        return cls.from_vocab(tokens, special_token_ids=special, stop_token_ids=stop, logits_size=logits_size)

    @classmethod
    def from_vocab(
        cls,
        tokens: Sequence[bytes | str],
        *,
        special_token_ids: Iterable[int] = (),
        stop_token_ids: Iterable[int] = (),
        logits_size: int | None = None,
    ) -> "TokenizerInfo":
        """From a plain list of token bytes (``str`` entries are UTF-8 encoded)."""
        raw = [t.encode("utf-8") if isinstance(t, str) else bytes(t) for t in tokens]
        return cls(
            _engine.TokenizerInfo.from_token_bytes(
                raw,
                special_token_ids=list(special_token_ids),
                stop_token_ids=list(stop_token_ids),
                logits_size=logits_size,
            )
        )

    # -------------------------------------------------------- properties --
    @property
    def vocab_size(self) -> int:
        """Number of token ids."""
        return self._native.vocab_size

    @property
    def logits_size(self) -> int:
        """Width of the logits; ids from ``vocab_size`` on are padding."""
        return self._native.logits_size

    @property
    def stop_token_ids(self) -> list[int]:
        """End-of-generation ids (allowed only where the grammar can end)."""
        return self._native.stop_token_ids

    @property
    def special_token_ids(self) -> list[int]:
        """Special/control ids (never matched by text)."""
        return self._native.special_token_ids

    @property
    def kind(self) -> str:
        """How the source encoded tokens: ``byte_level``, ``sentencepiece`` or ``raw``."""
        return self._native.kind

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes ``token_id`` decodes to."""
        return self._native.token_bytes(token_id)

    def all_token_bytes(self) -> list[bytes]:
        """Every token's bytes, indexed by id."""
        return self._native.all_token_bytes()

    def token_id(self, text: str) -> int | None:
        """The first id whose decoded text is exactly ``text``, or None."""
        return self._native.token_id(text)

    def __repr__(self) -> str:
        return repr(self._native)
