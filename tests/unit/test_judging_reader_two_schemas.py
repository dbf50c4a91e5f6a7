"""A sentence-picking reader over three databases of our own, of different shape (a university, a
shipping register, a clinic), probed through the embedded pipeline: the truth of every (group, cohort) is injected (robust, knowledge gap,
non-robust), and the statuses the pipeline tags are measured against it.

Documents are made per row: one sentence per column, and for a row's foreign keys the sentences
of the rows they name. The reader answers a form with a sentence it picked: the asked one (the
gold); the right entity's other sentence, its own or a neighbour's one or two keys away; another
entity's sentence of the asked kind (the same question asked of another row); or, where the
entity's documents are forgotten, the nearest other entity's. Some answers state two entities'
values in clauses of their own: the asked entity's right value beside another entity's, or its
wrong value beside another entity's that equals the gold; some give a value that holds the gold
inside a longer name ("Cardiology Annex" for *Cardiology*). Some answers carry citation markers
("[1]", "¹", "(2)", "【3】", a footnote glued to a year). Nothing here is tuned to the judge: the
wrong answers are whatever the database holds, and the judge has only what generation gives it.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from groundwatch.adapters.sources import generate_groups
from groundwatch.adapters.targets import CallableTarget, TargetLimits
from groundwatch.app.embedded import EmbeddedPipeline
from groundwatch.core.evidence import GroupStatus
from groundwatch.core.judging.decision import Decision
from groundwatch.core.model import Expected, SemanticGroup, Verdict
from groundwatch.core.tagging import Tagger
from groundwatch.stages.judge.tiered import TieredJudge
from groundwatch.stages.runner.lanes import Runner

pytestmark = pytest.mark.unit


def _h(*parts: object) -> int:
    return int.from_bytes(
        hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest()
    )


# -- two databases -------------------------------------------------------------------------------


@dataclass
class Db:
    """A database's DDL, rows (table → list of column → value) and foreign keys."""

    ddl: list[str]
    rows: dict[str, list[dict[str, Any]]]
    fks: dict[str, dict[str, str]]  # table → fk column → referenced table
    label: dict[str, str]  # table → the column that names its rows


def university() -> Db:
    """Departments, instructors in them, courses taught by instructors, students majoring in a
    department: a chain of keys (course → instructor → department) and a fan (student →
    department)."""
    depts = ["Physics", "Linguistics", "Geology", "Economics", "Astronomy"]
    buildings = ["Ørsted Hall", "Saussure House", "Lyell Wing", "Keynes Tower", "Hubble Dome"]
    first = ["Ada", "Boris", "Chiara", "Dmitri", "Elif", "Farid", "Greta", "Hiro", "Ines", "Jonas",
             "Kaito", "Lena"]  # fmt: skip
    last = ["Moreau", "Okafor", "Petrov", "Quist", "Rahman", "Sato", "Tanaka", "Ueda", "Varga",
            "Weber", "Xu", "Yilmaz"]  # fmt: skip
    cities = ["Lyon", "Porto", "Gdansk", "Tampere", "Graz", "Bilbao", "Ghent"]
    levels = ["Introductory", "Intermediate", "Advanced", "Graduate"]
    topics = ["Optics", "Phonetics", "Mineralogy", "Game Theory", "Cosmology", "Acoustics",
              "Syntax", "Volcanology", "Auctions", "Exoplanets", "Thermodynamics", "Semantics",
              "Glaciology", "Labour Markets", "Stellar Evolution", "Plasma Waves"]  # fmt: skip
    rows: dict[str, list[dict[str, Any]]] = {"department": [], "instructor": [], "course": [],
                                             "student": []}  # fmt: skip
    for i, d in enumerate(depts):
        rows["department"].append({"id": i + 1, "name": d, "building": buildings[i]})
    for i in range(10):
        rows["instructor"].append(
            {"id": i + 1, "full_name": f"{first[i]} {last[i]}", "department_id": 1 + i % 5,
             "office_city": cities[(i * 3) % 7], "hired": dt.date(1990 + 2 * i, 1 + i, 3 + i)}
        )  # fmt: skip
    for i, t in enumerate(topics):
        rows["course"].append(
            {"id": i + 1, "title": t, "instructor_id": 1 + (i * 7) % 10,
             "credits": 2 + (i * 5) % 7, "level": levels[(i * 3) % 4]}
        )  # fmt: skip
    for i in range(12):
        rows["student"].append(
            {"id": i + 1, "student_name": f"{first[(i + 5) % 12]} {last[(i + 7) % 12]}",
             "department_id": 1 + (i * 2) % 5, "home_city": cities[(i * 5) % 7],
             "enrolled": dt.date(2015 + i % 8, 9, 1 + i)}
        )  # fmt: skip
    ddl = [
        "CREATE TABLE department (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, "
        "building TEXT UNIQUE NOT NULL)",
        "CREATE TABLE instructor (id INTEGER PRIMARY KEY, full_name TEXT UNIQUE NOT NULL, "
        "department_id INTEGER NOT NULL REFERENCES department(id), office_city TEXT NOT NULL, "
        "hired DATE NOT NULL)",
        "CREATE TABLE course (id INTEGER PRIMARY KEY, title TEXT UNIQUE NOT NULL, "
        "instructor_id INTEGER NOT NULL REFERENCES instructor(id), credits INTEGER NOT NULL, "
        "level TEXT NOT NULL)",
        "CREATE TABLE student (id INTEGER PRIMARY KEY, student_name TEXT UNIQUE NOT NULL, "
        "department_id INTEGER NOT NULL REFERENCES department(id), home_city TEXT NOT NULL, "
        "enrolled DATE NOT NULL)",
    ]
    return Db(
        ddl,
        rows,
        {"instructor": {"department_id": "department"}, "course": {"instructor_id": "instructor"},
         "student": {"department_id": "department"}},
        {"department": "name", "instructor": "full_name", "course": "title",
         "student": "student_name"},
    )  # fmt: skip


