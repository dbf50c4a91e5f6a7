from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from groundwatch.adapters.targets import (
    ErrorKind,
    HttpJsonTarget,
    TargetError,
    expand_env,
    render_body,
)
from groundwatch.adapters.targets.paths import PathError, ReplyPath
from groundwatch.errors import ConfigError
from groundwatch.reference_rag.app import create_app
from groundwatch.reference_rag.settings import ReferenceRagSettings
from tests.unit._rag_corpus import CORPUS

pytestmark = pytest.mark.unit


def _mock(handler: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


def test_render_body_escapes_the_query() -> None:
    nasty = 'Say "hi"\nand \\ {braces} \u00e9'
    body = render_body('{"q": "{query}", "k": 3}', nasty)
    assert json.loads(body) == {"q": nasty, "k": 3}
    assert json.loads(render_body({"input": {"text": "{query}", "n": [1]}}, nasty)) == {
        "input": {"text": nasty, "n": [1]}
    }


def test_body_template_must_put_query_inside_a_string() -> None:
    with pytest.raises(ConfigError, match="body_template"):
        HttpJsonTarget(
            _mock(lambda r: httpx.Response(200)), "http://x", body_template='{"q": {query}}'
        )


def test_expand_env_names_the_missing_variable_not_values() -> None:
    env = {"TOKEN": "s3cr3t"}
    assert expand_env("Bearer ${TOKEN}", env, "headers.Authorization") == "Bearer s3cr3t"
    with pytest.raises(ConfigError, match=r"headers\.X: environment variable NOPE is not set"):
        expand_env("${NOPE}", env, "headers.X")


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("data.answer", "x"),
        ("data.docs.1.id", 2),
        ("$.data.answer", "x"),
        ("$.data.docs[0].t", "a"),
    ],
)
def test_reply_path_one(expr: str, expected: object) -> None:
    doc = {"data": {"answer": "x", "docs": [{"id": 1, "t": "a"}, {"id": 2, "t": "b"}]}}
    assert ReplyPath(expr).one(doc) == expected


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("data.docs.*.id", [1, 2]),
        ("data.ids", ["a", "b"]),
        ("$.data.docs[*].t", ["a", "b"]),
        ("$.data.ids", ["a", "b"]),
        ("data.none", []),
        ("data.empty.*.id", []),
        ("$.data.empty[*].id", []),
    ],
)
def test_reply_path_many(expr: str, expected: list[object]) -> None:
    doc = {
        "data": {
            "docs": [{"id": 1, "t": "a"}, {"id": 2, "t": "b"}],
            "ids": ["a", "b"],
            "none": None,
            "empty": [],
        }
    }
    assert ReplyPath(expr).many(doc) == expected


def test_reply_path_errors() -> None:
    doc = {"a": {"b": [1]}, "s": "text"}
    with pytest.raises(PathError, match="key 'x' missing"):
        ReplyPath("a.x").one(doc)
    with pytest.raises(PathError, match="out of range"):
        ReplyPath("a.b.3").one(doc)
    with pytest.raises(PathError, match="expected a list"):
        ReplyPath("s").many(doc)
    with pytest.raises(ValueError, match="invalid"):
        ReplyPath("a..b")
    with pytest.raises(ValueError, match="invalid JSONPath"):
        ReplyPath("$.[[")


async def test_request_shape_headers_and_nested_reply() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(
            200,
            json={"result": {"text": "Oslo", "sources": [{"id": "d1", "body": "ctx one"}]}},
        )

    target = HttpJsonTarget(
        _mock(handler),
        "http://rag.local/v1/ask",
        headers={"Authorization": "Bearer s3cr3t"},
        body_template={"question": "{query}", "top_k": 2},
        answer_path="result.text",
        retrieved_ids_path="$.result.sources[*].id",
        contexts_path="result.sources.*.body",
    )
    reply = await target.ask('Where is "Acme"?')
    assert (reply.answer, reply.retrieved_ids, reply.contexts) == ("Oslo", ["d1"], ["ctx one"])
    req = seen[0]
    assert req.method == "POST" and req.headers["Authorization"] == "Bearer s3cr3t"
    assert req.headers["Content-Type"] == "application/json"
    assert json.loads(req.content) == {"question": 'Where is "Acme"?', "top_k": 2}
    assert "s3cr3t" not in repr(target)


async def test_get_with_query_in_url() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"answer": request.url.params["q"]})

    target = HttpJsonTarget(
        _mock(handler),
        "http://rag.local/ask?q={query}",
        method="GET",
        body_template=None,
        retrieved_ids_path=None,
        contexts_path=None,
    )
    reply = await target.ask("a&b c?")
    assert reply.answer == "a&b c?" and reply.retrieved_ids == [] and reply.contexts == []


