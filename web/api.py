"""The JSON API under /api — the phone page uses exactly this, nothing else.

Every answer is JSON; every refusal is a 4xx with {"error": {"code", "message"}} (and the
fresh state on a 409), and nothing was changed. Reads are open; changes need a phone session
and must come from this server's own pages (see web/auth.py).
"""

from __future__ import annotations

import ipaddress
import json
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import wraps
from typing import TYPE_CHECKING, Any, TypeVar

from flask import Blueprint, Flask, Response, current_app, g, jsonify, request
from werkzeug.exceptions import HTTPException

from web.auth import (
    COOKIE,
    COOKIE_MAX_AGE,
    PinGuard,
    TableSecret,
    cross_site_reason,
    hash_token,
    new_session_token,
)
from web.service import Actor, BadRequest, ServiceError, TableService, known_rules

if TYPE_CHECKING:
    from web.live_calibration import LiveCalibration

F = TypeVar("F", bound=Callable[..., Any])

#: URL part → change kind of TableService.change.
CHANGES = {"throws": "throw", "corrections": "correct", "accept": "accept",
           "dismiss": "dismiss", "announce": "announce", "entries": "enter", "undo": "undo",
           "players": "players"}


@dataclass
class Context:
    """What the API needs from the process that serves it."""

    service: TableService
    secret: TableSecret
    guard: PinGuard = field(default_factory=PinGuard)
    #: The address phones reach the table at (the QR code); None: the request's own.
    public_url: str | None = None
    #: Latest camera frame with the dice drawn in, for the MJPEG preview; None: no camera.
    camera_jpeg: Callable[[], bytes | None] | None = None
    #: The page's Calibrate on the running camera; None: nothing to calibrate.
    calibration: LiveCalibration | None = None
    max_streams: int = 12
    max_mjpeg: int = 2
    mjpeg_seconds: float = 300.0
    keepalive_seconds: float = 15.0
    streams: int = 0
    mjpeg: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def ctx() -> Context:
    c: Context = current_app.extensions["kniffel"]
    return c


class ApiError(ServiceError):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message, code)
        self.status = status


def error_response(status: int, code: str, message: str,
                   state: dict[str, Any] | None = None) -> Response:
    body: dict[str, Any] = {"error": {"code": code, "message": message}}
    if state is not None:
        body["state"] = state
    resp = jsonify(body)
    resp.status_code = status
    return resp


