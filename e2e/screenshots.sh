#!/usr/bin/env bash
# Screenshots of the real desktop app under Xvfb: docs/dashboard.png (the dashboard window)
# and docs/tray-menu.png (the tray menu, opened by clicking the icon in a trayer panel).
# Needs: cargo build -p phiguard-desktop, and .ci/desktop-deps.sh (xvfb, imagemagick, xdotool, trayer).
# Usage: e2e/screenshots.sh [out-dir]   (default docs/)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs}
mkdir -p "$out"
app=${PHIGUARD_DESKTOP_BIN:-${CARGO_TARGET_DIR:-target}/debug/phiguard-desktop}
[[ -x $app ]] || { echo "no desktop binary at $app: cargo build -p phiguard-desktop" >&2; exit 2; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Runs "$@" against a fresh home under its own Xvfb display; the inner script gets $APP.
under_xvfb() {
  local size=$1; shift
  local home; home=$(mktemp -d)
  PHIGUARD_HOME=$home PHIGUARD_PORT=$(free_port) APP=$app OUT=$out \
    PHIGUARD_ADMIN_TOKEN=screenshot-admin-token PHIGUARD_AUTH_TOKEN=screenshot-client-token \
    NO_AT_BRIDGE=1 WEBKIT_DISABLE_COMPOSITING_MODE=1 \
    xvfb-run -a -s "-screen 0 ${size}x24" dbus-launch --exit-with-session bash -c "$*"
  rm -rf "$home"
}


# 1. The dashboard window, opened with --dashboard, filling a 1180x820 screen.
under_xvfb 1180x820 '
  "$APP" --dashboard & pid=$!
  for _ in $(seq 1 120); do xdotool search --name "phiguard dashboard" >/dev/null 2>&1 && break; sleep 0.5; done
  sleep 6   # first paint, bootstrap and the first status event
  import -window root "$OUT/dashboard.png"
  kill $pid; wait $pid 2>/dev/null || true
'

# 2. The tray menu: trayer hosts the icon (XEmbed fallback of appindicator); click it.
under_xvfb 640x400 '
  trayer --edge top --align right --widthtype request --heighttype pixel --height 28 \
         --SetDockType true --transparent false --tint 0x2b2f36 & tray=$!
  sleep 1
  # not a first start, so the dashboard does not open over the panel
  mkdir -p "$PHIGUARD_HOME/data" && touch "$PHIGUARD_HOME/data/desktop-first-start"
  "$APP" & pid=$!
  sleep 8   # server start and the first tray refresh
  # the docked trayer window is named "panel" (the others are 10x10 helpers)
  win=$(xdotool search --name "^panel\$" | head -1)
  eval "$(xdotool getwindowgeometry --shell "$win")"
  xdotool mousemove $((X + WIDTH - 14)) $((Y + 14)) click 1
  sleep 1.5
  import -window root "$OUT/tray-menu.png"
  kill $pid $tray; wait 2>/dev/null || true
'
echo "wrote $out/dashboard.png $out/tray-menu.png"
