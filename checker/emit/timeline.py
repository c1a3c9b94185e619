"""A trace's address space over time, as one self-contained HTML page (`regcheck replay --timeline`).

Every sized table of the spec (host allocations, device allocations, registrations) contributes
bars: an entry is a bar from the event that created it to the event that removed it (or the end of
the trace), spanning its address range. Findings are marked at their event, one marker per event
however many findings it has, and listed below the picture in trace order (the list needs no
script, so it is there in any viewer). Hovering a bar, a marker or empty space shows the event(s)
involved; a marker's tip shows every finding at its event, and clicking it picks them out in the
list. The page has no external resources: the data
sits in a JSON block and a small inline script draws it as SVG when the page loads.

The vertical axis is ordinal: the distinct range boundaries of the trace, in address order, one row
apart. Addresses of a real program lie gigabytes apart; a linear axis would squash every range to a
line. Order, containment and overlap are what the picture has to show, and an ordinal axis keeps
them. Later tables in the spec are drawn inset, so a registration shows inside its allocation.

The timeline is built by the replayer itself (the same states and findings as `regcheck replay`).
Partial by design: at most `max_events` events are drawn (default 20,000); the page says when the
trace went on beyond that.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html import escape
from typing import Any, Mapping

import orjson

from ..engines.replay import Finding, Replayer, semantics_for
from ..trace.reader import read_trace

MAX_EVENTS = 20_000


@dataclass(frozen=True, slots=True)
class Bar:
    """One table entry's lifetime: event indexes are 1-based; stop None: still live at the end."""

    table: str
    base: int
    end: int
    start: int
    stop: int | None
    record: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class EventInfo:
    index: int
    line: int
    call: str
    text: str  # the call with its arguments, outputs and result, as shown on hover


@dataclass(frozen=True, slots=True)
class Mark:
    index: int  # the event the finding is at
    finding: Finding


@dataclass(frozen=True, slots=True)
class Timeline:
    path: str
    spec: str
    tables: tuple[str, ...]
    events: tuple[EventInfo, ...]
    bars: tuple[Bar, ...]
    marks: tuple[Mark, ...]
    verdict: str
    truncated: bool = False


def _show(v: Any) -> str:
    if type(v) is int and (v >= 4096 or v < 0):
        return hex(v)
    return str(v)


def _event_text(line: int, call: str, args: Mapping, status: Any, outs: Mapping, is_event: bool) -> str:
    text = f"line {line}: {call}(" + ", ".join(f"{k}={_show(v)}" for k, v in args.items()) + ")"
    if outs:
        text += " -> " + ", ".join(f"{k}={_show(v)}" for k, v in outs.items())
    if not is_event:
        text += f" = {status}"
    return text


def build_timeline(path: str, spec_name: str | None = None, max_events: int = MAX_EVENTS) -> Timeline:
    """Replay a trace and collect the entry lifetimes of its sized tables (RegcheckError on bad input)."""
    header, events = read_trace(path)
    try:
        sem = semantics_for(header, spec_name, path)
        spec = sem.spec
        sized = {n: info.sized_by for n, info in spec.tables.items() if info.sized_by}
        r = Replayer(sem, path)
        open_bars: dict[tuple[str, Any], Bar] = {}
        bars: list[Bar] = []
        infos: list[EventInfo] = []
        marks: list[Mark] = []
        truncated = False
        violations = 0
        for ev in events:
            if len(infos) >= max_events:
                truncated = True
                break
            shape, args, status, outs = r.normalise(ev)
            index = len(infos) + 1
            r.state.journal.clear()  # a recorded failure applies nothing: no stale changes then
            found = r.feed(ev)
            infos.append(EventInfo(index, ev.line, ev.call, _event_text(ev.line, ev.call, args, status, outs, shape.is_event)))
            for f in found:
                marks.append(Mark(index, f))
                violations += f.kind != "unspecified"
            for table, key, op, _ in r.state.journal:
                if table not in sized:
                    continue
                old = open_bars.pop((table, key), None)
                row = r.state.tables[table].rows.get(key)
                if op == "put" and row is not None:
                    end = key + max(row[sized[table]], 0)
                    if old is not None and (old.base, old.end) == (key, end):
                        open_bars[(table, key)] = Bar(table, key, end, old.start, None, dict(row))  # an update
                        continue
                    if old is not None:
                        bars.append(Bar(old.table, old.base, old.end, old.start, index, old.record))
                    open_bars[(table, key)] = Bar(table, key, end, index, None, dict(row))
                elif old is not None:
                    bars.append(Bar(old.table, old.base, old.end, old.start, index, old.record))
        bars.extend(open_bars.values())
        bars.sort(key=lambda b: (list(sized).index(b.table), b.start, b.base))
        return Timeline(path, spec.name, tuple(sized), tuple(infos), tuple(bars), tuple(marks),
                        "violates" if violations else "conforms", truncated)
    finally:
        close = getattr(events, "close", None)
        if close:
            close()


# ---------------------------------------------------------------- HTML


