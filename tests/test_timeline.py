"""The HTML timeline (checker/emit/timeline.py, `regcheck replay --timeline`): the lifetimes it collects,
the page being self-contained, and the page as headless Chromium renders it.

The browser tests need `chromium` (Debian package `chromium`); they are skipped, saying so, where
it is absent. CI installs it (.ci/run).
"""

from __future__ import annotations

import io
import json
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from checker.cli import main
from checker.emit.timeline import Timeline, build_timeline, render_html, timeline_data

ACL = {"regcheck": 1, "spec": "acl", "env": {"os_kernel": "6.6", "product": "AtlasA2"}}
A, B = 0x7F3A2C000000, 0x7F3A2D000000
MB = 1 << 20
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
BAR_COLORS = {(0x4E, 0x79, 0xA7), (0x59, 0xA1, 0x4F)}  # the first two tables' colours in the page


def write(tmp_path, *events, name="t.jsonl") -> str:
    path = tmp_path / name
    path.write_text("".join(json.dumps(x) + "\n" for x in (ACL, *events)), encoding="utf-8")
    return str(path)


def sample(tmp_path) -> str:
    return write(tmp_path,
                 {"call": "malloc", "args": {"size": MB}, "out": {"ptr": hex(A)}},                     # 1
                 {"call": "aclrtHostRegisterV2", "args": {"ptr": hex(A), "size": MB, "flag": 2}, "ret": 0},  # 2
                 {"call": "aclrtMallocHost", "args": {"size": 4096}, "ret": 0, "out": {"hostPtr": hex(B)}},  # 3
                 {"call": "aclrtHostGetDevicePointer", "args": {"pHost": hex(A), "flag": 0}, "ret": 0,
                  "out": {"pDevice": "0x12c0000000"}},                                               # 4
                 {"call": "aclrtHostRegisterV2", "args": {"ptr": hex(B), "size": 4096, "flag": 0}, "ret": 107000},  # 5
                 {"call": "free", "args": {"ptr": hex(A)}},                                          # 6: usage finding
                 {"call": "aclrtHostUnregister", "args": {"ptr": hex(A)}, "ret": 0})                 # 7


def test_lifetimes(tmp_path):
    tl = build_timeline(sample(tmp_path))
    assert tl.tables == ("host_allocs", "regs") and len(tl.events) == 7 and tl.verdict == "violates"
    got = {(b.table, b.base, b.end, b.start, b.stop) for b in tl.bars}
    assert got == {
        ("host_allocs", A, A + MB, 1, 6),       # freed at event 6 (while still registered: the finding)
        ("host_allocs", B, B + 4096, 3, None),  # live at the end
        ("regs", A, A + MB, 2, 7),              # one bar, though event 4 updated the entry's dev field
    }
    reg = next(b for b in tl.bars if b.table == "regs")
    assert reg.record["dev"] == 0x12C0000000
    # event 5 breaks ACL-REG-FLAG-KNOWN (flag 0) and the runtime rejects it; event 6 frees registered memory
    assert [(m.index, m.finding.kind, m.finding.rule, m.finding.rejected) for m in tl.marks] == [
        (5, "usage", "ACL-REG-FLAG-KNOWN", True), (6, "usage", "ACL-FREE-REGISTERED", False)]
    assert tl.events[4].text == "line 6: aclrtHostRegisterV2(ptr=0x7f3a2d000000, size=0x1000, flag=0) = 107000"


def test_max_events(tmp_path):
    tl = build_timeline(sample(tmp_path), max_events=2)
    assert tl.truncated and len(tl.events) == 2 and all(b.stop is None for b in tl.bars) and len(tl.bars) == 2


def test_page_is_self_contained(tmp_path):
    page = render_html(build_timeline(sample(tmp_path)))
    assert "<script src" not in page and "<link" not in page and "@import" not in page
    urls = set(re.findall(r"https?://[^\s\"'<>]+", page))
    assert urls == {"http://www.w3.org/2000/svg"}  # the SVG namespace name, never fetched


