"""The engines: what regcheck does with a checked spec and its semantics: runs of the model, proofs,
bounded model checking, random walks, trace replay and shrinking, corpus scale-out, and recording real
programs."""
