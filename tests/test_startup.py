"""Start-up cost: a run imports only what its subcommand needs, and the grammar's parse tables are cached."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from checker.cli import COMMAND_MODULES, commands_needed

ROOT = Path(__file__).resolve().parent.parent
SMALL_TRACE = str(ROOT / "traces" / "acl" / "ok_mapped_roundtrip.jsonl")


def python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)


def imports_z3(argv: list[str]) -> bool:
    code = f"import sys; from checker.cli import main; main({argv!r}); sys.exit(3 if 'z3' in sys.modules else 0)"
    result = python(code)
    assert result.returncode in (0, 3), result.stderr
    return result.returncode == 3


@pytest.mark.parametrize("argv", [["--version"], ["-V"], ["replay", SMALL_TRACE], ["check", "acl"]],
                         ids=["version", "V", "replay", "check"])
def test_cheap_commands_do_not_import_the_solver(argv):
    assert not imports_z3(argv)


def test_the_solver_is_still_there_for_prove():
    assert imports_z3(["prove", "acl", "--help"])  # help exits 0 through SystemExit, caught by main


def test_a_replay_in_one_process_does_not_import_the_process_pool():
    # The pool's imports (multiprocessing, concurrent.futures) are about 5% of a short replay's
    # instructions; only `-j N` needs them.
    code = (f"import sys; from checker.cli import main; main(['replay', {SMALL_TRACE!r}]);"
            " print(sorted(m for m in ('multiprocessing', 'concurrent.futures') if m in sys.modules))")
    result = python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "[]"


def test_version_needs_no_subcommand_and_no_parser():
    result = python(textwrap.dedent("""
        import sys
        from checker.cli import main
        main(["--version"])
        loaded = [m for m in sys.modules if m.startswith("checker.cli.") and m not in ("checker.cli.common", "checker.cli.config")]
        print(loaded, "lark" in sys.modules)
    """))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "[] False"


@pytest.mark.parametrize("argv, needed", [
    (["--version"], ()),
    (["-V", "replay"], ()),
    (["replay", "-h"], ("replay",)),
    (["replay", "--max-findings", "1", "t.jsonl"], ("replay",)),
    (["--help"], COMMAND_MODULES),
    ([], COMMAND_MODULES),
    (["no-such-command"], COMMAND_MODULES),
    (["completion", "bash"], COMMAND_MODULES),
])
def test_commands_needed(argv, needed):
    assert commands_needed(argv) == needed


def test_usage_error_for_an_unknown_command_still_lists_the_commands():
    code = "from checker.cli import main; raise SystemExit(main(['no-such-command']))"
    result = python(code)
    assert result.returncode == 2 and "invalid choice: 'no-such-command'" in result.stderr
    assert "'replay'" in result.stderr and "'prove'" in result.stderr


# ---------------------------------------------------------------- the grammar cache

# Prints a digest of the AST of a bundled spec and the message of a syntax error (which reads the
# grammar's terminals), so that a grammar loaded from the cache can be compared with a built one.
PARSE_PROBE = """
    import hashlib
    from checker.language.diagnostics import RegcheckError
    from checker.language.parser import parse_spec
    text = open("spec/acl.spec", encoding="utf-8").read()
    print(hashlib.sha256(repr(parse_spec(text, "acl.spec")).encode()).hexdigest())
    try:
        parse_spec("foo")  # "expected 'call', ...": keyword names come from the grammar's terminals
    except RegcheckError as exc:
        print(exc.diagnostics[0].message)
"""


def probe(cache_dir: Path, setup: str = "") -> str:
    """PARSE_PROBE's output in a fresh interpreter whose cache directory is cache_dir, after `setup`."""
    head = f"import os\nos.environ['REGCHECK_CACHE_DIR'] = {str(cache_dir)!r}\n"
    result = python(head + textwrap.dedent(setup) + textwrap.dedent(PARSE_PROBE))
    assert result.returncode == 0 and result.stderr == "", result.stderr
    return result.stdout


def cache_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("grammar-lark-*.cache"))


def test_the_cached_grammar_parses_as_the_built_one(tmp_path):
    built = probe(tmp_path)  # cold: builds the tables and writes the cache file
    assert len(cache_files(tmp_path)) == 1
    assert probe(tmp_path) == built  # warm: loaded from the file


def test_a_corrupt_cache_file_is_rebuilt(tmp_path):
    built = probe(tmp_path)
    [cache] = cache_files(tmp_path)
    cache.write_bytes(cache.read_bytes()[:200])
    assert probe(tmp_path) == built
    assert probe(tmp_path) == built  # and rewritten whole