def shipping() -> Db:
    """Carriers, ports, vessels (a carrier's, with a home port) and voyages between two ports:
    a table with two keys to the same table, numbers and dates on every level."""
    ports = [("Rotterdam", "Netherlands"), ("Valparaiso", "Chile"), ("Durban", "South Africa"),
             ("Busan", "South Korea"), ("Tromso", "Norway"), ("Mombasa", "Kenya")]  # fmt: skip
    carriers = [("Nordlys Line", "Bergen"), ("Austral Cargo", "Santiago"),
                ("Indigo Freight", "Chennai"), ("Boreal Shipping", "Reykjavik")]  # fmt: skip
    names = ["Albatross", "Kestrel", "Petrel", "Cormorant", "Gannet", "Skua", "Tern", "Fulmar",
             "Shearwater", "Puffin"]  # fmt: skip
    cargo = ["grain", "timber", "copper ore", "containers", "fish meal"]
    rows: dict[str, list[dict[str, Any]]] = {"port": [], "carrier": [], "vessel": [],
                                             "voyage": []}  # fmt: skip
    for i, (p, c) in enumerate(ports):
        rows["port"].append({"id": i + 1, "port_name": p, "country": c})
    for i, (n, c) in enumerate(carriers):
        rows["carrier"].append({"id": i + 1, "carrier_name": n, "head_office_city": c})
    for i, n in enumerate(names):
        rows["vessel"].append(
            {"id": i + 1, "vessel_name": f"MV {n}", "carrier_id": 1 + i % 4,
             "home_port_id": 1 + (i * 5) % 6, "built_year": 1978 + 3 * i,
             "gross_tonnage": 12000 + 1730 * i}
        )  # fmt: skip
    for i in range(14):
        rows["voyage"].append(
            {"id": i + 1, "voyage_code": f"VY-{311 + 17 * i}", "vessel_id": 1 + (i * 3) % 10,
             "origin_port_id": 1 + i % 6, "destination_port_id": 1 + (i + 2) % 6,
             "departed": dt.date(2019 + i % 5, 1 + (i * 5) % 12, 2 + i), "cargo": cargo[i % 5]}
        )  # fmt: skip
    ddl = [
        "CREATE TABLE port (id INTEGER PRIMARY KEY, port_name TEXT UNIQUE NOT NULL, "
        "country TEXT NOT NULL)",
        "CREATE TABLE carrier (id INTEGER PRIMARY KEY, carrier_name TEXT UNIQUE NOT NULL, "
        "head_office_city TEXT NOT NULL)",
        "CREATE TABLE vessel (id INTEGER PRIMARY KEY, vessel_name TEXT UNIQUE NOT NULL, "
        "carrier_id INTEGER NOT NULL REFERENCES carrier(id), "
        "home_port_id INTEGER NOT NULL REFERENCES port(id), built_year INTEGER NOT NULL, "
        "gross_tonnage INTEGER NOT NULL)",
        "CREATE TABLE voyage (id INTEGER PRIMARY KEY, voyage_code TEXT UNIQUE NOT NULL, "
        "vessel_id INTEGER NOT NULL REFERENCES vessel(id), "
        "origin_port_id INTEGER NOT NULL REFERENCES port(id), "
        "destination_port_id INTEGER NOT NULL REFERENCES port(id), departed DATE NOT NULL, "
        "cargo TEXT NOT NULL)",
    ]
    return Db(
        ddl,
        rows,
        {"vessel": {"carrier_id": "carrier", "home_port_id": "port"},
         "voyage": {"vessel_id": "vessel", "origin_port_id": "port",
                    "destination_port_id": "port"}},
        {"port": "port_name", "carrier": "carrier_name", "vessel": "vessel_name",
         "voyage": "voyage_code"},
    )  # fmt: skip


