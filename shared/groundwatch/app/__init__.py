"""The service layer: the use cases and the one bootstrap.

Entry points — the ``groundwatch`` command (:mod:`groundwatch.cli`) and the five services
(``services/<name>/``) — parse their arguments or settings, call a use case here and print or
serve what it returns; they never open a database engine, build an adapter or reach a stage
themselves (import-linter keeps it so). What they share lives here once: loading a dataset,
building the judge, the targets, the stores and the LLM clients from settings, running a cycle
embedded or as services, and replaying the store into a typed report.

Heavy libraries (SQLAlchemy, scipy, the HTTP and LLM clients) are imported inside the use cases,
so ``groundwatch --help`` stays fast.
"""
