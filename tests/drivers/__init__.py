"""Small drivers for the executor tests (wrappers over the reference driver with one bug each)."""
