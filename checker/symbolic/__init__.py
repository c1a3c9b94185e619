"""The symbolic side: a checked spec encoded in Z3 (states, calls, clauses) and the one wrapper through
which every query is run, bounded in time, with unknown kept apart from proved."""
