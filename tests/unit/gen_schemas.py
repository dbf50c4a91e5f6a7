"""Test schemas for generation, built as SQLite files: shapes the demo schema does not have.

- ``company_employee``: the shape of the database GRAMMAR's authors used (people, company and the
  many-to-many link ``employment(Company_ID, People_ID, Year_working)``), with made-up rows;
- ``shop``: customers with personal data (e-mail, phone, birth date, street address), products,
  orders, order lines (a link with its own quantity), invoices and sensor readings — tables without
  a column that names their rows, one with a composite key;
- ``music``: artists, albums (with a ``released`` date) and tracks, one track named like its album.
"""

from __future__ import annotations

import random
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


# --- two outside-like schemas (issue 32): self-references, link tables with payloads, 0/1 flags ---
#
# Made up here, shaped like the sample databases people try first: a music store (an employee
# hierarchy through ``Employee.ReportsTo``, customers served by a support rep, invoices and invoice
# lines with quantity and unit price, playlists linked to tracks, a few repeated track and playlist
# names, timestamps stored as 'YYYY-MM-DD 00:00:00') and a trading company (a 0/1 ``Discontinued``
# flag, orders shipped via a shipper, ``Order Details`` with unit price and quantity, territories
# and regions behind an employee↔territory link). Rows come from a seeded generator, so every
# build is the same database.


