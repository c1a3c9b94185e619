"""SARIF 2.1.0 output: rule IDs as SARIF rules, findings as SARIF results.

One emitter for every command that reports findings by rule ID (`replay`, `execute`, `prove`
and `conform`). A SARIF log is what code-scanning dashboards
(GitHub code scanning, Azure DevOps, VS Code's SARIF viewer) read: each rule carries its clause,
its kind and its document citation as help text, and each result points at a file and a line.

    log = sarif_log(spec.rules.values(), results)       # one run: one spec, one tool invocation
    log = sarif_log_of_runs([sarif_run(...), ...])        # several specs in one log (one run each)
    results = replay_results(report, spec)                # a replay's or an execution's findings
    log = prove_log(proof_report, spec)                   # a proof's refuted/unknown obligations
    log = conform_log(conform_report, spec, files)        # a conformance run's failed tests
    log = conform_log(..., fuzzed=fuzz_result)             # and its fuzz phase's failure, if any

What code scanning needs besides the findings: every rule has a `name` and a `helpUri` (its
document's URL, or the docs page that has it: docs/sources.md for a bundled spec's document without
a URL); every result has `partialFingerprints` (rule, file, and the message without its numbers,
so a finding keeps its identity when lines move) and a message that links its related locations
(`[text](id)`); a location in a bundled spec says where an installed regcheck keeps that file.

A result is a `SarifResult` or any 6-tuple in the same order:
(rule_id, level, message, artifact_uri, line, related_locations[, properties]), where level is one of
"error", "warning", "note", "none"; artifact_uri is a path (relative paths stay relative, so a
dashboard resolves them against the repository root; absolute paths become file:// URIs);
line is 1-based (0 or None: no region); related_locations is an iterable of
(artifact_uri, line, message) triples; properties, if given, a dict written as the result's
`properties` (replay's `rejected` flag); a `SarifResult`'s `context`, if given, is what identifies
the finding in its fingerprint instead of the message.

A rule ID that is not a rule of the spec (the executor's own checks, the prover's implicit
properties) is described by a `ToolRule`, which carries the same help text and citation a spec
rule does, so every rule a log uses explains itself.

The output is checked against the official SARIF 2.1.0 JSON schema in tests/test_sarif.py.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Any, Iterable, Mapping, NamedTuple
from urllib.parse import quote

from .. import __version__
from ..language.load import SOURCES_DOC, bundled_spec_name, document_text, source_anchor
from ..language.load import is_url as _is_url
from ..language.source import NO_SPAN
from ..trace.reader import names_spec_file

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
TOOL_NAME = "regcheck"
LEVELS = ("error", "warning", "note", "none")

# The level a finding of each rule kind has unless a command says otherwise: a broken obligation or
# a result the spec does not allow is an error; a case the documents leave open is informational.
KIND_LEVEL = {
    "requires": "error", "undefined": "error", "usage": "error", "fails": "error", "may-fail": "error",
    "ensures": "error", "effect": "error", "invariant": "error", "pinned": "error", "unspecified": "note",
}

_KIND_TEXT = {
    "requires": "caller obligation (breaking it is the caller's bug)",
    "undefined": "caller obligation whose breach the documents call undefined behaviour",
    "fails": "documented failure: when its condition holds the call must fail with the named status",
    "may-fail": "environmental failure the documents allow at any time",
    "unspecified": "a case the documents leave open (informational)",
    "ensures": "promise about a successful call's outputs (breaking it is the driver's bug)",
    "usage": "usage rule: thread safety or API group",
    "effect": "success effect: how the state changes when the call succeeds",
    "invariant": "property every reachable state keeps",
    "pinned": "which entries' pages are page-locked (the executor checks the kernel's locks against it)",
    "executor": "a check of regcheck's executor (not a rule of the spec)",
    "property": "a property the prover derives from the spec (not a rule written in it)",
    "conform": "a check of regcheck's conformance runner (not a rule of the spec)",
}


class SarifResult(NamedTuple):
    """One finding, as `sarif_run` takes it (a plain 6-tuple in this order works too)."""

    rule_id: str
    level: str
    message: str
    artifact_uri: str
    line: int | None
    related_locations: Iterable[tuple[str, int | None, str]] = ()
    properties: Mapping[str, Any] | None = None
    context: str | None = None  # what identifies the finding besides rule and file (default: the message)


@dataclass(frozen=True, slots=True)
class Citation:
    """What a `ToolRule` cites: a document's short name and the clause, in its words."""

    source: str
    clause: str


@dataclass(frozen=True, slots=True)
class Document:
    """The document a `Citation` comes from: a path in the repository or a URL, and a title."""

    location: str
    title: str


@dataclass(frozen=True, slots=True)
class ToolRule:
    """A rule ID that is not a rule of the spec, with RuleInfo's attributes so `rule_descriptor`
    describes it like one: `summary` is what it checks, `cite`/`source` where that is written
    down, `span` where it is defined (None: nowhere in the spec), `level` its default level."""

    rule: str
    kind: str
    summary: str
    cite: Citation | None
    source: Document | None
    call: str | None = None
    span: Any = None
    level: str | None = None


