"""The concrete semantics: one executable meaning of a checked spec (its state, tables, values and the
code generated from its clauses), shared by the replayer, the generator and the prover's cross-check."""
