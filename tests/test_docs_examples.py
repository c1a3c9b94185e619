"""The examples in README.md and docs/*.md are runnable, and print what they say they print.

An example is a fenced code block with at least one line `$ regcheck ...` (an environment
assignment such as `$ PYTHONPATH=. regcheck ...` counts too). Every `$ ` line of such a block is a
command; the lines after it, up to the next `$ ` line or the end of the block, are what it prints
(standard output and standard error together, as a terminal shows them). Each command runs in
bash, as a user would type it, so pipes (`| tail -1`), redirections and `echo $?` work.

Where a command runs: a scratch directory per document that links the repository's `spec`,
`traces`, `tests` and `pyproject.toml` in, so repository paths resolve exactly as from the repository root, while
whatever an example writes (`-o suites/acl`, `--out cex.jsonl`) stays out of the tree. Blocks of one
document share that directory and run in document order, so a block may use what an earlier block
of its document wrote; selected on its own, a block first runs the earlier blocks that write a path
it names. Two traces the docs only describe in prose (`noisy.jsonl`, `pinned.jsonl`) are written
there from this module.

How output is compared: both sides go through `normalise` (times, rates, versions, scratch paths,
kernel-chosen addresses), then `matches`: a line that is only `...` stands for any number of lines
(none included), and `...` inside a line for any text.

A block that cannot run here says so in its document with `<!-- not run: REASON -->` as the last
line before its fence; it is reported as skipped with that reason, and there must stay few of them.
A block is skipped, saying why, where a program it pipes into is not installed (`dot`) or where it
runs a driver (`execute`, `conform`, `fuzz`) and this process may not lock memory.
Blocks using the prover, the test generator, the conformance runner or the fuzzer are marked slow
(`-m "not slow"` leaves them out).
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from checker.drivers.pinning import pinning_permitted

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# What the examples read from the repository; pyproject.toml too, so that regcheck finds the
# project defaults (`[tool.regcheck]`) it would find at the root, and looks no further up.
LINKED = ("spec", "traces", "tests", "pyproject.toml")
MAX_NOT_RUN = 4
COMMAND_TIMEOUT_S = 300

# The subcommands whose examples take seconds each (every obligation to the solver, the suite's
# enumeration, a driver per test, Hypothesis); the bounded `bmc` examples take under one.
SLOW_SUBCOMMANDS = frozenset({"prove", "generate", "conform", "fuzz"})
# The subcommands that run a driver: the reference driver locks memory for real, and where this
# process may not (RLIMIT_MEMLOCK, no CAP_IPC_LOCK) its answers differ from the documented ones.
DRIVER_SUBCOMMANDS = frozenset({"execute", "conform", "fuzz"})

FENCE = re.compile(r"^(`{3,}|~{3,})")
COMMAND = re.compile(r"^\$ (.*)$")
REGCHECK = re.compile(r"^(?:\w+=\S*\s+)*regcheck\b")
NOT_RUN = re.compile(r"^<!--\s*not run:\s*(.*?)\s*-->$")
WRITING_OPTIONS = ("-o", "--output", "--out", "--itf", "--timeline", "--pytest", ">")


@dataclass(frozen=True)
class Command:
    line: str          # as typed after `$ `
    expected: str      # what the document says it prints


@dataclass(frozen=True)
class Block:
    document: str      # relative to the repository root
    line: int          # of the opening fence, 1-based
    commands: tuple[Command, ...]
    not_run: str | None  # the reason given in the document, if it is not to be run

    @property
    def name(self) -> str:
        return f"{self.document}:{self.line}"

    @property
    def runs_a_driver(self) -> bool:
        return any(subcommand(c.line) in DRIVER_SUBCOMMANDS for c in self.commands)

    @property
    def slow(self) -> bool:
        return any(subcommand(c.line) in SLOW_SUBCOMMANDS for c in self.commands)

    def words(self) -> set[str]:
        return {w.rstrip("/") for c in self.commands for w in c.line.split()}

    def written_paths(self) -> set[str]:
        """The paths its commands name as outputs (`-o PATH`, `> PATH`, ...)."""
        out = set()
        for c in self.commands:
            words = c.line.split()
            out.update(w.rstrip("/") for option, w in zip(words, words[1:]) if option in WRITING_OPTIONS)
        return out - {"/dev/null"}


def subcommand(line: str) -> str | None:
    words = [w for w in line.split() if "=" not in w or w.startswith("-")]
    return words[1] if len(words) > 1 and words[0] == "regcheck" else None


def commands_of(body: list[str]) -> tuple[Command, ...]:
    commands: list[Command] = []
    typed, printed = None, []
    for text in body:
        command = COMMAND.match(text)
        if command:
            if typed is not None:
                commands.append(Command(typed, "\n".join(printed)))
            typed, printed = command.group(1), []
        elif typed is not None:
            printed.append(text)
    if typed is not None:
        commands.append(Command(typed, "\n".join(printed)))
    return tuple(commands)


def blocks_of(path: Path, root: Path = ROOT) -> list[Block]:
    """The example blocks of one Markdown document (named relative to `root`)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        fence = FENCE.match(lines[i].strip())
        if not fence:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip().startswith(fence.group(1))), len(lines))
        commands = commands_of(lines[i + 1:end])
        if any(REGCHECK.match(c.line) for c in commands):
            before = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
            reason = NOT_RUN.match(before)
            blocks.append(Block(str(path.relative_to(root)), i + 1, commands, reason and reason.group(1)))
        i = end + 1
    return blocks


