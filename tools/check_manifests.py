#!/usr/bin/env python3
"""Checks the deployment files against what the server needs (issue 6).

The schema validator says the Kubernetes YAML is well-formed; this script says it is
*right* for phiguard: probes on /livez and /readyz at the probe port (PHIGUARD_PROBE_PORT,
answered while the main port is at its connection cap), a preStop hook and a grace period that
cover the drain setting, a read-only root filesystem with an emptyDir for PHIGUARD_HOME,
non-root, resource requests, the Prometheus scrape annotation, a Secret with both tokens,
a ConfigMap with the cluster-limit settings, and a Dockerfile that matches (multi-stage,
numeric non-root user, the bundled model, ports 8080 and the probe port, its HEALTHCHECK on
the probe port).

    python3 tools/check_manifests.py             # check the files; exit 1 listing problems
    python3 tools/check_manifests.py --self-test # prove each check catches its breakage

Needs PyYAML only.
"""

from __future__ import annotations

import copy
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
KUBE = ROOT / "deploy" / "kubernetes"
DOCKERFILE = ROOT / "Dockerfile"

# Seconds between SIGKILL and the end of preStop + drain that we insist on.
GRACE_MARGIN_SECONDS = 5
REQUIRED_CONFIG_KEYS = (
    "PHIGUARD_HOME",
    "PHIGUARD_REDIS_URL",
    "PHIGUARD_REDIS_KEY_PREFIX",
    "PHIGUARD_CLUSTER_ADMISSIONS",
    "PHIGUARD_CLUSTER_WINDOW_SECONDS",
    "PHIGUARD_CLUSTER_REPLICAS",
    "OPENMED_SERVICE_SHUTDOWN_DRAIN_SECONDS",
    "OPENMED_SERVICE_METRICS_ENABLED",
    "PHIGUARD_PROBE_PORT",
)
REQUIRED_SECRET_KEYS = ("PHIGUARD_AUTH_TOKEN", "PHIGUARD_ADMIN_TOKEN", "PHIGUARD_HASH_KEY",
                        "PHIGUARD_MAPPING_KEY")
# Keys that must never sit in a ConfigMap (they are secrets).
SECRET_ONLY_KEYS = REQUIRED_SECRET_KEYS