def _music_store(con: sqlite3.Connection, rng: random.Random) -> None:
    con.executescript(
        """
        CREATE TABLE Artist (ArtistId INTEGER PRIMARY KEY, Name NVARCHAR(120));
        CREATE TABLE Album (AlbumId INTEGER PRIMARY KEY, Title NVARCHAR(160) NOT NULL,
                            ArtistId INTEGER NOT NULL REFERENCES Artist(ArtistId));
        CREATE TABLE Genre (GenreId INTEGER PRIMARY KEY, Name NVARCHAR(120));
        CREATE TABLE MediaType (MediaTypeId INTEGER PRIMARY KEY, Name NVARCHAR(120));
        CREATE TABLE Track (TrackId INTEGER PRIMARY KEY, Name NVARCHAR(200) NOT NULL,
                            AlbumId INTEGER REFERENCES Album(AlbumId),
                            MediaTypeId INTEGER NOT NULL REFERENCES MediaType(MediaTypeId),
                            GenreId INTEGER REFERENCES Genre(GenreId), Composer NVARCHAR(220),
                            Milliseconds INTEGER NOT NULL, UnitPrice NUMERIC(10,2) NOT NULL);
        CREATE TABLE Playlist (PlaylistId INTEGER PRIMARY KEY, Name NVARCHAR(120));
        CREATE TABLE PlaylistTrack (PlaylistId INTEGER NOT NULL REFERENCES Playlist(PlaylistId),
                                    TrackId INTEGER NOT NULL REFERENCES Track(TrackId),
                                    PRIMARY KEY (PlaylistId, TrackId));
        CREATE TABLE Employee (EmployeeId INTEGER PRIMARY KEY, LastName NVARCHAR(20) NOT NULL,
                               FirstName NVARCHAR(20) NOT NULL, Title NVARCHAR(30),
                               ReportsTo INTEGER REFERENCES Employee(EmployeeId),
                               BirthDate DATETIME, HireDate DATETIME, Address NVARCHAR(70),
                               City NVARCHAR(40), Country NVARCHAR(40));
        CREATE TABLE Customer (CustomerId INTEGER PRIMARY KEY, FirstName NVARCHAR(40) NOT NULL,
                               LastName NVARCHAR(20) NOT NULL, Company NVARCHAR(80),
                               Address NVARCHAR(70), City NVARCHAR(40), Country NVARCHAR(40),
                               SupportRepId INTEGER REFERENCES Employee(EmployeeId));
        CREATE TABLE Invoice (InvoiceId INTEGER PRIMARY KEY,
                              CustomerId INTEGER NOT NULL REFERENCES Customer(CustomerId),
                              InvoiceDate DATETIME NOT NULL, BillingCity NVARCHAR(40),
                              BillingCountry NVARCHAR(40), Total NUMERIC(10,2) NOT NULL);
        CREATE TABLE InvoiceLine (InvoiceLineId INTEGER PRIMARY KEY,
                                  InvoiceId INTEGER NOT NULL REFERENCES Invoice(InvoiceId),
                                  TrackId INTEGER NOT NULL REFERENCES Track(TrackId),
                                  UnitPrice NUMERIC(10,2) NOT NULL, Quantity INTEGER NOT NULL);
        """
    )
    artists = ["Basalt Choir", "Mina Okafor", "The Velvet Tramlines", "Odd Harbour",
               "Lumen Quartet", "Sergei Valko", "Copperhead Road", "Nadia Lind"]  # fmt: skip
    con.executemany("INSERT INTO Artist VALUES (?, ?)", enumerate(artists, 1))
    albums = ["Night Ferry", "Glass Orchard", "Static Bloom", "Low Tide Letters", "Paper Crowns",
              "Winter Engines", "Salt Roads", "Northern Static", "Borrowed Light", "Iron Meadow",
              "Quiet Machines", "Harbour Songs"]  # fmt: skip
    con.executemany(
        "INSERT INTO Album VALUES (?, ?, ?)",
        [(i, t, (i - 1) % len(artists) + 1) for i, t in enumerate(albums, 1)],
    )
    genres = ["Rock", "Jazz", "Classical", "Blues", "Latin"]
    con.executemany("INSERT INTO Genre VALUES (?, ?)", enumerate(genres, 1))
    media = ["MPEG audio file", "AAC audio file", "Protected AAC audio file"]
    con.executemany("INSERT INTO MediaType VALUES (?, ?)", enumerate(media, 1))
    words = ["River", "Lantern", "Copper", "Echo", "Velvet", "Signal", "Orchard", "Ember", "Tide",
             "Harbour", "Meadow", "Static", "Crown", "Ferry", "Winter", "Glass"]  # fmt: skip
    names: list[str] = []
    while len(names) < 57:
        n = f"{rng.choice(words)} {rng.choice(['Song', 'Blues', 'Waltz', 'Run', 'Lights', 'Call'])}"
        if n not in names:
            names.append(n)
    names += ["River Song", "Echo Waltz", "Ember Lights"]  # three track names repeat
    composers = ["A. Reyes", "M. Okafor", "J. Byrne", "L. Stein", None]
    tracks = []
    for i, n in enumerate(names, 1):
        album = rng.randint(1, len(albums))
        tracks.append(
            (i, n, album, rng.randint(1, 3), rng.randint(1, 5), rng.choice(composers),
             rng.randint(150_000, 420_000), rng.choice([0.99, 0.99, 1.99]))
        )  # fmt: skip
    con.executemany("INSERT INTO Track VALUES (?, ?, ?, ?, ?, ?, ?, ?)", tracks)
    # 10 playlists, 8 distinct names: just below the key ratio of a name column
    playlists = ["Music", "Movies", "TV Shows", "Audiobooks", "90s Music", "Music", "Movies",
                 "Classical Picks", "Grunge", "Brazilian Music"]  # fmt: skip
    con.executemany("INSERT INTO Playlist VALUES (?, ?)", enumerate(playlists, 1))
    links = sorted(
        {(p, t) for p in range(1, 11) for t in rng.sample(range(1, 61), rng.randint(2, 14))}
    )
    con.executemany("INSERT INTO PlaylistTrack VALUES (?, ?)", links)
    employees = [
        (1, "Adams", "Andrew", "General Manager", None, "1962-02-18", "2002-08-14"),
        (2, "Edwards", "Nancy", "Sales Manager", 1, "1958-12-08", "2002-05-01"),
        (3, "Peacock", "Jane", "Sales Support Agent", 2, "1973-08-29", "2002-04-01"),
        (4, "Park", "Margaret", "Sales Support Agent", 2, "1947-09-19", "2003-05-03"),
        (5, "Johnson", "Steve", "Sales Support Agent", 2, "1965-03-03", "2003-10-17"),
        (6, "Mitchell", "Michael", "IT Manager", 1, "1973-07-01", "2003-10-17"),
        (7, "King", "Robert", "IT Staff", 6, "1970-05-29", "2004-01-02"),
        (8, "Callahan", "Laura", "IT Staff", 6, "1968-01-09", "2004-03-04"),
    ]
    cities = ["Calgary", "Edmonton", "Lethbridge"]
    con.executemany(
        "INSERT INTO Employee VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (e, ln, fn, t, r, f"{b} 00:00:00", f"{h} 00:00:00", f"{10 + e} Jasper Ave",
             cities[e % 3], "Canada")
            for e, ln, fn, t, r, b, h in employees
        ],
    )  # fmt: skip
    people = [("Luis", "Goncalves"), ("Leonie", "Kohler"), ("Francois", "Tremblay"),
              ("Bjorn", "Hansen"), ("Frantisek", "Wichterlova"), ("Helena", "Holy"),
              ("Astrid", "Gruber"), ("Daan", "Peeters"), ("Kara", "Nielsen"),
              ("Eduardo", "Martins"), ("Alexandre", "Rocha"), ("Roberto", "Almeida"),
              ("Fernanda", "Ramos"), ("Mark", "Philips"), ("Jennifer", "Peterson"),
              ("Frank", "Harris"), ("Jack", "Smith"), ("Tim", "Goyer"), ("Dan", "Miller"),
              ("Kathy", "Mitchell")]  # fmt: skip
    countries = ["Brazil", "Germany", "Canada", "Norway", "Czech Republic", "Austria", "Belgium",
                 "Denmark", "USA", "Portugal"]  # fmt: skip
    con.executemany(
        "INSERT INTO Customer VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (i, fn, ln, rng.choice([None, "Embraer", "JetBrains", "Woodstock Discos"]),
             f"{rng.randint(1, 900)} {rng.choice(['Main St', 'Rue Verte', 'Kungsgatan'])}",
             f"City {i}", countries[i % len(countries)], rng.choice([3, 4, 5]))
            for i, (fn, ln) in enumerate(people, 1)
        ],
    )  # fmt: skip
    invoice_rows, line_rows, line_id = [], [], 0
    for inv in range(1, 61):
        cust = rng.randint(1, len(people))
        day = f"20{rng.randint(21, 24)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} 00:00:00"
        total = 0.0
        for track in rng.sample(range(1, 61), rng.randint(1, 4)):
            line_id += 1
            qty = rng.choice([1, 1, 1, 2, 3])
            price = tracks[track - 1][7]
            total += qty * price
            line_rows.append((line_id, inv, track, price, qty))
        invoice_rows.append((inv, cust, day, f"City {cust}", countries[cust % 10], round(total, 2)))
    con.executemany("INSERT INTO Invoice VALUES (?, ?, ?, ?, ?, ?)", invoice_rows)
    con.executemany("INSERT INTO InvoiceLine VALUES (?, ?, ?, ?, ?)", line_rows)


