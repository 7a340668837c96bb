#!/usr/bin/env bash
# A private Docker engine for the container tests, without Docker Hub.
#
#   scripts/container-engine.sh start   install docker.io + debootstrap if missing (apt, as
#                                       root), start dockerd on its own data root and socket,
#                                       and import the local base image if it is not there
#   scripts/container-engine.sh stop    stop that dockerd by its PID (and only it)
#   scripts/container-engine.sh status  exit 0 when that dockerd runs, else 1
#   scripts/container-engine.sh env     print `export DOCKER_HOST=...` for the engine
#   scripts/container-engine.sh clean   stop, then delete the engine's folder
#
# The base image (`trainspotter-test-base:bookworm`) is Debian bookworm minbase with
# python3, venv and pip, built with debootstrap from the machine's own Debian mirror and
# imported with `docker import`: the tests build the real Dockerfile on it with
# `--build-arg BASE_IMAGE=trainspotter-test-base:bookworm`. If the machine trusts extra CA
# certificates (/usr/local/share/ca-certificates, e.g. an egress proxy's), they are copied
# into the base's rootfs here, at test time, so pip inside `docker build` can reach PyPI;
# they are never part of the repository or of the published image.
#
# Settings (environment): TRAINSPOTTER_ENGINE_DIR (default /tmp/trainspotter-engine),
# TRAINSPOTTER_DEBIAN_MIRROR (default: the first deb.debian.org-style URI in apt's sources).
set -euo pipefail

ENGINE_DIR="${TRAINSPOTTER_ENGINE_DIR:-/tmp/trainspotter-engine}"
SOCKET="$ENGINE_DIR/docker.sock"
PIDFILE="$ENGINE_DIR/dockerd.pid"
LOG="$ENGINE_DIR/dockerd.log"
BASE_IMAGE="trainspotter-test-base:bookworm"
EXTRA_CA_DIR=/usr/local/share/ca-certificates

say() { echo "container-engine: $*" >&2; }

docker_cli() { docker -H "unix://$SOCKET" "$@"; }

install_tools() {
    local missing=()
    command -v dockerd >/dev/null || missing+=(docker.io)
    command -v debootstrap >/dev/null || missing+=(debootstrap)
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -ne 0 ]; then
        say "need ${missing[*]} (apt-get install as root); not root, giving up"
        exit 1
    fi
    say "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

running() {
    [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null
}

debian_mirror() {
    if [ -n "${TRAINSPOTTER_DEBIAN_MIRROR:-}" ]; then
        echo "$TRAINSPOTTER_DEBIAN_MIRROR"
        return
    fi
    local uri
    uri=$(grep -rhoE '(URIs:|deb) +https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null \
        | grep -oE 'https?://[^ ]+' | head -n1 || true)
    echo "${uri:-http://deb.debian.org/debian}"
}

build_base_image() {
    if docker_cli image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
        say "base image $BASE_IMAGE present"
        return
    fi
    local rootfs="$ENGINE_DIR/rootfs" mirror
    mirror=$(debian_mirror)
    say "debootstrap bookworm from $mirror (about a minute)"
    rm -rf "$rootfs"
    debootstrap --variant=minbase \
        --include=ca-certificates,python3,python3-venv,python3-pip \
        bookworm "$rootfs" "$mirror" >"$ENGINE_DIR/debootstrap.log" 2>&1 \
        || { tail -n 20 "$ENGINE_DIR/debootstrap.log" >&2; exit 1; }
    if compgen -G "$EXTRA_CA_DIR/*.crt" >/dev/null; then
        say "trusting this machine's extra CA certificates inside the test base (not committed)"
        cp "$EXTRA_CA_DIR"/*.crt "$rootfs/usr/local/share/ca-certificates/"
        chroot "$rootfs" update-ca-certificates >/dev/null 2>&1
    fi
    # Debian marks its python as externally managed; the Dockerfile uses a venv anyway.
    rm -f "$rootfs"/usr/lib/python3*/EXTERNALLY-MANAGED
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar --numeric-owner -C "$rootfs" -c . | docker_cli import \
        --change 'ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt' \
        --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
        --change 'ENV LANG=C.UTF-8' \
        --change 'CMD ["/bin/bash"]' \
        - "$BASE_IMAGE" >/dev/null
    rm -rf "$rootfs"
    say "imported $BASE_IMAGE"
}

start() {
    install_tools
    mkdir -p "$ENGINE_DIR"
    if running; then
        say "dockerd already running (pid $(cat "$PIDFILE"))"
    else
        say "starting dockerd (data root $ENGINE_DIR/docker)"
        # setsid: its own session, so the caller's terminal signals do not reach it; it is
        # stopped by the PID written here, never by name.
        setsid dockerd --data-root "$ENGINE_DIR/docker" --exec-root "$ENGINE_DIR/exec" \
            --pidfile "$ENGINE_DIR/dockerd.own.pid" -H "unix://$SOCKET" >"$LOG" 2>&1 </dev/null &
        echo $! >"$PIDFILE"
        local waited=0
        until docker_cli info >/dev/null 2>&1; do
            if ! running; then
                say "dockerd exited; its log:"
                tail -n 30 "$LOG" >&2
                exit 1
            fi
            if [ $waited -ge 60 ]; then
                say "dockerd did not answer in 60 s; its log:"
                tail -n 30 "$LOG" >&2
                stop
                exit 1
            fi
            sleep 1
            waited=$((waited + 1))
        done
        say "dockerd ready on unix://$SOCKET (pid $(cat "$PIDFILE"))"
    fi
    build_base_image
}

stop() {
    if ! running; then
        say "dockerd not running"
        rm -f "$PIDFILE"
        return 0
    fi
    local pid
    pid=$(cat "$PIDFILE")
    say "stopping dockerd (pid $pid)"
    kill -TERM "$pid"
    for _ in $(seq 1 30); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 1
    done
    if kill -0 "$pid" 2>/dev/null; then
        say "dockerd did not stop in 30 s; sending KILL to pid $pid"
        kill -KILL "$pid"
    fi
    rm -f "$PIDFILE"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) running ;;
    env) echo "export DOCKER_HOST=unix://$SOCKET" ;;
    clean) stop; rm -rf "$ENGINE_DIR" ;;
    *)
        echo "usage: $0 start|stop|status|env|clean" >&2
        exit 2
        ;;
esac
