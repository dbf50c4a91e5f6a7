"""Bearer-token guard for endpoints that change state; health and metrics stay open."""

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
