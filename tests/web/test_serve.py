"""`kniffel serve`'s wiring without a server: the --camera argument (hardware.camera's
parser) and what the page is told when the dice reader cannot be built."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from hardware.camera import parse_camera_arg
from tests.web.conftest import Table
from web import cli, serve
from web.config import Config


def config_for(camera: str) -> Config:
    config = Config()
    return replace(config, camera=parse_camera_arg(camera, config.camera))


@pytest.mark.parametrize(("camera", "says"), [
    ("webcam", "unknown kind 'webcam'"),
    ("replay", "replay needs a source"),
    ("demo:fast", "write a number"),
])
def test_a_bad_camera_argument_is_one_line_and_exit_1(
        camera: str, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli.main(["serve", "--camera", camera, "--config", str(tmp_path / "none.toml"),
                   "--state-dir", str(tmp_path / "state")])
    err = capsys.readouterr().err
    assert rc == 1
    assert err.startswith("kniffel serve: --camera ") and says in err
    assert err.count("\n") == 1
    assert not (tmp_path / "state").exists()  # refused before anything was created


@pytest.mark.parametrize(("option", "says"), [
    # the socket would take 70000 as 70000 − 65536
    (["--port", "70000"], "--port 70000: a TCP port is 1 to 65535 (0: any free one)"),
    (["--port", "-5"], "--port -5: a TCP port is 1 to 65535 (0: any free one)"),
    (["--host", "999.1.1.1"], "cannot listen on 999.1.1.1:8000: not an address of this "
                              "machine"),
])
def test_a_bad_address_is_one_line_and_exit_1(option: list[str], says: str, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli.main(["serve", "--camera", "none", *option, "--config",
                   str(tmp_path / "none.toml"), "--state-dir", str(tmp_path / "state")])
    err = capsys.readouterr().err
    assert rc == 1 and err == f"kniffel serve: {says}\n"


def stale_models(config: object, folder: Path) -> object:
    raise ValueError("models/classifier.onnx: model outputs [...] do not match this "
                     "program's [...]: run `make models`")


def test_the_demo_without_models_says_so_and_plays_simulated_throws(
        table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serve, "make_reader", stale_models)
    link, demo = serve.start_camera(table.service, config_for("demo"), table.folder)
    try:
        assert link is None and demo is not None and demo.throw
        camera = table.service.state()["camera"]
        assert camera["state"] == "failed"
        assert "models" in camera["message"] and "`make models`" in camera["message"]
        assert "simulated" in camera["message"]
        assert any("do not match" in note for note in table.service.state()["notes"])
    finally:
        if demo is not None:
            demo.stop()


def test_a_camera_without_models_asks_for_manual_entry(
        table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serve, "make_reader", stale_models)
    link, demo = serve.start_camera(table.service, config_for("usb:0"), table.folder)
    assert link is None and demo is None
    camera = table.service.state()["camera"]
    assert camera["state"] == "failed"
    assert "`make models`" in camera["message"] and "by hand" in camera["message"]


def test_no_camera_is_off_and_needs_no_reader(
        table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serve, "make_reader", stale_models)
    link, demo = serve.start_camera(table.service, config_for("none"), table.folder)
    assert link is None and demo is None
    assert table.service.state()["camera"]["state"] == "off"
