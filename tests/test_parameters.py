"""Options travel whole: no function in tokenmap/ takes more than 8 parameters.

Counted from the source with ``ast``: positional, keyword-only, ``*args`` (one) and ``**kwargs`` (one); a method's
``self`` and a classmethod's ``cls`` are not counted (the object called, not an option)."""

import ast
from pathlib import Path

import tokenmap

MOST = 8


def parameters(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> int:
    args = node.args
    positional = [a.arg for a in args.posonlyargs + args.args]
    receiver = positional[:1] in (["self"], ["cls"])
    return len(positional) - receiver + len(args.kwonlyargs) + (args.vararg is not None) + (args.kwarg is not None)


def test_no_function_in_tokenmap_takes_more_than_eight_parameters():
    root = Path(tokenmap.__file__).parent
    over = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and parameters(node) > MOST:
                over.append(f"{path.relative_to(root.parent)}:{node.lineno} {getattr(node, 'name', 'lambda')} "
                            f"({parameters(node)})")
    assert not over, "more than 8 parameters: " + ", ".join(over)


def test_the_count_takes_star_args_once_and_leaves_self_out():
    tree = ast.parse("class A:\n    def f(self, a, b=1, *rest, c, **more): pass\ndef g(self, a): pass")
    counts = {n.name: parameters(n) for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    assert counts == {"f": 5, "g": 1}