def load_docs(folder: Path = KUBE) -> list[dict]:
    docs = []
    for path in sorted(folder.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                doc.setdefault("_file", path.name)
                docs.append(doc)
    return docs


def find(docs: list[dict], kind: str, name: str | None = None) -> list[dict]:
    return [
        d
        for d in docs
        if d.get("kind") == kind and (name is None or d.get("metadata", {}).get("name") == name)
    ]


def server_deployment(docs: list[dict]) -> dict | None:
    for d in find(docs, "Deployment"):
        labels = d["spec"]["template"]["metadata"].get("labels", {})
        if labels.get("app.kubernetes.io/component") == "server":
            return d
    return None


def port_number(container: dict, port) -> int | None:
    if isinstance(port, int):
        return port
    for p in container.get("ports", []):
        if p.get("name") == port:
            return p.get("containerPort")
    return None


def seconds(value) -> float:
    return float(str(value).strip())


def prestop_seconds(container: dict) -> float | None:
    """The sleep of an exec preStop hook (`sleep N`), or the duration of a sleep action."""
    pre = container.get("lifecycle", {}).get("preStop")
    if not pre:
        return None
    if "sleep" in pre:
        return float(pre["sleep"]["seconds"])
    cmd = pre.get("exec", {}).get("command", [])
    text = " ".join(str(c) for c in cmd)
    m = re.search(r"\bsleep\s+(\d+(?:\.\d+)?)", text)
    return float(m.group(1)) if m else 0.0


def check_kubernetes(docs: list[dict]) -> list[str]:
    problems: list[str] = []
    bad = problems.append

    configs = find(docs, "ConfigMap")
    secrets = find(docs, "Secret")
    dep = server_deployment(docs)
    if dep is None:
        return ["no Deployment with component=server"]
    pod = dep["spec"]["template"]
    spec = pod["spec"]
    containers = spec.get("containers", [])
    if len(containers) != 1:
        bad("server Deployment must have exactly one container")
        return problems
    c = containers[0]

    # envFrom points at a ConfigMap and a Secret that exist, Secret last (it wins).
    env_from = c.get("envFrom", [])
    cm_names = [e["configMapRef"]["name"] for e in env_from if "configMapRef" in e]
    secret_names = [e["secretRef"]["name"] for e in env_from if "secretRef" in e]
    config = {}
    for name in cm_names:
        found = find(configs, "ConfigMap", name)
        if not found:
            bad(f"envFrom ConfigMap {name} is not defined")
        else:
            config.update(found[0].get("data", {}))
    if not cm_names:
        bad("container takes no settings from a ConfigMap")
    secret_keys: set[str] = set()
    for name in secret_names:
        found = find(secrets, "Secret", name)
        if not found:
            bad(f"envFrom Secret {name} is not defined")
        else:
            secret_keys |= set(found[0].get("stringData", {})) | set(found[0].get("data", {}))
    if not secret_names:
        bad("container takes no tokens from a Secret")
    if env_from and "secretRef" not in env_from[-1]:
        bad("the Secret must come last in envFrom so that it overrides the ConfigMap")
    for key in REQUIRED_SECRET_KEYS:
        if key not in secret_keys:
            bad(f"Secret lacks {key}")
    for key in REQUIRED_CONFIG_KEYS:
        if key not in config:
            bad(f"ConfigMap lacks {key}")
    for key in SECRET_ONLY_KEYS:
        if key in config:
            bad(f"{key} is a secret and must not be in a ConfigMap")
    for key, value in config.items():
        if not isinstance(value, str):
            bad(f"ConfigMap value of {key} must be a string")

    # Probes, on the probe port: at the main port's connection cap a probe there is refused,
    # and a failed liveness probe restarts a pod that is only busy.
    probe_port = int(config["PHIGUARD_PROBE_PORT"]) if config.get("PHIGUARD_PROBE_PORT") else None
    if probe_port == 8080:
        bad("PHIGUARD_PROBE_PORT must not be the main port 8080")
    if probe_port is not None and probe_port not in [p.get("containerPort") for p in c.get("ports", [])]:
        bad(f"PHIGUARD_PROBE_PORT {probe_port} is not a containerPort")
    for probe, path in (
        ("startupProbe", "/livez"),
        ("livenessProbe", "/livez"),
        ("readinessProbe", "/readyz"),
    ):
        p = c.get(probe)
        if not p or "httpGet" not in p:
            bad(f"{probe} must be an httpGet probe")
            continue
        if p["httpGet"].get("path") != path:
            bad(f"{probe} must probe {path}")
        if port_number(c, p["httpGet"].get("port")) != probe_port:
            bad(f"{probe} must target the probe port (PHIGUARD_PROBE_PORT)")

    # Drain: preStop + drain + margin fits in the grace period.
    drain = seconds(config.get("OPENMED_SERVICE_SHUTDOWN_DRAIN_SECONDS", 30))
    pre = prestop_seconds(c)
    if pre is None:
        bad("container has no preStop hook")
        pre = 0.0
    grace = spec.get("terminationGracePeriodSeconds", 30)
    if grace < pre + drain + GRACE_MARGIN_SECONDS:
        bad(
            f"terminationGracePeriodSeconds {grace} < preStop {pre:g} + drain {drain:g}"
            f" + margin {GRACE_MARGIN_SECONDS}"
        )

    # Security.
    pod_sc = spec.get("securityContext", {})
    c_sc = c.get("securityContext", {})
    if c_sc.get("readOnlyRootFilesystem") is not True:
        bad("readOnlyRootFilesystem must be true")
    if not (c_sc.get("runAsNonRoot") is True or pod_sc.get("runAsNonRoot") is True):
        bad("runAsNonRoot must be true")
    uid = c_sc.get("runAsUser", pod_sc.get("runAsUser"))
    if uid is None or uid == 0:
        bad("runAsUser must be a non-zero uid")
    if c_sc.get("allowPrivilegeEscalation") is not False:
        bad("allowPrivilegeEscalation must be false")

    # PHIGUARD_HOME is a writable emptyDir.
    home = config.get("PHIGUARD_HOME")
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    mounts = {m["mountPath"]: m for m in c.get("volumeMounts", [])}
    if home not in mounts:
        bad("PHIGUARD_HOME is not a mounted volume")
    elif "emptyDir" not in volumes.get(mounts[home]["name"], {}):
        bad("PHIGUARD_HOME must be an emptyDir")
    elif mounts[home].get("readOnly"):
        bad("PHIGUARD_HOME must be writable")

    # Resources.
    res = c.get("resources", {})
    for kind in ("cpu", "memory"):
        if kind not in res.get("requests", {}):
            bad(f"resources.requests.{kind} is missing")
    if "memory" not in res.get("limits", {}):
        bad("resources.limits.memory is missing")

    # Prometheus scrape annotation on the pod template.
    ann = pod.get("metadata", {}).get("annotations", {})
    if ann.get("prometheus.io/scrape") != "true":
        bad('pod annotation prometheus.io/scrape must be "true"')
    if ann.get("prometheus.io/path", "/metrics") != "/metrics":
        bad("prometheus.io/path must be /metrics")
    if str(ann.get("prometheus.io/port", "")) != str(probe_port):
        bad("prometheus.io/port must be the probe port (PHIGUARD_PROBE_PORT)")

    # Replicas and the fallback share agree.
    if str(dep["spec"].get("replicas")) != str(config.get("PHIGUARD_CLUSTER_REPLICAS")):
        bad("PHIGUARD_CLUSTER_REPLICAS must equal the Deployment's replicas")

    # The Service selects these pods and reaches port 8080.
    labels = pod["metadata"].get("labels", {})
    services = [
        s
        for s in find(docs, "Service")
        if s["spec"].get("selector")
        and all(labels.get(k) == v for k, v in s["spec"]["selector"].items())
    ]
    if not services:
        bad("no Service selects the server pods")
    for s in services:
        for p in s["spec"].get("ports", []):
            if port_number(c, p.get("targetPort", p.get("port"))) != 8080:
                bad(f"Service {s['metadata']['name']} does not reach port 8080")

    # Optional Redis: if present, the URL points at its Service.
    url = config.get("PHIGUARD_REDIS_URL", "")
    redis_deps = [
        d
        for d in find(docs, "Deployment")
        if d["spec"]["template"]["metadata"].get("labels", {}).get("app.kubernetes.io/component")
        == "redis"
    ]
    if redis_deps:
        host = re.sub(r"^redis://(?:[^@/]*@)?([^:/]+).*$", r"\1", url)
        if not find(docs, "Service", host):
            bad(f"PHIGUARD_REDIS_URL host {host!r} is not the bundled Redis Service")

    # The kustomization lists every resource file.
    kust = KUBE / "kustomization.yaml"
    if kust.exists():
        listed = set(yaml.safe_load(kust.read_text()).get("resources", []))
        files = {d["_file"] for d in docs if d.get("kind") != "Kustomization"}
        for f in sorted(files - listed):
            bad(f"kustomization.yaml does not list {f}")
    return problems


def check_dockerfile(text: str) -> list[str]:
    problems: list[str] = []
    bad = problems.append
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    froms = [ln for ln in lines if ln.upper().startswith("FROM ")]
    if len(froms) < 2:
        bad("Dockerfile must be multi-stage")
    elif "slim" not in froms[-1]:
        bad("the runtime stage must be a slim image")
    if not any("cargo build --release --locked" in ln for ln in lines):
        bad("the builder must run cargo build --release --locked")
    users = [ln.split(None, 1)[1] for ln in lines if ln.upper().startswith("USER ")]
    if not users or not re.match(r"^[1-9]\d*(:\d+)?$", users[-1]):
        bad("the final USER must be a numeric non-root uid")
    model_copies = [ln.split()[-1] for ln in lines if re.match(r"^COPY\s+models/phiguard-deid\s", ln)]
    if not model_copies:
        bad("the bundled model models/phiguard-deid must be copied into the image")
    # The binary looks for the model beside itself (src/models/bundle.rs): with the binary in
    # <prefix>/bin, the FHS place is <prefix>/share/phiguard/models/phiguard-deid.
    bins = [ln.split()[-1] for ln in lines if re.match(r"^COPY\s+--from=\S+\s+\S+/phiguard\s", ln)]
    if bins and model_copies:
        prefix = bins[-1].rsplit("/", 2)[0]
        want = f"{prefix}/share/phiguard/models/phiguard-deid"
        if model_copies[-1].rstrip("/") != want:
            bad(f"the bundled model must be copied to {want}, where the binary looks for it")
    if "EXPOSE 8080" not in lines:
        bad("Dockerfile must EXPOSE 8080")
    # The image's probe port: exposed, and the one its HEALTHCHECK asks.
    probe = re.search(r"\bPHIGUARD_PROBE_PORT=(\d+)", text)
    if not probe:
        bad("the image must set PHIGUARD_PROBE_PORT")
    else:
        port = probe.group(1)
        if f"EXPOSE {port}" not in lines:
            bad(f"Dockerfile must EXPOSE the probe port {port}")
        checks = [ln for ln in lines if "/dev/tcp/" in ln]
        if not any(f"/dev/tcp/127.0.0.1/{port} " in ln for ln in checks):
            bad(f"the HEALTHCHECK must ask the probe port {port}")
    if 'ENTRYPOINT ["phiguard"]' not in lines:
        bad('ENTRYPOINT must be ["phiguard"]')
    if 'CMD ["serve", "--host", "0.0.0.0"]' not in lines:
        bad('CMD must be ["serve", "--host", "0.0.0.0"]')
    if not any(ln.upper().startswith("HEALTHCHECK ") for ln in lines):
        bad("Dockerfile must have a HEALTHCHECK")
    return problems


def self_test() -> list[str]:
    """Each mutation must be caught; returns the mutations that were not."""
    base = load_docs()
    docker = DOCKERFILE.read_text()
    failures = []
    if check_kubernetes(base) or check_dockerfile(docker):
        failures.append("the committed files do not pass, so the self-test cannot run")
        return failures

    def c0(docs):
        return server_deployment(docs)["spec"]["template"]["spec"]["containers"][0]

    def spec(docs):
        return server_deployment(docs)["spec"]["template"]["spec"]

    def cm(docs):
        return find(docs, "ConfigMap")[0]["data"]

    kube_mutations = {
        "liveness path": lambda d: c0(d)["livenessProbe"]["httpGet"].update(path="/health"),
        "liveness on the main port": lambda d: c0(d)["livenessProbe"]["httpGet"].update(
            port="http"
        ),
        "startup on the main port": lambda d: c0(d)["startupProbe"]["httpGet"].update(port=8080),
        "no probe port": lambda d: cm(d).pop("PHIGUARD_PROBE_PORT"),
        "probe port not in the pod": lambda d: cm(d).update(PHIGUARD_PROBE_PORT="9000"),
        "scrape on the main port": lambda d: server_deployment(d)["spec"]["template"][
            "metadata"
        ]["annotations"].update({"prometheus.io/port": "8080"}),
        "readiness path": lambda d: c0(d)["readinessProbe"]["httpGet"].update(path="/livez"),
        "no preStop": lambda d: c0(d).pop("lifecycle"),
        "short grace": lambda d: spec(d).update(terminationGracePeriodSeconds=30),
        "long drain": lambda d: cm(d).update(OPENMED_SERVICE_SHUTDOWN_DRAIN_SECONDS="60"),
        "writable root": lambda d: c0(d)["securityContext"].update(readOnlyRootFilesystem=False),
        "root allowed": lambda d: (
            c0(d)["securityContext"].pop("runAsNonRoot"),
            spec(d)["securityContext"].pop("runAsNonRoot"),
        ),
        "no requests": lambda d: c0(d)["resources"].pop("requests"),
        "no scrape": lambda d: server_deployment(d)["spec"]["template"]["metadata"].pop(
            "annotations"
        ),
        "home not emptyDir": lambda d: spec(d).update(
            volumes=[
                {"name": v["name"], "configMap": {"name": "x"}} for v in spec(d)["volumes"]
            ]
        ),
        "token in configmap": lambda d: cm(d).update(PHIGUARD_AUTH_TOKEN="x"),
        "replicas mismatch": lambda d: server_deployment(d)["spec"].update(replicas=3),
        "no cluster admissions": lambda d: cm(d).pop("PHIGUARD_CLUSTER_ADMISSIONS"),
        "service port": lambda d: find(d, "Service", "phiguard")[0]["spec"]["ports"][0].update(
            targetPort=9090
        ),
        "redis host": lambda d: cm(d).update(PHIGUARD_REDIS_URL="redis://elsewhere:6379"),
    }
    for name, mutate in kube_mutations.items():
        docs = copy.deepcopy(base)
        mutate(docs)
        if not check_kubernetes(docs):
            failures.append(f"kubernetes mutation not caught: {name}")

    docker_mutations = {
        "root user": ("USER 10001:10001", "USER root"),
        "no model": ("COPY models/phiguard-deid", "COPY models/other"),
        "model out of reach": (
            "/usr/local/share/phiguard/models/phiguard-deid",
            "/opt/phiguard/models/phiguard-deid",
        ),
        "single stage": ("FROM rust:", "# FROM rust:"),
        "port": ("EXPOSE 8080", "EXPOSE 9000"),
        "probe port not exposed": ("EXPOSE 8081", "EXPOSE 9001"),
        "no probe port": ("PHIGUARD_PROBE_PORT=8081", "PHIGUARD_OTHER=8081"),
        "healthcheck on the main port": ("/dev/tcp/127.0.0.1/8081", "/dev/tcp/127.0.0.1/8080"),
        "unlocked": ("--release --locked", "--release"),
    }
    for name, (old, new) in docker_mutations.items():
        if old not in docker:
            failures.append(f"dockerfile mutation does not apply: {name}")
        elif not check_dockerfile(docker.replace(old, new)):
            failures.append(f"dockerfile mutation not caught: {name}")
    return failures


def main(argv: list[str]) -> int:
    if "--self-test" in argv:
        failures = self_test()
        for f in failures:
            print(f"FAIL {f}")
        print(f"check_manifests self-test: {0 if failures else 1} passed, {len(failures)} failed")
        return 1 if failures else 0
    problems = check_kubernetes(load_docs()) + check_dockerfile(DOCKERFILE.read_text())
    for p in problems:
        print(f"problem: {p}")
    print(f"check_manifests: {0 if problems else 1} passed, {1 if problems else 0} failed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
