"""Headless Chromium for the report tests: the rendered DOM and a screenshot, network blocked."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

#: Every host resolves to nothing and every proxied request goes to a closed
#: port: a page that reaches for the network gets no byte back.
_OFFLINE = ["--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=http://127.0.0.1:9"]
_BASE = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--mute-audio",
         "--no-first-run", "--disable-extensions", "--disable-background-networking"]

#: Appended to a *copy* of the page (the product page has no script): after
#: load, each image's natural width and every resource the page fetched.
_PROBE = """<script>window.addEventListener("load",()=>{const p=document.createElement("pre");
p.id="tokcaliper-probe";p.textContent=JSON.stringify({images:[...document.images].map(
i=>i.naturalWidth),resources:performance.getEntriesByType("resource").map(e=>e.name)});
document.body.appendChild(p);});</script>"""


def chromium() -> str:
    """The Chromium binary, or skip naming the package that provides it."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("chromium is not installed (Debian: apt-get install chromium; "
                "scripts/bootstrap.sh --test installs it)")


def load(page: Path, tmp: Path) -> dict:
    """Open ``page`` offline; ``{"text", "images": [natural widths], "resources": [urls]}``."""
    probe = tmp / f"probe-{page.name}"
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", _PROBE + "</body>"),
                     encoding="utf-8")
    out = subprocess.run([chromium(), *_BASE, *_OFFLINE, "--virtual-time-budget=5000",
                          "--dump-dom", probe.as_uri()], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    m = re.search(r'<pre id="tokcaliper-probe">(.*?)</pre>', out.stdout, flags=re.S)
    assert m, "the probe did not run: " + out.stdout[-500:]
    doc = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    doc["text"] = re.sub(r"<[^>]+>", " ", out.stdout)
    return doc


def screenshot(page: Path, dest: Path, width: int = 1100, height: int = 3200) -> Path:
    """A PNG of ``page`` rendered offline at ``width`` × ``height`` CSS pixels."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    out = subprocess.run([chromium(), *_BASE, *_OFFLINE, "--virtual-time-budget=5000",
                          f"--window-size={width},{height}", f"--screenshot={dest}", page.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and dest.exists() and dest.stat().st_size > 10_000, out.stderr[-2000:]
    return dest


def keep_screenshot(page: Path, tmp: Path, name: str) -> Path:
    """Screenshot ``page`` into the test's ``tmp`` folder as ``name`` and print where it is.

    Copies are kept for people to look at: under ``$TOKCALIPER_TEST_OUTPUT`` (default
    ``test-output/`` of the repository, ignored by git) and, when set, under
    ``$TOKCALIPER_SHOTS`` (e.g. ``/tmp/shots``). Returns the screenshot in ``tmp``.
    """
    import os

    shot = screenshot(page, tmp / name)
    repo = Path(__file__).resolve().parents[2]
    kept = [shot]
    for folder in (os.environ.get("TOKCALIPER_TEST_OUTPUT") or str(repo / "test-output"),
                   os.environ.get("TOKCALIPER_SHOTS")):
        if folder:
            dest = Path(folder) / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(shot, dest)
            kept.append(dest)
    print("screenshot:", ", ".join(str(p) for p in kept))
    return shot
