"""Writes the elementwise op table's entries of python/tlrs/_core.pyi from the built module.

The table (rust/src/op_table/) is the one place an elementwise op is declared; this script
turns `tlrs._core._elementwise_table()` into the stub's `Tensor` methods, module functions and
`__all__`, between the `# ---- generated` markers. Run it after adding an op:

    python scripts/gen_stub.py          # rewrite the stub
    python scripts/gen_stub.py --check  # exit 1 if the stub is stale (tests/test_op_table.py)
"""

from __future__ import annotations

import sys
from pathlib import Path

STUB = Path(__file__).resolve().parents[1] / "python" / "tlrs" / "_core.pyi"
BEGIN = "# ---- generated from the op table by scripts/gen_stub.py: {} ----"
END = "# ---- end of generated {} ----"


# Table ops whose binding is written by hand (rust/src/py/elementwise.rs, `HAND_WRITTEN`), with
# the keywords it takes beyond the table's numeric parameters.
HAND_WRITTEN = {"gelu": ['approximate: str = "none"']}


def _default(v: float) -> str:
    return repr(float(v))


def _functions(table: list[tuple]) -> list[str]:
    exported = [r[0] for r in table if r[6] == "export"]
    lines = ["__all__ = ["]
    lines += [f'    "{name}",' for name in exported]
    lines.append("]")
    lines.append("")
    for name, kind, params, doc, _method, _src, py in table:
        if py == "none":
            continue
        if kind == "unary":
            args = ["input: Tensor"] + [f"{p}: float = {_default(d)}" for p, d in params]
            args += HAND_WRITTEN.get(name, [])
        else:
            args = ["input: Tensor", "other: Tensor"]
        lines.append(f"def {name}({', '.join(args)}) -> Tensor:")
        lines.append(f'    """{doc}"""')
    return lines


def _methods(table: list[tuple]) -> list[str]:
    lines = []
    for _name, _kind, _params, doc, method, _src, _py in table:
        if method is not None:
            lines.append(f"    def {method}(self) -> Tensor:")
            lines.append(f'        """{doc}"""')
    return lines


def render(text: str, table: list[tuple]) -> str:
    """`text` with both generated sections replaced."""
    for section, body, indent in (("methods", _methods(table), "    "), ("functions", _functions(table), "")):
        begin, end = indent + BEGIN.format(section), indent + END.format(section)
        lines = text.split("\n")
        try:
            a, b = lines.index(begin), lines.index(end)
        except ValueError:
            raise SystemExit(f"{STUB}: the markers {begin.strip()!r} / {end.strip()!r} are missing") from None
        text = "\n".join(lines[: a + 1] + body + lines[b:])
    return text


def main(argv: list[str]) -> int:
    import tlrs._core as core

    table = [tuple(r) for r in core._elementwise_table()]
    old = STUB.read_text(encoding="utf-8")
    new = render(old, table)
    if "--check" in argv:
        if new != old:
            print(f"{STUB} is stale: run `python scripts/gen_stub.py`", file=sys.stderr)
            return 1
        return 0
    STUB.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
