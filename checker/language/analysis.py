"""Analyses of a spec's syntax that several stages ask: walking the tree, footprints, identifiers.

One copy each, so the generator, the prover, the encoder and the emitters agree on what a spec's
pieces are. Walks over expressions and statements of one kind live with the AST
(`syntax.subexpressions`, `syntax.statements`); this module holds the ones across node kinds.
"""

from __future__ import annotations

from typing import Iterator


def nodes(tree) -> Iterator:
    """Every AST node (a dataclass) inside tree, tree included, through tuples of nodes; spans skipped."""
    stack = [tree]
    while stack:
        x = stack.pop()
        if isinstance(x, tuple):
            stack.extend(x)
            continue
        if not hasattr(x, "__dataclass_fields__"):
            continue
        yield x
        for name in x.__dataclass_fields__:
            if name != "span":
                child = getattr(x, name)
                if isinstance(child, tuple) or hasattr(child, "__dataclass_fields__"):
                    stack.append(child)


def identifier(text: str) -> str:
    """text as part of a Python or Mermaid identifier: each character other than a letter, digit or _ becomes _."""
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in text)
