"""systemd/install.sh into a throw-away root, and the unit checked by systemd-analyze.

The install runs with --no-apt --no-systemd (nothing on this machine is changed); the
layout, the user, the kept config and the kept saved games are checked on the real files.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.web.conftest import make_table
from web.config import load_config

REPO = Path(__file__).resolve().parents[2]
INSTALL = REPO / "systemd" / "install.sh"
UNIT = REPO / "systemd" / "kniffel.service"
IS_ROOT = os.geteuid() == 0
CAN_ADD_USERS = IS_ROOT and shutil.which("useradd") is not None


def fake_root(tmp_path: Path) -> Path:
    """A root with just enough /etc for useradd --prefix (groups video and gpio as on a Pi)."""
    root = tmp_path / "root"
    etc = root / "etc"
    etc.mkdir(parents=True)
    (etc / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    (etc / "group").write_text("root:x:0:\nvideo:x:44:\ngpio:x:997:\n")
    (etc / "shadow").write_text("root:*:19000:0:99999:7:::\n")
    (etc / "gshadow").write_text("root:*::\nvideo:!::\ngpio:!::\n")
    for name in ("shadow", "gshadow"):
        (etc / name).chmod(0o640)
    return root


def install(root: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    args = ["bash", str(INSTALL), "--root", str(root), "--no-apt", "--no-systemd", *extra]
    if not CAN_ADD_USERS:
        args.append("--no-user")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KNIFFEL_")}
    result = subprocess.run(args, capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def test_install_layout_and_upgrade_keeps_games_and_config(tmp_path: Path) -> None:
    root = fake_root(tmp_path)
    first = install(root, "--no-venv")
    assert "Kniffel is installed" in first.stdout

    src = root / "opt/kniffel/src"
    for name in ("pyproject.toml", "web/config.py", "hardware/gpio.py", "systemd/install.sh",
                 "vision/reader.py", "game"):
        assert (src / name).exists(), name
    for junk in (".git", ".venv", "artifacts", "__pycache__"):
        assert not (src / junk).exists(), junk
    assert (root / "etc/systemd/system/kniffel.service").read_text() == UNIT.read_text()
    wrapper = root / "usr/local/bin/kniffel"
    assert os.access(wrapper, os.X_OK)
    assert "/opt/kniffel/venv/bin/kniffel" in wrapper.read_text()
    assert subprocess.run(["sh", "-n", str(wrapper)]).returncode == 0

    config_file = root / "etc/kniffel/config.toml"
    config, errors = load_config(config_file)
    assert errors == [] and config.camera.kind == "picamera2"
    if CAN_ADD_USERS:
        passwd = (root / "etc/passwd").read_text()
        assert re.search(r"^kniffel:x:\d+:\d+:[^:]*:/var/lib/kniffel:/usr/sbin/nologin$",
                         passwd, re.M)
        group = (root / "etc/group").read_text()
        assert re.search(r"^video:x:44:kniffel$", group, re.M)
        assert re.search(r"^gpio:x:997:kniffel$", group, re.M)
        gid = int(re.search(r"^kniffel:x:(\d+):", group, re.M).group(1))  # type: ignore[union-attr]
        assert (root / "etc/kniffel").stat().st_gid == gid
        assert (root / "etc/kniffel").stat().st_mode & 0o777 == 0o770
        assert config_file.stat().st_gid == gid
        uid = int(re.search(r"^kniffel:x:(\d+):", passwd, re.M).group(1))  # type: ignore[union-attr]
        assert (root / "var/lib/kniffel").stat().st_uid == uid

    # The family plays and calibrates; then the code is upgraded.
    state = root / "var/lib/kniffel"
    assert state.is_dir() and state.stat().st_mode & 0o777 == 0o750
    table = make_table(state)  # the table's own store (kniffel.db) and PIN, as serve makes them
    phone = table.phone()
    phone.ok("throws", dice=[3, 3, 4, 4, 4])
    phone.ok("entries", box="full_house")
    phone.ok("throws", dice=[6, 6, 6, 1, 2])
    played = phone.state()
    table.store.close()
    (root / "var/lib/kniffel/dice-sets").mkdir()
    (root / "var/lib/kniffel/dice-sets/holz.npz").write_bytes(b"\x00taught")
    edited = config_file.read_text().replace("port = 8000", "port = 8080")
    config_file.write_text(edited)
    (src / "stale_module.py").write_text("# removed upstream\n")

    second = install(root, "--no-venv")
    assert "keeping" in second.stdout and ":8080/" in second.stdout
    assert config_file.read_text() == edited
    resumed = table.reopen()  # the game goes on where it was, with the same PIN
    after = resumed.phone(join=False).state()
    assert after["game"] == played["game"] and after["block"] == played["block"]
    assert resumed.secret.pin == table.secret.pin
    resumed.store.close()
    assert (root / "var/lib/kniffel/dice-sets/holz.npz").read_bytes() == b"\x00taught"
    assert not (src / "stale_module.py").exists()
    assert not (root / "opt/kniffel/src.old").exists()
    assert not (root / "opt/kniffel/src.new").exists()
    if CAN_ADD_USERS:
        assert len(re.findall(r"^kniffel:", (root / "etc/passwd").read_text(), re.M)) == 1


def _venv_python() -> str | None:
    """A Python with venv, ensurepip and setuptools (for an offline editable install)."""
    for python in ("/usr/bin/python3", sys.executable):
        if not Path(python).exists():
            continue
        ok = subprocess.run([python, "-c", "import ensurepip, venv, setuptools"],
                            capture_output=True).returncode == 0
        if ok:
            return python
    return None


def test_install_creates_a_working_venv(tmp_path: Path) -> None:
    python = _venv_python()
    if python is None:
        pytest.skip("no Python with venv, ensurepip and setuptools for an offline install")
    root = tmp_path / "root"
    # Offline: dependencies are not fetched (the system site-packages stand in on the Pi).
    install(root, "--no-user", "--venv-python", python,
            "--pip-args", "--no-index --no-deps --no-build-isolation")
    venv = root / "opt/kniffel/venv"
    assert "include-system-site-packages = true" in (venv / "pyvenv.cfg").read_text()
    assert (venv / "bin/kniffel").exists()
    where = subprocess.run([str(venv / "bin/python"), "-c",
                            "import web.config, vision; print(web.config.__file__)"],
                           capture_output=True, text=True, check=True,
                           cwd=tmp_path).stdout.strip()
    # Editable from /opt/kniffel/src: the models in src/models are found by vision.models.
    assert Path(where) == root / "opt/kniffel/src/web/config.py"


def test_install_refuses_to_touch_this_machine_from_a_fake_root(tmp_path: Path) -> None:
    result = subprocess.run(["bash", str(INSTALL), "--root", str(tmp_path), "--no-apt"],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode != 0 and "--no-systemd" in result.stderr
    result = subprocess.run(["bash", str(INSTALL), "--bogus"], capture_output=True,
                            text=True, timeout=30)
    assert result.returncode == 2 and "unknown option --bogus" in result.stderr


# ---- the unit ----------------------------------------------------------------------------

def unit_settings() -> dict[str, list[str]]:
    settings: dict[str, list[str]] = {}
    for line in UNIT.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "[")):
            key, _, value = line.partition("=")
            settings.setdefault(key, []).append(value)
    return settings


def test_unit_is_hardened_but_sees_camera_and_gpio() -> None:
    s = unit_settings()
    expected = {
        "Type": "notify", "WatchdogSec": "30", "Restart": "on-failure",
        "ExecStart": "/opt/kniffel/venv/bin/kniffel serve", "User": "kniffel",
        "SupplementaryGroups": "video gpio", "StateDirectory": "kniffel",
        "ConfigurationDirectory": "kniffel", "ProtectSystem": "strict", "ProtectHome": "yes",
        "PrivateTmp": "yes", "NoNewPrivileges": "yes", "CapabilityBoundingSet": "",
        "AmbientCapabilities": "", "UMask": "0077", "StandardOutput": "journal",
    }
    for key, value in expected.items():
        assert s.get(key) == [value], key
    # Any of these would hide /dev/video*, /dev/media*, /dev/dma_heap, /dev/gpiochip*.
    assert s.get("PrivateDevices") == ["no"]
    for key in ("DeviceAllow", "DevicePolicy", "ProtectClock", "PrivateUsers"):
        assert key not in s, key


def _systemd_analyze() -> str:
    tool = shutil.which("systemd-analyze")
    if tool is None:
        pytest.skip("systemd-analyze is not installed (apt-get install systemd)")
    return tool


def _unit_for_this_machine(tmp_path: Path) -> Path:
    """The unit with ExecStart mapped to a binary that exists here (no /opt/kniffel)."""
    text = UNIT.read_text().replace("ExecStart=/opt/kniffel/venv/bin/kniffel serve",
                                    f"ExecStart={sys.executable} -c pass")
    path = tmp_path / "kniffel.service"
    path.write_text(text)
    return path


def test_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    tool = _systemd_analyze()
    result = subprocess.run([tool, "verify", str(_unit_for_this_machine(tmp_path))],
                            capture_output=True, text=True, timeout=60)
    if result.returncode != 0 and "Failed to" in result.stderr and "kniffel" not in \
            result.stderr:
        pytest.skip(f"systemd-analyze cannot run here: {result.stderr.strip()[:200]}")
    # verify only warns (exit 0) about unknown keys: any message is a failure.
    assert result.returncode == 0 and result.stderr.strip() == "", result.stderr


def test_unit_security_exposure_is_low(tmp_path: Path) -> None:
    tool = _systemd_analyze()
    result = subprocess.run([tool, "security", "--offline=yes", "--no-pager",
                             str(_unit_for_this_machine(tmp_path))],
                            capture_output=True, text=True, timeout=60)
    found = re.search(r"Overall exposure level for \S+: ([\d.]+)", result.stdout)
    if found is None:
        pytest.skip(f"systemd-analyze security --offline unsupported: {result.stderr[:200]}")
    assert float(found.group(1)) <= 3.0, result.stdout
