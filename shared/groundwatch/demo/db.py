"""The demo database: the rows of :mod:`groundwatch.demo.data` in three tables with foreign keys."""

from __future__ import annotations

from sqlalchemy import (
    Column,
    Date,
    Engine,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    insert,
)

from groundwatch.demo.data import DemoRows

metadata = MetaData()

employees = Table(
    "employees",
    metadata,
    Column("employee_id", Integer, primary_key=True),
    Column("name", String(120), nullable=False, unique=True),
    Column("job_title", String(120), nullable=False),
    Column("department", String(120), nullable=False),
    Column("office", String(80), nullable=False),
    Column("hire_date", Date, nullable=False),
    Column("supervisor_id", Integer, ForeignKey("employees.employee_id"), nullable=True),
)
clients = Table(
    "clients",
    metadata,
    Column("client_id", Integer, primary_key=True),
    Column("name", String(160), nullable=False, unique=True),
    Column("industry", String(80), nullable=False),
    Column("city", String(80), nullable=False),
    Column("country", String(80), nullable=False),
    Column("founded_year", Integer, nullable=False),
    Column("account_manager_id", Integer, ForeignKey("employees.employee_id"), nullable=False),
)
projects = Table(
    "projects",
    metadata,
    Column("project_id", Integer, primary_key=True),
    Column("name", String(160), nullable=False, unique=True),
    Column("client_id", Integer, ForeignKey("clients.client_id"), nullable=False),
    Column("director_id", Integer, ForeignKey("employees.employee_id"), nullable=False),
    Column("manager_id", Integer, ForeignKey("employees.employee_id"), nullable=False),
    Column("city", String(80), nullable=False),
    Column("start_date", Date, nullable=False),
    Column("end_date", Date, nullable=False),
    Column("budget", Integer, nullable=False),
    Column("status", String(20), nullable=False),
)


def create_demo_db(engine: Engine, rows: DemoRows) -> None:
    """Create the three tables and insert the rows (fails if they already exist)."""
    metadata.create_all(engine, checkfirst=False)
    with engine.begin() as conn:
        conn.execute(
            insert(employees),
            [
                {
                    "employee_id": e.employee_id,
                    "name": e.name,
                    "job_title": e.job_title,
                    "department": e.department,
                    "office": e.office,
                    "hire_date": e.hire_date,
                    "supervisor_id": e.supervisor_id,
                }
                for e in rows.employees
            ],
        )
        conn.execute(
            insert(clients),
            [
                {
                    "client_id": c.client_id,
                    "name": c.name,
                    "industry": c.industry,
                    "city": c.city,
                    "country": c.country,
                    "founded_year": c.founded_year,
                    "account_manager_id": c.account_manager_id,
                }
                for c in rows.clients
            ],
        )
        conn.execute(
            insert(projects),
            [
                {
                    "project_id": p.project_id,
                    "name": p.name,
                    "client_id": p.client_id,
                    "director_id": p.director_id,
                    "manager_id": p.manager_id,
                    "city": p.city,
                    "start_date": p.start_date,
                    "end_date": p.end_date,
                    "budget": p.budget,
                    "status": p.status,
                }
                for p in rows.projects
            ],
        )
