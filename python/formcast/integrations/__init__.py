"""formcast as the structured-output backend of other engines.

- :mod:`formcast.integrations.sglang`: SGLang's grammar backend
  (``--grammar-backend formcast``), registered by the ``sglang.srt.plugins``
  entry point;
- :mod:`formcast.integrations.vllm`: a vLLM v1 structured-output backend
  (``--structured-outputs-config '{"backend": "formcast"}'``), registered by
  the ``vllm.general_plugins`` entry point;
- :mod:`formcast.integrations.transformers`: ``FormcastLogitsProcessor`` for
  Hugging Face ``generate()``.

Each module imports its engine only when it is imported itself; what the two
serving engines share (the vocabulary from their tokenizer, one compile entry
per request kind) is in ``_engines``. See docs/integrations.md.
"""