class SarifNotification(NamedTuple):
    """A problem with the run itself (an unreadable input), not a finding: shown as a tool error."""

    code: str
    message: str
    artifact_uri: str | None = None
    line: int | None = None
    level: str = "error"
    column: int | None = None


def notifications_of(diagnostics: Iterable[Any], path: str | None = None) -> list[SarifNotification]:
    """Input errors (checker.language.diagnostics.Diagnostic) as notifications, at their place;
    `path`: the input they are about, for those that name none (their span is NO_SPAN)."""
    out = []
    for d in diagnostics:
        where = d.span.path if d.span.path != NO_SPAN.path else path
        out.append(SarifNotification(d.code, d.message, where, d.span.line or None, "error", d.span.column or None))
    return out


# ---------------------------------------------------------------- pieces


@lru_cache(maxsize=4096)  # a result names its trace and spec several times: pathlib's parsing each time cost ~30 us
def artifact_uri(path: str) -> str:
    """A SARIF artifact URI for a path: relative paths stay relative (POSIX separators, percent-
    encoded); absolute paths become file:// URIs. (A function of the path alone: an absolute path's
    URI does not depend on the working directory.)"""
    if os.path.isabs(path):
        return PurePosixPath(os.path.abspath(path).replace(os.sep, "/")).as_uri()
    return quote(path.replace(os.sep, "/"), safe="/._-~")


def _artifact_location(uri: str) -> dict:
    out: dict[str, Any] = {"uri": artifact_uri(uri)}
    bundled = bundled_spec_of(uri)
    if bundled is not None:
        # An installed regcheck has no spec/ folder: say where the same file is in the package.
        out["description"] = {"text": f"regcheck's bundled {bundled} spec: {uri} in regcheck's source tree, "
                                      f"package data checker/specs/{bundled}.spec of an installed regcheck"}
        out["properties"] = {"bundledSpec": bundled, "packageData": f"checker/specs/{bundled}.spec"}
    return out


def bundled_spec_of(path: str) -> str | None:
    """The bundled spec's name when `path` is how regcheck names a bundled spec (`spec/NAME.spec`)
    and no other file of that name is there (a user's own `spec/acl.spec` is not bundled)."""
    m = re.fullmatch(r"spec/([A-Za-z0-9_-]+)\.spec", path)
    if m is None or m.group(1) not in _bundled_names():
        return None
    try:
        st = os.stat(path)
    except OSError:
        return m.group(1)
    key = (m.group(1), os.path.abspath(path), st.st_size, st.st_mtime_ns)
    if key not in _SAME_AS_BUNDLED:  # every result links the spec: read each version of the file once
        _SAME_AS_BUNDLED[key] = _file_bytes(path) == _bundled_bytes(m.group(1))
    return m.group(1) if _SAME_AS_BUNDLED[key] else None


_SAME_AS_BUNDLED: dict[tuple[str, str, int, int], bool] = {}


@lru_cache(maxsize=1)
def _bundled_names() -> frozenset[str]:
    from ..language.load import bundled_spec_names
    return frozenset(bundled_spec_names())


@lru_cache(maxsize=16)
def _bundled_bytes(name: str) -> bytes:
    from importlib import resources
    try:
        return resources.files("checker.specs").joinpath(f"{name}.spec").read_bytes()
    except (ModuleNotFoundError, OSError):
        return b""


