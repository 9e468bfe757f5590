"""Scripts outside the packages (research/, benchmarks/) use public entry points only, and those exist.

A refactor of tokenmap or tokenmap_bench that removes or renames what a script imports fails
here instead of breaking the script silently.
"""

import ast
import importlib
from pathlib import Path

import pytest

import tokenmap_bench

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted((ROOT / "research").glob("*.py")) + sorted((ROOT / "benchmarks").glob("*.py"))


def _imports(path: Path):
    """``(module, name or None, line)`` of every import in ``path``, nested ones included."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None, node.lineno
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            for alias in node.names:
                yield node.module, alias.name, node.lineno


def _top_level_names(path: Path) -> set:
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def test_the_bench_public_surface_is_documented():
    for name in tokenmap_bench.__all__:
        obj = getattr(tokenmap_bench, name)
        assert not callable(obj) or (obj.__doc__ or "").strip(), f"tokenmap_bench.{name} has no docstring"
        assert f"{name}`" in tokenmap_bench.__doc__ or f"``{name}``" in tokenmap_bench.__doc__, name


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_script_imports_public_names_that_exist(path):
    assert "sys.path.insert" not in path.read_text(encoding="utf-8"), f"{path.name} edits sys.path"
    for module, name, line in _imports(path):
        where = f"{path.name}:{line}"
        top = module.split(".")[0]
        if top == "tokenmap_bench":
            assert module == "tokenmap_bench", f"{where}: import from tokenmap_bench itself, not {module}"
            assert name is None or name in tokenmap_bench.__all__, f"{where}: tokenmap_bench.{name} is not public"
        elif top == "tokenmap":
            assert name is None or not name.startswith("_"), f"{where}: {module}.{name} is private"
            mod = importlib.import_module(module)
            if name is not None:
                found = hasattr(mod, name) or (hasattr(mod, "__path__")
                                               and importlib.util.find_spec(f"{module}.{name}"))
                assert found, f"{where}: {module} has no {name}"
        elif (path.parent / f"{top}.py").is_file():  # a script of the same folder
            assert name is None or name in _top_level_names(path.parent / f"{top}.py"), \
                f"{where}: {top}.py has no {name}"