def clinic() -> Db:
    """Wards, doctors on them, patients with a family doctor, drugs, appointments (a patient's
    with a doctor) and prescriptions (an appointment's, of a drug): six tables, chains of two
    keys (prescription → appointment → doctor → ward), two dates, towns and counts in several
    tables, and names that hold other names ("Cardiology" inside "Cardiology Annex")."""
    wards = [("Cardiology", 3, dt.date(1998, 4, 12)), ("Cardiology Annex", 4, dt.date(2011, 9, 1)),
             ("Neurology", 2, dt.date(2003, 2, 17)), ("Oncology", 5, dt.date(2007, 6, 23)),
             ("Maternity", 1, dt.date(1994, 11, 30))]  # fmt: skip
    towns = ["Leiden", "Aarhus", "Coimbra", "Uppsala", "Trieste", "Nantes", "Brno"]
    doctors = ["Amara Diallo", "Bjorn Lind", "Carmen Ruiz", "Deniz Aydin", "Emeka Obi",
               "Freya Holm", "Goran Ilic", "Hana Novak"]  # fmt: skip
    specialties = ["cardiologist", "neurologist", "oncologist", "obstetrician", "internist"]
    patients = ["Ivo Brandt", "Jana Kral", "Karim Haddad", "Lotte Visser", "Milan Horvat",
                "Nadia Rossi", "Oskar Berg", "Priya Nair", "Quentin Roy", "Rosa Lima",
                "Sven Dahl", "Tara Singh"]  # fmt: skip
    drugs = [("Amoxicillin", "Halden Pharma", 500), ("Amoxicillin Forte", "Halden Pharma", 875),
             ("Metoprolol", "Vireo Labs", 50), ("Levetiracetam", "Corvus Bio", 250),
             ("Tamoxifen", "Vireo Labs", 20), ("Ferrous Sulfate", "Corvus Bio", 325)]  # fmt: skip
    rows: dict[str, list[dict[str, Any]]] = {
        "ward": [], "doctor": [], "patient": [], "drug": [], "appointment": [], "prescription": []
    }  # fmt: skip
    for i, (w, floor, opened) in enumerate(wards):
        rows["ward"].append({"id": i + 1, "ward_name": w, "floor": floor, "opened": opened})
    for i, d in enumerate(doctors):
        rows["doctor"].append(
            {"id": i + 1, "doctor_name": d, "ward_id": 1 + (i * 3) % 5,
             "specialty": specialties[i % 5], "home_town": towns[(i * 2) % 7],
             "licensed": dt.date(1985 + 3 * i, 1 + (i * 5) % 12, 4 + i)}
        )  # fmt: skip
    for i, p in enumerate(patients):
        rows["patient"].append(
            {"id": i + 1, "patient_name": p, "doctor_id": 1 + (i * 5) % 8,
             "home_town": towns[(i * 3 + 1) % 7], "born": dt.date(1941 + 5 * i, 1 + i, 2 + 2 * i)}
        )  # fmt: skip
    for i, (n, maker, dose) in enumerate(drugs):
        rows["drug"].append({"id": i + 1, "drug_name": n, "maker": maker, "dose_mg": dose})
    for i in range(16):
        rows["appointment"].append(
            {"id": i + 1, "appointment_code": f"AP-{4100 + 37 * i}",
             "patient_id": 1 + (i * 7) % 12, "doctor_id": 1 + (i * 3) % 8,
             "scheduled": dt.date(2021 + i % 4, 1 + (i * 7) % 12, 3 + i), "room": 101 + (i * 11) % 40}
        )  # fmt: skip
    for i in range(18):
        rows["prescription"].append(
            {"id": i + 1, "prescription_code": f"RX-{7200 + 53 * i}",
             "appointment_id": 1 + (i * 5) % 16, "drug_id": 1 + (i * 5) % 6,
             "quantity": 10 + (i * 7) % 50, "issued": dt.date(2022 + i % 3, 1 + (i * 5) % 12, 1 + i)}
        )  # fmt: skip
    ddl = [
        "CREATE TABLE ward (id INTEGER PRIMARY KEY, ward_name TEXT UNIQUE NOT NULL, "
        "floor INTEGER NOT NULL, opened DATE NOT NULL)",
        "CREATE TABLE doctor (id INTEGER PRIMARY KEY, doctor_name TEXT UNIQUE NOT NULL, "
        "ward_id INTEGER NOT NULL REFERENCES ward(id), specialty TEXT NOT NULL, "
        "home_town TEXT NOT NULL, licensed DATE NOT NULL)",
        "CREATE TABLE patient (id INTEGER PRIMARY KEY, patient_name TEXT UNIQUE NOT NULL, "
        "doctor_id INTEGER NOT NULL REFERENCES doctor(id), home_town TEXT NOT NULL, "
        "born DATE NOT NULL)",
        "CREATE TABLE drug (id INTEGER PRIMARY KEY, drug_name TEXT UNIQUE NOT NULL, "
        "maker TEXT NOT NULL, dose_mg INTEGER NOT NULL)",
        "CREATE TABLE appointment (id INTEGER PRIMARY KEY, appointment_code TEXT UNIQUE NOT NULL, "
        "patient_id INTEGER NOT NULL REFERENCES patient(id), "
        "doctor_id INTEGER NOT NULL REFERENCES doctor(id), scheduled DATE NOT NULL, "
        "room INTEGER NOT NULL)",
        "CREATE TABLE prescription (id INTEGER PRIMARY KEY, "
        "prescription_code TEXT UNIQUE NOT NULL, "
        "appointment_id INTEGER NOT NULL REFERENCES appointment(id), "
        "drug_id INTEGER NOT NULL REFERENCES drug(id), quantity INTEGER NOT NULL, "
        "issued DATE NOT NULL)",
    ]
    return Db(
        ddl,
        rows,
        {"doctor": {"ward_id": "ward"}, "patient": {"doctor_id": "doctor"},
         "appointment": {"patient_id": "patient", "doctor_id": "doctor"},
         "prescription": {"appointment_id": "appointment", "drug_id": "drug"}},
        {"ward": "ward_name", "doctor": "doctor_name", "patient": "patient_name",
         "drug": "drug_name", "appointment": "appointment_code",
         "prescription": "prescription_code"},
    )  # fmt: skip