def timeline_data(tl: Timeline) -> dict:
    """What the page's script draws: small integers and strings only (addresses as hex text, since
    JavaScript numbers cannot hold 64-bit addresses)."""
    bounds = sorted({a for b in tl.bars for a in (b.base, b.end)})
    rank = {a: i for i, a in enumerate(bounds)}
    table_index = {t: i for i, t in enumerate(tl.tables)}

    def record_text(rec: Mapping) -> str:
        return ", ".join(f"{k}={_show(v)}" for k, v in rec.items())

    return {
        "path": tl.path, "spec": tl.spec, "verdict": tl.verdict, "truncated": tl.truncated,
        "tables": list(tl.tables),
        "bounds": [hex(a) for a in bounds],
        "events": [[e.line, e.text] for e in tl.events],
        # [table, row of base, row of end, first event, last event + 1 (0: live), address range, record]
        "bars": [[table_index[b.table], rank[b.base], rank[b.end], b.start, b.stop or 0,
                  f"[{hex(b.base)}, {hex(b.end)})", record_text(b.record)] for b in tl.bars],
        "marks": [[m.index, m.finding.kind, m.finding.rule, m.finding.message] for m in tl.marks],
    }


def render_html(tl: Timeline) -> str:
    """The self-contained page (no network access needed to view it)."""
    data = orjson.dumps(timeline_data(tl)).decode().replace("</", "<\\/")
    title = f"regcheck timeline: {tl.path}"
    # One pass, so that a path containing a placeholder's text cannot be substituted again.
    parts = {"{{TITLE}}": escape(title), "{{DATA}}": data, "{{FINDINGS}}": findings_html(tl)}
    return re.sub(r"\{\{(?:TITLE|DATA|FINDINGS)\}\}", lambda m: parts[m.group(0)], _PAGE)