@pytest.mark.parametrize(
    ("response", "kind", "transient"),
    [
        (httpx.Response(500), ErrorKind.HTTP_5XX, True),
        (httpx.Response(503, headers={"Retry-After": "2"}), ErrorKind.HTTP_5XX, True),
        (httpx.Response(429, headers={"Retry-After": "1.5"}), ErrorKind.RATE_LIMITED, True),
        (httpx.Response(404), ErrorKind.HTTP_4XX, False),
        (httpx.Response(408), ErrorKind.TIMEOUT, True),
        (httpx.Response(200, content=b"<html>"), ErrorKind.BAD_PAYLOAD, False),
        (httpx.Response(200, json={"text": "no answer key"}), ErrorKind.BAD_PAYLOAD, False),
        (httpx.Response(200, json={"answer": {"nested": 1}}), ErrorKind.BAD_PAYLOAD, False),
        (
            httpx.Response(200, json={"answer": "a", "retrieved_ids": "d1"}),
            ErrorKind.BAD_PAYLOAD,
            False,
        ),
    ],
)
async def test_failures_become_typed_errors(
    response: httpx.Response, kind: ErrorKind, transient: bool
) -> None:
    target = HttpJsonTarget(_mock(lambda r: response), "http://rag.local/q")
    with pytest.raises(TargetError) as err:
        await target.ask("q")
    assert err.value.kind is kind and err.value.transient is transient
    if "Retry-After" in response.headers:
        assert err.value.retry_after == float(response.headers["Retry-After"])


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (httpx.ConnectError("refused"), ErrorKind.CONNECTION),
        (httpx.ReadTimeout("slow"), ErrorKind.TIMEOUT),
        (httpx.RemoteProtocolError("reset"), ErrorKind.CONNECTION),
    ],
)
async def test_transport_failures(exc: Exception, kind: ErrorKind) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise exc

    with pytest.raises(TargetError) as err:
        await HttpJsonTarget(_mock(handler), "http://rag.local/q").ask("q")
    assert err.value.kind is kind


async def test_oversize_body_refused_and_long_answer_truncated() -> None:
    big = {"answer": "x" * 30_000, "retrieved_ids": ["d"] * 300, "contexts": ["c" * 10] * 80}
    target = HttpJsonTarget(_mock(lambda r: httpx.Response(200, json=big)), "http://r/q")
    reply = await target.ask("q")
    assert reply.truncated and len(reply.answer) == 20_000
    assert (
        reply.contexts_truncated and len(reply.contexts) == 50 and len(reply.retrieved_ids) == 200
    )
    small_cap = HttpJsonTarget(
        _mock(lambda r: httpx.Response(200, json=big)), "http://r/q", max_response_bytes=1000
    )
    with pytest.raises(TargetError, match="larger than 1000 bytes") as err:
        await small_cap.ask("q")
    assert err.value.kind is ErrorKind.BAD_PAYLOAD


async def test_reference_rag_in_process_through_asgi_transport() -> None:
    app = create_app(ReferenceRagSettings(rag_retriever="bm25"), dict(CORPUS))
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://rag"
    ) as client:
        target = HttpJsonTarget(client, "http://rag/query")
        reply = await target.ask("Which city is Acme Robotics headquartered in?")
    assert "Oslo" in reply.answer
    assert reply.retrieved_ids[0] == "client-acme"
    assert reply.contexts[0] == CORPUS["client-acme"]


async def test_a_null_answer_is_an_empty_answer_and_a_missing_one_an_error() -> None:
    """``{"answer": null}`` is the endpoint saying it has no answer: judged (as empty), so its
    group can be a gap; a reply without the answer key does not match the path: bad_payload."""
    null = HttpJsonTarget(_mock(lambda r: httpx.Response(200, json={"answer": None})), "http://x/q")
    reply = await null.ask("q")
    assert reply.answer == "" and reply.retrieved_ids == []
    gone = HttpJsonTarget(_mock(lambda r: httpx.Response(200, json={"other": 1})), "http://x/q")
    with pytest.raises(TargetError) as err:
        await gone.ask("q")
    assert err.value.kind is ErrorKind.BAD_PAYLOAD


