"""A third schema of a shape the people schemas lack, built as a SQLite file.

``clinic``: abbreviated names the word list does not know, whose long forms only the schema's
own names give (``pat_id`` → ``patients``, ``phys_id`` → ``physicians``, ``appt_dt`` next to
``appointments``, ``med_cd`` → ``medications``, ``presc_dt`` in ``prescriptions``); composite
primary keys (a prescription is an appointment's and a medication's, an allergy a patient's and
an allergen's); a nullable foreign key (a patient without insurer, an appointment in no ward);
dates; and flags stored as numbers 0/1 (``smoker``, ``attended``, ``otc``).

Rows are written out, not drawn, so every build is the same database.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

CLINIC = """
CREATE TABLE insurers (insurer_id INTEGER PRIMARY KEY, insurer_nm TEXT NOT NULL UNIQUE,
                       hq_city TEXT, founded INTEGER);
CREATE TABLE patients (pat_id INTEGER PRIMARY KEY, first_name TEXT NOT NULL,
                       last_name TEXT NOT NULL, dob DATE, blood_grp TEXT, smoker INTEGER,
                       insurer_id INTEGER REFERENCES insurers(insurer_id));
CREATE TABLE physicians (phys_id INTEGER PRIMARY KEY, first_name TEXT NOT NULL,
                         last_name TEXT NOT NULL, specialty TEXT, license_no TEXT UNIQUE,
                         started_on DATE);
CREATE TABLE wards (ward_cd TEXT PRIMARY KEY, ward_nm TEXT NOT NULL UNIQUE, floor_no INTEGER,
                    beds INTEGER);
CREATE TABLE appointments (appt_id INTEGER PRIMARY KEY,
                           pat_id INTEGER NOT NULL REFERENCES patients(pat_id),
                           phys_id INTEGER NOT NULL REFERENCES physicians(phys_id),
                           appt_dt DATE, reason TEXT, attended INTEGER,
                           ward_cd TEXT REFERENCES wards(ward_cd));
CREATE TABLE medications (med_cd TEXT PRIMARY KEY, med_nm TEXT NOT NULL UNIQUE,
                          dosage_mg INTEGER, otc INTEGER);
CREATE TABLE prescriptions (appt_id INTEGER REFERENCES appointments(appt_id),
                            med_cd TEXT REFERENCES medications(med_cd), presc_dt DATE,
                            daily_doses INTEGER, refills INTEGER,
                            PRIMARY KEY (appt_id, med_cd));
CREATE TABLE allergies (pat_id INTEGER REFERENCES patients(pat_id), allergen TEXT,
                        severity TEXT, PRIMARY KEY (pat_id, allergen));
INSERT INTO insurers VALUES (1, 'Blue Harbor Health', 'Boston', 1952),
  (2, 'Cedar Mutual', 'Denver', 1987), (3, 'Lakeside Assurance', 'Chicago', 2004);
INSERT INTO patients VALUES
  (1, 'Irene', 'Kowalski', '1958-04-12', 'A+', 0, 1),
  (2, 'Marcus', 'Delgado', '1983-11-02', 'O-', 1, 2),
  (3, 'Yuki', 'Tanaka', '1991-07-23', 'B+', 0, NULL),
  (4, 'Fatima', 'Bello', '1975-01-30', 'O+', 0, 3),
  (5, 'George', 'Papadakis', '1949-09-15', 'AB+', 1, 1),
  (6, 'Hannah', 'Olsen', '2001-03-08', 'A-', 0, NULL),
  (7, 'Diego', 'Ramirez', '1968-12-19', 'O+', 1, 2),
  (8, 'Nadia', 'Petrova', '1995-05-27', 'B-', 0, 3),
  (9, 'Samuel', 'Adeyemi', '1980-08-04', 'A+', 0, 1),
  (10, 'Clara', 'Moreau', '1962-02-11', 'O-', 1, NULL);
INSERT INTO physicians VALUES
  (1, 'Rebecca', 'Stein', 'Cardiology', 'MD-40211', '2004-06-01'),
  (2, 'Arjun', 'Mehta', 'Dermatology', 'MD-51877', '2011-09-15'),
  (3, 'Lucia', 'Ferrari', 'Pediatrics', 'MD-33090', '1998-02-01'),
  (4, 'Owen', 'Gallagher', 'Neurology', 'MD-62315', '2016-01-11'),
  (5, 'Mei', 'Lin', 'General Practice', 'MD-27744', '1993-10-04');
INSERT INTO wards VALUES ('CARD', 'Cardiac Unit', 3, 24), ('NEUR', 'Neurology Wing', 4, 18),
  ('PEDS', 'Children''s Ward', 2, 30);
INSERT INTO appointments VALUES
  (101, 1, 1, '2024-01-08', 'Chest pain', 1, 'CARD'),
  (102, 2, 2, '2024-01-10', 'Rash', 1, NULL),
  (103, 3, 5, '2024-01-15', 'Annual checkup', 0, NULL),
  (104, 4, 4, '2024-01-22', 'Migraine', 1, 'NEUR'),
  (105, 5, 1, '2024-02-03', 'Palpitations', 1, 'CARD'),
  (106, 6, 2, '2024-02-09', 'Acne', 0, NULL),
  (107, 7, 5, '2024-02-14', 'Back pain', 1, NULL),
  (108, 8, 3, '2024-02-20', 'Vaccination', 1, 'PEDS'),
  (109, 9, 4, '2024-03-01', 'Dizziness', 1, 'NEUR'),
  (110, 10, 1, '2024-03-05', 'Hypertension', 1, 'CARD'),
  (111, 1, 5, '2024-03-12', 'Flu symptoms', 0, NULL),
  (112, 7, 4, '2024-03-19', 'Numbness', 1, 'NEUR');
INSERT INTO medications VALUES ('ATV20', 'Atorvastatin', 20, 0), ('IBU400', 'Ibuprofen', 400, 1),
  ('SUM50', 'Sumatriptan', 50, 0), ('HC1', 'Hydrocortisone Cream', 1, 1),
  ('LIS10', 'Lisinopril', 10, 0), ('CET10', 'Cetirizine', 10, 1);
INSERT INTO prescriptions VALUES
  (101, 'ATV20', '2024-01-08', 1, 5), (102, 'HC1', '2024-01-10', 2, 0),
  (104, 'SUM50', '2024-01-22', 1, 2), (105, 'ATV20', '2024-02-03', 1, 3),
  (105, 'LIS10', '2024-02-03', 1, 6), (107, 'IBU400', '2024-02-14', 3, 1),
  (109, 'CET10', '2024-03-01', 1, 0), (110, 'LIS10', '2024-03-05', 2, 11),
  (112, 'IBU400', '2024-03-19', 2, 0), (102, 'CET10', '2024-01-10', 1, 1);
INSERT INTO allergies VALUES (1, 'Penicillin', 'severe'), (2, 'Latex', 'mild'),
  (4, 'Peanuts', 'severe'), (5, 'Penicillin', 'moderate'), (7, 'Shellfish', 'mild'),
  (8, 'Pollen', 'mild'), (10, 'Aspirin', 'moderate');
"""

#: Questions recorded for the reader's verdicts.
SAMPLE_SIZE = 40
SAMPLE_FILE = Path(__file__).parents[1] / "data" / "generation" / "clinic_sample.json"


def build(directory: Path) -> str:
    """Create the clinic's SQLite file in ``directory``; its SQLAlchemy URL."""
    path = directory / "clinic.sqlite"
    con = sqlite3.connect(path)
    con.executescript(CLINIC)
    con.commit()
    con.close()
    return f"sqlite:///{path}"
