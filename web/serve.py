"""`kniffel serve`: one process that owns the camera and the game, served by waitress.

    kniffel serve [--camera KIND[:SOURCE]] [--port 8000] [--host 0.0.0.0] [--config PATH]

Prints `Kniffel table: http://<lan-ip>:<port>/  PIN 1234`. Whatever part is missing — a
broken config file, no (or stale) models, a camera that fails — the table still starts:
the page says what is off, and throws can be entered by hand. Only this module's top-level
imports run for `kniffel --help`; everything heavy is imported in run().
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import socket
import sqlite3
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the real modules are imported in run(): they pull in OpenCV and numpy
    from hardware.camera import CameraSource
    from hardware.gpio import TableControls
    from vision.reading import DiceReader
    from vision.watch import ObservedThrow, TableWatcher
    from web.config import CameraConfig, Config
    from web.learn import TableLearner
    from web.service import DemoPlayer, TableService

log = logging.getLogger("kniffel.serve")

#: Waitress threads: every open table view or phone holds one for its event stream.
THREADS = 24


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--camera", metavar="KIND[:SOURCE]",
                        help="camera: picamera2[:NUMBER], usb[:DEVICE], replay:FOLDER|VIDEO "
                             "(played at its own pace), demo[:SEED] (a table that throws by "
                             "itself) or none (overrides the config file)")
    parser.add_argument("--port", type=int,
                        help="TCP port (default from config: 8000; 0: any free one)")
    parser.add_argument("--host", help="address to listen on (default 0.0.0.0: the whole LAN)")
    parser.add_argument("--config", type=Path, metavar="PATH",
                        help="config.toml (default: KNIFFEL_CONFIG or /etc/kniffel/config.toml)")
    parser.add_argument("--state-dir", type=Path, metavar="DIR",
                        help="where kniffel.db and the table's secret live "
                             "(default: KNIFFEL_STATE_DIR or ~/.local/state/kniffel)")


def lan_ip() -> str:
    """The address phones on the LAN reach this machine at (no packet is sent)."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("10.255.255.255", 1))
        ip: str = s.getsockname()[0]
        if not ip.startswith("0."):
            return ip
    return "127.0.0.1"


class ReadsTheGamesDice:
    """Where the table reads "auto" dice, each throw is read as the dice of the game being
    played (`faces`): pip dice for Kniffel, animal dice for Kniffel Kids. From the picture
    alone the reader decides per frame, and with one or two dice in view — a second or
    third throw — it can decide wrong (a lone 6 read as an elephant: asked about at the
    table, since an elephant is no Kniffel face)."""

    def __init__(self, reader: Any, faces: Callable[[], Sequence[object]]) -> None:
        self.reader = reader
        self.faces = faces
        self._kinds = {kind: reader.reading(kind) for kind in ("pips", "animals")}

    def __getattr__(self, name: str) -> Any:
        """Anything else is the camera's reader's (its turn, its dice set, teaching)."""
        if name == "reader":  # not set yet (a copy being made): no endless lookup
            raise AttributeError(name)
        return getattr(self.reader, name)

    def _for_now(self) -> Any:
        from vision.reader import is_animal

        faces = self.faces()
        animals = bool(faces) and all(is_animal(face) for face in faces)  # type: ignore[arg-type]
        return self._kinds["animals" if animals else "pips"]

    def read(self, frame_bgr: Any) -> Any:
        return self._for_now().read(frame_bgr)

    def better_turn(self, frame_bgr: Any, reading: Any) -> int | None:
        turn: int | None = self._for_now().better_turn(frame_bgr, reading)
        return turn