def _trading(con: sqlite3.Connection, rng: random.Random) -> None:
    con.executescript(
        """
        CREATE TABLE Categories (CategoryID INTEGER PRIMARY KEY, CategoryName TEXT NOT NULL UNIQUE,
                                 Description TEXT);
        CREATE TABLE Suppliers (SupplierID INTEGER PRIMARY KEY, CompanyName TEXT NOT NULL,
                                ContactName TEXT, City TEXT, Country TEXT);
        CREATE TABLE Products (ProductID INTEGER PRIMARY KEY, ProductName TEXT NOT NULL,
                               SupplierID INTEGER REFERENCES Suppliers(SupplierID),
                               CategoryID INTEGER REFERENCES Categories(CategoryID),
                               QuantityPerUnit TEXT, UnitPrice NUMERIC DEFAULT 0,
                               UnitsInStock INTEGER DEFAULT 0,
                               Discontinued INTEGER NOT NULL DEFAULT 0);
        CREATE TABLE Shippers (ShipperID INTEGER PRIMARY KEY, CompanyName TEXT NOT NULL);
        CREATE TABLE Region (RegionID INTEGER PRIMARY KEY, RegionDescription TEXT NOT NULL);
        CREATE TABLE Territories (TerritoryID TEXT PRIMARY KEY, TerritoryDescription TEXT NOT NULL,
                                  RegionID INTEGER NOT NULL REFERENCES Region(RegionID));
        CREATE TABLE Employees (EmployeeID INTEGER PRIMARY KEY, LastName TEXT NOT NULL,
                                FirstName TEXT NOT NULL, Title TEXT, BirthDate DATETIME,
                                HireDate DATETIME, City TEXT,
                                ReportsTo INTEGER REFERENCES Employees(EmployeeID));
        CREATE TABLE EmployeeTerritories (
            EmployeeID INTEGER NOT NULL REFERENCES Employees(EmployeeID),
            TerritoryID TEXT NOT NULL REFERENCES Territories(TerritoryID),
            PRIMARY KEY (EmployeeID, TerritoryID));
        CREATE TABLE Customers (CustomerID TEXT PRIMARY KEY, CompanyName TEXT NOT NULL,
                                ContactName TEXT, City TEXT, Country TEXT);
        CREATE TABLE Orders (OrderID INTEGER PRIMARY KEY,
                             CustomerID TEXT REFERENCES Customers(CustomerID),
                             EmployeeID INTEGER REFERENCES Employees(EmployeeID),
                             OrderDate DATETIME, ShippedDate DATETIME,
                             ShipVia INTEGER REFERENCES Shippers(ShipperID), Freight NUMERIC);
        CREATE TABLE "Order Details" (OrderID INTEGER NOT NULL REFERENCES Orders(OrderID),
                                      ProductID INTEGER NOT NULL REFERENCES Products(ProductID),
                                      UnitPrice NUMERIC NOT NULL, Quantity INTEGER NOT NULL,
                                      Discount REAL NOT NULL DEFAULT 0,
                                      PRIMARY KEY (OrderID, ProductID));
        """
    )
    categories = [("Beverages", "Soft drinks, coffees, teas, beers, and ales"),
                  ("Condiments", "Sweet and savory sauces, relishes, spreads, and seasonings"),
                  ("Confections", "Desserts, candies, and sweet breads"),
                  ("Dairy Products", "Cheeses"), ("Seafood", "Seaweed and fish")]  # fmt: skip
    con.executemany(
        "INSERT INTO Categories VALUES (?, ?, ?)",
        [(i, n, d) for i, (n, d) in enumerate(categories, 1)],
    )
    suppliers = [("Exotic Liquids", "Charlotte Cooper", "London", "UK"),
                 ("New Orleans Cajun Delights", "Shelley Burke", "New Orleans", "USA"),
                 ("Tokyo Traders", "Yoshi Nagase", "Tokyo", "Japan"),
                 ("Pavlova, Ltd.", "Ian Devling", "Melbourne", "Australia"),
                 ("Nord-Ost-Fisch", "Sven Petersen", "Cuxhaven", "Germany"),
                 ("Formaggi Fortini", "Elio Rossi", "Ravenna", "Italy")]  # fmt: skip
    con.executemany(
        "INSERT INTO Suppliers VALUES (?, ?, ?, ?, ?)",
        [(i, *s) for i, s in enumerate(suppliers, 1)],
    )
    products = ["Chai", "Chang", "Aniseed Syrup", "Cajun Seasoning", "Gumbo Mix",
                "Boysenberry Spread", "Dried Pears", "Northwoods Sauce", "Mishi Kobe Niku",
                "Ikura", "Queso Cabrales", "Konbu", "Tofu", "Genen Shouyu", "Pavlova",
                "Alice Mutton", "Carnarvon Tigers", "Teatime Biscuits", "Sir Rodney's Marmalade",
                "Scones", "Gustaf's Knackebrod", "Tunnbrod", "Guarana Fantastica",
                "NuNuCa Nougat", "Gumbar Gummibarchen", "Schoggi Schokolade", "Rossle Sauerkraut",
                "Thuringer Rostbratwurst", "Nord-Ost Matjeshering", "Gorgonzola Telino"]  # fmt: skip
    con.executemany(
        "INSERT INTO Products VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (i, n, rng.randint(1, 6), rng.randint(1, 5), f"{rng.randint(6, 48)} boxes",
             round(rng.uniform(2.5, 120.0), 2), rng.randint(0, 120),
             1 if i in (5, 9, 16, 17, 24, 28) else 0)
            for i, n in enumerate(products, 1)
        ],
    )  # fmt: skip
    con.executemany(
        "INSERT INTO Shippers VALUES (?, ?)",
        [(1, "Speedy Express"), (2, "United Package"), (3, "Federal Shipping")],
    )
    con.executemany(
        "INSERT INTO Region VALUES (?, ?)",
        [(1, "Eastern"), (2, "Westerns"), (3, "Northern"), (4, "Southern")],
    )
    territories = ["Westboro", "Bedford", "Georgetown", "Boston", "Cambridge", "Braintree",
                   "Louisville", "Wilton", "Morristown", "Edison", "New York", "Mellvile",
                   "Fairport", "Hoffman Estates", "Chicago", "Denver"]  # fmt: skip
    con.executemany(
        "INSERT INTO Territories VALUES (?, ?, ?)",
        [(f"{1000 + i:05d}", t, i % 4 + 1) for i, t in enumerate(territories)],
    )
    employees = [
        (1, "Davolio", "Nancy", "Sales Representative", "1948-12-08", "1992-05-01", "Seattle", 2),
        (2, "Fuller", "Andrew", "Vice President, Sales", "1952-02-19", "1992-08-14", "Tacoma", None),
        (3, "Leverling", "Janet", "Sales Representative", "1963-08-30", "1992-04-01", "Kirkland", 2),
        (4, "Peacock", "Margaret", "Sales Representative", "1937-09-19", "1993-05-03", "Redmond", 2),
        (5, "Buchanan", "Steven", "Sales Manager", "1955-03-04", "1993-10-17", "London", 2),
        (6, "Suyama", "Michael", "Sales Representative", "1963-07-02", "1993-10-17", "London", 5),
        (7, "King", "Robert", "Sales Representative", "1960-05-29", "1994-01-02", "London", 5),
        (8, "Callahan", "Laura", "Inside Sales Coordinator", "1958-01-09", "1994-03-05", "Seattle", 2),
        (9, "Dodsworth", "Anne", "Sales Representative", "1966-01-27", "1994-11-15", "London", 5),
    ]  # fmt: skip
    con.executemany(
        "INSERT INTO Employees VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [(e, ln, fn, t, f"{b} 00:00:00", f"{h} 00:00:00", c, r)
         for e, ln, fn, t, b, h, c, r in employees],
    )  # fmt: skip
    et = sorted({(e, f"{1000 + t:05d}") for e in range(1, 10) for t in rng.sample(range(16), 3)})
    con.executemany("INSERT INTO EmployeeTerritories VALUES (?, ?)", et)
    customers = [("ALFKI", "Alfreds Futterkiste", "Maria Anders", "Berlin", "Germany"),
                 ("ANATR", "Ana Trujillo Emparedados", "Ana Trujillo", "Mexico City", "Mexico"),
                 ("AROUT", "Around the Horn", "Thomas Hardy", "London", "UK"),
                 ("BERGS", "Berglunds snabbkop", "Christina Berglund", "Lulea", "Sweden"),
                 ("BLAUS", "Blauer See Delikatessen", "Hanna Moos", "Mannheim", "Germany"),
                 ("BONAP", "Bon app'", "Laurence Lebihan", "Marseille", "France"),
                 ("BOTTM", "Bottom-Dollar Markets", "Elizabeth Lincoln", "Tsawassen", "Canada"),
                 ("CACTU", "Cactus Comidas para llevar", "Patricio Simpson", "Buenos Aires",
                  "Argentina"),
                 ("CHOPS", "Chop-suey Chinese", "Yang Wang", "Bern", "Switzerland"),
                 ("DRACD", "Drachenblut Delikatessen", "Sven Ottlieb", "Aachen", "Germany"),
                 ("EASTC", "Eastern Connection", "Ann Devon", "London", "UK"),
                 ("FOLKO", "Folk och fa HB", "Maria Larsson", "Bracke", "Sweden")]  # fmt: skip
    con.executemany("INSERT INTO Customers VALUES (?, ?, ?, ?, ?)", customers)
    orders, details = [], []
    for o in range(10248, 10338):
        day = f"1997-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        orders.append(
            (o, rng.choice(customers)[0], rng.randint(1, 9), f"{day} 00:00:00",
             f"{day} 00:00:00", rng.randint(1, 3), round(rng.uniform(1, 90), 2))
        )  # fmt: skip
        for p in rng.sample(range(1, 31), rng.randint(1, 4)):
            details.append(
                (o, p, round(rng.uniform(2.5, 120.0), 2), rng.randint(1, 40),
                 rng.choice([0, 0, 0.05, 0.1]))
            )  # fmt: skip
    con.executemany("INSERT INTO Orders VALUES (?, ?, ?, ?, ?, ?, ?)", orders)
    con.executemany('INSERT INTO "Order Details" VALUES (?, ?, ?, ?, ?)', details)


#: The two schemas of issue 32, built by code (seeded), not by a script.
BUILT = {"music_store": _music_store, "trading": _trading}


def build_real(name: str, directory: Path, seed: int = 32) -> str:
    """Create the SQLite file of one of :data:`BUILT` in ``directory``; its SQLAlchemy URL."""
    path = directory / f"{name}.sqlite"
    con = sqlite3.connect(path)
    BUILT[name](con, random.Random(seed))
    con.commit()
    con.close()
    return f"sqlite:///{path}"