BLOCKS = [b for doc in DOCUMENTS for b in blocks_of(doc)]


# --- normalising and comparing --------------------------------------------------------------

def normalise(text: str, scratch: Path | None = None) -> str:
    """`text` with what legitimately differs from run to run replaced by placeholders:

    - the scratch directory's path by nothing (`.` where it stands alone), so a path under it
      reads as relative to the repository root, as a user there sees it;
    - durations (`0.94 s`, `61 ms`) by `<time>`, dropping the padding before a right-aligned
      one so that a column of `4 ms` and `120 ms` lines up either way;
    - rates (`7,074 steps/s`) by `<n> steps/s`, whatever is counted;
    - the version in `regcheck 0.1.0 (...)` by `<version>`;
    - addresses the kernel chose at run time by `0x<address>`: any 48-bit user-space address
      (twelve hex digits). mmap's base on x86-64 Linux is randomised over 2**40 bytes below the
      stack, so a mapping can land at 0x7efc... as well as 0x7f..., and more mappings push it lower;
    - trailing spaces of each line, and blank lines at the end, by nothing.
    """
    if scratch is not None:
        text = text.replace(f"{scratch}/", "").replace(str(scratch), ".")
    text = re.sub(r" {2,}(?=\d+(?:\.\d+)? ms\b)", " ", text)
    text = re.sub(r"\b\d+(?:\.\d+)? (?:s|ms)\b", "<time>", text)
    text = re.sub(r"\b\d[\d,]*(?:\.\d+)? (\w+)/s\b", r"<n> \1/s", text)
    text = re.sub(r"\bregcheck \d+\.\d+\S*", "regcheck <version>", text)
    text = re.sub(r"\b0x[1-9a-f][0-9a-f]{11}\b", "0x<address>", text)
    return "\n".join(line.rstrip() for line in text.splitlines()).rstrip("\n")


def line_pattern(expected: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in expected.split("...")) + r"\Z")