class CameraLink:
    """Camera + dice reader + TableWatcher, started in the background.

    A camera that cannot be opened is retried every `retry_seconds`; once the watcher runs it
    restarts a failing camera itself. Meanwhile the page says so and manual entry works.
    `preview_jpeg` is None while there is no picture. `open_camera` and `watcher_class`
    default to hardware.camera.open_camera and vision.watch.TableWatcher (tests pass fakes).
    With the `state_dir` its taught sets are saved in, a taught set learns the table from
    the dice people check there (web.learn; `table.learn` in config.toml).
    """

    def __init__(self, service: TableService, config: Config, reader: DiceReader,
                 on_alive: Callable[[], None] | None = None, retry_seconds: float = 5.0,
                 open_camera: Callable[[CameraConfig], CameraSource] | None = None,
                 watcher_class: Callable[..., TableWatcher] | None = None,
                 state_dir: Path | None = None) -> None:
        if open_camera is None:
            from hardware.camera import open_camera as default_open

            open_camera = default_open
        if watcher_class is None:
            from vision.watch import TableWatcher as default_watcher

            watcher_class = default_watcher
        self.service = service
        self.config = config
        self.reader = self._for_the_game(reader)
        self.on_alive = on_alive
        self.retry_seconds = retry_seconds
        self._open_camera = open_camera
        self._watcher_class = watcher_class
        self.watcher: TableWatcher | None = None
        self.learner = self._learner(state_dir) if state_dir is not None else None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="camera-link", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _learner(self, state_dir: Path) -> TableLearner:
        from web.learn import TableLearner

        learner = TableLearner(state_dir, lambda: self.reader if self.config.table.learn
                               else None, lambda reader: self.use(self.config, reader),
                               self.service.say)
        self.service.scored_listeners.append(learner.scored)
        self.service.turn_listeners.append(learner.new_turn)
        return learner

    def _observed(self, throw: ObservedThrow) -> None:
        """The watcher's on_throw: the learner sees the throw, then the game gets it."""
        if self.learner is not None:
            self.learner.observed(throw)
        self.service.observe_throw(throw)

    def preview_jpeg(self) -> bytes | None:
        watcher = self.watcher
        return None if watcher is None else watcher.preview_jpeg()

    def use(self, config: Config, reader: DiceReader | None = None) -> None:
        """Calibration changed the areas or the dice set: the running loop (or the one
        still starting) watches `config.table` and reads with `reader` from now on."""
        self.config = config
        if reader is not None:
            reader = self.reader = self._for_the_game(reader)
            if self.learner is not None:
                self.learner.reset()
        watcher = self.watcher
        if watcher is not None:
            watcher.use(reader=reader, table=config.table)

    def _for_the_game(self, reader: DiceReader) -> DiceReader:
        """`reader`, reading the game's dice where it reads "auto" (ReadsTheGamesDice)."""
        if isinstance(reader, ReadsTheGamesDice) or getattr(reader, "dice_set", None) != "auto" \
                or not hasattr(reader, "reading"):
            return reader
        return ReadsTheGamesDice(reader, lambda: self.service.table.game.rules.ruleset.faces)

    def _status(self, state: str, message: str) -> None:
        # the console (the journal under systemd) hears when the camera fails and when it
        # is back; the page shows every message, each retry's too
        failed, before = state == "failed", self.service.camera.state == "failed"
        if failed != before:
            log.log(logging.WARNING if failed else logging.INFO, "%s", message)
        self.service.set_camera_status(state, message)

    def _run(self) -> None:
        kind = self.config.camera.kind
        while self.watcher is None and not self._stop.is_set():
            try:
                camera = self._open_camera(self.config.camera)
                watcher = self._watcher_class(
                    camera, self.reader, self.config.table,
                    on_throw=self._observed, on_status=self._status,
                    on_alive=self.on_alive)
                # said before the watcher runs, so its own reports ("failed") come after
                self._status("ok", f"camera {kind} is watching the table")
                watcher.start()
            except Exception as exc:  # any camera failure: say so, try again later
                self._status("failed", f"camera {kind}: {exc} "
                             f"(retrying every {self.retry_seconds:.0f} s)")
                if self.on_alive is not None:  # not hung: retrying (see TableWatcher)
                    self.on_alive()
                self._stop.wait(self.retry_seconds)
                continue
            self.service.turn_listeners.append(watcher.new_turn)
            self.watcher = watcher
            if self._stop.is_set():  # stop() came while it was starting
                with contextlib.suppress(Exception):
                    watcher.stop()

    def stop(self) -> None:
        self._stop.set()
        watcher = self.watcher
        if watcher is not None:
            with contextlib.suppress(Exception):
                watcher.stop()


