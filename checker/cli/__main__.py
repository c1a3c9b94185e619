"""`python -m checker.cli ...`: the same as the `regcheck` command."""

from . import entry

entry()
