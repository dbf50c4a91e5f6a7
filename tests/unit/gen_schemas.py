"""Test schemas for generation, built as SQLite files: shapes the demo schema does not have.

- ``company_employee``: the shape of the database GRAMMAR's authors used (people, company and the
  many-to-many link ``employment(Company_ID, People_ID, Year_working)``), with made-up rows;
- ``shop``: customers with personal data (e-mail, phone, birth date, street address), products,
  orders, order lines (a link with its own quantity), invoices and sensor readings — tables without
  a column that names their rows, one with a composite key;
- ``music``: artists, albums (with a ``released`` date) and tracks, one track named like its album.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

COMPANY_EMPLOYEE = """
CREATE TABLE people (People_ID INTEGER PRIMARY KEY, Age INTEGER, Name TEXT,
                     Nationality TEXT, Graduation_College TEXT);
CREATE TABLE company (Company_ID INTEGER PRIMARY KEY, Name TEXT, Headquarters TEXT,
                      Industry TEXT, Sales_in_Billion REAL);
CREATE TABLE employment (Company_ID INTEGER, People_ID INTEGER, Year_working INTEGER,
                         PRIMARY KEY (Company_ID, People_ID),
                         FOREIGN KEY (Company_ID) REFERENCES company(Company_ID),
                         FOREIGN KEY (People_ID) REFERENCES people(People_ID));
INSERT INTO people VALUES (1, 27, 'Mara Quist', 'Norway', 'Bergen Tech'),
  (2, 34, 'Olu Adeyemi', 'Nigeria', 'Lagos Poly'), (3, 41, 'Ines Carvalho', 'Portugal', 'Porto'),
  (4, 29, 'Tomas Varga', 'Hungary', 'Szeged'), (5, 38, 'Lin Qiao', 'China', 'Fudan'),
  (6, 45, 'Ravi Menon', 'India', 'Madras'), (7, 31, 'Kofi Mensah', 'Ghana', 'Legon');
INSERT INTO company VALUES (1, 'Fjordline Energy', 'Norway', 'Oil and gas', 41.5),
  (2, 'Harbor Mutual', 'USA', 'Banking', 77.0), (3, 'Cobalt Motors', 'Germany', 'Automotive', 120.2),
  (4, 'Sunfield Retail', 'UK', 'Retailing', 53.9), (5, 'Delta Grid', 'Brazil', 'Utilities', 12.4);
INSERT INTO employment VALUES (1, 1, 3), (2, 2, 5), (3, 3, 9), (3, 4, 2), (4, 5, 7), (1, 6, 12),
  (5, 6, 4), (2, 7, 1);
"""

SHOP = """
CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
                        email TEXT, phone TEXT, birth_date DATE, street TEXT, city TEXT,
                        contact TEXT);
CREATE TABLE products (product_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
                       category TEXT, price REAL);
CREATE TABLE orders (order_id INTEGER PRIMARY KEY,
                     customer_id INTEGER NOT NULL REFERENCES customers(customer_id),
                     order_date DATE, status TEXT);
CREATE TABLE order_items (order_id INTEGER REFERENCES orders(order_id),
                          product_id INTEGER REFERENCES products(product_id), quantity INTEGER,
                          PRIMARY KEY (order_id, product_id));
CREATE TABLE invoices (invoice_id INTEGER PRIMARY KEY,
                       customer_id INTEGER NOT NULL REFERENCES customers(customer_id),
                       issued_on DATE, total REAL);
CREATE TABLE sensors (sensor_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, site TEXT);
CREATE TABLE readings (sensor_id INTEGER REFERENCES sensors(sensor_id), taken_on DATE,
                       celsius REAL, PRIMARY KEY (sensor_id, taken_on));
INSERT INTO customers VALUES
  (1, 'Alder Bakery', 'orders@alder.example', '+44 20 7946 0011', '1980-02-01', '1 Mill Lane',
   'Leeds', 'ana@alder.example'),
  (2, 'Birch Outfitters', 'hi@birch.example', '+44 20 7946 0022', '1975-07-13', '9 Oak Road',
   'York', 'bo@birch.example'),
  (3, 'Cedar Clinic', 'desk@cedar.example', '+44 20 7946 0033', '1990-11-30', '4 Elm Street',
   'Hull', 'cy@cedar.example'),
  (4, 'Dune Surf Shop', NULL, '+44 20 7946 0044', '1969-05-05', '7 Beach Walk', 'Leeds',
   'di@dune.example');
INSERT INTO products VALUES (1, 'Rye Loaf', 'Bread', 3.5), (2, 'Trail Boots', 'Footwear', 89.0),
  (3, 'Wool Socks', 'Footwear', 12.0), (4, 'First Aid Kit', 'Health', 24.5);
INSERT INTO orders VALUES (1, 1, '2024-01-05', 'shipped'), (2, 2, '2024-01-09', 'shipped'),
  (3, 2, '2024-02-11', 'open'), (4, 3, '2024-02-20', 'shipped'), (5, 4, '2024-03-01', 'open');
INSERT INTO order_items VALUES (1, 1, 12), (2, 2, 1), (2, 3, 3), (3, 3, 6), (4, 4, 2), (5, 2, 1);
INSERT INTO invoices VALUES (1, 1, '2024-01-06', 42.0), (2, 2, '2024-01-10', 125.0),
  (3, 2, '2024-02-12', 72.0), (4, 3, '2024-02-21', 49.0);
INSERT INTO sensors VALUES (1, 'North Gate', 'Yard'), (2, 'Cold Room', 'Warehouse');
INSERT INTO readings VALUES (1, '2024-03-01', 4.5), (1, '2024-03-02', 6.0),
  (2, '2024-03-01', -18.0), (2, '2024-03-02', -17.5);
"""

MUSIC = """
CREATE TABLE artists (artist_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, country TEXT);
CREATE TABLE albums (album_id INTEGER PRIMARY KEY, title TEXT NOT NULL UNIQUE, released DATE,
                     genre TEXT, artist_id INTEGER REFERENCES artists(artist_id));
CREATE TABLE tracks (track_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
                     milliseconds INTEGER, album_id INTEGER REFERENCES albums(album_id));
INSERT INTO artists VALUES (1, 'Loud Engines', 'UK'), (2, 'Paper Lanterns', 'Japan'),
  (3, 'Quiet Harbour', 'Canada');
INSERT INTO albums VALUES (1, 'Ace of Spades', '1980-11-08', 'Rock', 1),
  (2, 'Night Kites', '2011-04-02', 'Pop', 2), (3, 'Salt and Rope', '2016-09-23', 'Folk', 3),
  (4, 'Iron Tide', '1983-06-01', 'Rock', 1);
INSERT INTO tracks VALUES (1, 'Ace of Spades', 169000, 1), (2, 'Love Me Like a Reptile', 203000, 1),
  (3, 'Paper Moon', 241000, 2), (4, 'Lantern Walk', 198000, 2), (5, 'Anchor Line', 225000, 3),
  (6, 'Rust Belt', 187000, 4), (7, 'Harbour Lights', 260000, 3);
"""

SCHEMAS = {"company_employee": COMPANY_EMPLOYEE, "shop": SHOP, "music": MUSIC}


def build(name: str, directory: Path) -> str:
    """Create the SQLite file for schema ``name`` in ``directory``; its SQLAlchemy URL."""
    path = directory / f"{name}.sqlite"
    con = sqlite3.connect(path)
    con.executescript(SCHEMAS[name])
    con.commit()
    con.close()
    return f"sqlite:///{path}"
