"""The demo's retrieval corpus, rendered from the database rows — with known facts left out.

Each fact (table, column, primary key) is stated in its own sentence that also names the entity,
with the value written exactly as the SQL answer prints it (ISO dates, plain integers), so a decent
retriever and reader can answer every fact that is present. A seeded choice of facts is left out of
every document: those are the knowledge gaps the evaluation must find, and nothing else in the
corpus mentions them.

Besides the entity documents there are a few company documents (records policy, meeting and
reporting guides) written in the generic vocabulary people use when they ask long, polite
questions. They answer nothing, which is realistic, and they are what a keyword-overlap retriever
wrongly prefers for long queries (GRAMMAR §5).
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from groundwatch.core.generation.answers import format_value
from groundwatch.core.generation.naming import slug
from groundwatch.demo.data import COMPANY, DemoRows

Fact = tuple[str, str, Any]


@dataclass(frozen=True, slots=True)
class OmittedFact:
    """A fact deliberately kept out of the corpus: an injected knowledge gap.

    ``value`` is the answer text the database holds (for a foreign key: the referenced row's name);
    ``doc_id`` is the document where the fact would have been stated.
    """

    table: str
    column: str
    key: int
    entity: str
    value: str
    doc_id: str


@dataclass(slots=True)
class Document:
    doc_id: str
    title: str
    sentences: list[tuple[str, frozenset[Fact]]] = field(default_factory=list)
    boilerplate: list[str] = field(default_factory=list)

    def text(self) -> str:
        facts = " ".join(s for s, _ in self.sentences)
        return "\n\n".join([f"**{self.title}**", facts, *self.boilerplate])

    def facts(self) -> frozenset[Fact]:
        out: set[Fact] = set()
        for _, f in self.sentences:
            out |= f
        return frozenset(out)


def doc_id_for(table: str, name: str) -> str:
    return f"{table.rstrip('s')}-{slug(name)}"


#: One generic line per entity document: real reports and profiles mention the records, the team
#: and the reviews too, which keeps those words common (low IDF) across the corpus.
_ENTITY_GENERIC = {
    "projects": "Progress on this project is reported to the management team at each review "
    "meeting and kept in the company records.",
    "employees": "This staff profile is kept in the company records and updated by the team "
    "after each annual review.",
    "clients": "Information about this client is kept in our records and discussed at the "
    "planning meeting with the management.",
}

_PROJECT_BOILER = (
    "The delivery team holds a weekly coordination call and keeps the risk register current. "
    "Design reviews are scheduled at each stage gate, and changes to scope go through the change "
    "control board before they are accepted.",
    "Health and safety inspections take place on site every month. Lessons learned are recorded "
    "at the end of each phase and shared with the wider engineering community.",
    "Sustainability targets cover embodied carbon, water use and biodiversity net gain. The "
    "quality plan sets out inspection and test plans for every work package.",
)
_EMPLOYEE_BOILER = (
    "Areas of expertise include feasibility studies, stakeholder engagement and technical "
    "assurance. Continuing professional development is logged with the professional body.",
    "Recent training covered digital engineering tools, contract management and mentoring of "
    "graduate engineers.",
)
_CLIENT_BOILER = (
    "The relationship is reviewed twice a year in a joint steering session. Framework terms "
    "cover consultancy, design and site supervision services.",
    "Invoices follow the agreed payment schedule, and satisfaction surveys are sent after each "
    "completed engagement.",
)

GENERAL_DOCUMENTS: dict[str, str] = {
    "policy-records": (
        "**How we keep records**\n\n"
        "This is what we would like you to know about how and when we do things here, and why. "
        "If you have any questions about it, or if there is something that you would like to "
        "have done in a different way, then please talk to us about it before you do anything "
        "with it, so that we can all be sure that we are doing the right thing, and that it is "
        "done the way that it should be done by all of us."
    ),
    "guide-meetings": (
        "**Before you ask**\n\n"
        "When you are not sure where something is, or who could tell you more about it, you can "
        "always ask one of us first. We will then try to find out for you what it is that you "
        "need, and we will let you know as soon as we have it, so that you do not have to wait "
        "for the next time that we all meet together."
    ),
    "guide-reporting": (
        "**Writing for others**\n\n"
        "A good note is one that the people who read it can use without having to ask about it "
        "again. Say what it is about, say what has been done and what has not been done yet, "
        "and say who is doing what and by when, so that nothing gets lost between us."
    ),
    "company-overview": (
        f"**About {COMPANY}**\n\n"
        f"{COMPANY} is an engineering consultancy with offices in Lisbon, Rotterdam, Tallinn and "
        "Valletta. The company works with clients in transport, utilities, energy, health and "
        "education, and its people combine structural engineering, urban planning, environmental "
        "consulting and digital delivery."
    ),
}


def render_documents(rows: DemoRows, omitted: set[Fact]) -> dict[str, Document]:
    """One document per project, client and employee; sentences of omitted facts are left out."""
    emp = {e.employee_id: e for e in rows.employees}
    cli = {c.client_id: c for c in rows.clients}
    docs: dict[str, Document] = {}

    def add(doc: Document, text: str, facts: Iterable[Fact]) -> None:
        fs = frozenset(facts)
        if fs & omitted:
            return
        doc.sentences.append((text, fs))

    for i, p in enumerate(rows.projects):
        d = Document(doc_id_for("projects", p.name), f"Project report: {p.name}")
        me = ("projects", "name", p.project_id)
        c, di, ma = cli[p.client_id], emp[p.director_id], emp[p.manager_id]
        add(
            d,
            f"The client of the project {p.name} is {c.name}.",
            [me, ("projects", "client_id", p.project_id), ("clients", "name", c.client_id)],
        )
        add(
            d,
            f"The status of the project {p.name} is {p.status}.",
            [me, ("projects", "status", p.project_id)],
        )
        add(
            d,
            f"The project {p.name} is located in the city of {p.city}.",
            [me, ("projects", "city", p.project_id)],
        )
        add(
            d,
            f"The start date of the project {p.name} was {format_value(p.start_date)}.",
            [me, ("projects", "start_date", p.project_id)],
        )
        add(
            d,
            f"The end date of the project {p.name} is {format_value(p.end_date)}.",
            [me, ("projects", "end_date", p.project_id)],
        )
        add(
            d,
            f"The approved budget of the project {p.name} is {p.budget} euros.",
            [me, ("projects", "budget", p.project_id)],
        )
        add(
            d,
            f"The project director of {p.name} is {di.name}.",
            [me, ("projects", "director_id", p.project_id), ("employees", "name", di.employee_id)],
        )
        add(
            d,
            f"The project manager of {p.name} is {ma.name}.",
            [me, ("projects", "manager_id", p.project_id), ("employees", "name", ma.employee_id)],
        )
        d.boilerplate = [
            _PROJECT_BOILER[i % 3],
            _PROJECT_BOILER[(i + 1) % 3],
            _ENTITY_GENERIC["projects"],
        ]
        docs[d.doc_id] = d

    for i, e in enumerate(rows.employees):
        d = Document(doc_id_for("employees", e.name), f"Staff profile: {e.name}")
        me = ("employees", "name", e.employee_id)
        add(
            d,
            f"The job title of {e.name} is {e.job_title}.",
            [me, ("employees", "job_title", e.employee_id)],
        )
        add(
            d,
            f"{e.name} works in the department {e.department}.",
            [me, ("employees", "department", e.employee_id)],
        )
        add(
            d,
            f"{e.name} is based in the {e.office} office.",
            [me, ("employees", "office", e.employee_id)],
        )
        add(
            d,
            f"The hire date of {e.name} is {format_value(e.hire_date)}.",
            [me, ("employees", "hire_date", e.employee_id)],
        )
        if e.supervisor_id is not None:
            s = emp[e.supervisor_id]
            add(
                d,
                f"The supervisor of {e.name} is {s.name}.",
                [
                    me,
                    ("employees", "supervisor_id", e.employee_id),
                    ("employees", "name", s.employee_id),
                ],
            )
        d.boilerplate = [_EMPLOYEE_BOILER[i % 2], _ENTITY_GENERIC["employees"]]
        docs[d.doc_id] = d

    for i, c in enumerate(rows.clients):
        d = Document(doc_id_for("clients", c.name), f"Client profile: {c.name}")
        me = ("clients", "name", c.client_id)
        add(
            d,
            f"{c.name} is a client in the {c.industry} industry.",
            [me, ("clients", "industry", c.client_id)],
        )
        add(
            d,
            f"The headquarters of {c.name} are in the city of {c.city}.",
            [me, ("clients", "city", c.client_id)],
        )
        add(
            d,
            f"{c.name} is registered in the country {c.country}.",
            [me, ("clients", "country", c.client_id)],
        )
        add(
            d,
            f"{c.name} was founded in the year {c.founded_year}.",
            [me, ("clients", "founded_year", c.client_id)],
        )
        am = emp[c.account_manager_id]
        add(
            d,
            f"The account manager for {c.name} is {am.name}.",
            [
                me,
                ("clients", "account_manager_id", c.client_id),
                ("employees", "name", am.employee_id),
            ],
        )
        mine = [
            p
            for p in rows.projects
            if p.client_id == c.client_id and ("projects", "client_id", p.project_id) not in omitted
        ]
        if mine:
            facts: list[Fact] = [me]
            for p in mine:
                facts += [
                    ("projects", "client_id", p.project_id),
                    ("projects", "name", p.project_id),
                ]
            add(
                d,
                f"Projects delivered for {c.name}: " + "; ".join(p.name for p in mine) + ".",
                facts,
            )
        d.boilerplate = [_CLIENT_BOILER[i % 2], _ENTITY_GENERIC["clients"]]
        docs[d.doc_id] = d
    return docs


def choose_omissions(rows: DemoRows, seed: int, share: float = 0.12) -> list[OmittedFact]:
    """A seeded share of each table's non-name facts (at least two per table) to leave out."""
    rng = random.Random(seed * 7919 + 1)
    emp = {e.employee_id: e for e in rows.employees}
    cli = {c.client_id: c for c in rows.clients}
    candidates: dict[str, list[OmittedFact]] = {"projects": [], "employees": [], "clients": []}
    for p in rows.projects:
        doc = doc_id_for("projects", p.name)
        vals = {
            "client_id": cli[p.client_id].name,
            "status": p.status,
            "city": p.city,
            "start_date": format_value(p.start_date),
            "end_date": format_value(p.end_date),
            "budget": str(p.budget),
            "director_id": emp[p.director_id].name,
            "manager_id": emp[p.manager_id].name,
        }
        candidates["projects"] += [
            OmittedFact("projects", c, p.project_id, p.name, v, doc) for c, v in vals.items()
        ]
    for e in rows.employees:
        doc = doc_id_for("employees", e.name)
        vals = {
            "job_title": e.job_title,
            "department": e.department,
            "office": e.office,
            "hire_date": format_value(e.hire_date),
        }
        if e.supervisor_id is not None:
            vals["supervisor_id"] = emp[e.supervisor_id].name
        candidates["employees"] += [
            OmittedFact("employees", c, e.employee_id, e.name, v, doc) for c, v in vals.items()
        ]
    for c in rows.clients:
        doc = doc_id_for("clients", c.name)
        vals = {
            "industry": c.industry,
            "city": c.city,
            "country": c.country,
            "founded_year": str(c.founded_year),
            "account_manager_id": emp[c.account_manager_id].name,
        }
        candidates["clients"] += [
            OmittedFact("clients", col, c.client_id, c.name, v, doc) for col, v in vals.items()
        ]
    out: list[OmittedFact] = []
    for table in ("clients", "employees", "projects"):
        cands = candidates[table]
        n = max(2, round(share * len(cands)))
        out += sorted(rng.sample(cands, n), key=lambda o: (o.table, o.key, o.column))
    return out
