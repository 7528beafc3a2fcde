"""formcast as the structured-output backend of other engines.

:mod:`formcast.integrations.transformers` — ``FormcastLogitsProcessor`` for
Hugging Face ``generate()``. Each module imports its engine only when it is
imported itself.
"""
