"""The `tlrs` command line, in one folder, above the library (which never imports it):

- `typer_app.py`: the typer app (`tlrs run`, `models`, `info`, `graph`, `export`, `convert`), the
  command registry (`register`, `COMMANDS`) and errors as one line on stderr;
- `args.py`: the reference's flag helpers (`take_*`, `parse_*`, the value kinds);
- `commands/`: one file per `tlrs run` command, and the trainer they share.

`tlrs.cli.main`, `tlrs.cli.register`, ... are the app's names, loaded on first use: the run
entrypoint (`tlrs.run`, imported with the package) reads its flags with `args.py`, and importing
the package must not load typer.
"""

from __future__ import annotations

import importlib
from typing import Any


def __getattr__(name: str) -> Any:
    """The app's public names (`main`, `register`, `app`, `COMMANDS`, ...), loaded on first use."""
    if name.startswith("_"):
        raise AttributeError(f"module 'tlrs.cli' has no attribute {name!r}")
    typer_app = importlib.import_module(".typer_app", __name__)
    try:
        return getattr(typer_app, name)
    except AttributeError:
        raise AttributeError(f"module 'tlrs.cli' has no attribute {name!r}") from None
