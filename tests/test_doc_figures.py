"""The figures README.md and docs/*.md quote are the kept results' own, their links lead somewhere, and
they speak of the product.

README's how-fast block and ``tokenmap/runtime/expected.json`` are generated from results/kept/ (every
figure a ``{{FILE#ROW#COLUMN}}`` of the template, ``benchmarks/report.py``); elsewhere a figure quoted
from a kept table carries an anchor right after it,
``1.72×<!-- fig zen4-20-no-flags#short prompts#speed-up -->`` (FILE#ROW#COLUMN)
(``#notes`` in place of ROW#COLUMN: the figure must appear in the table's notes; ``method``: in
Method), and is checked here against the table. README outside the generated block quotes no measurement without one.
"""

import importlib.util
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("bench_report", ROOT / "benchmarks" / "report.py")
report = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(report)

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINKED = DOCS + [ROOT / p for p in ("research/README.md", "results/kept/README.md", "benchmarks/README.md",
                                    "corpora/README.md", "tests/README.md")]
ANCHOR = re.compile(r"([+−-]?\d[\d,]*(?:\.\d+)?)[^\d<]{0,12}<!-- fig (.+?) -->")
#: a measurement in prose: a number with a unit of time, size, speed or error rate
MEASURE = re.compile(r"\d(?:[\d,]*\.\d+|[\d,]*)\s?(?:×|x\b|%|ms\b|MB\b|GB\b|s per\b)")


def figures(text: str, tables: dict) -> list[str]:
    """Every anchored figure of ``text`` that differs from its table, as 'quoted != kept (ref)'."""
    wrong = []
    for quoted, ref in ANCHOR.findall(text):
        q = float(quoted.replace(",", "").replace("−", "-"))
        name, _, where = ref.partition("#")
        if name.strip() == "method":  # results/kept/method.md, BENCHMARKS' Method section
            notes = (report.KEPT / "method.md").read_text(encoding="utf-8")
            kept = [float(n.replace(",", "").replace("−", "-")) for n in report.NUMBER.findall(notes)]
            if not any(abs(abs(q) - abs(k)) < 1e-9 for k in kept):
                wrong.append(f"{quoted} not in results/kept/method.md")
            continue
        if where.strip() == "notes":
            notes = " ".join(tables[name.strip()].get("notes", []) + [tables[name.strip()].get("text", "")])
            kept = [float(n.replace(",", "").replace("−", "-")) for n in report.NUMBER.findall(notes)]
            if not any(abs(abs(q) - abs(k)) < 1e-9 for k in kept):
                wrong.append(f"{quoted} not in the notes of {name}")
            continue
        k = report._number(report.lookup(tables, ref))
        if abs(q - k) > 1e-9:
            wrong.append(f"{quoted} != {k} ({ref})")
    return wrong


def test_anchored_figures_are_their_tables():
    tables = report.by_file()
    wrong = {p.name: figures(p.read_text(encoding="utf-8"), tables) for p in DOCS}
    assert not any(wrong.values()), wrong


