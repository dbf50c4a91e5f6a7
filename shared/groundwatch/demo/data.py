"""The demo domain's rows: Meridian Vale, a fictitious engineering consultancy.

Clients, employees and projects with foreign keys (projects → client, director, manager; clients →
account manager; employees → supervisor). Every name is invented; the seed fixes every choice, so
the same seed always gives the same database, corpus and dataset. One employee name carries an
apostrophe and one client name non-ASCII letters, so quoting and unicode are exercised end to end.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass

COMPANY = "Meridian Vale"

_FIRST = (
    "Aldric",
    "Brisa",
    "Caelan",
    "Dagny",
    "Elowen",
    "Faramond",
    "Gisla",
    "Halvard",
    "Ione",
    "Jorund",
    "Kestrel",
    "Liora",
    "Maelis",
    "Nerys",
    "Orrin",
    "Peregrine",
    "Quilla",
    "Rowena",
    "Saoirse",
    "Tamsin",
    "Ulric",
    "Vesna",
    "Wrenna",
    "Xanthe",
    "Ysolde",
    "Zephyrine",
    "Anouk",
    "Bastien",
    "Calla",
    "Dorian",
    "Esmeray",
    "Fenna",
)
_LAST = (
    "Ashgrove",
    "Brightwater",
    "Coldharbour",
    "Dunmore",
    "Elderfield",
    "Fairbrook",
    "Greywell",
    "Holloway",
    "Ironside",
    "Quenby",
    "Kettleby",
    "Larkspur",
    "Marchbank",
    "Northcott",
    "Oakhurst",
    "Penhallow",
    "Quarrington",
    "Ravensworth",
    "Stourton",
    "Thornbury",
    "Underhill",
    "Vanterpool",
    "Whitlock",
    "Yarrowby",
    "Zennor",
    "Amberleigh",
    "Blackmere",
    "Crowhurst",
    "Dewberry",
    "Eastwold",
    "Foxley",
    "Gallowmere",
)
DEPARTMENTS = (
    "Structural Engineering",
    "Urban Planning",
    "Environmental Consulting",
    "Digital Delivery",
    "Finance and Operations",
)
OFFICES = ("Lisbon", "Rotterdam", "Tallinn", "Valletta")
_TITLES = ("Senior Engineer", "Engineer", "Analyst", "Project Coordinator", "Principal Consultant")

_CLIENTS = (
    ("Harrowgate Rail Partners", "Transport", "Leeds", "United Kingdom"),
    ("Bluefen Water Authority", "Utilities", "Utrecht", "Netherlands"),
    ("Société Lumière Verte", "Renewable Energy", "Lyon", "France"),
    ("Corvane Hospitality Group", "Hospitality", "Malaga", "Spain"),
    ("Tidewell Port Holdings", "Logistics", "Gdansk", "Poland"),
    ("Quillon Biotech", "Life Sciences", "Basel", "Switzerland"),
    ("Orchard Vale Schools Trust", "Education", "Cork", "Ireland"),
    ("Kestrel Ridge Estates", "Real Estate", "Oslo", "Norway"),
    ("Saltmarsh Retail Collective", "Retail", "Aarhus", "Denmark"),
    ("Brennmoor Health Network", "Healthcare", "Graz", "Austria"),
    ("Ironvale Mining Cooperative", "Mining", "Kiruna", "Sweden"),
    ("Palisade Data Centres", "Technology", "Espoo", "Finland"),
)
_PROJECT_WORDS = (
    (
        "Harbour",
        "Viaduct",
        "Riverside",
        "Northgate",
        "Summit",
        "Lantern",
        "Meadow",
        "Granite",
        "Beacon",
        "Willow",
        "Copper",
        "Falcon",
        "Cedar",
        "Aurora",
        "Saltire",
        "Juniper",
        "Heron",
        "Marble",
    ),
    (
        "Interchange Upgrade",
        "Flood Defence Scheme",
        "Campus Extension",
        "Solar Array",
        "Terminal Retrofit",
        "Laboratory Complex",
        "Masterplan",
        "Tower Refurbishment",
        "Pumping Station",
        "Data Hall",
        "Wellness Centre",
        "Depot Renewal",
    ),
)
_PROJECT_CITIES = (
    "Leeds",
    "Utrecht",
    "Lyon",
    "Malaga",
    "Gdansk",
    "Basel",
    "Cork",
    "Oslo",
    "Aarhus",
    "Graz",
    "Kiruna",
    "Espoo",
)
STATUSES = ("completed", "active", "planned")
_TODAY = dt.date(
    2023, 3, 1
)  # the demo's "as of" date: some projects done, some running, some ahead


@dataclass(frozen=True, slots=True)
class Employee:
    employee_id: int
    name: str
    job_title: str
    department: str
    office: str
    hire_date: dt.date
    supervisor_id: int | None


@dataclass(frozen=True, slots=True)
class Client:
    client_id: int
    name: str
    industry: str
    city: str
    country: str
    founded_year: int
    account_manager_id: int


@dataclass(frozen=True, slots=True)
class Project:
    project_id: int
    name: str
    client_id: int
    director_id: int
    manager_id: int
    city: str
    start_date: dt.date
    end_date: dt.date
    budget: int
    status: str


@dataclass(frozen=True, slots=True)
class DemoRows:
    employees: tuple[Employee, ...]
    clients: tuple[Client, ...]
    projects: tuple[Project, ...]


def _date(rng: random.Random, start: dt.date, days: int) -> dt.date:
    return start + dt.timedelta(days=rng.randrange(days))


def make_rows(
    seed: int = 7, *, employees: int = 30, clients: int = 12, projects: int = 16
) -> DemoRows:
    """Deterministic rows for ``seed`` (≥25 employees, ≥10 clients, ≥15 projects by default)."""
    rng = random.Random(seed)
    firsts, lasts = list(_FIRST), list(_LAST)
    rng.shuffle(firsts)
    rng.shuffle(lasts)
    names = [f"{f} {la}" for f, la in zip(firsts, lasts, strict=False)][:employees]
    names[3] = "Aoife O'Sullivan"  # quotes must survive SQL binding and text filling
    # Titles and departments avoid the words questions about other columns use ("department",
    # "office"): the corpus must be answerable wherever a fact is not deliberately left out.
    emps: list[Employee] = []
    emps.append(
        Employee(
            1,
            names[0],
            "Chief Executive Officer",
            "Executive Leadership",
            "Lisbon",
            dt.date(2009, 3, 2),
            None,
        )
    )
    heads: dict[str, int] = {}
    for i, dept in enumerate(DEPARTMENTS):
        eid = len(emps) + 1
        heads[dept] = eid
        emps.append(
            Employee(
                eid,
                names[eid - 1],
                "Practice Lead",
                dept,
                OFFICES[i % len(OFFICES)],
                _date(rng, dt.date(2010, 1, 1), 2500),
                1,
            )
        )
    while len(emps) < employees:
        eid = len(emps) + 1
        dept = rng.choice(DEPARTMENTS)
        emps.append(
            Employee(
                eid,
                names[eid - 1],
                rng.choice(_TITLES),
                dept,
                rng.choice(OFFICES),
                _date(rng, dt.date(2013, 1, 1), 3600),
                heads[dept],
            )
        )
    senior = [
        e.employee_id for e in emps if e.job_title in ("Practice Lead", "Principal Consultant")
    ]
    managers = [
        e.employee_id
        for e in emps
        if e.job_title in ("Senior Engineer", "Project Coordinator", "Engineer")
    ]
    cls = [
        Client(i + 1, name, industry, city, country, rng.randrange(1952, 2019), rng.choice(senior))
        for i, (name, industry, city, country) in enumerate(_CLIENTS[:clients])
    ]
    firsts_p = list(_PROJECT_WORDS[0])
    rng.shuffle(firsts_p)
    prjs: list[Project] = []
    taken: set[str] = set()
    for i in range(projects):
        client = cls[i % len(cls)] if i < len(cls) else rng.choice(cls)
        start = _date(rng, dt.date(2019, 1, 1), 1900)
        end = start + dt.timedelta(days=rng.randrange(240, 1100))
        status = "completed" if end < _TODAY else ("active" if start < _TODAY else "planned")
        name = f"{firsts_p[i % len(firsts_p)]} {rng.choice(_PROJECT_WORDS[1])}"
        while name in taken:
            name = f"{rng.choice(firsts_p)} {rng.choice(_PROJECT_WORDS[1])}"
        taken.add(name)
        prjs.append(
            Project(
                i + 1,
                name,
                client.client_id,
                rng.choice(senior),
                rng.choice(managers),
                client.city if rng.random() < 0.7 else rng.choice(_PROJECT_CITIES),
                start,
                end,
                rng.randrange(8, 240) * 25_000,
                status,
            )
        )
    return DemoRows(tuple(emps), tuple(cls), tuple(prjs))
