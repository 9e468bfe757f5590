"""The worked examples in the library's docstrings are true (doctest)."""

import doctest
import importlib
import pkgutil

import pytest

import tokenmap

MODULES = sorted(m.name for m in pkgutil.walk_packages(tokenmap.__path__, "tokenmap."))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} doctest examples failed in {name}"
