# syntax=docker/dockerfile:1
# phiguard headless server image, for hospital IT and scale-out (docs/deploy.md).
#
#   docker build -t phiguard:0.1.0 .
#   docker run -p 8080:8080 -e PHIGUARD_AUTH_TOKEN=... -e PHIGUARD_ADMIN_TOKEN=... phiguard:0.1.0
#
# Stage 1 builds the release binary from the locked dependency set; stage 2 is a slim
# Debian runtime with only the binary, the bundled phiguard-deid model and CA certificates,
# running as an unprivileged numeric user (so Kubernetes can verify runAsNonRoot).
# `serve --host 0.0.0.0` is refused by the server unless a token is configured.

ARG RUST_VERSION=1.89
ARG DEBIAN_RELEASE=bookworm

FROM rust:${RUST_VERSION}-${DEBIAN_RELEASE} AS builder
WORKDIR /src
COPY . .
# Cache mounts keep the registry and target dir between builds; the binary is copied out
# of the cached target dir because cache mounts are not part of the layer.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p phiguard --bin phiguard \
    && install -D -m 0755 target/release/phiguard /out/phiguard

FROM debian:${DEBIAN_RELEASE}-slim AS runtime
# ca-certificates: TLS to Redis or a model mirror; nothing else is needed at run time.
# Not version-pinned (DL3008): the slim base moves with Debian security updates, and a
# pinned version disappears from the archive when it is superseded.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 phiguard \
    && useradd --system --uid 10001 --gid 10001 --no-create-home \
       --home-dir /var/lib/phiguard --shell /usr/sbin/nologin phiguard \
    && install -d -o 10001 -g 10001 -m 0700 /var/lib/phiguard

WORKDIR /opt/phiguard
COPY --from=builder /out/phiguard /usr/local/bin/phiguard
# Beside the binary at the FHS path it looks in (../share/phiguard/models/phiguard-deid), so the
# read-only root needs no unpacking of the copy embedded in the binary.
COPY models/phiguard-deid /usr/local/share/phiguard/models/phiguard-deid

# PHIGUARD_HOME holds the token file, settings and the model store; in Kubernetes it is an
# emptyDir because the root filesystem is read-only. Probes have a port of their own
# (PHIGUARD_PROBE_PORT), answered while 8080 is at its connection cap.
ENV PHIGUARD_HOME=/var/lib/phiguard \
    PHIGUARD_DEVICE=cpu \
    PHIGUARD_PROBE_PORT=8081
USER 10001:10001
EXPOSE 8080
EXPOSE 8081

# No curl in the image: bash opens the socket itself and checks the status line of /livez.
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
    CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/8081 && printf 'GET /livez HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n' >&3 && head -n1 <&3 | grep -q ' 200 '"]

ENTRYPOINT ["phiguard"]
CMD ["serve", "--host", "0.0.0.0"]
