"""Screenshots of ``groundwatch view`` for the docs, made with Debian's headless Chromium.

    python scripts/view_screenshot.py [--database-url URL] [--out docs/img]

Without ``--database-url`` a demo store of two cycles is written to a temporary directory.
The view is served on a free loopback port, one answer is marked wrong by a person (so the
group's page shows a verdict beside the judge's), and the groups table (``view.png``, failing
groups) and that group's page (``view-group.png``) are captured.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

TOKEN = "screenshot-token-0123456789"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--database-url")
    p.add_argument("--out", type=Path, default=Path("docs/img"))
    args = p.parse_args()
    import uvicorn
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    from groundwatch.app.store import open_store
    from groundwatch.app.view import view_app
    from groundwatch.runtime.view import ViewAuth

    home = Path(tempfile.mkdtemp(prefix="gw-view-shot-"))
    url = args.database_url
    if url is None:
        url = f"sqlite:///{home / 'store.db'}"
        cli = str(Path(sys.executable).with_name("groundwatch"))
        subprocess.run([cli, "demo", "--runs", "2", "--database-url", url, "-q"], cwd=home)
    store = open_store(url, "--database-url", writable=True)
    app = view_app(store, ViewAuth(write_token=TOKEN, reviewer="ada"), series=None, window_runs=1)
    port = _port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    base = f"http://127.0.0.1:{port}/ui"
    with httpx.Client(base_url=base, timeout=120) as c:
        while True:
            try:
                c.get("/static/view.css")
                break
            except httpx.TransportError:
                time.sleep(0.1)
        page = c.get("/", params={"status": "non_robust"}).text
        gid = page.split('href="/ui/groups/', 1)[1].split('"', 1)[0].replace("&amp;", "&")
        group = c.get(f"/groups/{gid}").text
        probe = group.split('data-probe="', 1)[1].split('"', 1)[0]
        c.post(
            "/verdicts",
            data={"probe_id": probe, "verdict": "incorrect", "note": "names the old office"},
            headers={"Authorization": f"Bearer {TOKEN}"},
        ).raise_for_status()

    os.environ.setdefault("SE_OFFLINE", "true")
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--window-size=1400,900",
        "--hide-scrollbars",
        f"--user-data-dir={home / 'profile'}",
    ):
        options.add_argument(flag)  # fmt: skip
    driver = webdriver.Chrome(
        options=options,
        service=Service(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver"),
    )
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        driver.get(f"{base}/?status=failing")
        driver.save_screenshot(str(args.out / "view.png"))
        driver.get(f"{base}/groups/{gid}")
        driver.save_screenshot(str(args.out / "view-group.png"))
    finally:
        driver.quit()
        server.should_exit = True
        store.close()
        shutil.rmtree(home, ignore_errors=True)
    print(f"wrote {args.out / 'view.png'} and {args.out / 'view-group.png'}")


if __name__ == "__main__":
    main()
