"""Scripts outside the packages (research/, benchmarks/) use public entry points only, and those exist.

A refactor of tokenmap or tokenmap_bench that removes or renames what a script imports fails
here instead of breaking the script silently. research/ keeps only scripts that a figure in the
README or docs/ cites by name, each listed in research/README.md, under 2,000 lines in all; a removed
script stays in git (research/README.md, "Removed"), and nothing may still import it.
"""

import ast
import importlib
import re
from pathlib import Path

import pytest

import tokenmap_bench

ROOT = Path(__file__).resolve().parents[1]
RESEARCH = sorted((ROOT / "research").glob("*.py"))
SCRIPTS = RESEARCH + sorted((ROOT / "benchmarks").glob("*.py"))
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RESEARCH_README = ROOT / "research" / "README.md"


def _removed_scripts() -> set:
    """Module names of the scripts research/README.md lists under "Removed"."""
    removed = RESEARCH_README.read_text(encoding="utf-8").split("## Removed", 1)[1]
    return set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)\.py`", removed))


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


@pytest.mark.parametrize("path", RESEARCH, ids=lambda p: p.name)
def test_research_script_is_cited_and_listed(path):
    cited = [doc.name for doc in DOCS if f"research/{path.name}" in doc.read_text(encoding="utf-8")]
    assert cited, f"no figure in README.md or docs/ cites research/{path.name}: remove it (git rm) and " \
                  "list it with its commit under research/README.md's \"Removed\""
    listed = RESEARCH_README.read_text(encoding="utf-8").split("## Removed", 1)[0]
    assert f"`{path.name}`" in listed, f"research/README.md does not list {path.name}"


def test_research_stays_under_2000_lines():
    lines = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in RESEARCH}
    assert sum(lines.values()) < 2000, f"research/ holds {sum(lines.values())} lines: {lines}"


def test_no_script_imports_a_removed_research_script():
    removed = _removed_scripts()
    assert "auto_fallback" in removed  # the table is parsed at all
    for path in SCRIPTS:
        for module, _, line in _imports(path):
            top = module.split(".")[0]
            assert top not in removed or (path.parent / f"{top}.py").is_file(), \
                f"{path.name}:{line} imports {top}, a removed research script (research/README.md, \"Removed\")"
