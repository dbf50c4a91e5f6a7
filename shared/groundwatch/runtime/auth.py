"""Bearer-token guards: one for endpoints that change state, an optional one for the read
endpoints that serve evidence; health, readiness and telemetry (``/metrics``) stay open."""

from __future__ import annotations

import secrets
from collections.abc import Callable

from fastapi import Header, HTTPException, status


def require_token(expected: str | None) -> Callable[[str | None], None]:
    """A FastAPI dependency checking ``Authorization: Bearer <GW_API_TOKEN>``.

    With no token configured, state-changing endpoints are closed rather than open: a deployment
    that forgot the secret must not accept writes from anyone.
    """

    def check(authorization: str | None = Header(default=None)) -> None:
        if not expected:
            raise HTTPException(
                status.HTTP_403_FORBIDDEN, "GW_API_TOKEN is not set: endpoint closed"
            )
        scheme, _, given = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not secrets.compare_digest(
            given.encode(), expected.encode()
        ):
            raise HTTPException(
                status.HTTP_401_UNAUTHORIZED,
                "bearer token required",
                {"WWW-Authenticate": "Bearer"},
            )

    return check


def require_read_token(expected: str | None) -> Callable[[str | None], None]:
    """A FastAPI dependency for the evidence endpoints (``/groups``, ``/report``…).

    They serve ground-truth answers and the target's replies, which may be confidential. With
    ``GW_API_READ_TOKEN`` set they need ``Authorization: Bearer <token>`` (401 otherwise); unset,
    they stay open, as a read-only dashboard usually is (documented in RELIABILITY.md).
    """
    if not expected:

        def open_endpoint(authorization: str | None = Header(default=None)) -> None:
            return None

        return open_endpoint
    return require_token(expected)