async def test_a_missing_evidence_key_is_named_once_with_the_setting_to_change(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A reply without the default ``retrieved_ids``/``contexts`` keys is an answer without
    evidence; the one warning says which target setting points there and that null turns it off
    (it said only that the key was missing)."""
    target = HttpJsonTarget(
        _mock(lambda r: httpx.Response(200, json={"answer": "Paris"})), "http://x/q"
    )
    with caplog.at_level("WARNING"):
        for _ in range(3):
            assert (await target.ask("q")).retrieved_ids == []
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 2  # once per path, not per reply
    assert "set retrieved_ids_path to where the reply has it, or to null" in warned[0]
    assert "set contexts_path" in warned[1]
    quiet = HttpJsonTarget(
        _mock(lambda r: httpx.Response(200, json={"answer": "Paris"})),
        "http://x/q",
        retrieved_ids_path=None,
        contexts_path=None,
    )
    caplog.clear()
    with caplog.at_level("WARNING"):
        await quiet.ask("q")
    assert not caplog.records


async def test_an_escaped_lone_surrogate_is_an_answer_not_a_bad_payload() -> None:
    """JSON's grammar allows "\\ud800" (Python's json.dumps writes it); orjson refuses it, and
    the whole reply was a bad_payload error. The answer arrives; the contract replaces the
    character and flags it."""
    body = b'{"answer": "Lisbon \\ud800", "retrieved_ids": ["d\\udfff"], "contexts": []}'
    target = HttpJsonTarget(_mock(lambda r: httpx.Response(200, content=body)), "http://x/q")
    reply = await target.ask("q")
    assert reply.answer == "Lisbon \ud800" and reply.retrieved_ids == ["d\udfff"]
    with pytest.raises(TargetError) as err:  # still not JSON: still one typed error
        await HttpJsonTarget(
            _mock(lambda r: httpx.Response(200, content=b'{"answer": "\\ud80')), "http://x/q"
        ).ask("q")
    assert err.value.kind is ErrorKind.BAD_PAYLOAD


@pytest.mark.parametrize("status", [300, 301, 302, 303, 304, 307, 308])
async def test_a_redirect_is_a_target_error_of_its_own_kind(status: int) -> None:
    """A 3xx is the endpoint sending the question elsewhere: its body — even one that parses as
    an answer — is never judged (a 302 reply's body used to be judged as the answer)."""
    reply = httpx.Response(
        status, headers={"Location": "http://login.local/"}, json={"answer": "Paris"}
    )
    with pytest.raises(TargetError) as err:
        await HttpJsonTarget(_mock(lambda r: reply), "http://rag.local/q").ask("q")
    assert err.value.kind is ErrorKind.REDIRECT and err.value.status_code == status
    assert not err.value.transient  # it will redirect again: no retry, no circuit count


@pytest.mark.parametrize(
    ("raw", "answer", "ids"),
    [
        (b'{"answer": 1e400}', "1e400", []),
        (b'{"answer": -1E+400}', "-1E+400", []),
        (b'{"answer": 1e-400}', "1e-400", []),
        (b'{"answer": 123456789012345678901234567890}', "123456789012345678901234567890", []),
        (b'{"answer": 2.50}', "2.50", []),
        (b'{"answer": 1.0}', "1.0", []),
        (b'{"answer": 42, "retrieved_ids": [7, 8]}', "42", ["7", "8"]),
        (b'{"answer": "x", "retrieved_ids": [98765432109876543210987, 1.5e3]}', "x",
         ["98765432109876543210987", "1.5e3"]),
        (b'{"answer": 1e400, "x": "\\ud800"}', "1e400", []),
    ],
)  # fmt: skip
def test_a_numeric_answer_keeps_the_text_the_endpoint_wrote(
    raw: bytes, answer: str, ids: list[str]
) -> None:
    """``1e400`` used to become "inf" (orjson refused it, Python's parser made it a float), a
    30-digit integer lost its digits and ``1e-400`` became "0.0"."""
    target = HttpJsonTarget(_mock(lambda r: httpx.Response(200)), "http://rag.local/q")
    reply = target.parse(raw)
    assert (reply.answer, reply.retrieved_ids) == (answer, ids)


@pytest.mark.parametrize(
    "raw", [b'{"answer": NaN}', b'{"answer": Infinity}', b'{"answer": -Infinity}']
)
def test_non_json_number_constants_are_a_bad_payload(raw: bytes) -> None:
    target = HttpJsonTarget(_mock(lambda r: httpx.Response(200)), "http://rag.local/q")
    with pytest.raises(TargetError) as err:
        target.parse(raw)
    assert err.value.kind is ErrorKind.BAD_PAYLOAD


def test_a_jsonpath_filter_still_compares_numbers_kept_as_text() -> None:
    """The exact re-read keeps numbers floats for whatever compares them."""
    target = HttpJsonTarget(
        _mock(lambda r: httpx.Response(200)),
        "http://rag.local/q",
        answer_path="$.hits[?(@.score > 0.5)].text",
        retrieved_ids_path="$.hits[?(@.score > 0.5)].id",
        contexts_path=None,
    )
    raw = b'{"hits": [{"score": 0.25, "text": "no", "id": 1}, {"score": 0.75, "text": 1e400, "id": 2}]}'
    reply = target.parse(raw)
    assert (reply.answer, reply.retrieved_ids) == ("1e400", ["2"])
