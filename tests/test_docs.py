"""The documentation's links hold (issue #38): every link from README.md or a page of docs/ to a
heading of a page in docs/ names a heading that exists, the README's results link only into the
current results (docs/results.md), never into the history page, and docs/results.md stays a page
of current results (at most 700 lines; earlier runs go to docs/history.md); contributing.md's
"Adding a task" is one spec and one package in at most 20 lines."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
#: docs/results.md holds the current results and their commands; what they replaced is history.md's
MAX_RESULTS_LINES = 700

LINK = re.compile(r"\]\(([^)\s]*\.md)(?:#([^)\s]*))?\)")


def slug(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading: lower case, punctuation dropped (letters, digits,
    ``-`` and ``_`` kept), each space a hyphen."""
    text = heading.strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading anchor of ``page`` (lines in fenced code blocks are not headings; a repeated
    heading gets ``-1``, ``-2``, ... as on GitHub)."""
    found: set[str] = set()
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (match := re.match(r"#{1,6} (.+)", line)):
            base = slug(match.group(1))
            name, n = base, 0
            while name in found:
                n += 1
                name = f"{base}-{n}"
            found.add(name)
    return found


def links(page: Path) -> list[tuple[int, Path, str | None]]:
    """``(line, target page, anchor or None)`` of every relative link from ``page`` to a ``.md`` file."""
    found = []
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        for target, anchor in LINK.findall(line):
            if "://" not in target:
                found.append((number, (page.parent / target).resolve(), anchor or None))
    return found


def test_slug_follows_github():
    assert slug("Training LM1 on the descriptions (`--train-encoder`)") == \
        "training-lm1-on-the-descriptions---train-encoder"
    assert slug("Entity classification on the unseen KG' (paper Table 3), with the reference model") == \
        "entity-classification-on-the-unseen-kg-paper-table-3-with-the-reference-model"
    assert slug("Question answering on MetaQA (paper Table 2)") == "question-answering-on-metaqa-paper-table-2"


def test_anchors_skip_code_and_number_repeats(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# A\n```\n# not a heading\n```\n## A\n### B c\n", encoding="utf-8")
    assert anchors(page) == {"a", "a-1", "b-c"}


@pytest.mark.parametrize("page", [REPO / "README.md", *sorted(DOCS.glob("*.md"))], ids=lambda p: p.name)
def test_every_link_into_a_page_names_an_existing_heading(page):
    broken = [f"{page.relative_to(REPO)}:{line}: {target.relative_to(REPO)}#{anchor}"
              + ("" if target.exists() else " (no such page)")
              for line, target, anchor in links(page)
              if target.is_relative_to(REPO) and (not target.exists() or (anchor and anchor not in anchors(target)))]
    assert not broken, "\n".join(broken)


def test_the_readme_links_to_current_results_not_to_the_history():
    targets = {target.name for _, target, _ in links(REPO / "README.md")}
    assert "results.md" in targets
    assert "history.md" not in targets


def test_results_page_holds_only_the_current_results():
    lines = len((DOCS / "results.md").read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_RESULTS_LINES, (
        f"docs/results.md: {lines} lines (at most {MAX_RESULTS_LINES}): move earlier or superseded runs to "
        "docs/history.md and protocols to docs/tasks.md")


def test_adding_a_task_is_one_spec_and_one_package():
    """contributing.md's "Adding a task" stays short (at most 20 lines): a task is its package and its
    spec (tests/tasks/test_adding_a_task.py registers a toy one)."""
    text = (DOCS / "contributing.md").read_text(encoding="utf-8")
    section = text.split("## Adding a task\n", 1)[1].split("\n## ", 1)[0].strip().splitlines()
    assert len(section) + 1 <= 20, f"'Adding a task': {len(section) + 1} lines (at most 20)"
    assert "TaskSpec(" in "\n".join(section) and "src/jaket/tasks/NAME/" in "\n".join(section)


def test_the_readme_is_for_users():
    """At most 150 lines; the first own-data command within the first 50; no commit hashes, run
    dates, ../shared paths or equation numbers; quick start of exactly the two commands."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= 150, f"README.md: {len(lines)} lines"
    first = next(i for i, line in enumerate(lines) if line.startswith("jaket "))
    assert first < 50, f"the first own-data command is at line {first + 1}"
    for pattern, what in ((r"\b[0-9a-f]{7,40}\b", "a commit hash"), (r"\b20\d\d-\d\d-\d\d\b", "a run date"),
                          (r"\.\./shared", "a ../shared path"), (r"\bEq\.", "an equation number")):
        found = re.search(pattern, text)
        assert found is None, f"README.md holds {what}: {found.group(0)!r}"
    assert "```\nmake demo\nmake test\n```" in text


def test_the_pretraining_defaults_table_agrees_with_the_config():
    """docs/pretraining.md's table of the model section is the one place the pre-training defaults are
    written: each row's default is the embedded config's value (the walkthrough and data.md link to it)."""
    import yaml

    from jaket.train.config import load_config

    model = load_config().model_dump(mode="json")["model"]
    text = (DOCS / "pretraining.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `model\.(\w+)` \| ([^|]+) \|", text, flags=re.M)
    assert len(rows) >= 10
    for key, cell in rows:
        written = re.sub(r"\*\*|\(.*?\)", "", cell).split("=")[0].strip()
        assert yaml.safe_load(written) == model[key], f"model.{key}: the table says {written}, the config {model[key]}"


def _documented_commands(page: Path) -> list[tuple[int, str]]:
    """``(line, command)`` of every ``jaket ...`` line inside a page's code blocks (comments cut,
    continuations joined; lines with ``...`` or ``[optional]`` placeholders left out)."""
    found, inside = [], False
    lines = page.read_text(encoding="utf-8").replace("\\\n", " ").splitlines()
    for number, line in enumerate(lines, 1):
        if line.startswith("```"):
            inside = not inside
            continue
        command = line.split(" #")[0].strip()
        if inside and command.startswith("jaket ") and "..." not in command and "[" not in command:
            found.append((number, command))
    return found


@pytest.mark.parametrize("page", ["README.md", "docs/cli.md", "docs/own-data.md", "docs/data.md", "docs/results.md", "docs/tasks.md", "docs/pretraining.md", "docs/scaling.md", "docs/performance.md", "docs/design.md", "docs/reliability.md", "docs/contributing.md"])
def test_every_documented_command_parses_with_the_current_flags(page, capsys):
    """The commands of the user-facing pages parse as written, with no deprecated spelling."""
    import shlex

    from jaket.cli import build_parser

    parser = build_parser()
    commands = _documented_commands(REPO / page)
    problems = []
    for number, command in commands:
        try:
            parser.parse_args(shlex.split(re.sub(r"\$\{?\w+\}?", "0", command))[1:])  # $s: a shell loop's seed
        except SystemExit:
            problems.append(f"{page}:{number}: `{command}` does not parse: {capsys.readouterr().err.strip().splitlines()[-1]}")
            continue
        warned = capsys.readouterr().err
        if "deprecated" in warned:
            problems.append(f"{page}:{number}: `{command}`: {warned.strip()}")
    assert not problems, "\n".join(problems)
