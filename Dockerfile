# The trainspotter CI gate: used by action.yml, and by `docker run` in GitLab and other CI.
#
# Two stages: `build` installs the pinned, hash-checked requirements (wheels only: no
# compiler is needed or left behind) and the package into a venv; the final stage copies
# that venv onto a clean base and runs as an unprivileged user.
#
# BASE_IMAGE is an argument so the tests can build on a local base image without Docker
# Hub (scripts/container-engine.sh); any Debian-like image with python3 (>= 3.11) and
# venv works. Regenerate the lock file with `make lock`.
ARG BASE_IMAGE=python:3.12-slim

FROM ${BASE_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_ROOT_USER_ACTION=ignore
RUN python3 -m venv /opt/trainspotter
COPY requirements/docker.txt /tmp/requirements.txt
RUN /opt/trainspotter/bin/pip install --require-hashes --only-binary=:all: --no-deps \
        -r /tmp/requirements.txt
COPY pyproject.toml README.md LICENSE /src/
COPY trainspotter /src/trainspotter
# --no-build-isolation: build with the pinned setuptools from the lock file (a runtime
# dependency of tensorboard), not whatever PyPI offers today. Then drop what only
# installing needs (pip) and the libraries' own test suites (pandas, numpy: ~100 MB),
# except bottleneck's: its __init__ imports bottleneck.tests.util.
RUN /opt/trainspotter/bin/pip install --no-deps --no-build-isolation /src \
    && /opt/trainspotter/bin/pip uninstall --yes pip \
    && find /opt/trainspotter/lib -type d -name tests -path '*/site-packages/*' \
        -not -path '*/site-packages/bottleneck/tests' -prune -exec rm -rf {} +
COPY entrypoint.py /opt/trainspotter/entrypoint.py

FROM ${BASE_IMAGE}
LABEL org.opencontainers.image.title="trainspotter" \
      org.opencontainers.image.description="Diagnose ML training logs; a CI gate" \
      org.opencontainers.image.licenses="MIT"
ENV PATH=/opt/trainspotter/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    MPLCONFIGDIR=/tmp
COPY --from=build /opt/trainspotter /opt/trainspotter
RUN groupadd --gid 10001 trainspotter \
    && useradd --no-log-init --uid 10001 --gid 10001 \
        --create-home --home-dir /home/trainspotter --shell /usr/sbin/nologin trainspotter
USER 10001:10001
WORKDIR /work
ENTRYPOINT ["/opt/trainspotter/bin/python", "/opt/trainspotter/entrypoint.py"]
