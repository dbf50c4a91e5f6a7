"""Real servers on 127.0.0.1 for the HTTP target tests: a tiny HTTP/1.1 origin (plain or TLS,
optionally requiring a client certificate), a forwarding proxy (absolute-form requests and
CONNECT tunnels, optional Basic proxy auth), and a private CA made with ``cryptography``."""

from __future__ import annotations

import asyncio
import base64
import datetime
import ipaddress
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


# ------------------------------------------------------------------------------------ the CA
@dataclass(frozen=True)
class Issued:
    cert: Path
    key: Path


@dataclass
class PrivateCA:
    """A CA of its own (no system store knows it) that issues server and client certificates."""

    directory: Path
    name: str = "groundwatch test CA"
    cert_path: Path = field(init=False)

    def __post_init__(self) -> None:
        self._key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, self.name)])
        now = datetime.datetime.now(datetime.UTC)
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(self._key.public_key()), critical=False
            )
            .sign(self._key, hashes.SHA256())
        )
        slug = self.name.replace(" ", "-")
        self.cert_path = self.directory / f"{slug}.pem"
        self.cert_path.write_bytes(self._cert.public_bytes(serialization.Encoding.PEM))

    def issue(self, common_name: str, *, client: bool = False) -> Issued:
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()),
                critical=False,
            )
            .add_extension(
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH]
                ),
                critical=False,
            )
        )
        if not client:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(common_name))]),
                critical=False,
            )
        cert = builder.sign(self._key, hashes.SHA256())
        stem = f"{common_name}-{'client' if client else 'server'}"
        cert_path, key_path = self.directory / f"{stem}.crt", self.directory / f"{stem}.key"
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        return Issued(cert_path, key_path)


def server_tls(issued: Issued, *, client_ca: Path | None = None) -> ssl.SSLContext:
    """The origin's TLS context; with ``client_ca`` it asks for (and requires) a client cert."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(issued.cert, issued.key)
    if client_ca is not None:
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(client_ca)
    return ctx


# -------------------------------------------------------------------------------- the origin
@dataclass
class Request:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes


Handler = Callable[[Request, asyncio.StreamWriter], Awaitable[None]]


async def read_request(reader: asyncio.StreamReader) -> Request | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if ":" in line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    try:
        body = await reader.readexactly(length)
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    return Request(method, target, headers, body)


def response(status: int, body: bytes, content_type: str = "application/json") -> bytes:
    reason = {200: "OK", 401: "Unauthorized", 400: "Bad Request"}.get(status, "Status")
    return b"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s" % (
        status,
        reason.encode(),
        content_type.encode(),
        len(body),
        body,
    )


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


STREAM_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n"
)


@dataclass
class Origin:
    url: str
    requests: list[Request] = field(default_factory=list)
    connections: int = 0


@asynccontextmanager
async def origin(handler: Handler, *, tls: ssl.SSLContext | None = None) -> AsyncIterator[Origin]:
    """An HTTP/1.1 server with keep-alive; ``handler`` writes each request's reply."""
    state = Origin("")

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        state.connections += 1
        try:
            while (request := await read_request(reader)) is not None:
                state.requests.append(request)
                await handler(request, writer)
                await writer.drain()
        except (ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=tls)
    port = server.sockets[0].getsockname()[1]
    state.url = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
    async with server:
        yield state
        server.close()


# --------------------------------------------------------------------------------- the proxy
@dataclass
class Proxy:
    url: str
    #: the request line of every request the proxy got ("CONNECT host:port", "POST http://…")
    seen: list[str] = field(default_factory=list)
    refused: int = 0


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def _relay_reply(up: asyncio.StreamReader, down: asyncio.StreamWriter) -> bool:
    """One Content-Length reply from upstream to the client; False when upstream closed."""
    try:
        head = await up.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return False
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    down.write(head + await up.readexactly(length))
    await down.drain()
    return True


@asynccontextmanager
async def proxy(*, user: str | None = None, password: str | None = None) -> AsyncIterator[Proxy]:
    """A forward proxy: absolute-form HTTP requests are relayed, CONNECT opens a tunnel."""
    state = Proxy("")
    wanted = (
        "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        if user is not None
        else None
    )

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        try:
            while (request := await read_request(reader)) is not None:
                state.seen.append(f"{request.method} {request.target}")
                if wanted is not None and request.headers.get("proxy-authorization") != wanted:
                    state.refused += 1
                    writer.write(
                        b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                        b'Proxy-Authenticate: Basic realm="test"\r\nContent-Length: 0\r\n\r\n'
                    )
                    await writer.drain()
                    continue
                if request.method == "CONNECT":
                    host, _, port = request.target.rpartition(":")
                    up_r, up_w = await asyncio.open_connection(host, int(port))
                    writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    await writer.drain()
                    await asyncio.gather(_pipe(reader, up_w), _pipe(up_r, writer))
                    return
                parts = urlsplit(request.target)
                if upstream is None:
                    upstream = await asyncio.open_connection(parts.hostname, parts.port or 80)
                path = parts.path + (f"?{parts.query}" if parts.query else "")
                head = [f"{request.method} {path} HTTP/1.1"] + [
                    f"{k}: {v}"
                    for k, v in request.headers.items()
                    if k not in ("proxy-authorization", "proxy-connection")
                ]
                upstream[1].write(("\r\n".join(head) + "\r\n\r\n").encode() + request.body)
                await upstream[1].drain()
                if not await _relay_reply(upstream[0], writer):
                    return
        except ConnectionError:
            pass
        finally:
            if upstream is not None:
                upstream[1].close()
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    state.url = f"http://127.0.0.1:{port}"
    async with server:
        yield state
        server.close()


def closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port
