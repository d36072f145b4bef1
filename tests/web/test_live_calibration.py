"""Calibrate from the page: the API on a running table — the real CameraLink, TableWatcher,
dice reader (vision.reader.Reader, with two tiny stand-in nets instead of the ONNX models)
and teaching (vision.teach) — in front of a fake camera that shows five square dice whose
brightness stands for their face."""

from __future__ import annotations

import errno
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

import vision.reader
from tests.web.conftest import ORIGIN, Clock, Phone, Table
from vision.classifier import FACES, QUALITY, FaceScores
from vision.detector import Candidate
from web import calibrate
from web.app import create_app
from web.auth import PinGuard, TableSecret
from web.config import CameraConfig, Config, TableConfig, load_config, save_config
from web.live_calibration import LiveCalibration
from web.serve import CameraLink, make_reader
from web.service import TableService
from web.store import Store

BACKGROUND = 90
DARK, BRIGHT = 40, 220  # the stand-in nets read dark dice as 1, bright ones as 6
DICE_X = (150, 280, 410, 540, 670)
META = {"ExposureTime": 12345, "AnalogueGain": 1.87654, "ColourGains": (1.91, 1.52),
        "LensPosition": 2.4567}
THROW = [[20, 20], [780, 20], [780, 420], [20, 420]]


class TableCamera:
    """An 800×600 table seen from above (like a usb camera: no controls). `lay(shade, n)`
    puts n dice down where the last ones lay, `throw(shade)` rolls five for a few frames
    and they land in another row; `clock()` advances 0.1 s per lores frame. Records whether
    two calls ever overlapped (they must not). The test's thread lays and throws while the
    table's thread takes frames: `_scene` keeps each frame to one whole state of the table
    (a frame half before and half after a throw could show the dice landed already)."""

    name = "fake"

    def __init__(self, config: CameraConfig) -> None:
        self.config = config
        self.shade: int | None = None
        self.count = 5
        self.rolling = 0
        self.row = 200
        self.time = 0.0
        self.captures = 0
        self.overlapped = False
        self._inside = 0
        self._scene = threading.Lock()

    def _use(self) -> Callable[[], None]:
        self._inside += 1
        self.overlapped |= self._inside > 1
        time.sleep(0.002)  # wide enough for a second caller to walk in, were it let

        def leave() -> None:
            self._inside -= 1
        return leave

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def clock(self) -> float:
        return self.time

    def lay(self, shade: int | None, count: int = 5) -> None:
        with self._scene:
            self.shade, self.count = shade, count

    def throw(self, shade: int) -> None:
        with self._scene:
            self.shade, self.count, self.rolling = shade, 5, 6
            self.row = 200 if self.row != 200 else 350

    def _frame(self, offset: int = 0) -> np.ndarray:
        frame = np.full((600, 800, 3), BACKGROUND, np.uint8)
        if self.shade is not None:
            y = self.row + offset
            for x in DICE_X[:self.count]:
                frame[y - 20:y + 20, x - 20:x + 20] = self.shade
        return frame

    def lores(self) -> np.ndarray:
        leave = self._use()
        try:
            with self._scene:
                self.time += 0.1
                offset = 15 * self.rolling
                self.rolling = max(0, self.rolling - 1)
                frame = self._frame(offset)
            gray = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
            return cv2.resize(gray, (320, 240), interpolation=cv2.INTER_AREA)
        finally:
            leave()

    def capture(self) -> np.ndarray:
        leave = self._use()
        try:
            self.captures += 1
            with self._scene:
                return self._frame()
        finally:
            leave()


class PiTableCamera(TableCamera):
    """The same table through the Raspberry Pi camera: controls and metadata."""

    def __init__(self, config: CameraConfig) -> None:
        super().__init__(config)
        self.controls: list[dict[str, Any]] = []

    def set_controls(self, controls: dict[str, Any]) -> None:
        self.controls.append(controls)

    def metadata(self) -> dict[str, Any]:
        return dict(META)


