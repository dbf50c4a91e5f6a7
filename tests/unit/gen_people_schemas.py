"""Two schemas of shapes the other test schemas lack, built as SQLite files.

- ``campus``: people named by first and last name (instructors, students; two students share a
  full name), a department each belongs to, a student's advisor, courses with a self-referencing
  prerequisite, and enrolments: a link table whose payload (grade, term) is its reason to exist;
- ``depot``: abbreviated column names (``prod_nm``, ``qty``, ``unit_prc``, ``whse``, ``mgr``),
  yes/no flags stored as text ('0'/'1', 'Y'/'N', 'yes'/'no', 'true'/'false') and purchase
  orders that nothing names but their number (``po_no``).

Rows are written out, not drawn, so every build is the same database.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from groundwatch.core.model import SemanticGroup

CAMPUS = """
CREATE TABLE departments (dept_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
                          building TEXT, founded_year INTEGER);
CREATE TABLE instructors (instructor_id INTEGER PRIMARY KEY, first_name TEXT NOT NULL,
                          last_name TEXT NOT NULL, dept_id INTEGER REFERENCES departments(dept_id),
                          hire_date DATE, office TEXT, salary REAL);
CREATE TABLE students (student_id INTEGER PRIMARY KEY, first_name TEXT NOT NULL,
                       last_name TEXT NOT NULL,
                       major_dept_id INTEGER REFERENCES departments(dept_id),
                       advisor_id INTEGER REFERENCES instructors(instructor_id),
                       enrolled_year INTEGER);
CREATE TABLE courses (course_id INTEGER PRIMARY KEY, code TEXT NOT NULL UNIQUE, title TEXT,
                      dept_id INTEGER REFERENCES departments(dept_id), credits INTEGER,
                      prereq_id INTEGER REFERENCES courses(course_id));
CREATE TABLE enrollments (student_id INTEGER REFERENCES students(student_id),
                          course_id INTEGER REFERENCES courses(course_id), term TEXT, grade TEXT,
                          PRIMARY KEY (student_id, course_id));
INSERT INTO departments VALUES (1, 'Physics', 'Rutherford Hall', 1921),
  (2, 'Chemistry', 'Curie Building', 1934), (3, 'Biology', 'Darwin Wing', 1950),
  (4, 'Astronomy', 'Hubble Tower', 1968);
INSERT INTO instructors VALUES
  (1, 'Maria', 'Chen', 1, '1989-10-20', 'R-204', 98000),
  (2, 'David', 'Okafor', 2, '2001-03-15', 'C-110', 87000),
  (3, 'Helen', 'Brandt', 3, '1995-08-01', 'D-012', 91000),
  (4, 'Samir', 'Haddad', 1, '2010-01-11', 'R-310', 76000),
  (5, 'Julia', 'Novak', 4, '2015-09-01', 'H-501', 72000),
  (6, 'Peter', 'Lindqvist', 2, '2018-02-19', 'C-214', 69000);
INSERT INTO students VALUES
  (1, 'Ana', 'Lopez', 2, 2, 2021), (2, 'James', 'Smith', 1, 1, 2020),
  (3, 'James', 'Smith', 3, 3, 2022), (4, 'Priya', 'Nair', 1, 4, 2021),
  (5, 'Tom', 'Becker', 4, 5, 2023), (6, 'Lena', 'Fischer', 3, 3, 2020),
  (7, 'Omar', 'Saleh', 2, 6, 2022), (8, 'Chloe', 'Martin', 1, 1, 2023),
  (9, 'Kenji', 'Watanabe', 4, 5, 2021), (10, 'Sofia', 'Rossi', 3, 3, 2022);
