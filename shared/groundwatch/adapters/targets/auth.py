"""Per-request authentication of HTTP targets: OAuth2 client credentials, or a custom signer.

A fixed ``Authorization: Bearer ${TOKEN}`` header holds one value for the whole run, and a
continuous run outlives the token. :class:`OAuth2ClientCredentials` fetches a token from the
token endpoint (RFC 6749 §4.4), shares it between every request of the target, fetches the next
one ``refresh_before_s`` before it expires (one fetch at a time, whoever asks), and fetches
again once when the endpoint answers 401 to a token it thought valid (revoked early).
:class:`SignerAuth` calls a user's function per request for providers with their own schemes
(HMAC signatures, AWS SigV4): it gets the request and returns the headers to add.

A token or secret never reaches a message: errors name the token URL and the status (and the
OAuth2 ``error`` code, a short registered word), never the reply's body or a header.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlencode

import orjson

from groundwatch.adapters.targets.base import ErrorKind, TargetError
from groundwatch.adapters.targets.transport import HttpClient
from groundwatch.adapters.throttle import Clock

#: A token endpoint's reply is small; anything larger is not a token reply.
_MAX_TOKEN_REPLY = 64 * 1024
_OAUTH_ERROR = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


class RequestAuth(Protocol):
    """Adds the headers that authenticate one request."""

    async def headers(self, method: str, url: str, body: bytes | None) -> Mapping[str, str]: ...

    def refused(self) -> bool:
        """The endpoint answered 401: True when asking again may help (a fresh token)."""
        ...


@dataclass(frozen=True, slots=True)
class SignRequest:
    """What a signer sees of a request: it returns the headers to add to it."""

    method: str
    url: str
    headers: Mapping[str, str]
    body: bytes | None


Signer = Callable[[SignRequest], Mapping[str, str] | Awaitable[Mapping[str, str]]]


class SignerAuth:
    """Headers from a user's callable, per request (sync or async)."""

    def __init__(self, signer: Signer, name: str, headers: Mapping[str, str]) -> None:
        self._signer = signer
        self.name = name
        self._headers = dict(headers)

    def __repr__(self) -> str:
        return f"SignerAuth({self.name})"

    async def headers(self, method: str, url: str, body: bytes | None) -> Mapping[str, str]:
        try:
            added = self._signer(SignRequest(method, url, self._headers, body))
            if inspect.isawaitable(added):
                added = await added
        except Exception as exc:  # the message may hold what it was signing with: not shown
            raise TargetError(
                ErrorKind.EXCEPTION, f"signer {self.name} failed: {type(exc).__name__}"
            ) from None
        if not isinstance(added, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in added.items()
        ):
            raise TargetError(
                ErrorKind.EXCEPTION, f"signer {self.name} returned no mapping of str headers"
            )
        return added

    def refused(self) -> bool:
        return False


class OAuth2ClientCredentials:
    """A bearer token from the client credentials grant, refreshed before it expires."""

    def __init__(
        self,
        client: HttpClient,
        token_url: str,
        client_id: str,
        client_secret: str,
        *,
        scopes: Sequence[str] = (),
        audience: str | None = None,
        send_as: str = "basic",
        refresh_before_s: float = 60.0,
        timeout_s: float = 30.0,
        clock: Clock = time.monotonic,
    ) -> None:
        self._client = client
        self.token_url = token_url
        self._id = client_id
        self._secret = client_secret
        self._scopes = " ".join(scopes)
        self._audience = audience
        self._send_as = send_as
        self.refresh_before_s = refresh_before_s
        self._timeout_s = timeout_s
        self._clock = clock
        self._token: str | None = None
        self._header: dict[str, str] = {}
        self._renew_at = 0.0
        self._lock = asyncio.Lock()
        #: tokens fetched so far (telemetry, tests)
        self.fetched = 0

    def __repr__(self) -> str:  # never the secret or the token
        return f"OAuth2ClientCredentials({self.token_url})"

    async def headers(self, method: str, url: str, body: bytes | None) -> Mapping[str, str]:
        if self._token is None or self._clock() >= self._renew_at:
            await self._renew(self._token)
        return self._header

    def refused(self) -> bool:
        """A 401 to the current token: drop it, so the next request fetches a fresh one."""
        if self._token is None:
            return False
        self._token = None
        return True

    async def _renew(self, stale: str | None) -> None:
        async with self._lock:
            if self._token is not None and self._token != stale:
                return  # another request renewed it while this one waited
            if self._token is not None and self._clock() < self._renew_at:
                return
            await self._fetch()

    async def _fetch(self) -> None:
        import base64

        form: dict[str, str] = {"grant_type": "client_credentials"}
        if self._scopes:
            form["scope"] = self._scopes
        if self._audience:
            form["audience"] = self._audience
        headers = {
            "Content-Type": "application/x-www-form-urlencoded",
            "Accept": "application/json",
        }
        if self._send_as == "basic":
            pair = f"{_form(self._id)}:{_form(self._secret)}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
        else:
            form["client_id"] = self._id
            form["client_secret"] = self._secret
        where = f"token endpoint {self.token_url}"
        try:
            async with asyncio.timeout(self._timeout_s):
                reply = await self._client.exchange(
                    "POST", self.token_url, headers, urlencode(form).encode(), _MAX_TOKEN_REPLY
                )
        except TimeoutError:
            raise TargetError(
                ErrorKind.TIMEOUT, f"{where}: no reply within {self._timeout_s:g}s"
            ) from None
        except TargetError as exc:
            raise TargetError(exc.kind, f"{where}: {exc}") from None
        try:
            doc = orjson.loads(reply.body) if reply.body else {}
        except orjson.JSONDecodeError:
            doc = None
        if reply.status != 200:
            code = doc.get("error") if isinstance(doc, dict) else None
            said = f" ({code})" if isinstance(code, str) and _OAUTH_ERROR.match(code) else ""
            transient = reply.status >= 500 or reply.status == 429
            kind = ErrorKind.HTTP_5XX if transient else ErrorKind.HTTP_4XX
            what = "failed" if transient else "refused the client credentials"
            raise TargetError(kind, f"{where} {what}: HTTP {reply.status}{said}")
        token = doc.get("access_token") if isinstance(doc, dict) else None
        if not isinstance(token, str) or not token or any(c in token for c in "\r\n\0"):
            raise TargetError(ErrorKind.BAD_PAYLOAD, f"{where}: reply holds no access_token")
        expires = doc.get("expires_in") if isinstance(doc, dict) else None
        now = self._clock()
        if isinstance(expires, int | float) and not isinstance(expires, bool) and expires > 0:
            # a short-lived token is renewed halfway through, not after it is already dead
            margin = min(self.refresh_before_s, float(expires) / 2)
            self._renew_at = now + float(expires) - margin
        else:
            self._renew_at = float("inf")  # no lifetime given: renewed when refused (401)
        self._token = token
        self._header = {"Authorization": f"Bearer {token}"}
        self.fetched += 1


def _form(value: str) -> str:
    """RFC 6749 §2.3.1: the client id and secret are form-encoded before Basic."""
    from urllib.parse import quote_plus

    return quote_plus(value)


__all__ = ["OAuth2ClientCredentials", "RequestAuth", "SignRequest", "Signer", "SignerAuth"]