def controls_listener(controls: TableControls) -> Callable[[TableService], None]:
    """Keeps the table's LED on the service's status."""
    return lambda service: controls.set_status(service.status)


def make_reader(config: Config, folder: Path) -> DiceReader:
    """The dice reader for the configured dice set; raises with a one-line reason."""
    from vision.reader import Reader

    return Reader.for_dice_set(config.table.dice_set, folder, expected=5,
                               turn=config.camera.quarters)


def start_camera(service: TableService, config: Config, folder: Path,
                 on_alive: Callable[[], object] | None = None
                 ) -> tuple[CameraLink | None, DemoPlayer | None]:
    """The camera loop for `config.camera`, started; for the demo camera also the player who
    enters its throws. Without a dice reader (no models, stale models, a broken taught set)
    the camera status says so on the page, in words a family can act on, and the demo
    table plays simulated throws instead."""
    from web.service import DemoPlayer

    kind = config.camera.kind
    if kind == "none":
        service.set_camera_status("off", "no camera: enter the throws by hand")
        return None, None
    try:
        reader = make_reader(config, folder)
    except Exception as exc:  # ModelMissingError, stale models, a broken taught set
        detail = " ".join(str(exc).split()) or exc.__class__.__name__
        service.notes.append(f"no dice reader: {detail}")
        missing = "no dice reader: " + (
            "the models in models/ are missing or do not fit this program (run "
            "`make models`)" if "make models" in detail else detail)
        if kind != "demo":
            service.set_camera_status("failed", f"{missing}. Enter the throws by hand.")
            return None, None
        # `make run` before `make models`: still a table to try, but not a camera's
        service.set_camera_status("failed", f"{missing}. The demo table plays simulated "
                                  "throws instead of reading dice.")
        player = DemoPlayer(service, throw=True)
        player.start()
        return None, player

    def alive() -> None:  # the camera loop feeds systemd's watchdog (TableWatcher)
        if on_alive is not None:
            on_alive()

    link = CameraLink(service, config, reader, on_alive=alive, state_dir=folder)
    link.start()
    demo: DemoPlayer | None = None
    if kind == "demo":  # the demo camera throws by itself; someone has to write it down
        demo = DemoPlayer(service, throw=False)
        demo.start()
    return link, demo


def sum_up_history(service: TableService) -> None:
    """`service.sum_up_history`, with a failure logged (the history sums up as it is looked
    at all the same)."""
    try:
        service.sum_up_history()
    except Exception as exc:  # the store closed as the table stops, a damaged game
        log.info("history not summed up in advance: %s", exc)


