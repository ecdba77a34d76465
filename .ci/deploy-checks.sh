#!/usr/bin/env bash
# Deployment checks for CI (no Docker engine or cluster needed):
#  1. hadolint on the Dockerfile
#  2. kubernetes-validate --strict on every resource in deploy/kubernetes (schemas ship
#     with the package, so this runs offline)
#  3. tools/check_manifests.py: the phiguard-specific rules, and its self-test
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/cluster-deps.sh >/dev/null
venv=tools/.venv/bin

"$venv/hadolint" Dockerfile
echo "hadolint: Dockerfile clean"

resources=()
for f in deploy/kubernetes/*.yaml; do
    [ "$(basename "$f")" = kustomization.yaml ] || resources+=("$f")
done
"$venv/kubernetes-validate" --strict --quiet "${resources[@]}"
echo "kubernetes-validate: ${#resources[@]} files valid"

"$venv/python" tools/check_manifests.py
"$venv/python" tools/check_manifests.py --self-test
