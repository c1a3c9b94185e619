"""The fast path: each call of a checked spec compiled to a typed decoder and a step program that the C
module runs, with the general path of checker.model as the fallback."""
