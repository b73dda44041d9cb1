"""The docs hold: every console example runs and prints what its page shows, every relative link
between the pages leads to a file and a heading that exist, the README stays a front page, and
no page grows past its size limit.

A ```` ```console ```` block is a list of ``$ command`` lines, each followed by its output. Each
``mini-scheduler`` (or ``.venv/bin/mini-scheduler``) command runs as ``python -m mini_scheduler``
in a scratch directory that holds ``samplecode/`` and the files its page declares (a ```` ```yaml
```` block just after ``<!-- file: NAME -->``), with no AWS settings and no scheduler settings
from the environment; stdout and stderr, in the order written, must be the lines shown. A block
that cannot run here (it needs a deployed stack, or ticks until stopped) says so just before its
fence, ``<!-- not run: <why> -->``; NOT_RUN lists those, so none is left out by accident.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess  # nosec B404 # runs this interpreter on the documented commands
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.docs import ROOT, pages

NOT_RUN = {
    (
        "docs/audit.md",
        "mini-scheduler audit --since 1d --regions us-east-1,us-west-2 --stack mini-scheduler",
    ),
    ("docs/development.md", "make run"),
    ("docs/console.md", "make run"),
    (
        "docs/console.md",
        "mini-scheduler console --stack mini-scheduler --regions us-east-1,us-west-2",
    ),
    ("docs/run-by-hand.md", "mini-scheduler jobs --stack mini-scheduler --cron-file cron.yaml"),
    ("docs/run-by-hand.md", "mini-scheduler history heartbeat --limit 3 --stack mini-scheduler"),
    (
        "docs/deploy.md",
        "mini-scheduler doctor --stack mini-scheduler --regions us-east-1,us-west-2",
    ),
    (
        "docs/deploy.md",
        "mini-scheduler plan cron.yaml --stack mini-scheduler --regions us-east-1,us-west-2",
    ),
    (
        "docs/run-by-hand.md",
        "mini-scheduler history --since 12h --status FAILED,TIMED_OUT --regions "
        "us-east-1,us-west-2 --stack mini-scheduler",
    ),
    (
        "docs/run-by-hand.md",
        "mini-scheduler rerun hourly-cleanup@2026-11-30T02:15:00Z --operator jane.doe --stack "
        "mini-scheduler",
    ),
    (
        "docs/run-by-hand.md",
        "mini-scheduler pause morning-report --regions us-east-1,us-west-2 --stack mini-scheduler",
    ),
    (
        "docs/fail-over.md",
        "mini-scheduler failover --to DR --regions us-east-1,us-west-2 --stack mini-scheduler",
    ),
    (
        "docs/fail-over.md",
        "mini-scheduler failover --drill --to DR --yes --regions us-east-1,us-west-2 --stack "
        "mini-scheduler",
    ),
    ("docs/cli.md", "mini-scheduler tick --at 2026-11-30T14:00:00Z --stack mini-scheduler"),
    (
        "docs/schedules-and-backfill.md",
        "mini-scheduler schedule create quarter-close --at 2026-12-31T23:00:00Z --service "
        'mini-scheduler-sample-report --parameters \'{"period": "Q4"}\' --stack mini-scheduler',
    ),
    (
        "docs/schedules-and-backfill.md",
        "mini-scheduler schedule create --file schedules.yaml --stack mini-scheduler",
    ),
    ("docs/schedules-and-backfill.md", "mini-scheduler schedule list --stack mini-scheduler"),
    (
        "docs/schedules-and-backfill.md",
        "mini-scheduler backfill morning-report --from 2026-11-01T00:00:00Z --to "
        "2026-11-30T00:00:00Z --rate 5 --stack mini-scheduler",
    ),
    ("docs/schedules-and-backfill.md", "mini-scheduler backfill status --stack mini-scheduler"),
}
"""The console examples not run, by page and first command: each needs a deployed stack or runs
until stopped (its page says why)."""

COMMANDS = ("mini-scheduler", ".venv/bin/mini-scheduler")
_SETTINGS = re.compile(
    r"^(AWS_|MONGODB_|POWERTOOLS_|STATE_TABLE$|CRON_FILE$|DEFAULT_TIMEZONE$|ENVIRONMENT_NAME$"
    r"|ACTIVE_ENVIRONMENT_STORE$|CLAIM_STORE$|LOG_LEVEL$|TICK_LEAD_SECONDS$|FANOUT_|DISPATCH_)"
)
_FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
_MARK = re.compile(r"^\s*<!-- (not run|file): (.+?) -->\s*$")


@dataclass(frozen=True)
class Command:
    line: str
    output: list[str]


@dataclass(frozen=True)
class Example:
    page: str
    line: int
    commands: list[Command]
    not_run: str | None
    files: dict[str, str] = field(default_factory=dict)

    @property
    def first(self) -> str:
        return self.commands[0].line if self.commands else ""


def _blocks(page: Path) -> list[tuple[int, str, str, str | None, str | None]]:
    """Each fenced block of ``page``: its fence's line number, language, text (its indent taken
    off), and the marker just before it (``not run`` or ``file``) with its value."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks = []
    number = 0
    while number < len(lines):
        opening = _FENCE.match(lines[number])
        if not opening:
            number += 1
            continue
        indent, language = len(opening[1]), opening[2]
        end = number + 1
        while end < len(lines) and not re.match(r"^\s*```\s*$", lines[end]):
            end += 1
        text = "\n".join(line[indent:] for line in lines[number + 1 : end])
        before = next((lines[i] for i in range(number - 1, -1, -1) if lines[i].strip()), "")
        mark = _MARK.match(before)
        blocks.append((number + 1, language, text, mark and mark[1], mark and mark[2]))
        number = end + 1
    return blocks


