"""Test generation: conformance suites built from a spec (its configurations, an argument pool, a search
for every clause and outcome, the coverage report), run against a driver, and a differential fuzzer."""