def body_json() -> Any:
    """The request body as JSON, or a 400/415 that says what is wrong with it."""
    if not request.mimetype or request.mimetype != "application/json":
        raise ApiError(415, "unsupported_media_type",
                       "send the body as JSON (Content-Type: application/json)")
    raw = request.get_data(cache=True)
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
        # JSON may escape half a character (a lone surrogate, \udcfc): no text holds
        # it, and the database could not store it.
        json.dumps(body, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise ApiError(400, "malformed_json", "malformed JSON: a text holds an escape that "
                       "is half a character (a lone surrogate)") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(400, "malformed_json", f"malformed JSON: {exc}") from None
    except RecursionError:  # brackets nested thousands deep
        raise ApiError(400, "malformed_json", "malformed JSON: nested too deeply") from None
    return body


def is_loopback() -> bool:
    try:
        return ipaddress.ip_address(request.remote_addr or "").is_loopback
    except ValueError:
        return False


def session_actor() -> Actor | None:
    token = request.cookies.get(COOKIE)
    if not token:
        return None
    found = ctx().service.store.phone_of_session(hash_token(token))
    return None if found is None else Actor(*found)


def needs_phone(func: F) -> F:
    """A change: this server's page (CSRF) and a joined phone (session)."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        actor = session_actor()
        if actor is None:
            raise ApiError(401, "not_joined",
                           "join the table first: scan the QR code or type the PIN")
        g.actor = actor
        return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def version_of(body: Any) -> Any:
    return body.get("version") if isinstance(body, dict) else None


def body_object() -> dict[str, Any]:
    body = body_json()
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    return body


def calibration() -> LiveCalibration:
    found = ctx().calibration
    if found is None:
        raise ApiError(409, "no_camera", "this table runs without a camera: there is "
                       "nothing to calibrate")
    return found


def calibration_state() -> dict[str, Any]:
    """What the calibrate sheet shows, with the camera's status as the table shows it."""
    state = calibration().describe()
    camera = ctx().service.camera
    state["camera"].update(state=camera.state, message=camera.message)
    return state


def make_blueprint() -> Blueprint:
    api = Blueprint("api", __name__, url_prefix="/api")

    @api.before_request
    def refuse_cross_site() -> Response | None:
        reason = cross_site_reason(request.method, request.headers, request.host_url)
        if reason:
            return error_response(403, "cross_site", reason)
        return None

    # ---- the table -----------------------------------------------------------------------

    @api.get("/state")
    def get_state() -> Any:
        return ctx().service.state()

    @api.get("/rules")
    def get_rules() -> Any:
        from game.sheet import LABELS

        return {**known_rules(), "labels": LABELS}

    @api.get("/events")
    def events() -> Response:
        c = ctx()
        with c.lock:
            if c.streams >= c.max_streams:
                raise ApiError(503, "too_many_viewers",
                               "too many live views are open; the page falls back to polling")
            c.streams += 1
        q = c.service.subscribe()

        def stream() -> Iterator[str]:
            try:
                yield "retry: 1500\n\n"
                while True:
                    try:
                        item = q.get(timeout=c.keepalive_seconds)
                    except queue.Empty:
                        yield ": keep-alive\n\n"
                        continue
                    if item is None:
                        return
                    yield f"event: state\ndata: {item}\n\n"
            finally:
                c.service.unsubscribe(q)
                with c.lock:
                    c.streams -= 1

        return Response(stream(), mimetype="text/event-stream",
                        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    @api.get("/camera.mjpeg")
    def camera_mjpeg() -> Response:
        c = ctx()
        if session_actor() is None:
            raise ApiError(401, "not_joined", "join the table to see the camera")
        source = c.camera_jpeg
        if source is None:
            raise ApiError(503, "no_camera", "this table runs without a camera")
        with c.lock:
            if c.mjpeg >= c.max_mjpeg:
                raise ApiError(503, "camera_busy", "the camera preview is open on too many "
                               "phones; close it on one")
            c.mjpeg += 1

        def stream() -> Iterator[bytes]:
            try:
                end = time.monotonic() + c.mjpeg_seconds
                last: bytes | None = None
                while time.monotonic() < end:
                    frame = source()
                    if frame and frame is not last:
                        last = frame
                        yield (b"--frame\r\nContent-Type: image/jpeg\r\nContent-Length: "
                               + str(len(frame)).encode() + b"\r\n\r\n" + frame + b"\r\n")
                    time.sleep(0.2)
            finally:
                with c.lock:
                    c.mjpeg -= 1

        return Response(stream(), mimetype="multipart/x-mixed-replace; boundary=frame",
                        headers={"Cache-Control": "no-cache"})

    # ---- joining -------------------------------------------------------------------------

    @api.get("/session")
    def get_session() -> Any:
        actor = session_actor()
        return {"joined": actor is not None,
                "phone": None if actor is None else {"id": actor.id, "name": actor.name}}

    @api.post("/session")
    def join() -> Any:
        c = ctx()
        body = body_json()
        if not isinstance(body, dict):
            raise BadRequest("the request body must be a JSON object")
        unknown = set(body) - {"pin", "token", "name"}
        if unknown:
            raise BadRequest(f"unknown field {sorted(unknown)[0]!r}")
        name = body.get("name")
        if name is not None and (not isinstance(name, str) or len(name.strip()) > 24):
            raise BadRequest("name must be a text of at most 24 characters")
        client = request.remote_addr or "?"
        if "token" in body:
            ok = c.secret.token_ok(body["token"])
            if not ok:
                raise ApiError(401, "bad_token", "this QR code is not (or no longer) the "
                               "table's: scan the one on the table's screen")
        elif "pin" in body:
            wait = c.guard.wait(client)
            if wait > 0:
                resp = error_response(429, "slow_down", f"too many wrong PINs: try again in "
                                      f"{int(wait) + 1} seconds")
                resp.headers["Retry-After"] = str(int(wait) + 1)
                return resp
            if not isinstance(body["pin"], str):
                raise BadRequest("pin must be the four digits as a text")
            if not c.secret.pin_ok(body["pin"]):
                c.guard.failed(client)
                raise ApiError(401, "bad_pin", "wrong PIN: look at the table's screen")
            c.guard.succeeded(client)
        else:
            raise BadRequest("send the PIN (pin) or the QR code's token (token)")
        token = new_session_token()
        store = c.service.store
        phone_id = "p" + hash_token(token)[:10]
        phone_name = (name or "").strip() or f"Phone {store.count_phones() + 1}"
        store.add_phone(phone_id, phone_name, hash_token(token))
        resp = jsonify({"joined": True, "phone": {"id": phone_id, "name": phone_name}})
        resp.set_cookie(COOKIE, token, max_age=COOKIE_MAX_AGE, httponly=True,
                        samesite="Strict", path="/")
        return resp

    @api.post("/session/name")
    @needs_phone
    def rename_phone() -> Any:
        body = body_json()
        name = body.get("name") if isinstance(body, dict) else None
        if not isinstance(name, str) or not name.strip() or len(name.strip()) > 24:
            raise BadRequest("name must be a non-empty text of at most 24 characters")
        ctx().service.store.rename_phone(g.actor.id, name.strip())
        return {"joined": True, "phone": {"id": g.actor.id, "name": name.strip()}}

    @api.get("/join")
    def join_info() -> Any:
        """The PIN and QR code: only for the table's own screen and joined phones."""
        c = ctx()
        if not is_loopback() and session_actor() is None:
            raise ApiError(401, "not_joined", "the join code is shown on the table's screen")
        base = c.public_url if (c.public_url and is_loopback()) else request.host_url
        url = base.rstrip("/") + "/phone#t=" + c.secret.token
        return {"pin": c.secret.pin, "url": url, "phone_url": base.rstrip("/") + "/phone",
                "qr_svg": qr_svg(url)}

    # ---- games ---------------------------------------------------------------------------

    @api.get("/games")
    def list_games() -> Any:
        return {"games": ctx().service.games()}

    @api.post("/games")
    @needs_phone
    def create_game() -> Any:
        state = ctx().service.create_game(body_json(), g.actor)
        return state, 201

    @api.post("/games/import")
    @needs_phone
    def import_game() -> Any:
        state = ctx().service.import_record(body_json(), g.actor)
        return state, 201

    @api.get("/games/<int:game_id>")
    def read_game(game_id: int) -> Any:
        c = ctx()
        resp = jsonify(c.service.game_json(game_id))
        resp.headers["ETag"] = f'"{game_id}-{c.service.version_of(game_id)}"'
        return resp

    @api.get("/games/<int:game_id>/detail")
    def game_detail(game_id: int) -> Any:
        return ctx().service.game_detail(game_id)

    @api.get("/games/<int:game_id>/record")
    def game_record(game_id: int) -> Response:
        record = ctx().service.record(game_id)
        resp = Response(json.dumps(record, ensure_ascii=False, indent=1),
                        mimetype="application/json")
        if request.args.get("download"):
            resp.headers["Content-Disposition"] = \
                f'attachment; filename="kniffel-{game_id}.json"'
        return resp

    @api.post("/games/<int:game_id>/rematch")
    @needs_phone
    def rematch(game_id: int) -> Any:
        body = body_json() if request.get_data(cache=True).strip() else {}
        return ctx().service.rematch(game_id, g.actor, body), 201

    @api.post("/games/<int:game_id>/<change>")
    @needs_phone
    def change(game_id: int, change: str) -> Any:
        kind = CHANGES.get(change)
        if kind is None:
            raise ApiError(404, "not_found", f"unknown change {change!r} "
                           f"(one of: {', '.join(CHANGES)})")
        body = body_json()
        return ctx().service.change(game_id, version_of(body), kind, body, g.actor)

    # ---- calibration (the page's Calibrate; the camera is the running table's) ---------

    @api.get("/calibration")
    @needs_phone
    def get_calibration() -> Any:
        return calibration_state()

    @api.get("/calibration/snapshot.jpg")
    @needs_phone
    def calibration_snapshot() -> Response:
        return Response(calibration().snapshot_jpeg(), mimetype="image/jpeg",
                        headers={"Cache-Control": "no-store"})

    @api.post("/calibration/begin")
    @needs_phone
    def begin_calibration() -> Any:
        calibration().begin()
        return calibration_state()

    @api.post("/calibration/end")
    @needs_phone
    def end_calibration() -> Any:
        calibration().end()
        return calibration_state()

    @api.post("/calibration/areas")
    @needs_phone
    def calibrate_areas() -> Any:
        body = body_object()
        calibration().save_areas(body.get("throw_area"), body.get("keep_area"))
        return calibration_state()

    @api.post("/calibration/exposure")
    @needs_phone
    def calibrate_exposure() -> Any:
        lock = body_object().get("locked")
        if not isinstance(lock, bool):
            raise BadRequest("locked must be true (fix exposure and white balance) or false "
                             "(automatic)")
        calibration().set_exposure(lock)
        return calibration_state()

    @api.post("/calibration/focus")
    @needs_phone
    def calibrate_focus() -> Any:
        calibration().focus()
        return calibration_state()

    @api.post("/calibration/turn")
    @needs_phone
    def calibrate_turn() -> Any:
        calibration().set_turn(body_object().get("turn"))
        return calibration_state()

    @api.post("/calibration/check")
    @needs_phone
    def calibrate_check() -> Any:
        return calibration().check()

    @api.post("/calibration/teach/capture")
    @needs_phone
    def calibrate_capture() -> Any:
        body = body_object()
        return calibration().capture(g.actor.id, body.get("name"), body.get("face"))

    @api.post("/calibration/teach")
    @needs_phone
    def calibrate_teach() -> Any:
        body = body_object()
        taught = calibration().teach(g.actor.id, body.get("name"), body.get("faces"),
                                     body.get("add", False))
        return {**calibration_state(), "taught": taught}

    @api.post("/calibration/forget-learnt")
    @needs_phone
    def calibrate_forget_learnt() -> Any:
        forgot = calibration().forget_learnt(body_object().get("name"))
        return {**calibration_state(), "forgot": forgot}

    @api.post("/calibration/learn")
    @needs_phone
    def calibrate_learn() -> Any:
        calibration().set_learn(body_object().get("learn"))
        return calibration_state()

    @api.get("/stats")
    def stats() -> Any:
        return {"players": ctx().service.stats()}

    @api.get("/openapi.json")
    def openapi() -> Any:
        from web.openapi import spec

        return spec()

    return api


def qr_svg(text: str) -> str | None:
    """The QR code as inline SVG (segno: small, pure Python, no Pillow)."""
    try:
        import segno
    except ImportError:
        return None
    code = segno.make(text, error="m")
    svg: str = code.svg_inline(scale=1, border=2, dark="#1b1b1b", light="#ffffff",
                               omitsize=True)
    return svg


def install_errors(app: Flask) -> None:
    """Every refusal under /api is JSON with one clear message; never an HTML 500."""

    @app.errorhandler(ServiceError)
    def service_error(exc: ServiceError) -> Response:
        return error_response(exc.status, exc.code, exc.message, exc.state)

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Any:
        if not request.path.startswith("/api"):
            return exc
        messages = {404: "no such address in the API (see /api/openapi.json)",
                    405: f"{request.method} is not allowed here",
                    413: "the request body is too large"}
        code = exc.code or 400
        return error_response(code, (exc.name or "error").lower().replace(" ", "_"),
                              messages.get(code, exc.description or exc.name or "error"))

    @app.errorhandler(Exception)
    def unexpected(exc: Exception) -> Response:
        app.logger.exception("unexpected error")
        return error_response(500, "internal", f"the table had an internal error "
                              f"({exc.__class__.__name__}); reload to see what was saved")