INSERT INTO courses VALUES
  (1, 'PHYS101', 'Mechanics', 1, 4, NULL), (2, 'PHYS201', 'Electromagnetism', 1, 4, 1),
  (3, 'CHEM101', 'General Chemistry', 2, 3, NULL), (4, 'CHEM301', 'Organic Chemistry', 2, 4, 3),
  (5, 'BIO101', 'Cell Biology', 3, 3, NULL), (6, 'BIO404', 'Genetics', 3, 4, 5),
  (7, 'ASTR110', 'The Solar System', 4, 3, NULL), (8, 'ASTR320', 'Stellar Physics', 4, 4, 2);
INSERT INTO enrollments VALUES
  (1, 3, 'Fall 2021', 'A'), (1, 4, 'Spring 2023', 'B+'), (2, 1, 'Fall 2020', 'B'),
  (2, 2, 'Spring 2021', 'A-'), (3, 5, 'Fall 2022', 'A'), (4, 1, 'Fall 2021', 'A'),
  (4, 8, 'Spring 2023', 'B'), (5, 7, 'Fall 2023', 'C+'), (6, 5, 'Fall 2020', 'B+'),
  (6, 6, 'Spring 2022', 'A'), (7, 3, 'Fall 2022', 'B-'), (8, 1, 'Fall 2023', 'A-'),
  (9, 7, 'Fall 2021', 'B'), (9, 8, 'Spring 2023', 'A'), (10, 6, 'Spring 2024', 'B');
"""

DEPOT = """
CREATE TABLE suppliers (supp_id INTEGER PRIMARY KEY, supp_nm TEXT NOT NULL UNIQUE, ctry TEXT,
                        active_flg TEXT, contact_nm TEXT);
CREATE TABLE warehouses (whse_id INTEGER PRIMARY KEY, whse_cd TEXT NOT NULL UNIQUE, city TEXT,
                         mgr TEXT, refrigerated TEXT, cap_m3 INTEGER);
CREATE TABLE products (prod_id INTEGER PRIMARY KEY, prod_nm TEXT NOT NULL UNIQUE, cat TEXT,
                       unit_prc REAL, qty_on_hand INTEGER, discontinued TEXT,
                       supp_id INTEGER REFERENCES suppliers(supp_id));
CREATE TABLE stock_moves (move_id INTEGER PRIMARY KEY,
                          prod_id INTEGER REFERENCES products(prod_id),
                          whse_id INTEGER REFERENCES warehouses(whse_id), qty INTEGER,
                          move_dt DATE, rcvd TEXT);
CREATE TABLE purchase_orders (po_id INTEGER PRIMARY KEY, po_no INTEGER NOT NULL UNIQUE,
                              supp_id INTEGER REFERENCES suppliers(supp_id), order_dt DATE,
                              total_amt REAL, paid TEXT);
INSERT INTO suppliers VALUES (1, 'Nordic Timber', 'Sweden', 'Y', 'Eva Holm'),
  (2, 'Atlas Metals', 'Morocco', 'Y', 'Karim Idrissi'),
  (3, 'Pacific Paper', 'Canada', 'N', 'Grace Tan'),
  (4, 'Rhine Plastics', 'Germany', 'Y', 'Jonas Weber');
INSERT INTO warehouses VALUES (1, 'WH-NORTH', 'Leeds', 'Amy Clarke', 'no', 12000),
  (2, 'WH-SOUTH', 'Bristol', 'Ben Osei', 'yes', 8000),
  (3, 'WH-EAST', 'Norwich', 'Cara Doyle', 'no', 5000);
INSERT INTO products VALUES
  (1, 'Pine Plank', 'Timber', 12.5, 340, '0', 1), (2, 'Oak Beam', 'Timber', 48.0, 60, '0', 1),
  (3, 'Steel Bracket', 'Hardware', 3.2, 1200, '0', 2), (4, 'Copper Pipe', 'Plumbing', 9.9, 1, '1', 2),
  (5, 'Printer Paper', 'Stationery', 5.5, 800, '1', 3), (6, 'Kraft Roll', 'Stationery', 14.0, 1, '0', 3),
  (7, 'PVC Sheet', 'Plastics', 22.0, 150, '0', 4), (8, 'Storage Bin', 'Plastics', 7.75, 0, '1', 4);