def matches(expected: str, actual: str) -> bool:
    """Whether `actual` is what `expected` shows, `...` lines and `...` in a line as wildcards."""
    want, got = expected.splitlines(), actual.splitlines()
    # fits[i][j]: want[i:] matches got[j:]; filled from the ends so it needs no recursion.
    fits = [[False] * (len(got) + 1) for _ in range(len(want) + 1)]
    fits[len(want)][len(got)] = True
    for i in range(len(want) - 1, -1, -1):
        elided = want[i].strip() == "..."
        pattern = None if elided else line_pattern(want[i])
        for j in range(len(got), -1, -1):
            if elided:
                fits[i][j] = fits[i + 1][j] or (j < len(got) and fits[i][j + 1])
            else:
                fits[i][j] = j < len(got) and bool(pattern.match(got[j])) and fits[i + 1][j + 1]
    return fits[0][0]


# --- running ------------------------------------------------------------------------------

def noisy_trace() -> list[dict]:
    """README's `noisy.jsonl`: thirty unrelated allocations and registrations, then an
    overlapping registration the driver wrongly accepted."""
    events = []
    for i in range(30):
        base = 0x10_0000_0000 + i * 0x10000
        events += [{"call": "malloc", "args": {"size": 8192}, "out": {"ptr": base}},
                   {"call": "aclrtHostRegisterV2", "args": {"ptr": base, "size": 4096, "flag": 2}, "ret": 0}]
    top = 0x7F00_0000_0000
    return events + [
        {"call": "malloc", "args": {"size": 16384}, "out": {"ptr": top}},
        {"call": "aclrtHostRegisterV2", "args": {"ptr": top, "size": 8192, "flag": 2}, "ret": 0},
        {"call": "aclrtHostRegisterV2", "args": {"ptr": top + 0x1000, "size": 4096, "flag": 2}, "ret": 0},
        {"call": "aclrtHostUnregister", "args": {"ptr": top}, "ret": 0},
    ]


def pinned_trace() -> list[dict]:
    """docs/drivers.md's `pinned.jsonl`: malloc of three pages, a PINNED|MAPPED registration, a
    device-pointer query, the unregistration and the free."""
    base, pinned_mapped = 0x7F3A_2C00_0000, 0x10000000 | 0x2
    return [
        {"call": "malloc", "args": {"size": 3 * 4096}, "out": {"ptr": base}},
        {"call": "aclrtHostRegisterV2", "args": {"ptr": base, "size": 3 * 4096, "flag": pinned_mapped}, "ret": 0},
        {"call": "aclrtHostGetDevicePointer", "args": {"pHost": base, "flag": 0}, "ret": 0,
         "out": {"pDevice": 0x12C0000000}},
        {"call": "aclrtHostUnregister", "args": {"ptr": base}, "ret": 0},
        {"call": "free", "args": {"ptr": base}},
    ]


ACL_HEADER = {"regcheck": 1, "spec": "acl", "env": {"os_kernel": "6.6", "product": "AtlasA2"}}
PROSE_TRACES = {"noisy.jsonl": noisy_trace, "pinned.jsonl": pinned_trace}


def make_scratch(path: Path) -> Path:
    path.mkdir()
    for name in LINKED:
        (path / name).symlink_to(ROOT / name, target_is_directory=(ROOT / name).is_dir())
    for name, events in PROSE_TRACES.items():
        (path / name).write_text("\n".join(json.dumps(x) for x in [ACL_HEADER, *events()]) + "\n")
    return path


def shell_environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONUNBUFFERED"] = "1"  # standard output and error interleave as on a terminal
    for name in ("PYTHONPATH", "FORCE_COLOR"):  # a block that wants them says so
        env.pop(name, None)
    return env


def run_command(line: str, cwd: Path, previous_status: int) -> tuple[int, str]:
    """`line` in bash in `cwd`, with `$?` set to `previous_status`: (its status, what it printed)."""
    script = f"(exit {previous_status})\n{line}\n"
    proc = subprocess.run(["bash", "-c", script], cwd=cwd, env=shell_environment(), stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=COMMAND_TIMEOUT_S)
    return proc.returncode, proc.stdout


SHELL_BUILTINS = frozenset({"cd", "echo", "export", "true", "false", ":"})


