"""`python -m checker ...`: the same as the `regcheck` command."""

from .cli import entry

entry()
