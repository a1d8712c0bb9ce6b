"""`gpu-slots demo` says where its admin token goes (issue 44): the banner's last line is the
login URL, which takes the printed token and returns to the page named by `next`."""

from __future__ import annotations

import re
import subprocess
import sys

import httpx

from tests.install.test_demo_command import _free_port
from tests.live import wait_for


def _serves(client: httpx.Client, url: str) -> bool:
    try:
        return client.get(url).status_code == 200
    except httpx.TransportError:
        return False  # not listening yet


def test_the_banner_names_the_login_url_that_takes_its_token() -> None:
    port = _free_port()
    demo = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "demo", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    banner: list[str] = []
    try:
        assert demo.stdout is not None
        for line in demo.stdout:
            banner.append(line.rstrip("\n"))
            if line.startswith("Log in with it at ") or len(banner) > 50:
                break
        token = re.fullmatch(r"Admin token for this demo: (\S+)", banner[2])
        login = re.fullmatch(
            r"Log in with it at (\S+) \(or 'Log in' at the top of any page\)", banner[3]
        )
        assert token and login, banner
        assert login.group(1) == f"http://127.0.0.1:{port}/login"
        assert token.group(1) not in login.group(1)  # the token never rides in a URL

        with httpx.Client(timeout=10) as client:
            wait_for(lambda: _serves(client, login.group(1)), what="the demo's login page")
            answer = client.post(
                login.group(1),
                params={"next": "/usage"},
                data={"token": token.group(1)},
                follow_redirects=False,
            )
            assert answer.status_code == 303
            assert answer.headers["location"] == "/usage"
            usage = client.get(f"http://127.0.0.1:{port}/usage").text
            assert 'data-testid="signed-in"' in usage
    finally:
        demo.terminate()
        demo.communicate(timeout=30)