def test_data_cannot_close_the_script(tmp_path):
    tl = build_timeline(sample(tmp_path))
    odd = Timeline("x</script><b>.jsonl", tl.spec, tl.tables, tl.events, tl.bars, tl.marks, tl.verdict)
    page = render_html(odd)
    assert page.count("</script>") == 2
    m = re.search(r'<script type="application/json" id="timeline-data">(.*?)</script>', page, re.S)
    assert json.loads(m.group(1))["path"] == "x</script><b>.jsonl"
    assert "<title>regcheck timeline: x&lt;/script&gt;&lt;b&gt;.jsonl</title>" in page


def test_cli_writes_the_page(tmp_path):
    out = tmp_path / "t.html"
    trace = sample(tmp_path)
    stdout, err = io.StringIO(), io.StringIO()
    code = main(["replay", "--timeline", str(out), trace], stdout=stdout, stderr=err)
    assert code == 1 and out.exists()
    assert "ACL-FREE-REGISTERED" in stdout.getvalue()  # the report is printed as usual
    data = json.loads(re.search(r'id="timeline-data">(.*?)</script>', out.read_text(), re.S).group(1))
    assert data == json.loads(json.dumps(timeline_data(build_timeline(trace))).replace("</", "<\\/"))


def test_cli_timeline_of_standard_input(tmp_path):
    # A pipe is read once; the replay and the timeline both see the whole trace, named "-".
    import sys
    out = tmp_path / "t.html"
    trace = sample(tmp_path)
    piped = subprocess.run(f"cat {trace} | {sys.executable} -m checker replay --timeline {out} -", shell=True,
                           capture_output=True, text=True, timeout=120)
    assert piped.returncode == 1, piped.stderr
    assert piped.stdout.startswith("-:") and "ACL-FREE-REGISTERED" in piped.stdout
    data = json.loads(re.search(r'id="timeline-data">(.*?)</script>', out.read_text(), re.S).group(1))
    from_file = timeline_data(build_timeline(trace))
    assert len(data["events"]) == len(from_file["events"]) and data["bars"] == from_file["bars"]


def test_cli_timeline_takes_one_trace(tmp_path):
    trace = sample(tmp_path)
    other = str(tmp_path / "other.jsonl")  # (one file named twice counts once)
    shutil.copy(trace, other)
    err = io.StringIO()
    code = main(["replay", "--timeline", str(tmp_path / "t.html"), trace, other], stdout=io.StringIO(), stderr=err)
    assert code == 2 and "one trace" in err.getvalue() and not (tmp_path / "t.html").exists()


# ---------------------------------------------------------------- in a browser


