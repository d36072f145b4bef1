#!/bin/bash
# Install or upgrade the Kniffel table on Raspberry Pi OS (Bookworm, 64-bit):
#
#     git clone https://.../kniffel-scanner.git && cd kniffel-scanner && sudo ./systemd/install.sh
#
# Running it again upgrades in place: the code and the venv are replaced, the service is
# restarted; /etc/kniffel/config.toml (your settings) and /var/lib/kniffel (saved games,
# taught dice sets) are never touched.
#
# What it does, in order:
#   1. apt: python3-picamera2 (libcamera), gpiozero + lgpio, python3-venv  (--no-apt skips)
#   2. copies this checkout to /opt/kniffel/src
#   3. /opt/kniffel/venv (--system-site-packages, so picamera2 from apt is seen) and
#      `pip install -e /opt/kniffel/src[pi]`                               (--no-venv skips)
#   4. the system user `kniffel` (groups video, gpio)                       (--no-user skips)
#   5. /etc/kniffel/config.toml, only if there is none yet
#   6. /etc/systemd/system/kniffel.service and /usr/local/bin/kniffel
#   7. systemctl daemon-reload, enable, restart; prints the page's address (--no-systemd skips)
#
# For building an image or testing, --root DIR (or KNIFFEL_ROOT) installs into DIR instead
# of /; the installed files still name /opt/kniffel, /etc/kniffel, ... (paths as seen on the
# running Pi).
set -eu

usage() {
    cat <<'EOF'
usage: install.sh [--root DIR] [--no-apt] [--no-venv] [--no-user] [--no-systemd]
                  [--venv-python PYTHON] [--pip-args "ARGS"]
  --root DIR           install into DIR instead of / (env KNIFFEL_ROOT)
  --no-apt             do not install Debian packages
  --no-venv            do not create the venv or pip install (tests)
  --no-user            do not create the kniffel user
  --no-systemd         do not call systemctl (no reload, enable or start)
  --venv-python PY     the Python that creates the venv (default: /usr/bin/python3)
  --pip-args "ARGS"    extra arguments for pip install (e.g. "--no-index --no-deps")
EOF
}

ARGS="$*"
ROOT=${KNIFFEL_ROOT:-/}
DO_APT=1
DO_VENV=1
DO_USER=1
DO_SYSTEMD=1
VENV_PYTHON=${KNIFFEL_VENV_PYTHON:-/usr/bin/python3}
PIP_ARGS=${KNIFFEL_PIP_ARGS:-}

while [ $# -gt 0 ]; do
    case "$1" in
        --root) ROOT=${2:?--root needs a directory}; shift 2 ;;
        --root=*) ROOT=${1#--root=}; shift ;;
        --no-apt) DO_APT=0; shift ;;
        --no-venv) DO_VENV=0; shift ;;
        --no-user) DO_USER=0; shift ;;
        --no-systemd) DO_SYSTEMD=0; shift ;;
        --venv-python) VENV_PYTHON=${2:?--venv-python needs a path}; shift 2 ;;
        --pip-args) PIP_ARGS=${2?--pip-args needs a value}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "install.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
done

say() { printf '==> %s\n' "$*"; }
die() { printf 'install.sh: %s\n' "$*" >&2; exit 1; }

if [ "$ROOT" != / ]; then
    mkdir -p "$ROOT"
    ROOT=$(cd "$ROOT" && pwd)
fi
ROOT=${ROOT%/}
CHECKOUT=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -f "$CHECKOUT/pyproject.toml" ] || [ ! -f "$CHECKOUT/systemd/kniffel.service" ]; then
    die "run me from a kniffel-scanner checkout ($CHECKOUT has no pyproject.toml)"
fi

if [ -z "$ROOT" ] && [ "$(id -u)" -ne 0 ]; then
    die "needs root: sudo $0 $ARGS"
fi
if [ -n "$ROOT" ] && [ "$DO_SYSTEMD" = 1 ]; then
    die "--root installs into another tree; add --no-systemd (systemctl acts on this machine)"
fi
if [ -n "$ROOT" ] && [ "$DO_APT" = 1 ]; then
    die "--root installs into another tree; add --no-apt (apt acts on this machine)"
fi