def run(args: argparse.Namespace) -> int:
    from hardware.camera import CameraError, parse_camera_arg
    from hardware.gpio import TableControls
    from hardware.notify import SystemdNotifier
    from web.app import create_app
    from web.auth import TableSecret
    from web.cli import UserError
    from web.config import config_path, load_config, state_dir
    from web.live_calibration import LiveCalibration
    from web.service import TableService
    from web.store import open_store

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("waitress").setLevel(logging.WARNING)  # not every closed phone tab
    # OpenCV's own warnings are C++ source lines, repeated at every retry (a USB camera it
    # cannot open); the table says what is wrong in its own words (CameraLink._status).
    import cv2

    cv2.utils.logging.setLogLevel(cv2.utils.logging.LOG_LEVEL_ERROR)
    notes: list[str] = []

    # 1. Configuration: on errors the table runs in safe mode (camera off) and says why;
    #    a --camera on the command line still counts.
    config, errors = load_config(args.config)
    for error in errors:
        notes.append(f"{error}" + ("" if args.camera else
                                           " (camera off until it is fixed)"))
    if args.camera:
        try:
            camera_config = parse_camera_arg(args.camera, config.camera)
        except CameraError as exc:
            raise UserError(str(exc)) from None
        config = replace(config, camera=camera_config)
    server_cfg = config.server
    host = args.host or server_cfg.host
    port = args.port if args.port is not None else server_cfg.port
    if not 0 <= port <= 65535:  # the socket would take 70000 as 4464
        raise UserError(f"--port {port}: a TCP port is 1 to 65535 (0: any free one)")
    lang = server_cfg.language

    # 2. The state directory: the database and the table's secret.
    folder = args.state_dir or state_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create the state directory {folder}: "
                        f"{exc.strerror or exc}") from None

    try:
        store, damaged = open_store(folder / "kniffel.db")
    except sqlite3.Error as exc:  # locked by another table, no permission
        raise UserError(f"cannot open {folder / 'kniffel.db'}: {exc}") from None
    if damaged:
        notes.append(damaged)
    secret = TableSecret.load_or_create(folder)
    players = ("Spieler 1", "Spieler 2") if lang == "de" else ("Player 1", "Player 2")
    service = TableService(store, default_players=players)
    service.notes = notes

    # 3. systemd (no-op outside systemd) and the button/LED (no-op without them).
    notifier = SystemdNotifier()
    controls: TableControls | None = None
    try:
        controls = TableControls(config.gpio, on_press=service.press,
                                 on_long_press=service.long_press)
        problem = getattr(controls, "problem", None)
        if problem:
            notes.append(f"gpio: {problem}")
        service.listeners.append(controls_listener(controls))
        controls.set_status(service.status)
    except Exception as exc:  # a broken button must not keep the table from starting
        notes.append(f"gpio: {exc}")

    # 4. Camera, reader and the watcher loop.
    link, demo = start_camera(service, config, folder, on_alive=notifier.watchdog)
    # The history's first look need not rebuild every game played (a thousand: some 20 s
    # on a Pi); nor may a failure here keep the table from starting.
    threading.Thread(target=sum_up_history, args=(service,), name="history",
                     daemon=True).start()
    calibration = LiveCalibration(config, args.config or config_path(), folder, link,
                                  lambda changed: make_reader(changed, folder))

    # 5. The web server.
    from waitress.server import create_server  # type: ignore[import-untyped]

    public_host = host if host not in ("0.0.0.0", "::", "") else lan_ip()
    app = create_app(service, secret, public_url=None, lang=lang,
                     camera_jpeg=link.preview_jpeg if link is not None else None,
                     calibration=calibration, max_streams=THREADS - 6)
    try:
        server: Any = create_server(app, host=host, port=port, threads=THREADS,
                                    channel_timeout=30, connection_limit=200,
                                    ident="kniffel")
    except OSError as exc:
        store.close()
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    except ValueError:  # waitress: a host that is no address (of this machine)
        store.close()
        raise UserError(f"cannot listen on {host}:{port}: not an address of this "
                        "machine") from None
    real_port = getattr(server, "effective_port", port)
    url = f"http://{public_host}:{real_port}/"
    app.extensions["kniffel"].public_url = url
    print(f"Kniffel table: {url}  PIN {secret.pin}", flush=True)
    for note in notes:
        print(f"  note: {note}", flush=True)

    stopping = threading.Event()

    def on_term(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    with contextlib.suppress(ValueError):  # not the main thread (tests): no signals
        signal.signal(signal.SIGTERM, on_term)
    notifier.ready(f"table at {url}")
    interval = notifier.watchdog_seconds
    if interval and link is None:  # no camera loop to prove we are alive: the server does
        def beat() -> None:
            while not stopping.wait(interval):
                notifier.watchdog()

        threading.Thread(target=beat, name="watchdog", daemon=True).start()
    try:
        server.run()  # returns on SIGINT/SIGTERM: waitress catches the KeyboardInterrupt
    except KeyboardInterrupt:
        pass  # a signal that came before waitress's loop was running
    finally:
        print("Kniffel table: stopping", file=sys.stderr, flush=True)
        stopping.set()
        with contextlib.suppress(Exception):
            notifier.stopping()
        if demo is not None:
            demo.stop()
        if link is not None:
            link.stop()
        service.close()  # ends the event streams first, so waitress's threads can finish
        with contextlib.suppress(Exception):
            server.task_dispatcher.shutdown(timeout=5)
        if controls is not None:
            with contextlib.suppress(Exception):
                controls.close()
        with contextlib.suppress(Exception):
            server.close()
        store.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python -m web.serve` (what `kniffel serve` runs)."""
    from web.cli import UserError

    parser = argparse.ArgumentParser(prog="kniffel serve")
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except UserError as exc:
        print(f"kniffel serve: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
