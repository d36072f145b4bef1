"""The Flask app: three pages (table, phone, history) and the JSON API under /api.

The pages are static HTML + vanilla JS (no build step); everything they show comes from the
API, so the API is tested once for both. One process owns the camera and the game, so the
app is served by waitress threads around one TableService.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flask import Flask, Response, render_template

from web.api import Context, install_errors, make_blueprint
from web.auth import PinGuard, TableSecret
from web.service import TableService

if TYPE_CHECKING:
    from web.live_calibration import LiveCalibration

HERE = Path(__file__).resolve().parent

#: No inline scripts, no framing (a hidden frame could trick a tap), no third parties.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
                               "style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; "
                               "base-uri 'none'; form-action 'self'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}


def create_app(service: TableService, secret: TableSecret, *, public_url: str | None = None,
               camera_jpeg: Callable[[], bytes | None] | None = None, lang: str = "de",
               guard: PinGuard | None = None, calibration: LiveCalibration | None = None,
               **limits: Any) -> Flask:
    """The app around one table. `public_url`: how phones reach the table (for the QR code
    when the table's screen opens the page on localhost); `calibration`: the page's
    Calibrate (None: the table has nothing to calibrate)."""
    app = Flask(__name__, static_folder=str(HERE / "static"),
                template_folder=str(HERE / "templates"))
    app.config["MAX_CONTENT_LENGTH"] = 2 * 1024 * 1024
    app.json.ensure_ascii = False  # type: ignore[attr-defined]
    app.json.sort_keys = False  # type: ignore[attr-defined]
    app.extensions["kniffel"] = Context(service, secret, guard or PinGuard(),
                                        public_url=public_url, camera_jpeg=camera_jpeg,
                                        calibration=calibration, **limits)
    app.register_blueprint(make_blueprint())
    install_errors(app)
    started = str(int(time.time()))
    lang = lang if lang in ("de", "en") else "de"

    def page(template: str, title: str) -> str:
        return render_template(template, lang=lang, title=title, v=started,
                               has_camera=camera_jpeg is not None)

    @app.get("/")
    def table_view() -> str:
        return page("table.html", "Kniffel")

    @app.get("/phone")
    def phone_view() -> str:
        return page("phone.html", "Kniffel")

    @app.get("/history")
    def history_view() -> str:
        return page("history.html", "Kniffel")

    @app.get("/favicon.ico")
    def favicon() -> Response:
        return app.send_static_file("favicon.svg")

    @app.after_request
    def headers(resp: Response) -> Response:
        for key, value in SECURITY_HEADERS.items():
            resp.headers.setdefault(key, value)
        if resp.mimetype == "application/json":
            resp.headers.setdefault("Cache-Control", "no-store")
        return resp

    return app
