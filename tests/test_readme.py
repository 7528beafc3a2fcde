"""The README's Python examples run as printed (from the repository root)."""

from __future__ import annotations

import os
import re

from conftest import ROOT


def test_readme_python_examples_run():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 3
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        namespace: dict = {}
        for block in blocks:  # later blocks build on earlier ones
            exec(compile(block, "README.md", "exec"), namespace)
    finally:
        os.chdir(cwd)