def missing_programs(block: Block) -> list[str]:
    """The programs the block's commands start (in any stage of a pipe) that are not on PATH."""
    path = shell_environment()["PATH"]
    programs = set()
    for c in block.commands:
        for stage in re.split(r"\|{1,2}|&&|;", c.line):
            words = [w for w in stage.split() if not re.match(r"^\w+=", w)]
            if words:
                programs.add(words[0])
    return sorted(p for p in programs - SHELL_BUILTINS if shutil.which(p, path=path) is None)


@dataclass(frozen=True)
class Mismatch:
    command: str
    expected: str
    actual: str

    def describe(self) -> str:
        diff = difflib.unified_diff(self.expected.splitlines(), self.actual.splitlines(), "document", "regcheck",
                                    lineterm="")
        return f"$ {self.command}\n{first_difference(self.expected, self.actual)}\n" + "\n".join(diff)


def first_difference(expected: str, actual: str) -> str:
    """Where a greedy reading of `expected` against `actual` first fails (for the failure message;
    `matches` decides)."""
    want, got = expected.splitlines(), actual.splitlines()
    j, elided = 0, False
    for i, line in enumerate(want, 1):
        if line.strip() == "...":
            elided = True
            continue
        pattern, window = line_pattern(line), range(j, len(got) if elided else min(j + 1, len(got)))
        found = next((k for k in window if pattern.match(got[k])), None)
        if found is None:
            printed = got[j] if j < len(got) else "(the end of the output)"
            return f"document line {i} is not what follows: {line!r}\n  regcheck printed there: {printed!r}"
        j, elided = found + 1, False
    if j < len(got) and not elided:
        return f"regcheck printed more than the document shows, from: {got[j]!r}"
    return "the greedy reading matches; the document's `...` lines are ambiguous here"


def run_block(block: Block, cwd: Path) -> list[Mismatch]:
    mismatches, status = [], 0
    for c in block.commands:
        status, printed = run_command(c.line, cwd, status)
        expected, actual = normalise(c.expected), normalise(printed, cwd)
        if not matches(expected, actual):
            mismatches.append(Mismatch(c.line, expected, actual))
    return mismatches


class Scratches:
    """One scratch directory per document, and which of its blocks have run there."""

    def __init__(self, base: Path):
        self.base = base
        self.dirs: dict[str, Path] = {}
        self.ran: set[str] = set()

    def for_block(self, block: Block) -> Path:
        if block.document not in self.dirs:
            self.dirs[block.document] = make_scratch(self.base / re.sub(r"\W", "_", block.document))
        cwd = self.dirs[block.document]
        self.run_prerequisites(block, cwd)
        self.ran.add(block.name)
        return cwd

    def run_prerequisites(self, block: Block, cwd: Path) -> None:
        """Runs the earlier blocks of the document, not run yet, that write a path `block` names."""
        needed = block.words()
        earlier = [b for b in BLOCKS if b.document == block.document and b.line < block.line]
        for b in earlier:
            if b.name not in self.ran and b.not_run is None and b.written_paths() & needed:
                self.for_block(b)
                run_block(b, cwd)


@pytest.fixture(scope="module")
def scratches(tmp_path_factory) -> Scratches:
    return Scratches(tmp_path_factory.mktemp("docs"))


def case(block: Block):
    marks = [pytest.mark.slow] if block.slow else []
    if block.not_run is not None:
        marks.append(pytest.mark.skip(reason=f"not run: {block.not_run}"))
    return pytest.param(block, id=block.name, marks=marks)


