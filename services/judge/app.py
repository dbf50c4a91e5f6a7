"""The judge service: a FastAPI shell around the judge stage (rules, the LLM tier when
configured, answer metrics, the self-audit and the reference-free evaluators)."""

from __future__ import annotations

from fastapi import FastAPI

from groundwatch.app.services import judge_service, settings_or_exit
from groundwatch.runtime.service import build_app, serve
from services.judge.settings import JudgeServiceSettings


def create_app(settings: JudgeServiceSettings) -> FastAPI:
    return build_app(
        "judge",
        lambda: judge_service(settings),
        liveness_timeout_s=settings.liveness_timeout_s,
        ready_deadline_s=settings.ready_deadline_s,
    )


def main() -> None:
    """Console entry ``groundwatch-judge``."""
    settings = settings_or_exit(JudgeServiceSettings)
    serve(create_app(settings), settings)
