# syntax=docker/dockerfile:1
# One image for every groundwatch service; the command picks the service:
#   docker run groundwatch groundwatch-judge        (or -generator, -rag-runner, -analytics, -reference-rag)
#   docker run groundwatch groundwatch db-upgrade   (one-shot: migrations; also topics-create)
# Set GW_PORT for the services: the health check reads it.

ARG PYTHON_VERSION=3.11.13
ARG DEBIAN_RELEASE=bookworm

# ---- build: resolve and install the project and its wheels into a venv -----------------------
FROM python:${PYTHON_VERSION}-slim-${DEBIAN_RELEASE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_INPUT=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /src
# Every dependency ships manylinux wheels (numpy, scipy, orjson, psycopg[binary]): no compiler.
COPY pyproject.toml README.md ./
COPY shared ./shared
COPY services ./services
RUN --mount=type=cache,target=/root/.cache/pip \
    pip install --upgrade pip \
 && pip install ".[postgres]" \
 && groundwatch --help >/dev/null

# ---- runtime: the venv only, as an unprivileged user -----------------------------------------
FROM python:${PYTHON_VERSION}-slim-${DEBIAN_RELEASE} AS runtime
LABEL org.opencontainers.image.title="groundwatch" \
      org.opencontainers.image.description="Grounded, continuous evaluation of production RAG systems" \
      org.opencontainers.image.licenses="Apache-2.0"
RUN groupadd --system --gid 10001 groundwatch \
 && useradd --system --uid 10001 --gid groundwatch --home-dir /app --shell /usr/sbin/nologin groundwatch \
 && install -d -o groundwatch -g groundwatch /app
COPY --from=build /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    GW_HOST=0.0.0.0
WORKDIR /app
USER 10001:10001
EXPOSE 8001 8002 8003 8004 8005
# Liveness of the HTTP services (/healthz); compose overrides it with /readyz for depends_on,
# and one-shot commands (db-upgrade, topics-create) disable it.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ['GW_PORT'], timeout=4)"]
CMD ["groundwatch", "--help"]
