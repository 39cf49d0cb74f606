"""The reference's flag helpers moved to `tlrs.cli.args`; this name keeps older imports working."""

from .cli.args import *  # noqa: F403
