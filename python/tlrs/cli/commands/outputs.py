"""The output flags' checks (`--log`, `--plot`, `--save`): every path is tried before
training starts, so that no finished run is lost to a path that cannot be written, and two
outputs never name the same file."""

from __future__ import annotations

import os
from collections.abc import Sequence
from contextlib import suppress

from ...errors import ArgError
from ...trainlog import temporary_name
from ..args import shorten

__all__ = ["check_output_path", "check_outputs", "refuse", "show_path"]

_SHOWN_PATH = 120  # longer paths are shortened in messages


def show_path(path: str) -> str:
    """`path` for a message: shortened in the middle when longer than a line allows."""
    return shorten(path, _SHOWN_PATH)


def refuse(exe: str, key: str, path: str, reason: str) -> ArgError:
    return ArgError(f"{exe}: --{key}: cannot write {show_path(path)}: {reason}")


def _output_identity(path: str) -> str:
    """The file an output path will replace: its folder with symbolic links resolved, then its
    name (the writes replace the path itself, a link included)."""
    target = os.path.abspath(path)
    return os.path.join(os.path.realpath(os.path.dirname(target)), os.path.basename(target))


def check_output_path(exe: str, key: str, path: str) -> str:
    """Fail before training when `--key PATH` cannot be written; returns the file it names
    (`_output_identity`).

    PATH must not be a folder or another non-regular file (a device, a pipe); its missing
    parent folders must be creatable, and a file of the longest temporary name the atomic writes
    use must be creatable in its folder (so a name too long, a read-only or unwritable place, a
    file where a folder should be are caught now). The check creates the missing folders and the
    probe file, then removes them again: a refused run leaves nothing behind.
    Raises: ArgError (prefixed), naming the flag, the path and the reason.
    """
    try:
        os.fsencode(path)
    except UnicodeError:
        raise refuse(exe, key, path, "not a valid file name on this system") from None
    if "\0" in path:
        raise refuse(exe, key, path, "a path cannot contain a NUL character")
    target = os.path.abspath(path)
    name = os.path.basename(target)
    if not name or path.endswith(os.sep) or (os.altsep and path.endswith(os.altsep)):
        raise refuse(exe, key, path, "expected a file path, got a folder path")
    try:
        if os.path.isdir(target):
            raise ArgError(f"{exe}: --{key}: {show_path(path)} is a folder, expected a file path")
        if os.path.lexists(target) and not os.path.isfile(target):
            raise refuse(exe, key, path, "it exists and is not a regular file")
    except OSError as err:
        raise refuse(exe, key, path, err.strerror or str(err)) from None
    folder = os.path.dirname(target)
    missing: list[str] = []
    probe: str | None = None
    try:
        ancestor = folder
        while not os.path.lexists(ancestor):
            missing.append(ancestor)
            ancestor = os.path.dirname(ancestor)
        if not os.path.isdir(ancestor):
            raise refuse(exe, key, path, f"{show_path(ancestor)} is not a folder")
        made: list[str] = []
        try:
            for d in reversed(missing):
                os.mkdir(d)
                made.append(d)
            # The longest temporary name of the atomic writes (trainlog's; checkpoints use less).
            probe = os.path.join(folder, temporary_name(name))
            fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.close(fd)
        finally:
            if probe is not None:
                with suppress(OSError):
                    os.unlink(probe)
            for d in reversed(made):
                with suppress(OSError):
                    os.rmdir(d)
    except OSError as err:
        raise refuse(exe, key, path, err.strerror or str(err)) from None
    return _output_identity(path)


def check_outputs(exe: str, outputs: Sequence[tuple[str, str | None]]) -> None:
    """`check_output_path` for each `(flag, path)` given (None: not asked), then refuse two
    outputs that collide: the same file, or one inside the other (`--log out --plot out/a.png`).

    Raises: ArgError (prefixed) naming both flags.
    """
    checked = [(key, path, check_output_path(exe, key, path))
               for key, path in outputs if path is not None]
    for i, (k1, p1, r1) in enumerate(checked):
        for k2, p2, r2 in checked[i + 1:]:
            same = r1 == r2
            if not same and os.path.exists(r1) and os.path.exists(r2):
                with suppress(OSError):
                    same = os.path.samefile(r1, r2)
            if same:
                raise ArgError(f"{exe}: --{k1} and --{k2} name the same file "
                               f"({show_path(p1)}, {show_path(p2)}); give each its own path")
            for (ka, pa, ra), (kb, pb, rb) in (((k1, p1, r1), (k2, p2, r2)),
                                               ((k2, p2, r2), (k1, p1, r1))):
                if rb.startswith(ra.rstrip(os.sep) + os.sep):
                    raise ArgError(f"{exe}: --{kb} {show_path(pb)} lies inside --{ka} "
                                   f"{show_path(pa)}, which is to be a file; give each its own "
                                   "path")