def test_a_changed_figure_fails():
    tables = report.by_file()
    text = "short prompts **1.72×**<!-- fig zen4-20-no-flags#short prompts#speed-up --> as fast"
    assert figures(text, tables) == []
    assert figures(text.replace("1.72", "1.80"), tables) == \
        ["1.80 != 1.72 (zen4-20-no-flags#short prompts#speed-up)"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "1.26×" in readme  # a generated figure: changing it makes README differ from what report.py writes
    assert report.render_readme(readme.replace("1.26×", "1.62×", 1)) == readme


def test_readme_quotes_no_measurement_outside_the_generated_block():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    head, rest = readme.split(report.README_BEGIN, 1)
    prose = re.sub(r"```.*?```", "", head + rest.split(report.README_END, 1)[1], flags=re.S)
    loose = [m.group() for m in MEASURE.finditer(ANCHOR.sub("", prose))]
    assert not loose, f"README figures with no kept table behind them: {loose}"
    assert len(readme.splitlines()) <= 200


def test_doctor_expectations_are_generated():
    assert (ROOT / "tokenmap" / "runtime" / "expected.json").read_text(encoding="utf-8") == report.render_expected(), \
        "tokenmap/runtime/expected.json differs from results/kept/: run `make bench-report`"


def _slug(heading: str) -> str:
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def _headings(path: Path) -> tuple[list[str], set[str]]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    titles = [m.group(1).strip() for m in re.finditer(r"^#{1,6}\s+(.+)$", text, flags=re.M)]
    slugs, seen = set(), {}
    for t in titles:
        s = _slug(t)
        slugs.add(s if s not in seen else f"{s}-{seen[s]}")
        seen[s] = seen.get(s, 0) + 1
    return titles, slugs


def test_links_and_anchors_lead_somewhere():
    dead = []
    for path in LINKED:
        text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            dest = (path.parent / file).resolve() if file else path
            if not dest.exists():
                dead.append(f"{path.name}: {target}")
            elif anchor and dest.suffix == ".md" and anchor not in _headings(dest)[1]:
                dead.append(f"{path.name}: {target} (no such heading)")
    assert not dead, dead


QUOTED = re.compile(r"\b(BENCHMARKS|ENGINE|LOOPS|USAGE)(?:\.md)?\)?((?:[,:]\s[^\"\n,;()]{1,60}?)*)"
                    r"[,:]\s(?:[A-Z][\w ]{0,30}\s)?\"([^\"]+)\"")


def test_quoted_sections_exist():
    docs = {name: ROOT / "docs" / f"{name}.md" for name in ("BENCHMARKS", "ENGINE", "LOOPS", "USAGE")}
    missing = []
    for path in LINKED:
        text = path.read_text(encoding="utf-8")
        for doc, _, title in QUOTED.findall(text):
            titles = [t.replace("`", "") for t in _headings(docs[doc])[0]]
            title = " ".join(title.replace("`", "").split())
            if not any(t.startswith(title) for t in titles):
                missing.append(f"{path.name}: {doc}, \"{title}\"")
    assert not missing, missing


@pytest.mark.parametrize("words", ["issue 58", "issue ", "this session", "the mission", "other engineers",
                                   "/tmp", "temporary directory", "worktree"])
def test_the_docs_speak_of_the_product(words):
    for path in DOCS + [ROOT / "research" / "README.md"]:
        text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S).lower()
        assert words not in text, f"{path.name}: {words!r}"


def _doctor(monkeypatch, kind):
    import tokenmap.models as models
    from tokenmap.runtime import cpukind
    from tokenmap.runtime import report as runtime_report

    spec = importlib.util.spec_from_file_location("cmd_doctor", ROOT / "cli" / "cmd_doctor.py")  # this checkout's
    cmd = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cmd)
    monkeypatch.setattr(runtime_report, "doctor_info", lambda **kw: {"platform": "linux", "step API": "present"})
    monkeypatch.setattr(models, "available_models", lambda: {"base": "ready"})
    monkeypatch.setattr(cpukind, "cpu_kind", lambda cpuinfo=None: kind)
    return CliRunner().invoke(cmd.doctor, [])


@pytest.mark.parametrize("kind, start, source", [
    ("AMD EPYC Zen 4 (AVX-512 BF16/VNNI)", "on this CPU kind (AMD EPYC Zen 4) expect short files to take about 0.66x",
     "docs/BENCHMARKS.md"),
    ("Intel Xeon or Core without AMX (AVX2 or AVX-512)",
     "not measured on this CPU kind (Intel Xeon or Core without AMX", "make bench-quick")])
def test_doctor_ends_with_what_this_cpu_kind_measured_or_how_to_measure_it(monkeypatch, kind, start, source):
    result = _doctor(monkeypatch, kind)
    assert result.exit_code == 0, result.output
    last = result.output.strip().splitlines()[-1]
    assert last.startswith(start), last
    assert source in last
