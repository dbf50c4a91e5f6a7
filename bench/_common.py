"""What every benchmark of this directory shares: the machine description and the JSON output."""

from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path
from typing import Any


def machine() -> dict[str, Any]:
    """Enough to tell two runs' machines apart (and a busy machine from a slow one)."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpu": model,
        "cpus": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }


def emit(result: dict[str, Any], out: Path | None) -> None:
    """JSON on stdout, and in ``out`` when given."""
    text = json.dumps(result, indent=2)
    print(text)
    sys.stdout.flush()
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n")


def delete_topics(bootstrap: str, prefix: str) -> None:
    """Best effort: drop a run's topics so repeated runs do not pile up on a shared broker."""
    import asyncio
    import contextlib

    from aiokafka.admin import AIOKafkaAdminClient

    async def drop() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            names = [t for t in await admin.list_topics() if t.startswith(prefix)]
            if names:
                await admin.delete_topics(names)
        finally:
            await admin.close()

    with contextlib.suppress(Exception):
        asyncio.run(asyncio.wait_for(drop(), 30))