OPT=/opt/kniffel                 # as seen on the running Pi
DEST=$ROOT$OPT
SRC=$DEST/src
VENV=$DEST/venv
ETC=$ROOT/etc/kniffel
UNIT_DIR=$ROOT/etc/systemd/system
BIN_DIR=$ROOT/usr/local/bin
umask 022

# ---- 1. Debian packages -------------------------------------------------------------------
if [ "$DO_APT" = 1 ]; then
    say "installing Debian packages (camera, GPIO, venv)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    # picamera2 without recommends: no desktop preview libraries on a Lite image.
    apt-get install -y --no-install-recommends python3-picamera2 \
        || die "python3-picamera2 not found: this needs Raspberry Pi OS Bookworm (64-bit)"
    apt-get install -y python3-venv python3-pip python3-gpiozero python3-lgpio
fi

# ---- 2. the code --------------------------------------------------------------------------
say "copying $CHECKOUT to $SRC"
mkdir -p "$DEST"
if [ "$CHECKOUT" != "$SRC" ]; then
    rm -rf "$SRC.new"
    mkdir "$SRC.new"
    # Everything but version control, local venvs, caches and training output.
    tar -C "$CHECKOUT" -cf - \
        --exclude=./.git --exclude=./.venv --exclude=./venv --exclude=./artifacts \
        --exclude=./data --exclude=./build --exclude='*.egg-info' --exclude=__pycache__ \
        --exclude=.pytest_cache --exclude=.mypy_cache --exclude=.ruff_cache \
        --exclude=.hypothesis --exclude='*.pyc' . | tar -C "$SRC.new" -xf -
    # Swap in one step: an interrupted upgrade leaves the old code running.
    if [ -d "$SRC" ]; then
        rm -rf "$SRC.old"
        mv "$SRC" "$SRC.old"
    fi
    mv "$SRC.new" "$SRC"
    rm -rf "$SRC.old"