def _write(db: Db, path: Path) -> str:
    url = f"sqlite:///{path}"
    engine = create_engine(url)
    with engine.begin() as conn:
        for ddl in db.ddl:
            conn.execute(text(ddl))
        for table, rows in db.rows.items():
            for row in rows:
                cols = ", ".join(row)
                conn.execute(
                    text(
                        f"INSERT INTO {table} ({cols}) VALUES ({', '.join(':' + c for c in row)})"
                    ),
                    row,
                )
    engine.dispose()
    return url


# -- documents and the reader --------------------------------------------------------------------


def _words(column: str) -> str:
    return column.replace("_", " ")


def _said(value: Any) -> str:
    if isinstance(value, dt.date):
        return value.strftime("%-d %B %Y")
    if isinstance(value, int) and value >= 10_000:
        return f"{value:,}"
    return str(value)


@dataclass
class Sentence:
    subject: str  # the row's label the sentence is about
    text: str
    value: str  # the value it states, as the database holds it


@dataclass
class Documents:
    """Per row label: its own sentences, and its neighbours' (one or two keys away)."""

    own: dict[str, list[Sentence]] = field(default_factory=dict)
    near: dict[str, list[Sentence]] = field(default_factory=dict)
    table_of: dict[str, str] = field(default_factory=dict)


