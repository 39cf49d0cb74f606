"""The exceptions tlrs raises, all under the standard Python hierarchy."""


class ArgError(ValueError):
    """A command-line or configuration argument could not be parsed; the text is the reference message."""
