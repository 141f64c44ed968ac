"""Screenshots of the dashboard's views for docs/screenshots/ (headless Chromium through
Playwright), from a running ``helixd``: ``python bench/screenshots.py URL OUT_DIR [NAME=PATH
…]``; a NAME ending in ``-dark`` is taken in dark mode."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


def main() -> int:
    from playwright.sync_api import sync_playwright

    url, out = sys.argv[1].rstrip("/"), Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    shots = [a.split("=", 1) for a in sys.argv[3:]]
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        for name, path in shots:
            page.emulate_media(color_scheme="dark" if name.endswith("-dark") else "light")
            page.goto(url + path)
            page.wait_for_load_state("load")
            page.wait_for_timeout(400)
            page.screenshot(path=str(out / f"{name}.png"))
            print(name, path)
        browser.close()
    if errors:
        print("console errors:", errors, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
