"""SARIF 2.1.0 output: rule IDs as SARIF rules, findings as SARIF results.

One emitter for every command that reports findings by rule ID (`replay` today; `execute`,
`prove` and `conform` can call the same functions). A SARIF log is what code-scanning dashboards
(GitHub code scanning, Azure DevOps, VS Code's SARIF viewer) read: each rule carries its clause,
its kind and its document citation as help text, and each result points at a file and a line.

    log = sarif_log(spec.rules.values(), results)       # one run: one spec, one tool invocation
    log = sarif_log_of_runs([sarif_run(...), ...])        # several specs in one log (one run each)

A result is a `SarifResult` or any 6-tuple in the same order:
(rule_id, level, message, artifact_uri, line, related_locations), where level is one of
"error", "warning", "note", "none"; artifact_uri is a path (relative paths stay relative, so a
dashboard resolves them against the repository root; absolute paths become file:// URIs);
line is 1-based (0 or None: no region); related_locations is an iterable of
(artifact_uri, line, message) triples.

The output is checked against the official SARIF 2.1.0 JSON schema in tests/test_sarif.py.
"""

from __future__ import annotations

import os
from pathlib import PurePosixPath
from typing import Any, Iterable, NamedTuple
from urllib.parse import quote

from . import __version__

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
TOOL_NAME = "regcheck"
TOOL_URI = "https://pypi.org/project/regcheck/"
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
}


class SarifResult(NamedTuple):
    """One finding, as `sarif_run` takes it (a plain 6-tuple in this order works too)."""

    rule_id: str
    level: str
    message: str
    artifact_uri: str
    line: int | None
    related_locations: Iterable[tuple[str, int | None, str]] = ()


class SarifNotification(NamedTuple):
    """A problem with the run itself (an unreadable input), not a finding: shown as a tool error."""

    code: str
    message: str
    artifact_uri: str | None = None
    line: int | None = None
    level: str = "error"


# ---------------------------------------------------------------- pieces


def artifact_uri(path: str) -> str:
    """A SARIF artifact URI for a path: relative paths stay relative (POSIX separators, percent-
    encoded); absolute paths become file:// URIs."""
    if os.path.isabs(path):
        return PurePosixPath(os.path.abspath(path).replace(os.sep, "/")).as_uri()
    return quote(path.replace(os.sep, "/"), safe="/._-~")


def _location(uri: str, line: int | None, message: str | None = None, ident: int | None = None) -> dict:
    physical: dict[str, Any] = {"artifactLocation": {"uri": artifact_uri(uri)}}
    if line and line > 0:
        physical["region"] = {"startLine": int(line)}
    loc: dict[str, Any] = {"physicalLocation": physical}
    if ident is not None:
        loc["id"] = ident
    if message:
        loc["message"] = {"text": message}
    return loc


def _is_url(text: str) -> bool:
    return text.startswith(("https://", "http://"))


def rule_descriptor(info: Any) -> dict:
    """A SARIF reportingDescriptor for one rule: any object with RuleInfo's attributes (`rule`,
    `kind`, `call`, `summary`, `cite` (`.source`, `.clause`), `source` (`.location`, `.title`),
    `span` (`.path`, `.line`))."""
    rule, kind, call = info.rule, info.kind, info.call
    cite, source, span = info.cite, info.source, info.span
    where = f"{span.path}:{span.line}" if span is not None and span.line else None
    short = f"{rule}: {_KIND_TEXT.get(kind, kind)}" + (f" ({call})" if call else "")
    lines = [f"{rule} ({kind}{', ' + call if call else ''})", "", f"Clause: {info.summary}"]
    md = [f"**{rule}** ({kind}{', `' + call + '`' if call else ''})", "", f"Clause: `{info.summary}`"]
    if where:
        lines.append(f"Defined at {where}.")
        md.append(f"Defined at `{where}`.")
    citation: dict[str, Any] = {}
    if cite is not None:
        doc = f"{source.title} ({source.location})" if source is not None else cite.source
        lines += ["", f"The document ({doc}) says: {cite.clause}"]
        md += ["", f"The document ({doc}) says:", "", f"> {cite.clause}"]
        citation = {"source": cite.source, "clause": cite.clause}
        if source is not None:
            citation.update(document=source.location, title=source.title)
    lines += ["", f"Kind: {_KIND_TEXT.get(kind, kind)}."]
    md += ["", f"Kind: {_KIND_TEXT.get(kind, kind)}."]
    out: dict[str, Any] = {
        "id": rule,
        "shortDescription": {"text": short},
        "fullDescription": {"text": info.summary},
        "help": {"text": "\n".join(lines), "markdown": "\n".join(md)},
        "defaultConfiguration": {"level": KIND_LEVEL.get(kind, "warning")},
        "properties": {"kind": kind, "tags": [kind] + ([call] if call else [])},
    }
    if call:
        out["properties"]["call"] = call
    if where:
        out["properties"]["definedAt"] = where
    if citation:
        out["properties"]["citation"] = citation
        if source is not None and _is_url(source.location):
            out["helpUri"] = source.location
    return out


