"""Camera sources behind one small interface, chosen by configuration (gpiozero-style).

    camera = open_camera(CameraConfig(kind="usb", source="0"))
    camera.start()
    small = camera.lores()     # small frame for motion analysis (gray or BGR), every loop
    frame = camera.capture()   # full-size BGR frame, only when the dice have settled
    camera.stop()

Kinds: "picamera2" (Raspberry Pi camera: one video configuration with a main and a lores
stream, never switched, so a capture costs no mode switch and the exposure stays fixed),
"usb" (OpenCV VideoCapture), "replay" (a folder of images or a video file), "demo" (a table
that throws by itself, rendered with vision.synth: what `make run` shows without a camera)
and "none". Every source fails with `CameraError` and a one-line message, so the page can
show it; nothing here needs hardware to be imported or tested.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import cv2
import numpy as np

from web.config import CAMERA_KINDS, CameraConfig

if TYPE_CHECKING:
    from vision.reading import DieValue, SceneLabel
    from vision.synth import Die, Scene

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp")
#: Pace of a replayed folder of images (a video file brings its own).
REPLAY_FPS = 10.0


class CameraError(RuntimeError):
    """The camera cannot be used; the message says why in one line."""


@runtime_checkable
class CameraSource(Protocol):
    """What the table watcher and `kniffel calibrate` need from a camera.

    Optional extras: `set_controls(dict)` and `metadata() -> dict` (picamera2 only),
    `clock() -> float`, the time of the latest lores frame in seconds, for sources whose
    time is not the wall clock (a replay played as fast as possible, the demo in tests),
    and `still_frames: int`, how many captures a settled throw is read from (their mean:
    vision.watch.still_frame; STILL_FRAMES where a source does not say), 1 for sources
    whose captures of a still table do not differ by sensor noise.
    """

    name: str

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def lores(self) -> np.ndarray: ...

    def capture(self) -> np.ndarray: ...


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or exc.__class__.__name__


# ---- choosing ---------------------------------------------------------------------------

def parse_camera_arg(text: str, base: CameraConfig) -> CameraConfig:
    """`--camera KIND[:SOURCE]` applied to the configured camera (sizes and locked values
    stay). usb:0 or usb:/dev/video2, replay:FOLDER|VIDEO, demo[:SEED], picamera2[:NUMBER]."""
    kind, _, source = text.strip().partition(":")
    kind = kind.strip().lower()
    if kind not in CAMERA_KINDS:
        raise CameraError(f"--camera {text}: unknown kind {kind!r} "
                          f"(one of: {', '.join(CAMERA_KINDS)})")
    if kind == "replay" and not source:
        raise CameraError(f"--camera {text}: replay needs a source: replay:FOLDER or "
                          "replay:VIDEO")
    if kind in ("demo", "picamera2") and source and not source.isdigit():
        raise CameraError(f"--camera {text}: {kind}:{source}: write a number "
                          f"({'the seed' if kind == 'demo' else 'the camera number'})")
    if kind == "none" and source:
        raise CameraError(f"--camera {text}: 'none' takes no source")
    try:  # OpenCV crashes on such a path, and the table's page could not show it
        source.encode("utf-8")
    except UnicodeEncodeError:
        raise CameraError(f"--camera {text}: the name is not valid UTF-8 (written in another "
                          "encoding): rename it") from None
    return replace(base, kind=kind, source=source)


def open_camera(config: CameraConfig) -> CameraSource:
    """The source for `config.kind`, not started yet (start() opens the device)."""
    if config.kind == "picamera2":
        return Picamera2Source(config)
    if config.kind == "usb":
        return UsbSource(config)
    if config.kind == "replay":
        return ReplaySource(config)
    if config.kind == "demo":
        return DemoSource(config, seed=int(config.source) if config.source.isdigit() else 0)
    if config.kind == "none":
        return NoCamera()
    raise CameraError(f"unknown camera kind {config.kind!r} (one of: {', '.join(CAMERA_KINDS)})")


def to_gray(frame: np.ndarray) -> np.ndarray:
    return frame if frame.ndim == 2 else cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)


# ---- no camera ----------------------------------------------------------------------------

class NoCamera:
    """camera.kind = "none": every use fails, so the table runs on manual entry."""

    name = "none"

    def _off(self) -> CameraError:
        return CameraError('the camera is off (camera.kind = "none")')

    def start(self) -> None:
        raise self._off()

    def stop(self) -> None:
        pass

    def lores(self) -> np.ndarray:
        raise self._off()

    def capture(self) -> np.ndarray:
        raise self._off()


# ---- Raspberry Pi camera --------------------------------------------------------------------

class Picamera2Source:
    """The Pi camera through picamera2 (imported only in start(), so any machine can load
    this module). One video configuration with both streams, configured once and never
    switched: RGB888 main (numpy order B, G, R: OpenCV's BGR) and a YUV420 lores stream whose
    first rows are the Y (gray) plane. The controls that `kniffel calibrate` locked are
    applied before the camera starts, so the first frame is already fixed."""

    def __init__(self, config: CameraConfig) -> None:
        self.config = config
        self.name = "picamera2" + (f":{config.source}" if config.source else "")
        self.picam2: Any = None

    def start(self) -> None:
        if self.picam2 is not None:
            return
        try:
            from picamera2 import Picamera2  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            raise CameraError("picamera2 is not installed (sudo apt install "
                              "python3-picamera2; a venv needs --system-site-packages)") from None
        from web.calibrate import camera_controls

        number = int(self.config.source) if self.config.source.isdigit() else 0
        try:
            cam = Picamera2(number)
        except Exception as exc:  # IndexError/RuntimeError when no camera is connected
            raise CameraError(f"no Raspberry Pi camera {number} ({_one_line(exc)}); is the "
                              "ribbon cable in and the camera enabled?") from None
        try:
            video = cam.create_video_configuration(
                main={"size": tuple(self.config.main_size), "format": "RGB888"},
                lores={"size": tuple(self.config.lores_size), "format": "YUV420"})
            cam.configure(video)
            controls = camera_controls(self.config)
            known = getattr(cam, "camera_controls", None)
            if isinstance(known, dict) and known:  # e.g. the HQ camera has no AfMode
                controls = {k: v for k, v in controls.items() if k in known}
            if controls:
                cam.set_controls(controls)
            cam.start()
        except Exception as exc:
            with contextlib.suppress(Exception):
                cam.close()
            raise CameraError(f"cannot start the Raspberry Pi camera ({_one_line(exc)})") \
                from None
        self.picam2 = cam

    def _camera(self) -> Any:
        if self.picam2 is None:
            raise CameraError("the Raspberry Pi camera is not started")
        return self.picam2

    def lores(self) -> np.ndarray:
        try:
            yuv = self._camera().capture_array("lores")
        except CameraError:
            raise
        except Exception as exc:
            raise CameraError(f"the Raspberry Pi camera stopped ({_one_line(exc)})") from None
        width, height = self.config.lores_size
        return np.ascontiguousarray(yuv[:height, :width])  # Y plane; rows may be padded

    def capture(self) -> np.ndarray:
        try:
            frame = self._camera().capture_array("main")
        except CameraError:
            raise
        except Exception as exc:
            raise CameraError(f"the Raspberry Pi camera stopped ({_one_line(exc)})") from None
        return np.ascontiguousarray(frame[..., :3])

    def set_controls(self, controls: dict[str, Any]) -> None:
        self._camera().set_controls(dict(controls))

    def metadata(self) -> dict[str, Any]:
        return dict(self._camera().capture_metadata())

    def stop(self) -> None:
        cam, self.picam2 = self.picam2, None
        if cam is None:
            return
        with contextlib.suppress(Exception):
            cam.stop()
        with contextlib.suppress(Exception):
            cam.close()  # frees the camera for the next start() or for calibrate


# ---- OpenCV: USB cameras, videos and folders ------------------------------------------------

def _lores_of(frame: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    return cv2.resize(to_gray(frame), tuple(size), interpolation=cv2.INTER_AREA)


class UsbSource:
    """A USB webcam through cv2.VideoCapture (device index or path). Every lores() and
    capture() reads a fresh frame: the driver's buffer is asked to hold one frame
    (CAP_PROP_BUFFERSIZE, V4L2), so a loop slower than the camera does not fall seconds
    behind; where a backend ignores that, a frame read after the dice settled is still a
    settled picture. The frame comes at the size the camera gives (main_size is asked
    for); the watcher scales the areas to it."""

    def __init__(self, config: CameraConfig,
                 capture_factory: Callable[[int | str], Any] | None = None) -> None:
        self.config = config
        source = config.source.strip() or "0"
        self.device: int | str = int(source) if source.isdigit() else source
        self.name = f"usb:{self.device}"
        self._factory = capture_factory or cv2.VideoCapture
        self._cap: Any = None

    def start(self) -> None:
        if self._cap is not None:
            return
        cap = self._factory(self.device)
        if cap is None or not cap.isOpened():
            with contextlib.suppress(Exception):
                cap.release()
            raise CameraError(f"cannot open USB camera {self.device} (plugged in? used by "
                              "another program?)")
        width, height = self.config.main_size
        with contextlib.suppress(Exception):
            cap.set(cv2.CAP_PROP_FRAME_WIDTH, width)
            cap.set(cv2.CAP_PROP_FRAME_HEIGHT, height)
            cap.set(cv2.CAP_PROP_BUFFERSIZE, 1)
        self._cap = cap

    def _read(self) -> np.ndarray:
        if self._cap is None:
            raise CameraError(f"USB camera {self.device} is not started")
        try:
            ok, frame = self._cap.read()
        except cv2.error as exc:
            ok, frame = False, None
            del exc
        if not ok or frame is None:
            raise CameraError(f"USB camera {self.device} gives no picture (unplugged?)")
        bgr: np.ndarray = frame if frame.ndim == 3 else cv2.cvtColor(frame, cv2.COLOR_GRAY2BGR)
        return bgr

    def lores(self) -> np.ndarray:
        return _lores_of(self._read(), self.config.lores_size)

    def capture(self) -> np.ndarray:
        return self._read()

    def stop(self) -> None:
        cap, self._cap = self._cap, None
        if cap is not None:
            with contextlib.suppress(Exception):
                cap.release()


class ReplaySource:
    """Recorded frames as a camera: a folder of images (sorted by name) or a video file.

    realtime: frames come at their pace (`fps`; a video's own rate), skipping frames when
    the reader is slower, like a live camera; otherwise one frame per lores() call, and
    clock() tells the recorded time, so settling works the same at any speed. When the
    frames run out, `finished` is set and the last frame stays (the table lies still) unless
    `loop` starts over."""

    #: Every capture of a recorded frame is that frame.
    still_frames = 1

    def __init__(self, config: CameraConfig, fps: float | None = None, loop: bool = False,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.config = config
        self.path = Path(config.source).expanduser()
        self.name = f"replay:{config.source}"
        self.realtime = config.realtime
        self.loop = loop
        self._fps = fps
        self._wall = clock
        self._sleep = sleep
        self._files: list[Path] = []
        self._video: Any = None
        self._frame: np.ndarray | None = None
        self._index = -1
        self._t0 = 0.0
        self._time = 0.0
        self._started = False
        self.finished = False
        self.fps = fps or REPLAY_FPS

    # -- opening

    def start(self) -> None:
        if self._started:
            return
        if self.path.is_dir():
            self._files = sorted(p for p in self.path.iterdir()
                                 if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file())
            if not self._files:
                raise CameraError(f"replay: no images (.jpg, .png) in {self.path}")
        elif self.path.is_file():
            self._open_video()
        else:
            raise CameraError(f"replay: {self.path} does not exist (a folder of images or "
                              "a video file)")
        self._index = -1
        self._frame = None
        self.finished = False
        self._t0 = self._wall()
        self._time = 0.0
        self._started = True

    def _open_video(self) -> None:
        if self._video is not None:
            self._video.release()
        video = cv2.VideoCapture(str(self.path))
        if not video.isOpened():
            raise CameraError(f"replay: cannot open the video {self.path}")
        rate = float(video.get(cv2.CAP_PROP_FPS) or 0.0)
        if self._fps is None and math.isfinite(rate) and 1.0 <= rate <= 240.0:
            self.fps = rate
        self._video = video

    def stop(self) -> None:
        if self._video is not None:
            self._video.release()
            self._video = None
        self._started = False

    # -- frames

    def _load(self, index: int) -> np.ndarray | None:
        """Frame `index` (indices only grow, except when looping starts over)."""
        if self._files:
            if index >= len(self._files):
                return None
            from vision.photo import read_photo

            try:
                # a recorded frame garbled in part is still the table's frame
                return read_photo(self._files[index]).frame
            except ValueError as exc:
                name = self._files[index].name.encode("utf-8", "backslashreplace").decode()
                raise CameraError(f"replay: {name}: {exc}") from None
        assert self._video is not None
        frame = None
        while self._index < index:
            ok, frame = self._video.read()
            if not ok:
                return None
            self._index += 1
        return frame

    def _advance(self, index: int) -> None:
        if self.finished:
            return
        frame = self._load(index)
        if frame is None and self.loop and self._frame is not None:
            if self._video is not None:
                self._open_video()
            self._index = -1
            self._t0 = self._wall()
            index = 0
            frame = self._load(0)
        if frame is None:
            if self._frame is None:
                raise CameraError(f"replay: {self.path} has no frames")
            self.finished = True
            return
        self._frame = frame
        self._index = index

    def lores(self) -> np.ndarray:
        if not self._started:
            raise CameraError("replay is not started")
        if self.realtime:
            elapsed = self._wall() - self._t0
            due = int(elapsed * self.fps)
            if due <= self._index:  # the next frame is not due yet: wait, like a camera
                self._sleep(max(0.0, (self._index + 1) / self.fps - elapsed))
                due = self._index + 1
            self._advance(due)
        else:
            self._advance(self._index + 1)
            self._time += 1.0 / self.fps
        assert self._frame is not None
        return _lores_of(self._frame, self.config.lores_size)

    def capture(self) -> np.ndarray:
        if self._frame is None:
            self.lores()
        assert self._frame is not None
        return self._frame.copy()

    def clock(self) -> float:
        """Recorded time of the latest frame (the wall clock when realtime); after the last
        frame it goes on, one frame per lores(), so the last throw can still settle."""
        return self._wall() if self.realtime else self._time


# ---- the demo table -------------------------------------------------------------------------

@dataclass(frozen=True)
class DemoStep:
    """One thing that happens on the demo table.

    kind "throw": the dice not in `keep` are picked up (a hand) and thrown (the cup);
    `dice` = how many land (5; fewer: one rolled off the table); `keep`: indices into the
    dice lying on the table that stay where they are (held).
    kind "nudge": die `die` is pushed a little (turned over when `flip`).
    kind "rest": nothing happens for `seconds`."""

    kind: str
    keep: tuple[int, ...] = ()
    dice: int = 5
    die: int = 0
    flip: bool = False
    seconds: float = 3.0


@dataclass(frozen=True)
class DemoThrow:
    """What the demo really threw: for tests and for checking the reader by eye."""

    time: float  # when the dice come to rest (demo clock)
    values: tuple[object, ...]  # the dice on the table, in the demo's own order
    kept: tuple[int, ...]  # which of them stayed from the previous throw
    nudge: bool = False


@dataclass
class _Segment:
    start: float
    duration: float
    scenes: tuple[Scene, ...]
    key: int

    def scene_at(self, t: float) -> tuple[int, Scene]:
        n = len(self.scenes)
        i = min(n - 1, max(0, int((t - self.start) / max(self.duration, 1e-9) * n)))
        return i, self.scenes[i]


class DemoSource:
    """A table that throws by itself, rendered with vision.synth (the `make run` default).

    One fixed scene (table, light, camera, dice style), then turns: a hand picks up the
    dice, the cup throws them (they tumble for about a second), they rest for a few
    seconds; some throws keep dice where they lie (held) and rethrow the others, now and
    then a die is nudged. The lores stream is rendered small (the static background is
    cached by vision.synth, resting frames are cached here and only get fresh sensor
    noise); the main stream is rendered only on capture().

    realtime=False: each lores() call is one frame later (1/fps) on the demo's clock —
    tests run a whole turn in a second. `script` replaces the random turns (then the table
    rests after the last step). `throws` records what really happened.
    """

    #: Each capture renders the whole picture anew: one per throw is enough for a demo.
    still_frames = 1

    def __init__(self, config: CameraConfig | None = None, seed: int = 0, kind: str = "pips",
                 realtime: bool = True, fps: float = 12.0,
                 script: Sequence[DemoStep] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config or CameraConfig(kind="demo")
        self.name = "demo"
        self.seed = seed
        self.kind = kind
        self.realtime = realtime
        self.fps = fps
        self._script = list(script) if script is not None else None
        self._wall = clock
        self._rng = np.random.default_rng(seed)
        self._noise_rng = np.random.default_rng([seed, 1])
        self._started = False
        self._t0 = 0.0
        self._frames = 0
        self._segments: list[_Segment] = []
        self._keys = 0
        self._cache: OrderedDict[tuple[int, int], np.ndarray] = OrderedDict()
        self._current: Scene | None = None
        self._base: Scene | None = None
        self._lores_camera: Any = None
        self._dice: list[Die] = []
        self._turn_throws = 0
        self.throws: list[DemoThrow] = []
        self.last_label: SceneLabel | None = None
        self.last_scene: Scene | None = None

    # -- the fixed scene

    def _setup(self) -> None:
        from vision.synth import DieStyle, Photo, random_scene

        width, height = self.config.main_size
        rng = self._rng
        # a table the dice stand out on (the demo is a showcase, not a test of the reader)
        surface = ("wood", "felt", "leather")[int(rng.integers(3))]
        base = random_scene(
            rng, self.kind, n_dice=5, n_kept=0, resolution=(width, height), table_kind=surface,
            die_px=min(width, height) / 15.0, tilt_deg=float(rng.uniform(0, 12)),
            hand=False, cup=False, tray=False, distractors=False, tilted=False,
            stacked=False, cut=False, touching=False, clean=True, dim=False)
        cam = replace(base.camera, k1=0.0)
        self._base = replace(base, camera=cam, dice=(), occluders=(),
                             photo=Photo(noise=0.006))
        self._style = base.dice[0].style if base.dice else DieStyle(kind=self.kind)
        if self.kind == "pips":
            self._style = DieStyle()  # white with black pips, like the family's dice
        self._die_mm = base.dice[0].size_mm if base.dice else 16.0
        lw, lh = self.config.lores_size
        self._lores_camera = replace(cam, width=lw, height=lh, focal_px=cam.focal_px * lw / width)

    def start(self) -> None:
        if self._started:
            return
        try:
            if self._base is None:
                self._setup()
        except Exception as exc:  # vision.synth missing or broken: say so, don't crash
            raise CameraError(f"the demo table cannot be drawn ({_one_line(exc)})") from None
        self._t0 = self._wall()
        self._frames = 0
        self._segments = []
        self._dice = []
        self._turn_throws = 0
        self.throws = []
        self._steps = iter(self._script) if self._script is not None else None
        self._append(0.0, 1.0, (self._scene(()),))  # an empty table first
        self._started = True

    def stop(self) -> None:
        self._started = False

    def clock(self) -> float:
        """The demo's time of the latest lores frame."""
        return self._wall() if self.realtime else self._frames / self.fps

    def _now(self) -> float:
        return (self._wall() - self._t0) if self.realtime else self._frames / self.fps

    # -- the timeline

    def _scene(self, dice: Sequence[Die], occluders: tuple[Any, ...] = ()) -> Scene:
        assert self._base is not None
        return replace(self._base, dice=tuple(dice), occluders=occluders)

    def _append(self, start: float, duration: float, scenes: tuple[Scene, ...]) -> float:
        self._keys += 1
        self._segments.append(_Segment(start, duration, scenes, self._keys))
        return start + duration

    def _end(self) -> float:
        last = self._segments[-1]
        return last.start + last.duration

    def _next_step(self) -> DemoStep:
        if self._steps is not None:
            return next(self._steps, DemoStep("rest", seconds=3600.0))
        rng = self._rng
        if self._dice and rng.random() < 0.12:
            return DemoStep("nudge", die=int(rng.integers(len(self._dice))),
                            flip=bool(rng.random() < 0.4), seconds=float(rng.uniform(2, 3)))
        if not self._dice or self._turn_throws >= 3 or (self._turn_throws and
                                                       rng.random() < 0.25):
            return DemoStep("throw", seconds=float(rng.uniform(3, 5)))
        # keep the most common face, like a player going for a Pasch
        values = [d.value for d in self._dice]
        best = max(set(values), key=lambda v: (values.count(v), str(v)))
        keep = tuple(i for i, v in enumerate(values) if v == best)
        if len(keep) >= len(values):
            keep = keep[:-1]
        return DemoStep("throw", keep=keep, seconds=float(rng.uniform(3, 5)))

    def _extend(self, until: float) -> None:
        while self._end() <= until:
            step = self._next_step()
            start = self._end()
            if step.kind == "throw":
                start = self._throw(start, step)
            elif step.kind == "nudge" and self._dice:
                start = self._nudge(start, step)
            self._append(start, max(step.seconds, 0.05), (self._scene(self._dice),))
        # forget what lies behind (a second of history is plenty)
        while len(self._segments) > 2 and self._segments[1].start + \
                self._segments[1].duration < until - 1.0:
            self._segments.pop(0)

    def _hand_path(self, target: np.ndarray, frames: int, dice_before: Sequence[Die],
                   dice_after: Sequence[Die]) -> tuple[Scene, ...]:
        """A hand reaches from the near edge to `target` and back; the dice change when it
        is over them."""
        from vision.synth import CameraModel, Occluder

        assert self._base is not None
        cam = CameraModel(self._base.camera)
        w, h = self._base.camera.width, self._base.camera.height
        side = int(self._rng.integers(4))
        u, v = [(0.5 * w, 1.25 * h), (-0.25 * w, 0.5 * h), (1.25 * w, 0.5 * h),
                (0.5 * w, -0.25 * h)][side]
        edge = cam.unproject_to_plane(np.array([[u, v]]))[0][:2]
        yaw = math.degrees(math.atan2(edge[1] - target[1], edge[0] - target[0]))
        scenes = []
        for k in range(frames):
            s = math.sin(math.pi * (k + 0.5) / frames)  # out → over the dice → out
            pos = edge + (target - edge) * s
            hand = Occluder("hand", float(pos[0]), float(pos[1]), yaw, 85.0, 45.0,
                            spread=0.3)
            scenes.append(self._scene(dice_before if k < frames // 2 else dice_after, (hand,)))
        return tuple(scenes)

    def _free_spot(self, placed: Sequence[Die], value: DieValue, center: np.ndarray,
                   spread: float) -> Die:
        from vision.synth import CameraModel, Die, die_pose

        assert self._base is not None and self._style is not None
        cam = CameraModel(self._base.camera)
        w, h = self._base.camera.width, self._base.camera.height
        size = self._die_mm
        die = None
        for attempt in range(200):
            r = spread * math.sqrt(self._rng.random()) * (1 + attempt / 60)
            a = self._rng.uniform(0, 2 * math.pi)
            x, y = center[0] + r * math.cos(a), center[1] + r * math.sin(a)
            die = Die(value, float(x), float(y), float(self._rng.uniform(0, 360)), size,
                      self._style)
            uv = cam.project(die_pose(die).vertices())
            inside = bool((uv[:, 0] > 0.06 * w).all() and (uv[:, 0] < 0.94 * w).all()
                          and (uv[:, 1] > 0.06 * h).all() and (uv[:, 1] < 0.94 * h).all())
            if inside and all(math.hypot(d.x - x, d.y - y) > 1.9 * size for d in placed):
                return die
        assert die is not None
        return die

    def _values(self) -> tuple[DieValue, ...]:
        from vision.reading import ANIMALS, PIP_VALUES

        return ANIMALS if self.kind == "animals" else PIP_VALUES

    def _throw(self, start: float, step: DemoStep) -> float:
        from vision.synth import CameraModel, throw

        assert self._base is not None
        keep = [i for i in sorted(set(step.keep)) if i < len(self._dice)]
        if not keep:
            self._turn_throws = 0
        kept = [self._dice[i] for i in keep]
        t = start
        gone = [d for i, d in enumerate(self._dice) if i not in keep]
        if gone:  # pick up the dice that will be thrown
            target = np.mean([[d.x, d.y] for d in gone], axis=0)
            t = self._append(t, 0.7, self._hand_path(target, 8, self._dice, kept))
        cam = CameraModel(self._base.camera)
        w, h = self._base.camera.width, self._base.camera.height
        cu, cv = self._rng.uniform(0.35, 0.65) * w, self._rng.uniform(0.35, 0.65) * h
        center = cam.unproject_to_plane(np.array([[cu, cv]]))[0][:2]
        faces = self._values()
        landed: list[Die] = []
        for _ in range(max(0, step.dice - len(kept))):
            value = faces[int(self._rng.integers(len(faces)))]
            landed.append(self._free_spot(kept + landed, value, center, 3.5 * self._die_mm))
        if landed:
            final = self._scene(landed)
            flying = throw(final, self._rng, frames=12, cup=True)
            scenes = tuple(self._scene(kept + list(s.dice), s.occluders) for s in flying)
            t = self._append(t, 1.0, scenes)
        # thrown dice take the places of those picked up, so the demo's indices stay put
        order: list[Die | None] = [None] * max(len(self._dice), len(kept) + len(landed))
        for i, d in zip(keep, kept, strict=True):
            order[i] = d
        free = iter(landed)
        for i in range(len(order)):
            if order[i] is None:
                order[i] = next(free, None)
        self._dice = [d for d in order if d is not None]
        self._turn_throws += 1
        kept_now = tuple(i for i, d in enumerate(self._dice) if d in kept)
        self.throws.append(DemoThrow(t, tuple(d.value for d in self._dice), kept_now))
        return t

    def _nudge(self, start: float, step: DemoStep) -> float:
        i = step.die % len(self._dice)
        die = self._dice[i]
        a = self._rng.uniform(0, 2 * math.pi)
        dist = self._die_mm * float(self._rng.uniform(0.4, 0.7))
        turn = float(self._rng.uniform(10, 25))
        scenes = []
        for k in (1, 2):
            f = k / 3
            moved = replace(die, x=die.x + dist * f * math.cos(a), y=die.y + dist * f *
                            math.sin(a), yaw_deg=die.yaw_deg + turn * f)
            scenes.append(self._scene(self._dice[:i] + [moved] + self._dice[i + 1:]))
        value = die.value
        if step.flip:
            faces = [v for v in self._values() if v != die.value]
            value = faces[int(self._rng.integers(len(faces)))]
        final = replace(die, value=value, x=die.x + dist * math.cos(a),
                        y=die.y + dist * math.sin(a), yaw_deg=die.yaw_deg + turn)
        self._dice = self._dice[:i] + [final] + self._dice[i + 1:]
        t = self._append(start, 0.25, tuple(scenes))
        self.throws.append(DemoThrow(t, tuple(d.value for d in self._dice),
                                     tuple(range(len(self._dice))), nudge=True))
        return t

    def _at(self, t: float) -> tuple[tuple[int, int], Scene]:
        self._extend(t)
        for seg in reversed(self._segments):
            if seg.start <= t:
                i, scene = seg.scene_at(t)
                # a resting segment has one scene: every frame of it shares the key
                return (seg.key, i), scene
        seg = self._segments[0]
        return (seg.key, 0), seg.scenes[0]

    # -- frames

    def lores(self) -> np.ndarray:
        from vision.synth import render

        if not self._started:
            raise CameraError("the demo table is not started")
        if not self.realtime:
            self._frames += 1
        key, scene = self._at(self._now())
        self._current = scene
        frame = self._cache.get(key)
        if frame is None:
            small = replace(scene, camera=self._lores_camera, photo=dataclasses.replace(
                scene.photo, noise=0.0))
            frame, _ = render(small)
            self._cache[key] = frame
            while len(self._cache) > 24:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(key)
        noise = self._noise_rng.normal(0.0, 1.5, frame.shape[:2]).astype(np.float32)
        out = cv2.add(frame.astype(np.float32), cv2.merge([noise, noise, noise]))
        return np.clip(out, 0, 255).astype(np.uint8)

    def capture(self) -> np.ndarray:
        from vision.synth import render

        if not self._started:
            raise CameraError("the demo table is not started")
        if self._current is None:
            self.lores()
        assert self._current is not None
        scene = replace(self._current, seed=self.seed * 100_003 + self._frames)
        frame, label = render(scene)
        self.last_label, self.last_scene = label, scene
        return frame


__all__ = [
    "CameraError", "CameraSource", "DemoSource", "DemoStep", "DemoThrow", "NoCamera",
    "Picamera2Source", "ReplaySource", "UsbSource", "open_camera", "parse_camera_arg",
    "to_gray",
]
