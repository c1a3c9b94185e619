"""Builds the optional C module checker._native; everything else is in pyproject.toml.

`optional=True`: where no C compiler or no Python headers are found, the install still succeeds
and checker.model.semantics uses its pure-Python tables (`regcheck --version` says which is in use).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("checker._native", ["checker/native/_native.c"],
                             extra_compile_args=["-O2"], optional=True)])