def _commands(text: str) -> list[Command]:
    commands: list[Command] = []
    for line in text.splitlines():
        if line.startswith("$ "):
            commands.append(Command(line[2:], []))
        elif commands:
            commands[-1].output.append(line.rstrip())
    for command in commands:
        while command.output and not command.output[-1]:
            command.output.pop()
    return commands


def examples() -> list[Example]:
    found = []
    for page in pages():
        name = page.relative_to(ROOT).as_posix()
        blocks = _blocks(page)
        files = {
            value: text + "\n" for _, _, text, mark, value in blocks if mark == "file" and value
        }
        for line, language, text, mark, value in blocks:
            if language == "console":
                not_run = value if mark == "not run" else None
                found.append(Example(name, line, _commands(text), not_run, files))
    return found


EXAMPLES = examples()


def _run(command: str, where: Path) -> list[str]:
    words = shlex.split(command)
    assert words and words[0] in COMMANDS, (
        f"$ {command}: only mini-scheduler commands run here; mark the block "
        "<!-- not run: <why> --> if it cannot"
    )
    env = {key: value for key, value in os.environ.items() if not _SETTINGS.match(key)}
    env.update(PYTHONUNBUFFERED="1", PYTHONIOENCODING="utf-8", AWS_EC2_METADATA_DISABLED="true")
    done = subprocess.run(  # nosec B603 # this interpreter, the command the page shows
        [sys.executable, "-m", "mini_scheduler", *words[1:]],
        cwd=where,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=120,
        check=False,
    )
    lines = [line.rstrip() for line in done.stdout.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


@pytest.mark.parametrize("example", EXAMPLES, ids=[f"{e.page}:{e.line}" for e in EXAMPLES])
def test_a_console_example_prints_what_its_page_shows(example: Example, tmp_path: Path) -> None:
    if example.not_run:
        pytest.skip(f"not run: {example.not_run}")
    assert example.commands, f"{example.page}:{example.line}: a console block with no $ command"
    (tmp_path / "samplecode").symlink_to(ROOT / "samplecode", target_is_directory=True)
    for name, text in example.files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    for command in example.commands:
        assert _run(command.line, tmp_path) == command.output, f"$ {command.line}"


def test_the_examples_not_run_are_these() -> None:
    """A block marked not run leaves its page untested: adding one is a decision, made here."""
    assert {(e.page, e.first) for e in EXAMPLES if e.not_run} == NOT_RUN


def test_the_pages_hold_examples_that_run() -> None:
    """The parser finds the examples (an empty list would pass every test above)."""
    ran = [e for e in EXAMPLES if not e.not_run]
    assert len(ran) >= 10 and sum(len(e.commands) for e in ran) >= 15
    assert {e.page for e in ran} >= {"README.md", "docs/cron-yaml.md"}


# -- links --------------------------------------------------------------------------------------

_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def _prose(text: str) -> str:
    """``text`` without its fenced blocks and inline code, where a bracket is not a link."""
    text = re.sub(r"^\s*```.*?^\s*```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def anchors(page: Path) -> set[str]:
    """The fragments GitHub gives the headings of ``page``: lowercase, punctuation dropped,
    spaces as ``-``, a repeated heading numbered."""
    seen: dict[str, int] = {}
    found = set()
    for heading in re.findall(r"^#+ (.+)$", _prose(page.read_text(encoding="utf-8")), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def test_anchors_follow_github_s_rule() -> None:
    assert "ship-your-own-cronyaml" in anchors(ROOT / "docs" / "deploy.md")
    assert "troubleshooting" in anchors(ROOT / "docs" / "troubleshooting.md")
    assert {"fail-over", "both-active-or-neither-the-seconds-between-two-writes"} <= anchors(
        ROOT / "docs" / "fail-over.md"
    )


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_leads_to_a_file_and_a_heading(page: Path) -> None:
    broken = []
    for target in _LINK.findall(_prose(page.read_text(encoding="utf-8"))):
        if re.match(r"^[a-z]+:", target):
            continue
        path, _, fragment = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif fragment and linked.suffix == ".md" and fragment not in anchors(linked):
            broken.append(f"{target}: no heading #{fragment} in {linked.relative_to(ROOT)}")
    assert broken == []


def test_the_readme_is_a_front_page() -> None:
    """What it is, the two commands, a cron.yaml, a deploy and an index: the rest is in docs/."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.encode()) <= 10 * 1024
    linked = {target.partition("#")[0] for target in _LINK.findall(readme)}
    assert {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")} <= linked


PAGE_LIMIT = 25 * 1024
README_LIMIT = 10 * 1024


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_page_is_too_long_to_read(page: Path) -> None:
    """A page of docs/ is one reader task, under 25 KB; README.md is an index, under 10 KB. A page
    that grows past its limit is split by task (and its links moved), not let through."""
    limit = README_LIMIT if page.name == "README.md" and page.parent == ROOT else PAGE_LIMIT
    size = len(page.read_bytes())
    assert size <= limit, f"{page.relative_to(ROOT)} is {size} bytes, over {limit}: split it"