def documents(db: Db) -> Documents:
    docs = Documents()
    by_id = {t: {r["id"]: r for r in rows} for t, rows in db.rows.items()}

    def sentences(table: str, row: dict[str, Any]) -> list[Sentence]:
        name = row[db.label[table]]
        out = []
        for col, v in row.items():
            if col == "id" or col == db.label[table] or col in db.fks.get(table, {}):
                continue
            out.append(Sentence(name, f"The {_words(col)} of the {table} {name} is {_said(v)}.",
                                str(v)))  # fmt: skip
        return out

    def neighbours(table: str, row: dict[str, Any], hops: int) -> list[tuple[str, dict[str, Any]]]:
        found = []
        for col, ref in db.fks.get(table, {}).items():
            nrow = by_id[ref][row[col]]
            found.append((ref, nrow))
            if hops > 1:
                found += neighbours(ref, nrow, hops - 1)
        return found

    for table, rows in db.rows.items():
        for row in rows:
            name = row[db.label[table]]
            docs.table_of[name] = table
            docs.own[name] = sentences(table, row)
            near = []
            for ref, nrow in neighbours(table, row, 2):
                nname = nrow[db.label[ref]]
                near.append(Sentence(nname, f"The {table} {name} is linked to the {ref} {nname}.",
                                     nname))  # fmt: skip
                near += sentences(ref, nrow)
            docs.near[name] = near
    return docs


CITES = ["[1]", "¹", " (2)", "【3】", "[2, 4]", "⁶"]
TRUTHS = ("robust", "gap", "non_robust")


