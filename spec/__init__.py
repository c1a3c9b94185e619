"""The bundled specs, shipped as package data of ``checker.specs``."""
