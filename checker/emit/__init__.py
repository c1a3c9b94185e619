"""The emitters: a run's results in the formats other tools read (SARIF, JUnit XML, Apalache ITF, Mermaid
and Graphviz diagrams, an HTML timeline, a pytest module)."""
