#!/usr/bin/env bash
# Screenshots of the real desktop app under Xvfb: docs/dashboard.png (the dashboard window on
# its Status tab), docs/dashboard-TAB.png for every other tab, and docs/tray-menu.png (the
# tray menu, opened by clicking the icon in a trayer panel).
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


# 1. Each tab of the dashboard window, filling a 1180x820 screen: the app starts on Status,
#    some model traffic gives the charts points, then a second launch with `--tab NAME`
#    (forwarded to the running app) opens each other tab. The playground gets a synthetic
#    note typed in and run with Ctrl+Enter.
under_xvfb 1180x820 '
  "$APP" --tab status & pid=$!
  for _ in $(seq 1 120); do xdotool search --name "phiguard dashboard" >/dev/null 2>&1 && break; sleep 0.5; done
  for _ in $(seq 1 60); do curl -sf "http://127.0.0.1:$PHIGUARD_PORT/readyz" >/dev/null && break; sleep 0.5; done
  note="{\"text\": \"Seen by Dr. Alice Example on 2024-03-01, phone 555-0100.\", \"method\": \"mask\"}"
  for i in $(seq 1 14); do
    for _ in 1 2 3; do
      curl -s -o /dev/null -H "Authorization: Bearer $PHIGUARD_AUTH_TOKEN" -H "Content-Type: application/json" \
        -d "$note" "http://127.0.0.1:$PHIGUARD_PORT/pii/deidentify"
    done
    sleep 1
  done
  sleep 5   # the next history sample and its chart
  import -window root "$OUT/dashboard.png"
  for tab in playground models settings access audit logs; do
    "$APP" --tab "$tab"
    sleep 3
    if [ "$tab" = playground ]; then
      win=$(xdotool search --name "phiguard dashboard" | head -1)
      xdotool windowfocus --sync "$win" 2>/dev/null || true
      xdotool type --delay 2 "Seen by Dr. Alice Example on 2024-03-01 at Example General Hospital. Call her on 555-0100 or mail alice@example.org; MRN 4471-2203. Son Robert Example drove her from 12 Example Street, Springfield."
      xdotool key ctrl+Return
      sleep 3
    fi
    import -window root "$OUT/dashboard-$tab.png"
  done
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
echo "wrote $out/dashboard.png, $out/dashboard-*.png and $out/tray-menu.png"