class Reader:
    """Picks a sentence for every form, by the truth injected for its (group, cohort)."""

    def __init__(self, db: Db, url: str, groups: list[SemanticGroup]) -> None:
        self.docs = documents(db)
        # every text value of the database, for a longer name that holds the gold
        self.values = sorted(
            {str(v) for rows in db.rows.values() for r in rows for v in r.values()
             if isinstance(v, str)}
        )  # fmt: skip
        self.answers: dict[str, str] = {}
        self.truth: dict[tuple[str, str], str] = {}
        self.kinds: Counter[str] = Counter()
        self.kind_of: dict[str, str] = {}  # form → the kind of answer given it
        engine = create_engine(url)
        with engine.connect() as conn:
            for g in groups:
                self._plan(conn, g)
        engine.dispose()

    def _plan(self, conn: Any, g: SemanticGroup) -> None:
        (slot, named), *_ = g.params.items()
        gold = g.answer.values[0]
        table = self.docs.table_of[str(named)]
        others = [n for n, t in self.docs.table_of.items() if t == table and n != named]
        # another entity's answer to the same question: what a reader that picked another
        # entity's sentence of the asked kind gives
        rivals: list[tuple[str, Any]] = []
        alike: list[str] = []  # other entities with the gold as their answer
        for other in sorted(others, key=lambda n: _h(g.group_id, n)):
            got = conn.execute(text(g.sql), {**g.params, slot: other}).fetchall()
            if len(got) == 1 and got[0][0] is not None and str(got[0][0]) != gold:
                rivals.append((other, got[0][0]))
            elif len(got) == 1 and str(got[0][0]) == gold:
                alike.append(other)
        for cohort in dict.fromkeys(f.cohort for f in g.forms):
            truth = TRUTHS[_h(g.group_id, cohort) % 3]
            self.truth[(g.group_id, cohort)] = truth
            forms = [f for f in g.forms if f.cohort == cohort]
            for i, f in enumerate(forms):
                right = truth == "robust" or (truth == "non_robust" and i == 0)
                self.answers[f.text] = (
                    self._right(g, str(named), gold, f.text, rivals)
                    if right
                    else self._wrong(
                        g, str(named), gold, f.text, rivals, alike, forgotten=truth == "gap"
                    )
                )

    def _cite(self, key: str, sentence: str) -> str:
        k = _h(key, "cite")
        if k % 3:
            return sentence
        return sentence[:-1] + CITES[k % len(CITES)] + "."

    def _right(
        self, g: SemanticGroup, named: str, gold: str, form: str, rivals: list[tuple[str, Any]]
    ) -> str:
        said = _said(_typed(gold, g))
        self.kind_of[form] = "right"
        if rivals and _h(form, "beside") % 4 == 0:
            other, value = rivals[_h(form) % len(rivals)]
            self.kinds["right_beside_another"] += 1
            self.kind_of[form] = "right_beside_another"
            return self._cite(
                form, f"For {named} it is {said}, and for {other} it is {_said(value)}."
            )
        if (
            g.answer.types
            and g.answer.types[0].value == "number"
            and gold.isdigit()
            and (1000 <= int(gold) <= 2099 and _h(form, "year") % 2)
        ):
            return f"The record for {named} dates it from {gold}{1 + _h(form) % 9}."  # glued note
        return self._cite(form, f"According to the documents, for {named} it is {said}.")

    def _wrong(
        self,
        g: SemanticGroup,
        named: str,
        gold: str,
        form: str,
        rivals: list[tuple[str, Any]],
        alike: list[str],
        *,
        forgotten: bool,
    ) -> str:
        k = _h(form, "wrong")
        table = self.docs.table_of[named]
        strangers = [n for n, t in self.docs.table_of.items() if t == table and n != named]
        if forgotten:
            # the entity's documents are forgotten: the nearest other entity's sentences, its
            # own or its neighbours', or its answer to the same question
            stranger = strangers[k % len(strangers)]
            choices = {
                "forgotten_own": self.docs.own[stranger],
                "forgotten_neighbour": self.docs.near[stranger],
            }
        else:
            own, near = self.docs.own[named], self.docs.near[named]
            choices = {"own": own, "neighbour": near}
        # a sentence that names the gold anywhere answers the question ("The building of the
        # department Physics is …" says which department it is): no wrong answer
        choices = {
            c: [s for s in ss if _unlike(s.value, gold) and _unlike(s.text, gold)]
            for c, ss in choices.items()
        }
        kinds = [c for c, ss in choices.items() if ss] + (["another_entity"] if rivals else [])
        longer = [v for v in self.values if v != gold and _holds(v, gold)]
        kinds += ["longer_name"] if longer else []
        kinds += ["beside_gold"] if rivals and alike else []
        kind = kinds[k % len(kinds)]
        self.kinds[kind] += 1
        self.kind_of[form] = kind
        if kind == "longer_name":
            return self._cite(
                form, f"According to the documents, for {named} it is {longer[k % len(longer)]}."
            )
        if kind == "beside_gold":
            value = rivals[k % len(rivals)][1]
            other = alike[k % len(alike)]
            return self._cite(
                form, f"For {named} it is {_said(value)}, while for {other} it is "
                f"{_said(_typed(gold, g))}."
            )  # fmt: skip
        if kind == "another_entity":
            other, value = rivals[k % len(rivals)]
            return self._cite(form, f"For {other}, the answer is {_said(value)}.")
        pool = choices[kind]
        return self._cite(form, pool[(k // 7) % len(pool)].text)

    def __call__(self, query: str) -> str:
        return self.answers[query]


def _typed(gold: str, g: SemanticGroup) -> Any:
    kind = g.answer.types[0].value if g.answer.types else "text"
    if kind == "date":
        return dt.date.fromisoformat(gold[:10])
    if kind == "number" and gold.isdigit():
        return int(gold)
    return gold


def _holds(value: str, gold: str) -> bool:
    """A longer name that has the gold as whole words in it ("Cardiology Annex" holds
    "Cardiology")."""
    return f" {gold.casefold()} " in f" {value.casefold()} "


def _unlike(value: str, gold: str) -> bool:
    """A value (or sentence) that is no restatement of the gold: neither inside the other."""
    a, b = value.casefold(), gold.casefold()
    return a not in b and b not in a


# -- the run and its measure ---------------------------------------------------------------------


def _groups(url: str, docs: Documents) -> list[SemanticGroup]:
    """The groups a reader of these documents is asked: one value, about a row the documents
    name (a fill by a shared value names no one entity)."""
    groups = generate_groups(url, k=3, cohorts=("short", "long")).groups
    return [
        g
        for g in groups
        if len(g.answer.values) == 1
        and len(g.params) == 1
        and str(next(iter(g.params.values()))) in docs.table_of
    ]


class _Seen(TieredJudge):
    """The pipeline's judge, keeping every decision by its query (what a failing figure is
    explained by)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: dict[str, tuple[str | None, Decision]] = {}

    async def judge(self, query: str, expected: Expected, response: str | None) -> Decision:
        decision = await super().judge(query, expected, response)
        self.seen[query] = (response, decision)
        return decision


def _run(groups: list[SemanticGroup], reader: Reader, judge: _Seen) -> Tagger:
    async def go() -> Tagger:
        runner = Runner({"reader": CallableTarget(reader)}, {"reader": TargetLimits(concurrency=8)})
        pipeline = EmbeddedPipeline(groups, runner, judge=judge)
        await pipeline.start()
        try:
            result = await pipeline.run(1)
        finally:
            await pipeline.stop()
        return result.tagger

    return asyncio.run(go())


@dataclass
class Figures:
    groups: int
    gap_precision: float
    gap_recall: float
    non_robust_precision: float
    non_robust_recall: float
    unknown_share: float
    statuses: dict[str, int]
    kinds: dict[str, int]
    #: (answer kind, verdict, reason code) of the judgements that missed: a right answer not
    #: judged correct, a wrong one not judged incorrect
    missed: dict[tuple[str, str, str], int]


def _pr(
    tagged: dict[tuple[str, str], str], truth: dict[tuple[str, str], str], s: str
) -> tuple[float, float]:
    hit = sum(1 for k, v in tagged.items() if v == s and truth[k] == s)
    said = sum(1 for v in tagged.values() if v == s)
    true = sum(1 for v in truth.values() if v == s)
    return (hit / said if said else 1.0), (hit / true if true else 1.0)


def measure(db: Db, tmp: Path) -> Figures:
    url = _write(db, tmp / "db.sqlite")
    docs = documents(db)
    groups = _groups(url, docs)
    reader = Reader(db, url, groups)
    judge = _Seen()
    tagger = _run(groups, reader, judge)
    missed: Counter[tuple[str, str, str]] = Counter()
    examples: dict[tuple[str, str, str], str] = {}
    for query, (response, d) in judge.seen.items():
        kind = reader.kind_of.get(query, "?")
        want = Verdict.CORRECT if kind.startswith("right") else Verdict.INCORRECT
        if d.verdict is not want:
            key = (kind, d.verdict.value, d.reason.split(":")[0])
            missed[key] += 1
            examples.setdefault(key, f"{query!r} -> {response!r} ({d.reason})")
    for key, n in missed.most_common():
        print(n, key, examples[key])
    tagged = {key: str(tagger.status("reader", key[1], key[0]).value) for key in reader.truth}
    gp, gr = _pr(tagged, reader.truth, "gap")
    np_, nr = _pr(tagged, reader.truth, "non_robust")
    unknown = sum(1 for v in tagged.values() if v == GroupStatus.UNKNOWN.value)
    return Figures(
        groups=len(tagged),
        gap_precision=gp,
        gap_recall=gr,
        non_robust_precision=np_,
        non_robust_recall=nr,
        unknown_share=unknown / len(tagged),
        statuses=dict(Counter(tagged.values())),
        kinds=dict(reader.kinds),
        missed=dict(missed),
    )


@pytest.mark.parametrize(
    "schema", [university, shipping, clinic], ids=["university", "shipping", "clinic"]
)
def test_a_sentence_picking_reader_over_three_schemas_is_tagged_as_injected(
    schema: Any, tmp_path: Path
) -> None:
    f = measure(schema(), tmp_path)
    print(f)
    assert f.groups >= 60, f
    # every class of wrong answer was given
    assert {"own", "neighbour", "another_entity", "beside_gold", "right_beside_another"} <= (
        f.kinds.keys()
    ), f
    if schema is clinic:
        assert "longer_name" in f.kinds, f
    assert f.gap_precision >= 0.97 and f.gap_recall >= 0.95, f
    assert f.non_robust_precision >= 0.95 and f.non_robust_recall >= 0.90, f
    assert f.unknown_share <= 0.03, f
