"""tlrs: a small, fast, deterministic neural-network runtime (Rust core, Python front)."""

from .errors import ArgError

__all__ = ["ArgError"]
