"""The spec language: source text and its diagnostics, the AST, the parser, the printer, the type
checker and the loader; every later stage starts from the `CheckedSpec` made here."""