def _file_bytes(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def _location(uri: str, line: int | None, message: str | None = None, ident: int | None = None,
              column: int | None = None) -> dict:
    physical: dict[str, Any] = {"artifactLocation": _artifact_location(uri)}
    if line and line > 0:
        physical["region"] = {"startLine": int(line)}
        if column and column > 0:
            physical["region"]["startColumn"] = int(column)
    loc: dict[str, Any] = {"physicalLocation": physical}
    if ident is not None:
        loc["id"] = ident
    if message:
        loc["message"] = {"text": message}
    return loc


def rule_descriptor(info: Any) -> dict:
    """A SARIF reportingDescriptor for one rule: any object with RuleInfo's attributes (`rule`,
    `kind`, `call`, `summary`, `cite` (`.source`, `.clause`), `source` (`.location`, `.title`),
    `span` (`.path`, `.line`))."""
    rule, kind, call = info.rule, info.kind, info.call
    cite, source, span = info.cite, info.source, info.span
    where = f"{span.path}:{span.line}" if span is not None and span.line else None
    short = f"{rule}: {_KIND_TEXT.get(kind, kind)}" + (f" ({call})" if call else "")
    lines = [f"{rule} ({kind}{', ' + call if call else ''})", ""]
    md = [f"**{rule}** ({kind}{', `' + call + '`' if call else ''})", ""]
    if isinstance(info, ToolRule):  # prose, not a clause of the spec
        lines.append(f"Checks: {info.summary}")
        md.append(f"Checks: {info.summary}")
    else:
        lines.append(f"Clause: {info.summary}")
        md.append(f"Clause: `{info.summary}`")
    if where:
        lines.append(f"Defined at {where}.")
        md.append(f"Defined at `{where}`.")
    citation: dict[str, Any] = {}
    if cite is not None:
        doc = document_text(source, _spec_name(span)) if source is not None else cite.source
        lines += ["", f"The document ({doc}) says: {cite.clause}"]
        md += ["", f"The document ({doc}) says:", "", f"> {cite.clause}"]
        citation = {"source": cite.source, "clause": cite.clause}
        if source is not None:
            citation.update(document=source.location, title=source.title)
    lines += ["", f"Kind: {_KIND_TEXT.get(kind, kind)}."]
    md += ["", f"Kind: {_KIND_TEXT.get(kind, kind)}."]
    out: dict[str, Any] = {
        "id": rule,
        "name": rule_name(rule),
        "shortDescription": {"text": short},
        "fullDescription": {"text": info.summary},
        "help": {"text": "\n".join(lines), "markdown": "\n".join(md)},
        "defaultConfiguration": {"level": getattr(info, "level", None) or KIND_LEVEL.get(kind, "warning")},
        "properties": {"kind": kind, "tags": [kind] + ([call] if call else [])},
    }
    if call:
        out["properties"]["call"] = call
    if where:
        out["properties"]["definedAt"] = where
    if citation:
        out["properties"]["citation"] = citation
    out["helpUri"] = help_uri(info)
    return out


def rule_name(rule: str) -> str:
    """SARIF's readable rule name: the rule ID's words in PascalCase (ACL-REG-OVERLAP: AclRegOverlap)."""
    words = re.findall(r"[A-Za-z0-9]+", rule)
    return "".join(w[:1].upper() + w[1:].lower() for w in words) or "Rule"


# Where each kind of rule is explained, for a rule whose document has no URL of its own.
_KIND_HELP = {
    "executor": "docs/drivers.md", "conform": "docs/conformance.md#verdicts", "property": "docs/prover.md#what-is-proved",
    "invariant": "docs/language.md#invariants-and-pinned-ranges", "pinned": "docs/language.md#invariants-and-pinned-ranges",
    "effect": "docs/language.md#effects",
}
_RULES_HELP = "docs/language.md#rule-ids-and-citations"


def help_uri(info: Any) -> str:
    """The rule's helpUri: its document when that is a URL; for a bundled spec's rule, the
    document's entry in docs/sources.md; else the docs page that explains its kind of rule. Paths
    are relative to the repository root (regcheck has no published site to point at)."""
    source, spec = info.source, _spec_name(info.span)
    if source is not None and _is_url(source.location):
        return source.location
    if source is not None and spec is not None and not isinstance(info, ToolRule):
        return f"{SOURCES_DOC}#{source_anchor(spec, source.name)}"
    if source is not None and source.location.startswith("docs/"):
        return source.location
    return _KIND_HELP.get(info.kind, _RULES_HELP)


def _spec_name(span: Any) -> str | None:
    """The bundled spec a rule comes from, by its span's path; None for any other file."""
    return bundled_spec_name(getattr(span, "path", None))


def location_kind(location: str) -> str:
    """What a `source` location is: "url" (a published page), "standard" (a clause of a published
    standard: no slash, e.g. "ISO/IEC 9899:2018 7.22.3" is one despite its slash, so: a path is a
    relative name with a file suffix or an anchor) or "notes" (a file of the project's research
    notes, which neither the repository nor the package holds)."""
    if _is_url(location):
        return "url"
    path = location.split("#", 1)[0]
    if " " not in path and "/" in path and re.search(r"\.[A-Za-z0-9]+$", path):
        return "notes"
    return "standard"


_WHERE = {
    "notes": "the project's research notes (not in this repository or the package; the title says which "
             "published document it catalogues)",
    "standard": "a published standard",
}


def sources_page(specs: Iterable[Any]) -> str:
    """docs/sources.md: every `source` of the given (bundled) specs, one heading each, with the rules
    that cite it. The headings' anchors are what `help_uri` and `document_text` link to."""
    out = ["# Sources of the bundled specs", "",
           "Every document the bundled specs (`spec/*.spec`) encode, from their `source NAME \"location\" \"title\"`",
           "declarations, with the rules that cite it. A SARIF rule whose document has no URL links here",
           "(`helpUri`), and so does the rule's help text. A location is a URL (the published page), a clause",
           "of a published standard, or a file of the project's research notes (`shared/...`, `seeds/...`),",
           "which neither this repository nor the package holds: its title names the published pages it",
           "catalogues.", "",
           "Generated from the specs: `python -m pytest tests/test_sarif.py -k sources_page --update-golden`",
           "rewrites this page, and that test fails while it is out of date.", ""]
    for spec in specs:
        out += [f"## {spec.name}: {spec.title}", ""]
        for decl in spec.sources.values():
            cited = [r for r, info in spec.rules.items() if info.cite is not None and info.cite.source == decl.name]
            kind = location_kind(decl.location)
            where = f"<{decl.location}>" if kind == "url" else f"`{decl.location}`, {_WHERE[kind]}"
            out += [f"### {spec.name}-{decl.name}", "", f"- title: {decl.title}", f"- location: {where}",
                    f"- cited by: {', '.join(f'`{r}`' for r in cited) or 'no rule'}", ""]
    return "\n".join(out).rstrip("\n") + "\n"


def _undeclared_rule(rule: str) -> dict:
    # A result may name a rule the given rules do not hold (e.g. a conformance finding with no rule
    # to blame): it still gets a descriptor, so every result's ruleIndex resolves.
    return {"id": rule, "name": rule_name(rule), "shortDescription": {"text": f"{rule}: not a rule of the spec"},
            "helpUri": _RULES_HELP, "defaultConfiguration": {"level": "warning"}}


FINGERPRINT = "regcheck/v1"  # the partialFingerprints key; a new way of computing it gets a new key


def _result(r: tuple, index: dict[str, int], seen: dict[str, int]) -> dict:
    rule_id, level, message, uri, line, *rest = r
    related = tuple(rest[0]) if rest and rest[0] else ()
    properties = rest[1] if len(rest) > 1 else None
    context = rest[2] if len(rest) > 2 and rest[2] else message
    if level not in LEVELS:
        raise ValueError(f"SARIF level must be one of {', '.join(LEVELS)}, not {level!r}")
    out: dict[str, Any] = {
        "ruleId": rule_id,
        "ruleIndex": index[rule_id],
        "level": level,
        "message": {"text": linked_message(message, [msg for _, _, msg in related])},
        "locations": [_location(uri, line)],
        "partialFingerprints": {FINGERPRINT: fingerprint(rule_id, uri, context, seen)},
    }
    rel = [_location(u, ln, msg, i) for i, (u, ln, msg) in enumerate(related)]
    if rel:
        out["relatedLocations"] = rel
    if properties:
        out["properties"] = dict(properties)
    return out


def linked_message(message: str, related: list[str]) -> str:
    """The message with each related location linked from it, as SARIF's embedded links `[text](id)`
    (id: the related location's index), so that a viewer can jump to the earlier event or the rule.
    Brackets that would read as a link are escaped; other brackets (`usage[RULE]`) stay as they are."""
    text = re.sub(r"\[([^\]]*)\]\(", r"\[\1\](", message)
    links = [f"[{_link_text(msg) or 'related location'}]({i})" for i, msg in enumerate(related)]
    return f"{text} (see {'; '.join(links)})" if links else text


def _link_text(text: str) -> str:
    return re.sub(r"([\\\[\]])", r"\\\1", text)


_NUMBER = re.compile(r"0[xX][0-9a-fA-F]+|\d+")


def fingerprint(rule_id: str, uri: str, context: str, seen: dict[str, int]) -> str:
    """A finding's identity across runs: a hash of the rule ID, the file and the context (the call
    and what it found, with numbers left out, so that addresses, line numbers and event indexes
    may change), and which occurrence of that triple in the run it is. `seen` counts occurrences."""
    key = "\0".join((rule_id, artifact_uri(uri), _NUMBER.sub("#", context)))
    seen[key] = seen.get(key, 0) + 1
    return hashlib.sha256(f"{key}\0{seen[key]}".encode()).hexdigest()[:32]


def _notification(n: tuple) -> dict:
    n = SarifNotification(*n)
    if n.level not in LEVELS:
        raise ValueError(f"SARIF level must be one of {', '.join(LEVELS)}, not {n.level!r}")
    out: dict[str, Any] = {"descriptor": {"id": n.code}, "level": n.level, "message": {"text": n.message}}
    if n.artifact_uri:
        out["locations"] = [_location(n.artifact_uri, n.line, column=n.column)]
    return out


# ---------------------------------------------------------------- runs and logs


def sarif_run(tool_rules: Iterable[Any], results: Iterable[tuple], *, category: str | None = None,
              notifications: Iterable[tuple] = (), properties: dict | None = None) -> dict:
    """One SARIF run: the tool (regcheck, its version, one rule per rule ID) and its results.

    tool_rules: RuleInfo-like objects (see `rule_descriptor`), in the order the rules should be
    listed; duplicates by ID keep the first. results: `SarifResult`s or 6-tuples (see the module
    docstring). category: a stable ID for this kind of run (e.g. "regcheck/replay/acl/"), so that a
    dashboard keeps the results of different specs or commands apart. notifications:
    `SarifNotification`s or tuples (code, message[, uri, line, level]) for inputs that could not
    be checked; any error-level notification marks the invocation as not successful.
    Raises ValueError for a level that SARIF does not know."""
    descriptors: list[dict] = []
    index: dict[str, int] = {}
    for info in tool_rules:
        if info.rule not in index:
            index[info.rule] = len(descriptors)
            descriptors.append(rule_descriptor(info))
    results = list(results)
    for r in results:
        if r[0] not in index:
            index[r[0]] = len(descriptors)
            descriptors.append(_undeclared_rule(r[0]))
    notes = [_notification(n) for n in notifications]
    seen: dict[str, int] = {}
    run: dict[str, Any] = {
        "tool": {"driver": {"name": TOOL_NAME, "version": __version__, "semanticVersion": __version__,
                            "rules": descriptors}},
        "invocations": [{"executionSuccessful": not any(n["level"] == "error" for n in notes),
                         **({"toolExecutionNotifications": notes} if notes else {})}],
        "results": [_result(r, index, seen) for r in results],
        "columnKind": "unicodeCodePoints",
    }
    if category:
        run["automationDetails"] = {"id": category}
    if properties:
        run["properties"] = dict(properties)
    return run


def run_category(command: str, spec_name: str, spec_ref: str) -> str:
    """The `category` (automationDetails.id) of a run of `command` over one spec of a log of several:
    `regcheck/COMMAND/NAME/` for a spec named by its name (a bundled one), and for a spec file its
    path from the working directory too (`regcheck/replay/odd/specs/odd.spec/`), so that two files
    declaring the same spec name are two runs a dashboard keeps apart, under the same ids each time."""
    if not names_spec_file(spec_ref):
        return f"regcheck/{command}/{spec_name}/"
    return f"regcheck/{command}/{spec_name}/{PurePosixPath(*os.path.relpath(spec_ref).split(os.sep))}/"


def sarif_log_of_runs(runs: Iterable[dict]) -> dict:
    """A SARIF log holding the given runs (from `sarif_run`)."""
    return {"$schema": SARIF_SCHEMA_URI, "version": SARIF_VERSION, "runs": list(runs)}


def sarif_log(tool_rules: Iterable[Any], results: Iterable[tuple], **run_options) -> dict:
    """A SARIF 2.1.0 log with one run: `sarif_log_of_runs([sarif_run(tool_rules, results, ...)])`.

    tool_rules: RuleInfo-like objects (attributes rule, kind, call, summary, cite, source, span),
    each listed as a SARIF rule whose help text holds the clause, the kind and the document
    citation (document location and title, the cited clause) and a helpUri (see `help_uri`). results: iterable of (rule_id, level, message, artifact_uri, line,
    related_locations), related_locations being (artifact_uri, line, message) triples.
    run_options: `category`, `notifications`, `properties` (see `sarif_run`). Returns a dict
    ready for json.dumps."""
    return sarif_log_of_runs([sarif_run(tool_rules, results, **run_options)])


# ---------------------------------------------------------------- replay findings

# The executor's kinds (checker/drivers/execute.py) next to replay's: a driver result the spec does not allow
# and page locks the spec does not predict are errors; divergences both allowed and refusals are
# informational, as they are for the executor's verdict.
FINDING_LEVEL = {"usage": "error", "conformance": "error", "unspecified": "note",
                 "executor": "error", "pinning": "error", "divergence": "note", "refused": "note"}


def replay_results(report: Any, spec: Any) -> list[SarifResult]:
    """The findings of one replay report (`replay.ReplayReport`, or the executor's
    `execute.ExecutionReport`) as SARIF results: located at the trace line, related to the earlier
    events it names and to the rule's clause in the spec."""
    out = []
    for f in report.findings:
        related = []
        for i, line in enumerate(f.related):
            note = f.notes[i] if i < len(f.notes) else ""
            text = note.partition(": related: ")[2] or "related event"
            related.append((report.path, line, text))
        info = spec.rules.get(f.rule)
        if info is not None and info.span is not None and info.span.line:
            related.append((info.span.path, info.span.line, f"rule {f.rule} ({info.kind}) is defined here"))
        # A usage finding on a call the runtime rejected with a documented error: tools filter on it.
        props = {"rejected": True} if getattr(f, "rejected", False) else None
        out.append(SarifResult(f.rule, FINDING_LEVEL.get(f.kind, "warning"), f"{f.kind}[{f.rule}]: {f.message}",
                               report.path, f.line, tuple(related), props))
    return out


# ---------------------------------------------------------------- prove findings

# Results: each REFUTED (error) or UNKNOWN (warning) obligation under its property's rule ID, at the
# property's line in the spec; consistency problems (dead, unreached or unknown clauses, calls that
# never succeed, vacuous invariants) as warnings; what the text report lists for review
# (documentation gaps, shadowed clauses, overlapping error conditions) as notes. PROVED
# obligations are not results.
_PROVER_DOC = Document("docs/prover.md", "regcheck: proving the specs")
_CALL_SUCCEEDS = "PROVE-CALL-SUCCEEDS"  # for a call without an effect rule to name
_SILENT_SUCCESS = "PROVE-SILENT-SUCCESS"


def prove_log(report: Any, spec: Any, traces: Mapping[int, str] | None = None,
              itf: Mapping[int, str] | None = None) -> dict:
    """A SARIF log of one proof report (`prover.ProofReport`) of `spec` (see above). `traces` and
    `itf`: id(obligation or run) -> a file written for it (a witness trace, an ITF document), linked
    as related locations."""
    traces, itf = traces or {}, itf or {}
    results = _obligation_results(report, spec, traces, itf) + _consistency_results(report, spec, traces)
    rules = [*spec.rules.values(), *_property_rules(report, spec)]
    return sarif_log(rules, results, category=f"regcheck/prove/{spec.name}/",
                     properties={"spec": spec.name, "proved": report.proved, "consistent": report.consistent,
                                 "obligations": len(report.obligations)})


def _property_rules(report: Any, spec: Any) -> list[ToolRule]:
    """The prover's own rule IDs: the implicit properties (TYPES, API-GROUPS(x)) and the fallbacks
    for consistency checks of a call that has no effect rule."""
    from ..engines.proof import GROUP_FRAME, TYPES  # here, not above: the prover pulls in z3, which replay never needs
    out = [ToolRule(TYPES, "property", "every state value lies in its declared type's range (an addr field holds a "
                    "value in 0 .. 2**64-1, an enum field a member, ...), after every call branch",
                    Citation("PROVER", "TYPES: every state value lies in its declared type's range"), _PROVER_DOC,
                    level="error")]
    groups: dict[str, list[str]] = {}
    for o in report.obligations:
        if o.property.startswith(GROUP_FRAME):
            usage = [r for r in o.rules if r in spec.rules and spec.rules[r].kind == "usage"]
            groups.setdefault(o.property, [])
            groups[o.property] += [r for r in usage if r not in groups[o.property]]
    for prop, usage in groups.items():
        target = prop[len(GROUP_FRAME) + 1:-1]
        cited = next((spec.rules[r] for r in usage if spec.rules[r].cite is not None), None)
        cite = Citation(cited.cite.source, cited.cite.clause) if cited else \
            Citation("PROVER", f"{GROUP_FRAME}(x): x changes only in a call that may write it, while one of its groups is active")
        source = cited.source if cited and cited.source is not None else _PROVER_DOC
        calls = ", ".join(dict.fromkeys(spec.rules[r].call for r in usage if spec.rules[r].call))
        out.append(ToolRule(prop, "property", f"{target} changes only in a call restricted to API groups that may "
                            f"write it ({calls}), while one of its groups is active (from {', '.join(usage)})",
                            cite, source, level="error"))
    out.append(ToolRule(_CALL_SUCCEEDS, "property", "every call can succeed in a reachable state", Citation(
        "PROVER", "Calls: each can succeed (documented success, outputs keeping ensures) after some run"), _PROVER_DOC,
        level="warning"))
    out.append(ToolRule(_SILENT_SUCCESS, "property", "a call that succeeds where no clause and no statement of its "
                        "effect applies (a documentation gap)", Citation(
                            "PROVER", "Documentation gaps: silent successes (inputs where a call succeeds and no clause "
                            "and no statement of its effect applies)"), _PROVER_DOC, level="note"))
    return out


def _spec_path(report: Any, spec: Any) -> str:
    return next((i.span.path for i in spec.rules.values() if i.span is not None and i.span.path), report.spec)


def _at_rule(spec: Any, rule: str) -> tuple[str, int] | None:
    info = spec.rules.get(rule)
    if info is None or info.span is None or not info.span.line:
        return None
    return info.span.path, info.span.line


def _effect_rule(spec: Any, call: str | None) -> str | None:
    if call is None:
        return None
    return next((r for r, i in spec.rules.items() if i.call == call and i.kind == "effect"), None)


def _obligation_location(o: Any, spec: Any, path: str) -> tuple[str, int | None]:
    """An invariant at its line; TYPES at the effect of the call that breaks it; API-GROUPS(x) at the
    first usage rule it comes from."""
    candidates = [o.property] if o.property in spec.rules else []
    candidates += [r for r in o.rules if r in spec.rules and spec.rules[r].kind == "usage"]
    candidates += [r for r in (_effect_rule(spec, o.call),) if r]
    for rule in candidates:
        at = _at_rule(spec, rule)
        if at is not None:
            return at
    return path, None


def _obligation_results(report: Any, spec: Any, written: Mapping[int, str],
                        itf: Mapping[int, str]) -> list[SarifResult]:
    from ..engines.runs import Step, format_env, format_state, format_step  # here for the same reason

    path = _spec_path(report, spec)
    reached = {inv: r.violation for r in report.reach if r.violation is not None for inv in r.violation.invariants}
    out = []
    for o in report.obligations:
        if o.verdict.value == "PROVED":
            continue
        uri, line = _obligation_location(o, spec, path)
        if o.call is None:
            what = f"whether {o.property} holds in the initial state"
            text = f"REFUTED: {o.property} can be false in the initial state"
        else:
            what = f"whether {o.call} ({o.branch} branch) keeps {o.property}"
            text = (f"REFUTED: {o.property} is not inductive: it can be false after {o.call} ({o.branch} branch) "
                    "although every invariant held before")
        if o.verdict.value == "UNKNOWN":
            text = f"UNKNOWN: the solver could not decide {what} ({o.reason})"
        if o.how == "bounded":
            text += f" ({o.reason})"
        if o.gap:
            text += "; documentation gap: the documents are silent here"
        related: list[tuple[str, int | None, str]] = []
        if o.cex is not None:
            cex = o.cex
            check = "replayed with the concrete semantics" if cex.validated else "NOT confirmed by the concrete semantics"
            text += (f". Counterexample to induction ({check}): config {format_env(spec, cex.env)}; pre "
                     f"{format_state(spec, cex.pre)}; call {format_step(spec, Step(cex.call, cex.inputs, cex.outputs, None))}; "
                     f"post {format_state(spec, cex.post)}; breaks {', '.join(cex.failing) or '-'}")
        if id(o) in itf:
            related.append((itf[id(o)], None, "the counterexample as ITF (pre- and post-state)"))
        violation = reached.get(o.property)
        if violation is not None:
            steps = len(violation.run.steps)
            text += f". Reachable: a run of {steps} step{'s' if steps != 1 else ''} from the initial state breaks it"
            if id(violation.run) in written:
                related.append((written[id(violation.run)], None, "the violating run as a trace"))
            if id(violation.run) in itf:
                related.append((itf[id(violation.run)], None, "the violating run as ITF"))
        for rule in dict.fromkeys(o.rules + (o.cex.rules if o.cex else ())):
            at = _at_rule(spec, rule)
            if rule != o.property and at is not None:
                related.append((*at, f"rule {rule} ({spec.rules[rule].kind}) is involved"))
        out.append(SarifResult(o.property, "error" if o.verdict.value == "REFUTED" else "warning", text, uri, line,
                               tuple(related)))
    return out


def _consistency_results(report: Any, spec: Any, written: Mapping[int, str]) -> list[SarifResult]:
    path = _spec_path(report, spec)
    out = []
    for c in report.checks:
        rule, level, text = _check_result(c, spec)
        if rule is None:
            continue
        uri, line = _at_rule(spec, rule) or (path, None)
        related = []
        for other in c.rules:
            at = _at_rule(spec, other)
            if other != rule and at is not None:
                related.append((*at, f"rule {other} ({spec.rules[other].kind})"))
        if c.run is not None and id(c.run) in written:
            related.append((written[id(c.run)], None, "an example run as a trace"))
        out.append(SarifResult(rule, level, text, uri, line, tuple(related)))
    return out


def _check_result(c: Any, spec: Any) -> tuple[str | None, str, str]:
    """(rule ID, level, message) of a consistency item; no rule ID: not a result (it is fine)."""
    if c.kind == "clause":
        kind = spec.rules[c.subject].kind
        if not c.ok:
            return c.subject, "warning", f"{c.status} {kind} clause {c.subject} ({c.call}): {c.detail}"
        if c.status == "shadowed" or kind == "unspecified":
            cite = spec.rules[c.subject].cite
            gap = f"documentation gap marked in the spec: {cite.clause}; " if kind == "unspecified" and cite else ""
            return c.subject, "note", f"{gap}{c.status} {kind} clause {c.subject} ({c.call}): {c.detail}"
        return None, "", ""
    if c.kind == "call":
        if c.ok:
            return None, "", ""
        return (_effect_rule(spec, c.subject) or _CALL_SUCCEEDS, "warning",
                f"call {c.subject} {c.status}: {c.detail}")
    if c.kind == "invariant":
        if c.ok:
            return None, "", ""
        return c.subject, "warning", f"{c.status} invariant {c.subject}: {c.detail}"
    if c.kind == "overlap":
        a, _, b = c.subject.partition(" + ")
        return a, "note", f"overlapping error conditions in {c.call}: {a} and {b} hold together ({c.status}): {c.detail}"
    if c.kind == "policy" and not c.ok:
        return c.subject, "warning", f"{c.status} documented error {c.subject} ({c.call}): {c.detail}"
    if c.kind == "gap" and c.status != "none":
        return (c.rules[0] if c.rules else _SILENT_SUCCESS, "note",
                f"documentation gap ({c.status}): {c.subject} {c.detail}; rules around: {', '.join(c.rules) or '-'}")
    return None, "", ""


# ---------------------------------------------------------------- conform findings

# Results: each problem of a test that did not pass, under the problem's rule ID; an error, or a note
# where the test is inconclusive at that event (the spec allowed an environmental failure, so the
# branch under test was not exercised). A passing test has no result.
CONFORM_DRIVER_ERROR = "CONFORM-DRIVER-ERROR"  # a problem that names no rule (the driver's close() raised)
_CONFORM_DOC = Document("checker/testgen/conform.py", "regcheck conformance runner, module docstring")


def conform_rules() -> list[ToolRule]:
    """The conformance runner's own rule ID, for a problem that names no rule of the spec."""
    what = "the driver under test raised where no rule applies (its close() failed)"
    return [ToolRule(CONFORM_DRIVER_ERROR, "conform", what, Citation(
        "CONFORM", "A test fails ... when the driver raises."), _CONFORM_DOC, level="error")]


def conform_log(report: Any, spec: Any, files: Mapping[str, str] | None = None,
                tool_rules: Iterable[Any] = (), properties: Mapping[str, Any] | None = None, *,
                fuzzed: Any = None, fuzz_trace: str | None = None) -> dict:
    """A SARIF log of one conformance report (`conform.ConformReport`) of `spec`: one run, category
    `regcheck/conform/<spec>/`, the spec's rules then `tool_rules` (the executor's, whose rule IDs
    problems carry) and the runner's own; the summary counts as run properties (plus `properties`).
    `files`: test name -> the test's trace file (see `conform_results`). `fuzzed`: the fuzz phase
    run after the suite (`fuzz.FuzzResult`), if any: its figures become the run property `fuzz` and
    its failure one more result (see `fuzz_result`); `fuzz_trace`: where that failure was written."""
    from ..testgen.conform import FAIL, INCONCLUSIVE, PASS  # here: the runner pulls in the executor, which replay never needs

    props = {"spec": spec.name, "driver": report.driver, "tests": report.tests, "passed": report.count(PASS),
             "failed": report.count(FAIL), "inconclusive": report.count(INCONCLUSIVE),
             "stopped_early": report.stopped_early, **(properties or {})}
    results = conform_results(report, spec, files)
    if fuzzed is not None:
        props["fuzz"] = fuzz_properties(fuzzed, fuzz_trace)
        if fuzzed.failure is not None:
            results.append(fuzz_result(fuzzed, spec, fuzz_trace))
    return sarif_log([*spec.rules.values(), *tool_rules, *conform_rules()], results,
                     category=f"regcheck/conform/{spec.name}/", properties=props)


def fuzz_properties(fuzzed: Any, trace_file: str | None = None) -> dict:
    """The fuzz phase's figures as a run property: its budget, seed, driver calls and time, and its
    failure (rule, message, configuration, calls of the shrunk run, the trace file) or None."""
    o, f = fuzzed.options, fuzzed.failure
    failure = None if f is None else {"rule": f.rule, "message": f.message, "env": dict(f.env),
                                      "calls": len(f.events), "trace_file": trace_file}
    return {"max_examples": o.max_examples, "steps": o.steps, "seed": o.seed, "calls": fuzzed.calls,
            "seconds": round(fuzzed.seconds, 3), "failure": failure}


def fuzz_result(fuzzed: Any, spec: Any, trace_file: str | None = None) -> SarifResult:
    """The fuzz phase's failure as an error under the rule it broke. Located at the failing call's
    line of `trace_file` when the run was written there (related: the rule's clause), else at the
    rule's clause in the spec; without a file the trace text is in the result's properties, so the
    log alone is enough to replay it."""
    f, o = fuzzed.failure, fuzzed.options
    calls = len(f.events)
    text = (f"fuzz phase (seed {o.seed}, {o.max_examples} sequences of up to {o.steps} calls): {f.rule} broken "
            f"after {calls} call{'s' if calls != 1 else ''} of the shrunk run ({fuzzed.calls} driver calls in the "
            f"phase): {f.message}")
    at = _at_rule(spec, f.rule)
    if trace_file is not None:
        uri, line = trace_file, (f.events[-1].line if f.events else None)
    else:
        uri, line = at or (_spec_path(fuzzed, spec), None)
    related = [(*at, f"rule {f.rule} ({spec.rules[f.rule].kind}) is defined here")] if at and at != (uri, line) else []
    props: dict[str, Any] = {"phase": "fuzz", "seed": o.seed, "calls": calls, "env": dict(f.env)}
    if trace_file is None:
        props["trace"] = f.trace_text()
    return SarifResult(f.rule, "error", text, uri, line, tuple(related), props, context=f"fuzz: {f.message}")


def conform_results(report: Any, spec: Any, files: Mapping[str, str] | None = None) -> list[SarifResult]:
    """The problems of a conformance report as SARIF results. Where `files` has the test (a suite
    read from a directory), located at its trace file, at the event's line (event i is line i + 1;
    a start or close problem has no line); otherwise at the rule's line in the spec file. Related:
    the rule's clause in the spec and, when the test checks another rule, that rule's clause."""
    from ..testgen.conform import INCONCLUSIVE

    files = files or {}
    path = _spec_path(report, spec)
    return [_problem_result(r, p, spec, files.get(r.name), path, "note" if p.kind == INCONCLUSIVE else "error")
            for r in report.results if not r.passed for p in r.problems]


def _problem_result(r: Any, p: Any, spec: Any, trace: str | None, path: str, level: str) -> SarifResult:
    rule = p.rule or CONFORM_DRIVER_ERROR
    if trace is not None:
        uri, line = trace, (p.event + 1 if p.event > 0 else None)
    else:
        uri, line = _at_rule(spec, rule) or (path, None)
    related = []
    rules = [(rule, "is defined here")] + ([(r.rule, "is the rule this test checks")] if r.rule != rule else [])
    for other, why in rules:
        at = _at_rule(spec, other)
        if at is not None and at != (uri, line):
            related.append((*at, f"rule {other} ({spec.rules[other].kind}) {why}"))
    text = (f"{r.status} {r.name} [{r.rule}]: event {p.event} {p.call}: {p.kind}[{rule}]: expected {p.expected}; "
            f"got {p.actual}" + (f"; {p.message}" if p.message else ""))
    return SarifResult(rule, level, text, uri, line, tuple(related))