def chromium(tmp_path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp_path / "chromium-profile"
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--disable-dev-shm-usage", f"--user-data-dir={profile}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def _page(tmp_path, events: int = 0) -> tuple[Path, Timeline]:
    if events:
        import sys
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
        from gen_trace import generate
        trace = str(tmp_path / "gen.jsonl")
        generate(trace, events, live=20)
    else:
        trace = sample(tmp_path)
    tl = build_timeline(trace)
    page = tmp_path / "timeline.html"
    page.write_text(render_html(tl), encoding="utf-8")
    return page, tl


@needs_chromium
@pytest.mark.parametrize("events", [0, 300])
def test_chromium_renders_the_bars(tmp_path, events):
    page, tl = _page(tmp_path, events)
    run = chromium(tmp_path, "--dump-dom", page.as_uri())
    assert run.returncode == 0, run.stderr[-2000:]
    dom = run.stdout
    bars = re.findall(r'<rect [^>]*class="bar bar-([a-z_]+)"', dom)
    assert len(bars) == len(tl.bars) > 0
    assert {t: bars.count(t) for t in set(bars)} == {t: sum(b.table == t for b in tl.bars) for t in {b.table for b in tl.bars}}
    assert len(re.findall(r'<g class="mark mark-', dom)) == len({m.index for m in tl.marks})  # one per event
    assert f"{len(tl.events)} events | {len(tl.bars)} bars" in dom


@needs_chromium
def test_chromium_screenshot_shows_bars(tmp_path):
    page, tl = _page(tmp_path)
    shot = tmp_path / "shot.png"
    run = chromium(tmp_path, "--window-size=1000,700", "--hide-scrollbars", f"--screenshot={shot}", page.as_uri())
    assert shot.exists(), run.stderr[-2000:]
    width, height, pixels = read_png(shot.read_bytes())
    colours = {}
    for p in pixels:
        colours[p] = colours.get(p, 0) + 1
    assert len(colours) > 5, "the screenshot is blank"
    # Bars are drawn at 75% opacity over white: look for the blended table colours.
    blended = {tuple(round(0.75 * c + 0.25 * 255) for c in rgb) for rgb in BAR_COLORS}
    near = sum(n for p, n in colours.items() if any(all(abs(a - b) <= 6 for a, b in zip(p, q)) for q in blended))
    assert near > 500, f"no bar colour in the screenshot ({len(colours)} colours)"


def read_png(data: bytes) -> tuple[int, int, list[tuple[int, int, int]]]:
    """Decode an 8-bit RGB/RGBA non-interlaced PNG (what Chromium writes) to RGB pixels."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunk)
            assert depth == 8 and colour in (2, 6) and interlace == 0
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += chunk
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    pixels = []
    i = 0
    for _ in range(height):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        pixels.extend(tuple(line[x:x + 3]) for x in range(0, stride, bpp))
        prev = line
    return width, height, pixels


@needs_chromium
def test_chromium_hover_shows_the_events(tmp_path):
    page, tl = _page(tmp_path)
    # Hover by script (headless has no mouse): move over a bar, a finding marker and empty space,
    # and copy each tooltip into the DOM that --dump-dom prints.
    probe = """<script>
    (function () {
      var out = [], tip = document.getElementById("tip");
      function hover(el, x, y) {
        el.dispatchEvent(new MouseEvent("mousemove", {bubbles: true, clientX: x, clientY: y}));
        out.push(tip.textContent);
      }
      var bar = document.querySelector("rect.bar-regs"), box = bar.getBoundingClientRect();
      hover(bar, box.left + 2, box.top + 2);
      var marks = document.querySelectorAll("g.mark path");  // event 5 (rejected), then event 6
      var mark = marks[marks.length - 1], mbox = mark.getBoundingClientRect();
      hover(mark, mbox.left + 1, mbox.top + 1);
      var svg = document.getElementById("timeline"), sbox = svg.getBoundingClientRect();
      hover(svg, sbox.left + 150 + 2, sbox.bottom - 5);
      var pre = document.createElement("pre"); pre.id = "probe"; pre.textContent = JSON.stringify(out);
      document.body.appendChild(pre);
    })();
    </script></body>"""
    page.write_text(page.read_text().replace("</body>", probe), encoding="utf-8")
    run = chromium(tmp_path, "--window-size=1000,700", "--dump-dom", page.as_uri())
    import html
    m = re.search(r'<pre id="probe">(.*?)</pre>', run.stdout, re.S)
    assert m, run.stderr[-2000:]
    bar_tip, mark_tip, space_tip = json.loads(html.unescape(m.group(1)))
    assert bar_tip.startswith("regs [0x7f3a2c000000, 0x7f3a2c100000)")
    assert "created: line 3: aclrtHostRegisterV2(ptr=0x7f3a2c000000, size=0x100000, flag=2) = 0" in bar_tip
    assert "removed: line 8: aclrtHostUnregister(ptr=0x7f3a2c000000) = 0" in bar_tip
    assert mark_tip.startswith("usage[ACL-FREE-REGISTERED]: free: ") and "line 7: free(ptr=0x7f3a2c000000)" in mark_tip
    assert space_tip == "line 2: malloc(size=0x100000) -> ptr=0x7f3a2c000000"


def test_placeholders_in_paths_are_not_substituted(tmp_path):
    tl = build_timeline(sample(tmp_path))
    odd = Timeline("{{DATA}}{{TITLE}}.jsonl", tl.spec, tl.tables, tl.events, tl.bars, tl.marks, tl.verdict)
    page = render_html(odd)
    m = re.search(r'<script type="application/json" id="timeline-data">(.*?)</script>', page, re.S)
    assert json.loads(m.group(1))["path"] == "{{DATA}}{{TITLE}}.jsonl"
    assert "<title>regcheck timeline: {{DATA}}{{TITLE}}.jsonl</title>" in page


def crowded(tmp_path) -> str:
    """A trace whose second event has three findings (unaligned, not host memory, flag 0)."""
    return write(tmp_path,
                 {"call": "malloc", "args": {"size": MB}, "out": {"ptr": hex(A)}},
                 {"call": "aclrtHostRegisterV2", "args": {"ptr": hex(A + 8), "size": MB, "flag": 0}, "ret": 0},
                 {"call": "free", "args": {"ptr": hex(A)}}, name="crowded.jsonl")


def test_the_page_lists_every_finding_in_trace_order(tmp_path):
    tl = build_timeline(sample(tmp_path))
    page = render_html(tl)
    items = re.findall(r'<li id="finding-(\d+)" class="finding finding-(\w+)" data-event="(\d+)">(.*?)</li>', page)
    assert [(int(k), kind, int(ev)) for k, kind, ev, _ in items] == [(0, "usage", 5), (1, "usage", 6)]
    assert items[1][3].startswith("line 7, free: usage[ACL-FREE-REGISTERED]: ")
    assert "No findings." not in page
    clean = write(tmp_path, {"call": "malloc", "args": {"size": MB}, "out": {"ptr": hex(A)}}, name="clean.jsonl")
    assert '<p id="no-findings">No findings.</p>' in render_html(build_timeline(clean))


def test_findings_on_one_event_are_all_listed(tmp_path):
    tl = build_timeline(crowded(tmp_path))
    at_two = [m.finding.rule for m in tl.marks if m.index == 2]
    assert len(at_two) == 3
    page = render_html(tl)
    listed = re.findall(r'data-event="2">line 3, aclrtHostRegisterV2: usage\[([A-Z-]+)\]', page)
    assert listed == at_two


def test_finding_text_is_escaped_in_the_list(tmp_path):
    from dataclasses import replace
    tl = build_timeline(sample(tmp_path))
    odd = replace(tl, marks=(replace(tl.marks[0], finding=replace(tl.marks[0].finding, message="<b>&</b>")),))
    page = render_html(odd)
    assert "&lt;b&gt;&amp;&lt;/b&gt;</li>" in page and "<b>&</b>" not in page.split("timeline-data")[0]


@needs_chromium
def test_chromium_reaches_every_finding_of_a_crowded_event(tmp_path):
    tl = build_timeline(crowded(tmp_path))
    page = tmp_path / "crowded.html"
    probe = """<script>
    (function () {
      var tip = document.getElementById("tip"), marks = document.querySelectorAll("g.mark");
      var g = marks[0], path = g.querySelector("path"), box = path.getBoundingClientRect();
      path.dispatchEvent(new MouseEvent("mousemove", {bubbles: true, clientX: box.left + 1, clientY: box.top + 1}));
      var hovered = tip.textContent;
      path.dispatchEvent(new MouseEvent("click", {bubbles: true}));
      var picked = Array.prototype.map.call(document.querySelectorAll("#findings-list li.picked"),
                                            function (li) { return li.id; });
      var pre = document.createElement("pre"); pre.id = "probe";
      pre.textContent = JSON.stringify([marks.length, g.getAttribute("data-findings"), hovered, picked]);
      document.body.appendChild(pre);
    })();
    </script></body>"""
    page.write_text(render_html(tl).replace("</body>", probe), encoding="utf-8")
    run = chromium(tmp_path, "--window-size=1000,700", "--dump-dom", page.as_uri())
    import html
    m = re.search(r'<pre id="probe">(.*?)</pre>', run.stdout, re.S)
    assert m, run.stderr[-2000:]
    count, ks, tip, picked = json.loads(html.unescape(m.group(1)))
    at_two = [k for k, mk in enumerate(tl.marks) if mk.index == 2]
    assert count == len({mk.index for mk in tl.marks}) and ks == " ".join(map(str, at_two))
    for k in at_two:
        assert f"usage[{tl.marks[k].finding.rule}]: " in tip
    assert tip.endswith("line 3: aclrtHostRegisterV2(ptr=0x7f3a2c000008, size=0x100000, flag=0) = 0")
    assert picked == [f"finding-{k}" for k in at_two]