INSERT INTO stock_moves VALUES
  (1, 1, 1, 100, '2024-01-04', 'true'), (2, 2, 1, 20, '2024-01-09', 'true'),
  (3, 3, 2, 500, '2024-01-15', 'false'), (4, 4, 2, 40, '2024-02-02', 'true'),
  (5, 5, 3, 300, '2024-02-10', 'true'), (6, 6, 3, 25, '2024-02-21', 'false'),
  (7, 7, 1, 60, '2024-03-03', 'true'), (8, 8, 2, 90, '2024-03-12', 'false'),
  (9, 1, 2, 80, '2024-03-18', 'true'), (10, 3, 3, 250, '2024-03-25', 'true');
INSERT INTO purchase_orders VALUES (1, 4017, 1, '2024-01-02', 1450.0, 'Y'),
  (2, 4018, 2, '2024-01-12', 1920.5, 'Y'), (3, 4019, 3, '2024-02-01', 610.0, 'N'),
  (4, 4020, 1, '2024-02-15', 980.0, 'N'), (5, 4021, 4, '2024-03-01', 1320.0, 'Y');
"""

SCHEMAS = {"campus": CAMPUS, "depot": DEPOT}


def build(name: str, directory: Path) -> str:
    """Create the SQLite file for schema ``name`` in ``directory``; its SQLAlchemy URL."""
    path = directory / f"{name}.sqlite"
    con = sqlite3.connect(path)
    con.executescript(SCHEMAS[name])
    con.commit()
    con.close()
    return f"sqlite:///{path}"


#: Questions recorded per schema for the readers' verdicts.
SAMPLE_SIZE = 60
SAMPLE_FILE = Path(__file__).parents[1] / "data" / "generation" / "people_sample.json"


def sample_questions(groups: Sequence[SemanticGroup], n: int = SAMPLE_SIZE) -> list[dict[str, Any]]:
    """``n`` questions spread over the templates: one group per template in turn (the order
    generation gives them), one form of each, short and long forms alternating."""
    by_template: dict[str, list[SemanticGroup]] = {}
    for g in groups:
        by_template.setdefault(str(g.template_id), []).append(g)
    queues = list(by_template.values())
    out: list[dict[str, Any]] = []
    turn = 0
    while len(out) < n and any(queues):
        for q in queues:
            if not q or len(out) >= n:
                continue
            g = q.pop(0)
            cohort = ("short", "long")[len(out) % 2]
            forms = [f.text for f in g.forms if f.cohort == cohort] or [f.text for f in g.forms]
            out.append(
                {
                    "group_id": g.group_id,
                    "question": forms[turn % len(forms)],
                    "gold": list(g.answer.values),
                    "verdict": None,
                    "reason": None,
                }
            )
        turn += 1
    return out


def write_sample(directory: Path) -> None:
    """Regenerate :data:`SAMPLE_FILE` from both schemas, keeping the verdicts of questions that
    are still the same (``python -m tests.unit.gen_people_schemas``)."""
    from groundwatch.adapters.sources import generate_groups

    old: dict[tuple[str, str], dict[str, Any]] = {}
    if SAMPLE_FILE.exists():
        for items in json.loads(SAMPLE_FILE.read_text()).values():
            old.update({(i["group_id"], i["question"]): i for i in items})
    data = {}
    for name in SCHEMAS:
        res = generate_groups(build(name, directory), k=3)
        items = sample_questions(res.groups)
        for i in items:
            prev = old.get((i["group_id"], i["question"]))
            if prev is not None:
                i["verdict"], i["reason"] = prev["verdict"], prev["reason"]
        data[name] = items
    SAMPLE_FILE.parent.mkdir(parents=True, exist_ok=True)
    SAMPLE_FILE.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        write_sample(Path(d))