def test_a_cache_directory_others_can_write_is_not_used(tmp_path):
    """lark loads the cache with pickle: a file another user could plant is never read or written."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    reference = probe(tmp_path / "private")
    assert probe(shared) == reference
    assert cache_files(shared) == []


def test_an_unusable_cache_directory_is_no_error(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    reference = probe(tmp_path / "private")
    assert probe(blocked / "cache") == reference
    assert blocked.read_text() == "not a directory"


def test_the_default_cache_is_private_to_the_user(tmp_path):
    """Without REGCHECK_CACHE_DIR the file goes under XDG_CACHE_HOME (else ~/.cache), in a 0700 folder."""
    result = python("import os\nos.environ.pop('REGCHECK_CACHE_DIR', None)\n"
                    f"os.environ['XDG_CACHE_HOME'] = {str(tmp_path)!r}\n"
                    "from checker.language.parser import grammar_cache_file\nprint(grammar_cache_file())")
    path = Path(result.stdout.strip())
    assert path.parent == tmp_path / "regcheck" and (path.parent.stat().st_mode & 0o777) == 0o700, result


# ---------------------------------------------------------------- the parsed-spec cache

# Loads a spec file by path and prints a digest of its checked form and whether lark was imported.
LOAD_PROBE = """
    import hashlib, sys
    from checker.language.load import load_spec
    spec = load_spec({path!r})
    print(hashlib.sha256(repr(sorted((k, repr(v)) for k, v in spec.rules.items())).encode()).hexdigest(),
          "lark" in sys.modules)
"""


def load_probe(cache_dir: Path, path: Path) -> tuple[str, bool]:
    head = f"import os\nos.environ['REGCHECK_CACHE_DIR'] = {str(cache_dir)!r}\n"
    result = python(head + textwrap.dedent(LOAD_PROBE.format(path=str(path))))
    assert result.returncode == 0 and result.stderr == "", result.stderr
    digest, lark = result.stdout.split()
    return digest, lark == "True"


def ast_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("spec-ast-*.pickle"))


def test_a_spec_read_again_comes_from_the_cache_without_the_parser(tmp_path):
    spec = tmp_path / "acl.spec"
    spec.write_text((ROOT / "spec" / "acl.spec").read_text())
    digest, parsed = load_probe(tmp_path / "cache", spec)
    assert parsed and len(ast_files(tmp_path / "cache")) == 1
    assert load_probe(tmp_path / "cache", spec) == (digest, False)  # the same spec, and lark never imported


def test_the_cached_ast_is_the_parsed_one(tmp_path, monkeypatch):
    monkeypatch.setenv("REGCHECK_CACHE_DIR", str(tmp_path))
    from checker.language.load import parsed, read_spec_source
    from checker.language.parser import parse_spec
    src = read_spec_source("cuda")
    parsed(src, cached=True)
    assert len(ast_files(tmp_path)) == 1
    assert parsed(src, cached=True) == parse_spec(src.text, src.path)


def test_an_edited_spec_is_parsed_again_and_a_corrupt_file_is_no_error(tmp_path):
    spec = tmp_path / "acl.spec"
    text = (ROOT / "spec" / "acl.spec").read_text()
    spec.write_text(text)
    first, _ = load_probe(tmp_path / "cache", spec)
    spec.write_text(text.replace("ACL-REG-ALIGN", "ACL-REG-ALIGNED"))
    edited, parsed = load_probe(tmp_path / "cache", spec)
    assert parsed and edited != first and len(ast_files(tmp_path / "cache")) == 2
    for f in ast_files(tmp_path / "cache"):
        f.write_bytes(f.read_bytes()[:100])
    assert load_probe(tmp_path / "cache", spec) == (edited, True)  # read again from the text, and stored whole
    assert load_probe(tmp_path / "cache", spec) == (edited, False)


def test_the_cache_keeps_a_bounded_number_of_specs(tmp_path, monkeypatch):
    from checker.language import load
    monkeypatch.setenv("REGCHECK_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(load, "AST_CACHE_FILES", 3)
    text = (ROOT / "spec" / "acl.spec").read_text()
    for i in range(5):
        load.parsed(load.SourceFile.of(f"<n{i}>", text), cached=True)
    assert len(ast_files(tmp_path)) == 3


def test_a_cache_folder_others_can_write_holds_no_ast(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    spec = tmp_path / "acl.spec"
    spec.write_text((ROOT / "spec" / "acl.spec").read_text())
    assert load_probe(shared, spec)[1] and load_probe(shared, spec)[1]  # parsed each time
    assert ast_files(shared) == []
