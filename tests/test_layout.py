"""The tree stays small and obvious: no module over 500 lines."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 500


def test_no_module_is_over_500_lines():
    files = [*ROOT.glob("specrun/**/*.py"), *ROOT.glob("plugins/**/*.py")]
    sizes = {f.relative_to(ROOT).as_posix(): len(f.read_text(encoding="utf-8").splitlines()) for f in files}
    too_long = {name: n for name, n in sizes.items() if n > MAX_LINES}
    assert not too_long, f"split these by responsibility (at most {MAX_LINES} lines): {too_long}"