fi
if ! ls "$SRC"/models/*.onnx >/dev/null 2>&1; then
    echo "install.sh: warning: no models in $SRC/models (run \`make models\` in the checkout" \
         "and install again); the page will say the reader is missing" >&2
fi

# ---- 3. venv ------------------------------------------------------------------------------
if [ "$DO_VENV" = 1 ]; then
    if [ ! -x "$VENV/bin/python" ]; then
        say "creating $VENV (with the system's packages: picamera2, gpiozero)"
        "$VENV_PYTHON" -m venv --system-site-packages "$VENV"
    fi
    say "installing kniffel-scanner into $VENV"
    # Editable: the package runs from /opt/kniffel/src, where the models are found too.
    # shellcheck disable=SC2086  # PIP_ARGS is a list of words on purpose
    "$VENV/bin/python" -m pip install --disable-pip-version-check --quiet $PIP_ARGS \
        --constraint "$SRC/systemd/constraints-pi.txt" --editable "${SRC}[pi]"
    # A broken install must fail here, not at the next boot.
    "$VENV/bin/python" -c 'import web.config, hardware.notify' \
        || die "the installed package does not import; see the messages above"
fi

# ---- 4. the user --------------------------------------------------------------------------
# useradd/usermod --prefix act on $ROOT/etc/{passwd,group,shadow}.
PREFIX_ARGS=()
[ -n "$ROOT" ] && PREFIX_ARGS=(--prefix "$ROOT")
has_group() { grep -q "^$1:" "$ROOT/etc/group" 2>/dev/null; }
has_user() { grep -q "^$1:" "$ROOT/etc/passwd" 2>/dev/null; }
if [ "$DO_USER" = 1 ]; then
    if ! has_user kniffel; then
        say "creating the system user kniffel"
        useradd "${PREFIX_ARGS[@]}" --system --user-group --home-dir /var/lib/kniffel \
            --no-create-home --shell /usr/sbin/nologin --comment "Kniffel scanner" kniffel
    fi
    for group in video gpio; do
        if has_group "$group"; then
            usermod "${PREFIX_ARGS[@]}" --append --groups "$group" kniffel
        else
            echo "install.sh: note: no group $group here; camera/GPIO may not be reachable" >&2
        fi
    done
fi
KNIFFEL_GID=$(awk -F: '$1 == "kniffel" { print $3 }' "$ROOT/etc/group" 2>/dev/null || true)
KNIFFEL_UID=$(awk -F: '$1 == "kniffel" { print $3 }' "$ROOT/etc/passwd" 2>/dev/null || true)
[ "$(id -u)" -eq 0 ] || KNIFFEL_GID="" KNIFFEL_UID=""  # only root can give files away

# Saved games live in /var/lib/kniffel (systemd's StateDirectory=). Created here only when
# missing, so `sudo kniffel calibrate` works before the first start; never emptied.
STATE=$ROOT/var/lib/kniffel
if [ ! -d "$STATE" ]; then
    mkdir -p "$STATE"
    chmod 0750 "$STATE"
    [ -n "$KNIFFEL_UID" ] && chown "$KNIFFEL_UID:$KNIFFEL_GID" "$STATE"
fi

# ---- 5. configuration ---------------------------------------------------------------------
mkdir -p "$ETC"
if [ -n "$KNIFFEL_GID" ]; then
    # Group kniffel may write: calibration from the page saves config.toml.
    chown "0:$KNIFFEL_GID" "$ETC"
    chmod 0770 "$ETC"
fi
if [ ! -e "$ETC/config.toml" ]; then
    say "writing $ETC/config.toml (camera: picamera2)"
    sed 's/^kind = "demo"/kind = "picamera2"/' "$SRC/systemd/config.example.toml" \
        > "$ETC/config.toml.new"
    chmod 0660 "$ETC/config.toml.new"
    [ -n "$KNIFFEL_GID" ] && chown "0:$KNIFFEL_GID" "$ETC/config.toml.new"
    mv "$ETC/config.toml.new" "$ETC/config.toml"
else
    say "keeping $ETC/config.toml"
fi
cp "$SRC/systemd/config.example.toml" "$ETC/config.example.toml"
chmod 0644 "$ETC/config.example.toml"

# ---- 6. unit and command ------------------------------------------------------------------
say "installing the service unit"
mkdir -p "$UNIT_DIR" "$BIN_DIR"
install -m 0644 "$SRC/systemd/kniffel.service" "$UNIT_DIR/kniffel.service"
# `kniffel` for people at the Pi: the same config, state and models as the service; as
# root it runs as the kniffel user, so files it writes stay readable by the service.
cat > "$BIN_DIR/kniffel.new" <<EOF
#!/bin/sh
# Installed by kniffel-scanner's systemd/install.sh; replaced on every upgrade.
export KNIFFEL_CONFIG="\${KNIFFEL_CONFIG:-/etc/kniffel/config.toml}"
export KNIFFEL_STATE_DIR="\${KNIFFEL_STATE_DIR:-/var/lib/kniffel}"
export KNIFFEL_MODELS="\${KNIFFEL_MODELS:-$OPT/src/models}"
if [ "\$(id -u)" = 0 ] && id kniffel >/dev/null 2>&1; then
    exec runuser -u kniffel -- $OPT/venv/bin/kniffel "\$@"
fi
exec $OPT/venv/bin/kniffel "\$@"
EOF
chmod 0755 "$BIN_DIR/kniffel.new"
mv "$BIN_DIR/kniffel.new" "$BIN_DIR/kniffel"

# ---- 7. start -----------------------------------------------------------------------------
PORT=$(sed -n 's/^[[:space:]]*port[[:space:]]*=[[:space:]]*\([0-9][0-9]*\).*/\1/p' \
    "$ETC/config.toml" | head -n 1)
PORT=${PORT:-8000}
if [ "$DO_SYSTEMD" = 1 ]; then
    say "starting the service"
    systemctl daemon-reload
    systemctl enable kniffel.service
    # restart, not start: an upgrade must run the new code.
    if ! systemctl restart kniffel.service; then
        systemctl --no-pager status kniffel.service || true
        die "the service did not start; see: journalctl -u kniffel"
    fi
fi

ADDRESS=$(hostname -I 2>/dev/null | awk '{ print $1 }' || true)
echo
echo "Kniffel is installed."
if [ "$DO_SYSTEMD" = 1 ]; then
    echo "Open on a phone or tablet in the same network:"
    [ -n "$ADDRESS" ] && echo "    http://$ADDRESS:$PORT/"
    echo "    http://$(hostname).local:$PORT/"
else
    echo "Installed into ${ROOT:-/} without starting it (--no-systemd)."
    echo "The page will be at http://<this Pi's address>:$PORT/"
fi
