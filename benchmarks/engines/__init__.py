"""Engine adapters: one module per engine, all with the same small surface.

Each module defines `Engine(tokenizer_path)`; constructing it builds the
engine's tokenizer (once, untimed, as every engine caches it in practice).
Then, per workload:

    why = eng.unsupported(workload)   # None, or a reason shown as "n/a"
    compiled = eng.compile(workload)  # timed: grammar -> compiled vs 128k vocab
    m = eng.new_matcher(compiled)     # a fresh decoding state
    mask = eng.new_bitmask()          # engine-native buffer, allocated once
    eng.fill(m, mask)                 # timed: the next-token mask
    eng.allowed(mask, tok) -> bool    # bit `tok` of the mask
    eng.accept(m, tok) -> bool

Adapters are imported lazily by name because each lives in a different
virtualenv: the peers' packages only exist in .bench-venv and formcast only
in the project's .venv.
"""

import importlib

ENGINES = ["formcast", "llguidance", "xgrammar", "outlines_core"]
PEERS = ENGINES[1:]


def load(name):
    if name not in ENGINES:
        raise ValueError(f"unknown engine {name!r}; choose from {ENGINES}")
    module = importlib.import_module(f"engines.{name}_engine")
    return module.Engine