class SquareDetector:
    """Finds the squares that differ from the background."""

    def detect(self, frame: np.ndarray) -> list[Candidate]:
        gray = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY).astype(np.int16)
        mask = (np.abs(gray - BACKGROUND) > 20).astype(np.uint8)
        _, _, stats, centres = cv2.connectedComponentsWithStats(mask)
        return [Candidate(float(cx), float(cy), (float(x), float(y), float(x + w),
                                                  float(y + h)), 0.99)
                for (x, y, w, h, area), (cx, cy) in zip(stats[1:], centres[1:], strict=True)
                if area > 100]


def centre_shade(crops: list[np.ndarray]) -> np.ndarray:
    return np.array([float(c[c.shape[0] // 2 - 3:c.shape[0] // 2 + 3,
                             c.shape[1] // 2 - 3:c.shape[1] // 2 + 3].mean()) for c in crops])


class ShadeClassifier:
    """Reads a crop by the brightness at its centre: dark is 1, bright is 6."""

    def classify(self, crops: list[np.ndarray], turned: Sequence[bool] | None = None
                 ) -> FaceScores:
        n = len(crops)
        shade = centre_shade(crops)
        value = np.full((n, len(FACES)), 0.002)
        value[np.arange(n), np.where(shade < 128, FACES.index(1), FACES.index(6))] = 0.98
        quality = np.zeros((n, len(QUALITY)))
        quality[:, QUALITY.index("ok")] = 1.0
        return FaceScores(value, quality)


class ShadeEmbedder:
    """The brightness at a crop's centre as an angle, so a taught set tells shades apart."""

    version = "shade"

    def embed(self, crops: list[np.ndarray]) -> np.ndarray:
        angle = centre_shade(crops) / 255 * np.pi / 2
        embedding = np.zeros((len(crops), 8), np.float32)
        embedding[:, 0], embedding[:, 1] = np.cos(angle), np.sin(angle)
        return embedding


@pytest.fixture(autouse=True)
def stand_in_nets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vision.reader, "OnnxDetector", lambda threads=1: SquareDetector())
    monkeypatch.setattr(vision.reader, "OnnxClassifier", lambda threads=1: ShadeClassifier())
    monkeypatch.setattr(vision.reader, "OnnxEmbedder", lambda threads=1: ShadeEmbedder())
    monkeypatch.setattr(calibrate, "AUTOFOCUS_SECONDS", 0.0)


class Running:
    """`kniffel serve` without the server: the table, its camera loop and its page."""

    def __init__(self, folder: Path, camera_class: type[TableCamera],
                 file_kind: str = "picamera2", running_kind: str = "picamera2") -> None:
        self.path = folder / "etc" / "config.toml"
        on_file = Config(camera=CameraConfig(kind=file_kind, main_size=(800, 600)),
                         table=TableConfig(settle_seconds=0.3))
        save_config(self.path, on_file)
        self.config = replace(on_file, camera=replace(on_file.camera, kind=running_kind))
        self.camera: Any = camera_class(self.config.camera)
        self.store = Store(folder / "kniffel.db")
        self.service = TableService(self.store, default_players=("Anna", "Ben"))
        self.secret = TableSecret.load_or_create(folder)
        self.link = CameraLink(self.service, self.config, make_reader(self.config, folder),
                               open_camera=lambda c: self.camera)
        self.link.start()
        wait_for(lambda: self.link.watcher is not None and
                 self.service.camera.state == "ok")
        self.calibration = LiveCalibration(self.config, self.path, folder, self.link,
                                           lambda changed: make_reader(changed, folder))
        app = create_app(self.service, self.secret, calibration=self.calibration,
                         guard=PinGuard(clock=Clock()))
        app.testing = True
        self.table = Table(folder, self.store, self.service, self.secret, app, Clock())

    @property
    def watcher(self) -> Any:
        return self.link.watcher

    def phone(self) -> Phone:
        return self.table.phone()

    def throws(self) -> list[Any]:
        return self.service.state()["block"]["turn"]["throws"]  # type: ignore[no-any-return]

    def close(self) -> None:
        self.link.stop()
        self.store.close()


def wait_for(done: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not done() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert done(), "timed out"


@pytest.fixture
def usb(tmp_path: Path) -> Iterator[Running]:
    table = Running(tmp_path, TableCamera, running_kind="usb")
    yield table
    table.close()


@pytest.fixture
def pi(tmp_path: Path) -> Iterator[Running]:
    table = Running(tmp_path, PiTableCamera)
    yield table
    table.close()


def post(phone: Phone, path: str, body: Any = None, **kw: Any) -> Any:
    return phone.client.post(f"/api/calibration{path}", json=body or {}, headers=ORIGIN, **kw)


def refused(resp: Any, status: int, says: str) -> None:
    assert resp.status_code == status, resp.json
    assert says in resp.json["error"]["message"], resp.json
    assert "\n" not in resp.json["error"]["message"]


# ---- who may ----------------------------------------------------------------------------

def test_calibration_needs_a_joined_phone_from_this_page(usb: Running) -> None:
    before = usb.path.read_bytes()
    stranger = usb.table.phone(join=False)
    assert stranger.client.get("/api/calibration").status_code == 401
    assert stranger.client.get("/api/calibration/snapshot.jpg").status_code == 401
    resp = post(stranger, "/areas", {"throw_area": THROW})
    refused(resp, 401, "join the table first")
    joined = usb.phone()
    other_site = joined.client.post("/api/calibration/areas", json={"throw_area": THROW},
                                    headers={"Origin": "http://evil.example"})
    refused(other_site, 403, "cross-site request refused")
    no_origin = joined.client.post("/api/calibration/begin", json={})
    assert no_origin.status_code == 403
    assert usb.path.read_bytes() == before
    assert usb.service.camera.state == "ok"  # not paused by a refused request


# ---- areas ------------------------------------------------------------------------------

def test_areas_are_marked_on_a_still_saved_and_watched_at_once(usb: Running) -> None:
    phone = usb.phone()
    state = phone.client.get("/api/calibration").json
    assert state["camera"] == {"kind": "usb", "available": True, "controls": False,
                               "state": "ok", "message": "camera fake is watching the table"}
    assert state["size"] == [800, 600] and state["throw_area"] == []
    snap = phone.client.get("/api/calibration/snapshot.jpg")
    assert snap.status_code == 200 and snap.mimetype == "image/jpeg"
    picture = cv2.imdecode(np.frombuffer(snap.data, np.uint8), cv2.IMREAD_COLOR)
    assert picture.shape == (600, 800, 3)

    keep = [[0, 450], [800, 450], [800, 600.4], [0, 600]]
    resp = post(phone, "/areas", {"throw_area": THROW, "keep_area": keep})
    assert resp.status_code == 200, resp.json
    assert resp.json["throw_area"] == THROW
    assert resp.json["keep_area"] == [[0, 450], [800, 450], [800, 600], [0, 600]]
    on_file, errors = load_config(usb.path)
    assert errors == []
    assert on_file.table.throw_area == tuple((float(x), float(y)) for x, y in THROW)
    assert on_file.table.keep_area[2] == (800.0, 600.0)
    assert on_file.camera.kind == "picamera2"  # the table runs with --camera usb: not saved
    assert usb.watcher.table.throw_area == on_file.table.throw_area
    assert usb.link.config.table == on_file.table

    resp = post(phone, "/areas", {"throw_area": THROW, "keep_area": []})
    assert resp.status_code == 200 and resp.json["keep_area"] == []
    assert load_config(usb.path)[0].table.keep_area == ()
    assert not usb.camera.overlapped


@pytest.mark.parametrize(("body", "says"), [
    ({"throw_area": THROW[:2]}, "at least 3 corners of the throw area"),
    ({}, "at least 3 corners of the throw area"),
    ({"throw_area": [[0, 0], [900, 0], [0, 500]]}, "point 2 [900, 0] lies outside"),
    ({"throw_area": [[0, 0], [-5, 0], [0, 500]]}, "must not be negative"),
    ({"throw_area": THROW, "keep_area": [[0, 0], [10, 0]]}, "3 corners of the keep area"),
    ({"throw_area": [[0, 0, 1], [5, 0], [0, 5]]}, "list of [x, y] points"),
    ({"throw_area": [[0, True], [5, 0], [0, 5]]}, "list of [x, y] points"),
    ({"throw_area": "all"}, "list of [x, y] points"),
    ([THROW], "must be a JSON object"),
])
def test_bad_areas_are_refused_and_change_nothing(usb: Running, body: Any, says: str) -> None:
    before = usb.path.read_bytes()
    refused(post(usb.phone(), "/areas", body), 400, says)
    assert usb.path.read_bytes() == before
    assert usb.watcher.table == usb.config.table


def test_a_config_that_cannot_be_written_is_one_line_and_nothing_changes(
        usb: Running, monkeypatch: pytest.MonkeyPatch) -> None:
    before = usb.path.read_bytes()

    def read_only(src: Any, dst: Any) -> None:
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(os, "replace", read_only)
    resp = post(usb.phone(), "/areas", {"throw_area": THROW})
    refused(resp, 409, "Read-only file system")
    assert resp.json["error"]["code"] == "config_not_saved"
    assert str(usb.path) in resp.json["error"]["message"]
    assert usb.path.read_bytes() == before
    assert list(usb.path.parent.iterdir()) == [usb.path]  # no temporary file left
    assert usb.watcher.table.throw_area == ()


def test_a_broken_config_file_is_never_overwritten(usb: Running) -> None:
    usb.path.write_text('[camera]\nkind = "webcam"\n')
    resp = post(usb.phone(), "/areas", {"throw_area": THROW})
    refused(resp, 409, 'camera.kind = "webcam"')
    assert usb.path.read_text() == '[camera]\nkind = "webcam"\n'


# ---- exposure and focus -------------------------------------------------------------------

def test_exposure_is_locked_and_unlocked_and_focus_is_set_on_the_running_pi_camera(
        pi: Running) -> None:
    phone = pi.phone()
    assert phone.client.get("/api/calibration").json["camera"]["controls"] is True
    resp = post(phone, "/exposure", {"locked": True})
    assert resp.status_code == 200, resp.json
    assert resp.json["exposure"] == {"exposure_us": 12345, "analogue_gain": 1.877,
                                     "colour_gains": [1.91, 1.52]}
    cam = load_config(pi.path)[0].camera
    assert (cam.exposure_us, cam.analogue_gain, cam.colour_gains, cam.lens_position) == \
        (12345, 1.877, (1.91, 1.52), 2.46)
    # automatic first (what it chooses now), then fixed there
    assert pi.camera.controls[0] == {"AeEnable": True, "AwbEnable": True}
    assert pi.camera.controls[-1]["AeEnable"] is False
    assert pi.camera.controls[-1]["ExposureTime"] == 12345
    assert pi.camera.config.exposure_us == 12345  # kept if the loop restarts the camera

    resp = post(phone, "/exposure", {"locked": False})
    assert resp.status_code == 200 and resp.json["exposure"] is None
    assert load_config(pi.path)[0].camera.exposure_us is None
    assert pi.camera.controls[-1]["AeEnable"] is True and \
        pi.camera.controls[-1]["AwbEnable"] is True

    resp = post(phone, "/focus")
    assert resp.status_code == 200 and resp.json["lens_position"] == 2.46
    assert {"AfMode": 1, "AfTrigger": 0} in pi.camera.controls
    assert pi.camera.controls[-1]["AfMode"] == 0 and \
        pi.camera.controls[-1]["LensPosition"] == 2.46
    refused(post(phone, "/exposure", {"locked": "yes"}), 400, "locked must be true")
    assert not pi.camera.overlapped


def test_a_camera_without_controls_says_so_and_changes_nothing(usb: Running) -> None:
    before = usb.path.read_bytes()
    phone = usb.phone()
    for path, body in (("/exposure", {"locked": True}), ("/focus", {})):
        resp = post(phone, path, body)
        refused(resp, 422, "the usb camera has no exposure, white balance or focus controls")
        assert resp.json["error"]["code"] == "no_controls"
    assert usb.path.read_bytes() == before


# ---- check and teach --------------------------------------------------------------------

def test_the_picture_is_read_turned_once_the_turn_is_set(usb: Running) -> None:
    """camera.turn from the page: saved, and the running table's reader reads the picture
    turned at once — the dice still where they lie in the camera's picture."""
    phone = usb.phone()
    usb.camera.lay(BRIGHT)
    upright = post(phone, "/check").json
    resp = post(phone, "/turn", {"turn": 270})
    assert resp.status_code == 200, resp.json
    assert resp.json["turn"] == 270 and load_config(usb.path)[0].camera.turn == 270
    assert usb.watcher.reader.turn == 3
    turned = post(phone, "/check").json
    assert turned["ok"] is True and turned["values"] == upright["values"]
    frame = usb.camera.capture()  # the dice where they lie in it (the stand-in nets find
    seen = usb.watcher.reader.read(frame).dice  # a square's centre to a pixel or so)
    want = make_reader(usb.config, usb.path.parent).read(frame).dice
    assert np.allclose([(d.x, d.y, *d.box) for d in seen], [(d.x, d.y, *d.box) for d in want],
                       atol=1.5)
    for bad in ({"turn": 45}, {"turn": "90"}, {"turn": True}, {}):
        refused(post(phone, "/turn", bad), 400, "turn must be 0, 90, 180 or 270")
    assert load_config(usb.path)[0].camera.turn == 270


def test_check_reads_the_picture_with_the_tables_reader(usb: Running) -> None:
    phone = usb.phone()
    usb.camera.lay(BRIGHT)
    resp = post(phone, "/check")
    assert resp.status_code == 200, resp.json
    assert resp.json["ok"] is True and resp.json["values"] == [6, 6, 6, 6, 6]
    assert resp.json["message"] == "read 6 6 6 6 6: all 5 dice read"
    assert resp.json["picture"].startswith("data:image/jpeg;base64,")
    usb.camera.lay(DARK, count=3)
    resp = post(phone, "/check")
    assert resp.json["ok"] is False and "found 3 dice, expected 5" in resp.json["message"]
    assert usb.throws() == []  # dice laid out to check are no game's throw


def test_while_calibrating_the_table_reads_no_throws_and_afterwards_it_does(
        usb: Running) -> None:
    phone = usb.phone()
    assert post(phone, "/begin").json["camera"]["state"] == "paused"
    assert usb.service.status == "attention"
    usb.camera.throw(BRIGHT)
    frames = usb.watcher.frames
    wait_for(lambda: usb.watcher.frames > frames + 20)
    assert usb.throws() == []
    assert post(phone, "/end").json["camera"]["state"] == "ok"
    usb.camera.throw(DARK)
    wait_for(lambda: usb.throws() != [])
    assert usb.throws() == [{"dice": [1, 1, 1, 1, 1], "held": []}]


def test_a_taught_dice_set_is_saved_and_the_running_table_reads_with_it(
        usb: Running) -> None:
    phone = usb.phone()
    post(phone, "/begin")
    usb.camera.lay(DARK)
    first = post(phone, "/teach/capture", {"name": "holz", "face": 1})
    assert first.status_code == 200, first.json
    assert first.json["face"] == 1 and first.json["dice"] == 5
    assert first.json["captured"] == [1]
    usb.camera.lay(BRIGHT)
    second = post(phone, "/teach/capture", {"name": "holz", "face": 2})
    assert second.json["captured"] == [1, 2]
    resp = post(phone, "/teach", {"name": "holz", "faces": [1, 2]})
    assert resp.status_code == 200, resp.json
    # The stand-in classifier counts the bright dice as 6s, not as the 2s they are taught
    # as: teaching asks whether every die showed its face (vision.teach.teaching_doubts).
    assert resp.json["taught"] == {
        "name": "holz", "dice": [{"face": 1, "count": 5}, {"face": 2, "count": 5}],
        "before": 0,
        "warnings": ["the dice of a photo count as another face than the one given: did "
                     "every die show it? If they did, take that photo again, sharper and in "
                     "more light"]}
    assert resp.json["dice_set"] == "holz"
    assert (usb.table.folder / "dice-sets" / "holz.npz").is_file()
    assert load_config(usb.path)[0].table.dice_set == "holz"
    assert usb.watcher.reader.dice_set.name == "holz"
    assert usb.throws() == []  # the dice laid out for teaching were not played

    # Bright dice were 6 to the built-in reading; now they are the taught 2.
    post(phone, "/end")
    usb.camera.throw(BRIGHT)
    wait_for(lambda: usb.throws() != [])
    assert usb.throws() == [{"dice": [2, 2, 2, 2, 2], "held": []}]
    assert not usb.camera.overlapped


def test_a_taught_set_learns_more_in_another_place_and_keeps_what_it_knew(
        usb: Running) -> None:
    """Taught again with `add`, the set keeps its earlier dice beside the new ones
    (DiceSet.adding). An addition must show every face the set has, and one whose photos
    teaching doubts is refused: the set stays as it was."""
    from vision.teach import load_dice_set

    phone = usb.phone()
    post(phone, "/begin")

    def capture(faces: dict[int, int]) -> None:
        for face, shade in faces.items():
            usb.camera.lay(shade)
            resp = post(phone, "/teach/capture", {"name": "holz", "face": face})
            assert resp.status_code == 200, resp.json

    # The stand-in classifier counts dark dice (under 128) as 1s, bright ones as 6s.
    capture({1: DARK, 6: BRIGHT})
    taught = post(phone, "/teach", {"name": "holz", "faces": [1, 6]}).json["taught"]
    assert taught["before"] == 0 and taught["warnings"] == []
    assert phone.client.get("/api/calibration").json["taught_sets"] == {"holz": [1, 6]}
    first = load_dice_set(usb.table.folder, "holz")
    capture({1: 60, 2: 30})
    refused(post(phone, "/teach", {"name": "holz", "faces": [1, 2], "add": True}), 422,
            "cannot teach 'holz': to add to dice set 'holz', give a photo of every face it "
            "has (missing: 6)")
    capture({6: 30})  # dark 6s: the classifier counts them as 1s
    refused(post(phone, "/teach", {"name": "holz", "faces": [1, 6], "add": True}), 422,
            "cannot teach 'holz': these photos were not added to dice set 'holz', which is as "
            "it was: the dice of a photo count as another face than the one given")
    refused(post(phone, "/teach", {"name": "holz", "faces": [1, 6], "add": "yes"}), 400,
            "add must be true or false")
    assert load_dice_set(usb.table.folder, "holz").patch_values == first.patch_values
    # Saved by an older embedder (a model update since): embedded again as it is added to.
    replace(first, embedder="older", embeddings=np.zeros_like(first.embeddings)
            ).save(usb.table.folder)
    capture({6: 200})
    resp = post(phone, "/teach", {"name": "holz", "faces": [1, 6], "add": True})
    assert resp.status_code == 200, resp.json
    assert resp.json["taught"] == {"name": "holz", "before": 10, "warnings": [], "dice": [
        {"face": 1, "count": 5}, {"face": 6, "count": 5}]}
    both = load_dice_set(usb.table.folder, "holz")
    assert both.patch_values == first.patch_values + [1] * 5 + [6] * 5
    assert np.array_equal(both.patches[:10], first.patches)
    assert both.embedder == first.embedder
    assert np.allclose(both.embeddings[:len(first.embeddings)], first.embeddings)
    assert resp.json["taught_sets"] == {"holz": [1, 6]}


def test_what_a_set_learnt_at_tables_is_taken_back_and_learning_turned_off_from_the_page(
        usb: Running) -> None:
    """The page's Calibrate offers what `kniffel teach --forget-learnt` and config.toml's
    table.learn do: the set keeps what its pictures taught, the running table reads with
    that at once; a refusal is one line and changes nothing."""
    from vision.teach import load_dice_set

    phone = usb.phone()
    post(phone, "/begin")
    for face, shade in ((1, DARK), (6, BRIGHT)):
        usb.camera.lay(shade)
        post(phone, "/teach/capture", {"name": "holz", "face": face})
    state = post(phone, "/teach", {"name": "holz", "faces": [1, 6]}).json
    assert state["learn"] is True and state["learnt"] == {}
    folder = usb.table.folder
    taught = load_dice_set(folder, "holz")
    # As if its 6s had been learnt at a table (web.learn marks them so).
    replace(taught, from_play=[False] * 5 + [True] * 5).save(folder)
    assert phone.client.get("/api/calibration").json["learnt"] == {"holz": 5}

    resp = post(phone, "/forget-learnt", {"name": "holz"})
    assert resp.status_code == 200, resp.json
    assert resp.json["forgot"] == {"name": "holz", "message": (
        "dice set 'holz' forgot the 5 dice it learnt at tables; it keeps the 5 its photos "
        "taught")}
    assert resp.json["learnt"] == {}
    assert load_dice_set(folder, "holz").patch_values == [1] * 5
    assert usb.watcher.reader.dice_set.patch_values == [1] * 5  # read without them now
    saved = (folder / "dice-sets" / "holz.npz").read_bytes()
    for body, status, says in (
            ({"name": "holz"}, 422, "dice set 'holz' has learnt nothing at a table"),
            ({"name": "eiche"}, 422, "no dice set 'eiche' (taught: holz)"),
            ({"name": "auto"}, 400, "dice set name 'auto'"),
            ({}, 400, "name must be")):
        refused(post(phone, "/forget-learnt", body), status, says)
    assert (folder / "dice-sets" / "holz.npz").read_bytes() == saved

    resp = post(phone, "/learn", {"learn": False})
    assert resp.status_code == 200, resp.json
    assert resp.json["learn"] is False
    assert load_config(usb.path)[0].table.learn is False
    assert usb.link.config.table.learn is False  # the table's learner asks this
    refused(post(phone, "/learn", {"learn": "no"}), 400, "learn must be true or false")
    assert load_config(usb.path)[0].table.learn is False
    assert post(phone, "/learn", {"learn": True}).json["learn"] is True
    assert usb.link.config.table.learn is True


def test_a_set_taught_with_an_older_embedder_is_embedded_again_and_kept(
        tmp_path: Path) -> None:
    """After a model update the table embeds the set's stored dice with the new embedder
    and saves that, so the set still reads and nothing has to be taught again."""
    from vision.teach import PATCH_PIXELS, DiceSet, embedding_version, load_dice_set

    patches = np.stack([np.full((PATCH_PIXELS, PATCH_PIXELS, 3), shade, np.uint8)
                        for shade in (40, 220)])
    DiceSet("holz", [1, 2], patches, embedder="older", labels=[1, 2],
            embeddings=np.eye(2, 8, dtype=np.float32)).save(tmp_path)
    config = Config(table=TableConfig(dice_set="holz"))
    reader = make_reader(config, tmp_path)
    now = embedding_version(ShadeEmbedder())  # type: ignore[arg-type]
    assert reader.dice_set.embedder == now  # type: ignore[attr-defined]
    again = load_dice_set(tmp_path, "holz")
    assert again.embedder == now and np.array_equal(again.patches, patches)
    frame = np.full((480, 640, 3), BACKGROUND, np.uint8)
    frame[200:260, 300:360] = 220
    assert [d.value for d in reader.read(frame).dice] == [2]


@pytest.mark.parametrize(("path", "body", "status", "says"), [
    ("/teach/capture", {"name": "holz", "face": 7}, 400, "unknown face 7"),
    ("/teach/capture", {"name": "holz", "face": "1"}, 400, "unknown face '1'"),
    ("/teach/capture", {"name": "holz", "face": True}, 400, "unknown face True"),
    ("/teach/capture", {"name": "auto", "face": 1}, 400, "dice set name 'auto'"),
    ("/teach/capture", {"face": 1}, 400, "name must be"),
    ("/teach", {"name": "holz", "faces": []}, 400, "at least two faces"),
    ("/teach", {"name": "holz", "faces": [1, 1]}, 400, "each face only once"),
    ("/teach", {"name": "holz", "faces": [1, "duck"]}, 400, "not both"),
    ("/teach", {"name": "holz", "faces": [1, 2]}, 422, "no picture for 1 yet"),
])
def test_bad_teaching_is_refused_and_changes_nothing(usb: Running, path: str, body: Any,
                                                     status: int, says: str) -> None:
    before = usb.path.read_bytes()
    refused(post(usb.phone(), path, body), status, says)
    assert usb.path.read_bytes() == before
    assert not (usb.table.folder / "dice-sets").exists()
    assert usb.watcher.reader.dice_set == "auto"


def test_pictures_of_one_phone_are_not_taught_by_another(usb: Running) -> None:
    anna, ben = usb.phone(), usb.table.phone("Ben")
    usb.camera.lay(DARK)
    post(anna, "/teach/capture", {"name": "holz", "face": 1})
    post(anna, "/teach/capture", {"name": "holz", "face": 2})
    refused(post(ben, "/teach", {"name": "holz", "faces": [1, 2]}), 422, "no picture for 1")


def test_a_face_without_dice_is_a_clear_refusal(usb: Running) -> None:
    phone = usb.phone()
    usb.camera.lay(DARK)
    post(phone, "/teach/capture", {"name": "holz", "face": 1})
    usb.camera.lay(None)
    assert post(phone, "/teach/capture", {"name": "holz", "face": 2}).json["dice"] == 0
    resp = post(phone, "/teach", {"name": "holz", "faces": [1, 2]})
    refused(resp, 422, "no die found in the photos for 2")
    assert load_config(usb.path)[0].table.dice_set == "auto"


# ---- no camera --------------------------------------------------------------------------

def test_without_a_camera_the_page_is_told_and_nothing_needs_a_picture(
        tmp_path: Path) -> None:
    store = Store(tmp_path / "kniffel.db")
    service = TableService(store)
    service.set_camera_status("off", "no camera: enter the throws by hand")
    secret = TableSecret.load_or_create(tmp_path)
    config = Config(camera=CameraConfig(kind="none"))
    calibration = LiveCalibration(config, tmp_path / "config.toml", tmp_path, None,
                                  lambda changed: None)  # type: ignore[arg-type,return-value]
    app = create_app(service, secret, calibration=calibration)
    table = Table(tmp_path, store, service, secret, app, Clock())
    phone = table.phone()
    state = phone.client.get("/api/calibration").json
    assert state["camera"]["available"] is False and state["camera"]["state"] == "off"
    assert phone.client.get("/api/calibration/snapshot.jpg").status_code == 409
    for path, body in (("/check", {}), ("/exposure", {"locked": True}), ("/focus", {}),
                       ("/teach/capture", {"name": "holz", "face": 1})):
        resp = post(phone, path, body)
        refused(resp, 409, "no camera is running")
        assert resp.json["error"]["code"] == "no_camera"
    assert not (tmp_path / "config.toml").exists()
    store.close()


def test_a_table_without_calibration_answers_no_camera(table: Table) -> None:
    phone = table.phone()
    refused(phone.client.get("/api/calibration"), 409, "runs without a camera")
    refused(post(phone, "/begin"), 409, "runs without a camera")


def test_calibration_and_the_camera_loop_take_turns_with_the_camera(usb: Running) -> None:
    """Many stills while the loop reads lores frames: never two calls at once."""
    phones = [usb.phone() for _ in range(3)]
    results: list[int] = []

    def snap(phone: Phone) -> None:
        for _ in range(10):
            results.append(phone.client.get("/api/calibration/snapshot.jpg").status_code)

    workers = [threading.Thread(target=snap, args=(phone,)) for phone in phones]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert results == [200] * 30
    assert usb.camera.captures == 30
    assert not usb.camera.overlapped