def findings_html(tl: Timeline) -> str:
    """The list of findings, in trace order: `finding-K` is the K-th mark of `timeline_data`."""
    if not tl.marks:
        return '<p id="no-findings">No findings.</p>'
    items = []
    for k, m in enumerate(tl.marks):
        ev = tl.events[m.index - 1]
        f = m.finding
        items.append(f'<li id="finding-{k}" class="finding finding-{escape(f.kind)}" data-event="{m.index}">'
                     f'line {ev.line}, {escape(ev.call)}: {escape(f.kind)}[{escape(f.rule)}]: {escape(f.message)}</li>')
    return '<ol id="findings-list">\n' + "\n".join(items) + "\n</ol>"


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{TITLE}}</title>
<style>
  body { font: 13px/1.4 system-ui, sans-serif; margin: 16px; color: #222; background: #fff; }
  h1 { font-size: 16px; margin: 0 0 4px; }
  #summary { margin: 0 0 8px; color: #444; }
  #legend span { display: inline-block; margin-right: 14px; }
  #legend i { display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: -2px; }
  #plot { overflow: auto; border: 1px solid #ccc; max-height: 80vh; }
  svg text { font: 10px monospace; fill: #555; }
  .bar { stroke: #222; stroke-width: 0.5; }
  .bar:hover { stroke-width: 2; }
  .mark-usage, .mark-conformance { stroke: #d62728; fill: #d62728; }
  .mark-unspecified { stroke: #ff7f0e; fill: #ff7f0e; }
  .grid { stroke: #eee; }
  h2 { font-size: 14px; margin: 12px 0 4px; }
  #findings-list li.picked { background: #fde2e2; }
  #tip { position: fixed; pointer-events: none; background: #fffbe6; border: 1px solid #999; padding: 4px 6px;
         white-space: pre-wrap; max-width: 640px; font: 12px monospace; display: none; z-index: 10; }
</style>
</head>
<body>
<h1>{{TITLE}}</h1>
<div id="summary"></div>
<div id="legend"></div>
<div id="plot"><noscript>This page draws the timeline with JavaScript; enable it to see the bars.</noscript></div>
<div id="tip"></div>
<h2>Findings</h2>
{{FINDINGS}}
<script type="application/json" id="timeline-data">{{DATA}}</script>
<script>
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("timeline-data").textContent);
  var NS = "http://www.w3.org/2000/svg";
  var COLORS = ["#4e79a7", "#59a14f", "#b07aa1", "#f28e2b", "#76b7b2", "#edc948"];
  var n = D.events.length, rows = Math.max(D.bounds.length - 1, 1);
  var left = 150, top = 24, rowH = 22, right = 20, bottom = 30;
  var px = Math.max(3, Math.min(40, 1000 / Math.max(n, 1)));
  var width = left + (n + 1) * px + right, height = top + rows * rowH + bottom;
  function x(i) { return left + (i - 1) * px; }          // event i occupies [x(i), x(i + 1))
  function y(r) { return top + (rows - r) * rowH; }       // higher addresses at the top
  function el(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    parent.appendChild(e);
    return e;
  }
  var findings = D.marks.filter(function (m) { return m[1] !== "unspecified"; }).length;
  document.getElementById("summary").textContent = "spec " + D.spec + " | " + D.verdict + " | " + n + " events | " +
    D.bars.length + " bars | " + D.marks.length + " findings (" + findings + " usage/conformance)" +
    (D.truncated ? " | stopped after " + n + " events: the trace goes on" : "");
  var legend = document.getElementById("legend");
  D.tables.forEach(function (t, i) {
    var s = document.createElement("span");
    s.innerHTML = '<i style="background:' + COLORS[i % COLORS.length] + '"></i>';
    s.appendChild(document.createTextNode(t));
    legend.appendChild(s);
  });
  var s = document.createElement("span");
  s.innerHTML = '<i style="background:#d62728"></i>finding <i style="background:#ff7f0e"></i>unspecified';
  legend.appendChild(s);

  var svg = el("svg", {width: width, height: height, id: "timeline"}, document.getElementById("plot"));
  var step = Math.max(1, Math.ceil(14 / rowH));
  D.bounds.forEach(function (a, r) {
    el("line", {x1: left, x2: width - right, y1: y(r), y2: y(r), "class": "grid"}, svg);
    if (r % step === 0) el("text", {x: left - 6, y: y(r) + 3, "text-anchor": "end"}, svg).textContent = a;
  });
  var every = Math.max(1, Math.ceil(60 / px));
  for (var i = 1; i <= n; i += every) {
    el("text", {x: x(i), y: height - 10}, svg).textContent = "L" + D.events[i - 1][0];
  }
  var tip = document.getElementById("tip");
  function show(ev, text) {
    tip.textContent = text;
    tip.style.display = "block";
    tip.style.left = Math.min(ev.clientX + 12, window.innerWidth - 300) + "px";
    tip.style.top = (ev.clientY + 12) + "px";
  }
  function eventText(i) { return i >= 1 && i <= n ? D.events[i - 1][1] : ""; }
  D.bars.forEach(function (b, k) {
    var t = b[0], inset = Math.min(t * 4, rowH * 0.35);
    var x0 = x(b[3]), x1 = b[4] ? x(b[4]) : x(n + 1);
    var y0 = y(b[2]) + inset, y1 = y(b[1]) - inset;
    var r = el("rect", {x: x0, y: y0, width: Math.max(x1 - x0, 1), height: Math.max(y1 - y0, 2),
                        fill: COLORS[t % COLORS.length], "fill-opacity": 0.75, "class": "bar bar-" + D.tables[t],
                        "data-k": k}, svg);
    r.addEventListener("mousemove", function (ev) {
      ev.stopPropagation();
      show(ev, D.tables[t] + " " + b[5] + "\\n" + b[6] + "\\ncreated: " + eventText(b[3]) +
           "\\n" + (b[4] ? "removed: " + eventText(b[4]) : "still live at the end of the trace"));
    });
  });
  // One marker per event: several findings at one event share it, and its tip lists them all.
  var atEvent = {}, order = [];
  D.marks.forEach(function (m, k) {
    if (!atEvent[m[0]]) { atEvent[m[0]] = []; order.push(m[0]); }
    atEvent[m[0]].push(k);
  });
  order.forEach(function (i) {
    var ks = atEvent[i], cx = x(i) + px / 2;
    var worst = ks.some(function (k) { return D.marks[k][1] !== "unspecified"; }) ?
      D.marks[ks.filter(function (k) { return D.marks[k][1] !== "unspecified"; })[0]][1] : "unspecified";
    var g = el("g", {"class": "mark mark-" + worst, "data-findings": ks.join(" ")}, svg);
    el("line", {x1: cx, x2: cx, y1: top, y2: height - bottom, "stroke-width": 1.5, "stroke-dasharray": "3,2"}, g);
    el("path", {d: "M" + (cx - 5) + "," + (top - 10) + " L" + (cx + 5) + "," + (top - 10) + " L" + cx + "," + top + " Z"}, g);
    if (ks.length > 1) el("text", {x: cx + 6, y: top - 4}, g).textContent = "\u00d7" + ks.length;
    g.addEventListener("mousemove", function (ev) {
      ev.stopPropagation();
      show(ev, ks.map(function (k) { var m = D.marks[k]; return m[1] + "[" + m[2] + "]: " + m[3]; }).join("\\n") +
           "\\n" + eventText(i));
    });
    g.addEventListener("click", function () {
      document.querySelectorAll("#findings-list li.picked").forEach(function (li) { li.classList.remove("picked"); });
      ks.forEach(function (k) { document.getElementById("finding-" + k).classList.add("picked"); });
      document.getElementById("finding-" + ks[0]).scrollIntoView({block: "nearest"});
    });
  });
  svg.addEventListener("mousemove", function (ev) {
    var box = svg.getBoundingClientRect(), i = Math.floor((ev.clientX - box.left - left) / px) + 1;
    if (i >= 1 && i <= n) show(ev, eventText(i)); else tip.style.display = "none";
  });
  svg.addEventListener("mouseleave", function () { tip.style.display = "none"; });
})();
</script>
</body>
</html>
"""
