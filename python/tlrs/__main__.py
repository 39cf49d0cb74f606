"""`python -m tlrs ...`: the same command line as the `tlrs` console script.
Delegates to `tlrs.cli.main` and exits with its code.
"""

from .cli import main

raise SystemExit(main())