@pytest.mark.parametrize("block", [case(b) for b in BLOCKS])
def test_the_example_prints_what_the_document_shows(block, scratches):
    if block.runs_a_driver:
        ok, why = pinning_permitted()
        if not ok:  # the reference driver's answers, and so the counts shown, depend on it
            pytest.skip(f"real pinning is not permitted here: {why}")
    missing = missing_programs(block)
    if missing:
        pytest.skip(f"not installed here: {', '.join(missing)}")
    background = [c.line for c in block.commands if c.line.rstrip().endswith("&")]
    assert not background, f"{block.name}: a command left running in the background would outlive the test; " \
        f"mark the block `<!-- not run: ... -->`: {background}"
    mismatches = run_block(block, scratches.for_block(block))
    assert not mismatches, f"{block.name}: the output differs from the document\n" + \
        "\n\n".join(m.describe() for m in mismatches)


# --- the machinery itself -----------------------------------------------------------------

def test_the_documents_have_examples_and_few_are_not_run():
    assert len(BLOCKS) >= 30, [b.name for b in BLOCKS]
    assert all(b.commands for b in BLOCKS)
    not_run = [b for b in BLOCKS if b.not_run is not None]
    assert len(not_run) <= MAX_NOT_RUN, [(b.name, b.not_run) for b in not_run]
    assert all(b.not_run for b in not_run), "a `not run` mark must say why"


def test_a_block_is_split_into_commands_and_their_output(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("text\n\n<!-- not run: needs a cluster -->\n```console\n$ regcheck a | tail -1\none\ntwo\n"
                   "$ echo $?\n1\n```\n\n```\n$ ls\n```\n")
    [block] = blocks_of(doc, tmp_path)
    assert block.not_run == "needs a cluster"
    assert block.commands == (Command("regcheck a | tail -1", "one\ntwo"), Command("echo $?", "1"))


def test_normalise_hides_what_varies_between_runs(tmp_path):
    printed = (f"wrote {tmp_path}/ff.jsonl in 1.87 s (7,074 steps/s)\n"
               "  PROVED   X      120 ms   \nregcheck 0.1.0 (C speedups: on)\nfirst 0x7fb3b62a6000\n\n")
    assert normalise(printed, tmp_path) == ("wrote ff.jsonl in <time> (<n> steps/s)\n  PROVED   X <time>\n"
                                            "regcheck <version> (C speedups: on)\nfirst 0x<address>")
    assert normalise("first 0x7efca539d000") == normalise("first 0x7fb3b62a6000") == "first 0x<address>"
    assert normalise("first 0x12c0000000") == "first 0x12c0000000"
    assert normalise("  PROVED   X        4 ms") == normalise("  PROVED   X      120 ms")
    assert normalise("os_kernel=6.1.1, 211 tests") == "os_kernel=6.1.1, 211 tests"
    assert normalise("(1,500.5 events/s)") == "(<n> events/s)"


def test_matches_honours_elisions_and_nothing_else():
    assert matches("a\n...\nd", "a\nb\nc\nd")
    assert matches("a\n...\nd", "a\nd")
    assert matches("x [...] y", "x [1, 2] y")
    assert not matches("a\n...\nd", "a\nb\nc")
    assert not matches("a\nb", "a\nb\nc")
    assert not matches("211 tests", "212 tests")
    assert not matches("a.b", "axb")  # only `...` is special


def test_a_block_needing_a_program_that_is_not_installed_is_found():
    block = Block("d.md", 1, (Command("regcheck diagram acl --format dot | no-such-program-xyz -Tsvg > a.svg", ""),
                              Command("echo $?", "0")), None)
    assert missing_programs(block) == ["no-such-program-xyz"]


def test_prerequisites_are_the_blocks_that_write_what_a_block_names():
    gen = Block("d.md", 1, (Command("regcheck generate acl -o suites/acl --pytest t.py", ""),), None)
    use = Block("d.md", 9, (Command("regcheck conform acl --suite suites/acl/", ""),), None)
    assert gen.written_paths() == {"suites/acl", "t.py"}
    assert gen.written_paths() & use.words()
    assert gen.slow and use.slow
    assert not Block("d.md", 1, (Command("regcheck replay x.jsonl > out.sarif", ""),), None).slow