def _undeclared_rule(rule: str) -> dict:
    # A result may name a rule the given rules do not hold (e.g. a conformance finding with no rule
    # to blame): it still gets a descriptor, so every result's ruleIndex resolves.
    return {"id": rule, "shortDescription": {"text": f"{rule}: not a rule of the spec"},
            "defaultConfiguration": {"level": "warning"}}


def _result(r: tuple, index: dict[str, int]) -> dict:
    rule_id, level, message, uri, line, *rest = r
    related = rest[0] if rest else ()
    if level not in LEVELS:
        raise ValueError(f"SARIF level must be one of {', '.join(LEVELS)}, not {level!r}")
    out: dict[str, Any] = {
        "ruleId": rule_id,
        "ruleIndex": index[rule_id],
        "level": level,
        "message": {"text": message},
        "locations": [_location(uri, line)],
    }
    rel = [_location(u, ln, msg, i) for i, (u, ln, msg) in enumerate(related or ())]
    if rel:
        out["relatedLocations"] = rel
    return out


def _notification(n: tuple) -> dict:
    n = SarifNotification(*n)
    if n.level not in LEVELS:
        raise ValueError(f"SARIF level must be one of {', '.join(LEVELS)}, not {n.level!r}")
    out: dict[str, Any] = {"descriptor": {"id": n.code}, "level": n.level, "message": {"text": n.message}}
    if n.artifact_uri:
        out["locations"] = [_location(n.artifact_uri, n.line)]
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
    run: dict[str, Any] = {
        "tool": {"driver": {"name": TOOL_NAME, "version": __version__, "semanticVersion": __version__,
                            "informationUri": TOOL_URI, "rules": descriptors}},
        "invocations": [{"executionSuccessful": not any(n["level"] == "error" for n in notes),
                         **({"toolExecutionNotifications": notes} if notes else {})}],
        "results": [_result(r, index) for r in results],
        "columnKind": "unicodeCodePoints",
    }
    if category:
        run["automationDetails"] = {"id": category}
    if properties:
        run["properties"] = dict(properties)
    return run


def sarif_log_of_runs(runs: Iterable[dict]) -> dict:
    """A SARIF log holding the given runs (from `sarif_run`)."""
    return {"$schema": SARIF_SCHEMA_URI, "version": SARIF_VERSION, "runs": list(runs)}


def sarif_log(tool_rules: Iterable[Any], results: Iterable[tuple], **run_options) -> dict:
    """A SARIF 2.1.0 log with one run: `sarif_log_of_runs([sarif_run(tool_rules, results, ...)])`.

    tool_rules: RuleInfo-like objects (attributes rule, kind, call, summary, cite, source, span),
    each listed as a SARIF rule whose help text holds the clause, the kind and the document
    citation (document location and title, the cited clause); a citation whose document is a URL
    becomes the rule's helpUri. results: iterable of (rule_id, level, message, artifact_uri, line,
    related_locations), related_locations being (artifact_uri, line, message) triples.
    run_options: `category`, `notifications`, `properties` (see `sarif_run`). Returns a dict
    ready for json.dumps."""
    return sarif_log_of_runs([sarif_run(tool_rules, results, **run_options)])


# ---------------------------------------------------------------- replay findings

FINDING_LEVEL = {"usage": "error", "conformance": "error", "unspecified": "note"}


def replay_results(report: Any, spec: Any) -> list[SarifResult]:
    """The findings of one replay report (`replay.ReplayReport`) as SARIF results: located at the
    trace line, related to the earlier events it names and to the rule's clause in the spec."""
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
        out.append(SarifResult(f.rule, FINDING_LEVEL.get(f.kind, "warning"), f"{f.kind}[{f.rule}]: {f.message}",
                               report.path, f.line, tuple(related)))
    return out
