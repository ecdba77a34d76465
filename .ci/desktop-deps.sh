#!/usr/bin/env bash
# Installs what the desktop shell (src-tauri), the dashboard e2e tests (e2e/) and the
# Xvfb screenshots need, and only what is missing. Idempotent: safe to run on every CI run.
#   Debian/Ubuntu packages: pkg-config + libdbus (tao, under Tauri), webkit2gtk 4.1 + appindicator + rsvg (Tauri 2 on Linux),
#   xvfb + imagemagick + xdotool + trayer + dbus-x11 (screenshots of the window and tray menu), chromium (headless e2e browser).
#   npm: playwright-core (driver only; it never downloads a browser) and typescript (the
#   dashboard type check), pinned by e2e/package-lock.json.
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=(pkg-config libdbus-1-dev libwebkit2gtk-4.1-dev libayatana-appindicator3-dev librsvg2-dev libayatana-appindicator3-1
      xvfb imagemagick xdotool trayer dbus-x11 chromium)
missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get -o DPkg::Lock::Timeout=600 \
    install -y -q "${missing[@]}"
fi

if [[ ! -d e2e/node_modules/playwright-core || ! -d e2e/node_modules/typescript ]]; then
  (cd e2e && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund)
fi
