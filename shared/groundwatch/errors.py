"""One exception base and the outcome exceptions the consumer loop sorts on."""


class GroundwatchError(Exception):
    """Base of every error this package raises on purpose."""


class ConfigError(GroundwatchError):
    """Configuration is invalid; raised at start-up, naming the field."""


class PoisonMessage(GroundwatchError):
    """The message can never be processed (unparseable, schema-invalid): dead-letter it, go on."""


class RetryLater(GroundwatchError):
    """A transient failure (dependency down): do not commit; the message will be redelivered."""


class BusUnavailable(RetryLater):
    """The message bus could not take or give messages within its adapter's retry budget (a
    broker down, no leader elected): nothing was committed, the caller backs off and tries
    again. A fault the bus marks fatal is raised as it is, never as this."""


class StoreUnavailable(RetryLater):
    """The store is down, unreachable, busy or full (classified by ``groundwatch.adapters.db.
    faults``): nothing of the message is at fault, so the consume loop waits the outage out with
    its backoff — even for a message it is handling alone — and never dead-letters for it."""


class Unstorable(GroundwatchError):
    """The store is up but refuses this data (a value, a constraint): retrying cannot help, so the
    consume loop isolates the message that causes it and dead-letters it."""


class BudgetExhausted(GroundwatchError):
    """A spending limit the user set is reached: the call was not made (not a failure)."""


class UnsafeSQL(GroundwatchError):
    """An SQL text failed validation and was not run."""


def parse_error_line(exc: Exception) -> str:
    """A YAML or TOML parser's error on one line: where it is and what is wrong.

    PyYAML's message spans several lines (the snippet, a caret, a second mark), and every
    failure of a command must say why in one line."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None)
    if mark is None or not problem:
        return " ".join(str(exc).split())
    context = getattr(exc, "context", None)
    what = f"{context}: {problem}" if context else str(problem)
    return f"line {mark.line + 1}, column {mark.column + 1}: {what}"


class Reject:
    """A handler's outcome for one message it will not apply (not an exception: the rest of the
    batch goes on): the consume loop dead-letters the message with ``reason``, from the record it
    came in, so it is kept whole, counted and logged like any dead letter — never dropped."""

    __slots__ = ("message", "reason")

    def __init__(self, message: object, reason: str) -> None:
        self.message = message
        self.reason = reason
