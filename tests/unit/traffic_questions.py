"""Two schemas of our own and questions about them as people type them, labelled by hand.

Each question is labelled with the groups it asks, as (a piece of the SQL that names the
template, the bound value), or with nothing when no single group answers it (small talk,
pronouns without a name, comparisons, a name alone, values that are only answers). A question
asking several facts at once lists every group it asks: matching any one of them is right,
abstaining is right too, and it is not counted for recall.
"""

from __future__ import annotations

LIBRARY = """
CREATE TABLE authors (author_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, country TEXT,
                      born INTEGER);
CREATE TABLE books (book_id INTEGER PRIMARY KEY, title TEXT NOT NULL UNIQUE,
                    author_id INTEGER NOT NULL REFERENCES authors(author_id),
                    published INTEGER, pages INTEGER, genre TEXT);
INSERT INTO authors VALUES (1, 'Chimamanda Okafor', 'Nigeria', 1977),
  (2, 'Henrik Lindqvist', 'Sweden', 1961), (3, 'Mariana Duarte', 'Portugal', 1984),
  (4, 'Kenji Watanabe', 'Japan', 1949), (5, 'Aoife Gallagher', 'Ireland', 1990),
  (6, 'Tomasz Wierzbicki', 'Poland', 1958);
INSERT INTO books VALUES (1, 'The Salt Orchard', 1, 2006, 412, 'Historical'),
  (2, 'Winter Ledger', 2, 1999, 288, 'Crime'), (3, 'Paper Lanterns', 4, 1983, 230, 'Literary'),
  (4, 'A River Without Banks', 3, 2015, 351, 'Literary'),
  (5, 'The Cartographer''s Daughter', 5, 2021, 398, 'Historical'),
  (6, 'Quiet Machines', 6, 1994, 276, 'Science fiction'),
  (7, 'Ember Season', 1, 2013, 305, 'Literary'), (8, 'Northern Accounts', 2, 2008, 264, 'Crime');
"""

FLEET = """
CREATE TABLE ports (port_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, country TEXT,
                    berths INTEGER);
CREATE TABLE vessels (vessel_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
                      home_port_id INTEGER NOT NULL REFERENCES ports(port_id), captain TEXT,
                      tonnage REAL, built INTEGER, flag TEXT);
INSERT INTO ports VALUES (1, 'Rotterdam', 'Netherlands', 320), (2, 'Valparaiso', 'Chile', 48),
  (3, 'Tromso', 'Norway', 22), (4, 'Durban', 'South Africa', 57), (5, 'Busan', 'South Korea', 169);
INSERT INTO vessels VALUES (1, 'Aurora Borealis', 3, 'Ingrid Solheim', 5400.5, 2004, 'Norway'),
  (2, 'Pacific Heron', 2, 'Diego Fuentes', 12850.0, 1998, 'Chile'),
  (3, 'Maasvlakte Pride', 1, 'Joost de Vries', 31200.0, 2011, 'Netherlands'),
  (4, 'Cape Kestrel', 4, 'Thandiwe Nkosi', 8800.0, 2016, 'South Africa'),
  (5, 'Haeundae Star', 5, 'Park Ji-ho', 45600.0, 2019, 'South Korea'),
  (6, 'Northern Tern', 3, 'Lars Eriksen', 3100.0, 1987, 'Norway');
"""

Gold = tuple[tuple[str, str], ...]

_PUB, _PAGES, _GENRE = "SELECT published", "SELECT pages", "SELECT genre"
_AUTHOR, _COUNTRY, _BORN = "SELECT author.name", "SELECT country FROM authors", "SELECT born"
_BOOKS, _NBOOKS = "SELECT books.title", "COUNT(*) FROM books"

LIBRARY_QUESTIONS: list[tuple[str, Gold]] = [
    ("what year was Winter Ledger published?", ((_PUB, "Winter Ledger"),)),
    ("winter ledger publication year", ((_PUB, "Winter Ledger"),)),
    ("When did Ember Season come out", ((_PUB, "Ember Season"),)),
    ("Published year of Quiet Machines", ((_PUB, "Quiet Machines"),)),
    ("quiet machines - year published", ((_PUB, "Quiet Machines"),)),
    ("how many pages does the salt orchard have", ((_PAGES, "The Salt Orchard"),)),
    ("salt orchard pages", ((_PAGES, "The Salt Orchard"),)),
    ("pages in Nothern Accounts", ((_PAGES, "Northern Accounts"),)),
    ("Northern Accounts, how many pages?", ((_PAGES, "Northern Accounts"),)),
    ("How long is Winter Ledger in pages", ((_PAGES, "Winter Ledger"),)),
    ("page count for a river without banks", ((_PAGES, "A River Without Banks"),)),
    ("genre of Ember Season?", ((_GENRE, "Ember Season"),)),
    ("what's the genre of the cartographers daughter", ((_GENRE, "The Cartographer's Daughter"),)),
    ("paper lantrens genre", ((_GENRE, "Paper Lanterns"),)),
    ("What kind of book is A River Without Banks", ((_GENRE, "A River Without Banks"),)),
    ("which genre is Quiet Machines", ((_GENRE, "Quiet Machines"),)),
    ("who wrote Paper Lanterns?", ((_AUTHOR, "Paper Lanterns"),)),
    ("paper lanterns author", ((_AUTHOR, "Paper Lanterns"),)),
    ("whos the author of Quiet Machines", ((_AUTHOR, "Quiet Machines"),)),
    ("Author of 'Ember Season' please", ((_AUTHOR, "Ember Season"),)),
    ("the salt orchard, who is the author", ((_AUTHOR, "The Salt Orchard"),)),
    ("Which country is Henrik Lindqvist from", ((_COUNTRY, "Henrik Lindqvist"),)),
    ("country of chimamanda okafor", ((_COUNTRY, "Chimamanda Okafor"),)),
    ("wierzbicki country", ((_COUNTRY, "Tomasz Wierzbicki"),)),
    ("Mariana Duarte's country?", ((_COUNTRY, "Mariana Duarte"),)),
    ("when was Kenji Watanabe born", ((_BORN, "Kenji Watanabe"),)),
    ("kenji watanabe birth year", ((_BORN, "Kenji Watanabe"),)),
    ("Watanabe born?", ((_BORN, "Kenji Watanabe"),)),
    ("birth year of Mariana Duarte", ((_BORN, "Mariana Duarte"),)),
    ("year of birth aoife gallagher", ((_BORN, "Aoife Gallagher"),)),
    ("how many books has Chimamanda Okafor written", ((_NBOOKS, "Chimamanda Okafor"),)),
    ("number of books by Okafor", ((_NBOOKS, "Chimamanda Okafor"),)),
    ("Henrik Lindqvist: how many books?", ((_NBOOKS, "Henrik Lindqvist"),)),
    ("what book did Aoife Gallagher write", ((_BOOKS, "Aoife Gallagher"),)),
    ("Aoife Galagher book", ((_BOOKS, "Aoife Gallagher"),)),
    ("book by mariana duarte?", ((_BOOKS, "Mariana Duarte"),)),
    # several facts at once: any one of them, or nothing
    (
        "what's the genre and page count of Ember Season",
        ((_GENRE, "Ember Season"), (_PAGES, "Ember Season")),
    ),
    (
        "how many pages do Winter Ledger and Paper Lanterns have",
        ((_PAGES, "Winter Ledger"), (_PAGES, "Paper Lanterns")),
    ),
    (
        "when was Kenji Watanabe born and where is he from",
        ((_BORN, "Kenji Watanabe"), (_COUNTRY, "Kenji Watanabe")),
    ),
    # no single group
    ("hello!", ()),
    ("thanks, that helps", ()),
    ("what's its genre?", ()),
    ("who wrote it", ()),
    ("and how many pages does it have?", ()),
    ("recommend me a good crime novel", ()),
    ("Is Winter Ledger better than Northern Accounts?", ()),
    ("tell me about the salt orchard", ()),
    ("what is the weather in Portugal", ()),
    ("books published in 2006", ()),
    ("Kenji Watanabe", ()),
    ("okafor", ()),
    ("who is the best author", ()),
    ("list all historical books", ()),
    ("can you summarise Paper Lanterns for me", ()),
]

_PCOUNTRY, _BERTHS = "SELECT country FROM ports", "SELECT berths"
_CAPTAIN, _TONS, _BUILT, _FLAG = "SELECT captain", "SELECT tonnage", "SELECT built", "SELECT flag"
_HOME, _VESSEL, _NVESSELS = "SELECT home_port.name", "SELECT vessels.name", "COUNT(*) FROM vessels"

FLEET_QUESTIONS: list[tuple[str, Gold]] = [
    ("who is the captain of the Pacific Heron", ((_CAPTAIN, "Pacific Heron"),)),
    ("pacific heron captain?", ((_CAPTAIN, "Pacific Heron"),)),
    ("Who captains Cape Kestrel", ((_CAPTAIN, "Cape Kestrel"),)),
    ("the Heron's captain", ((_CAPTAIN, "Pacific Heron"),)),
    ("captian of northern tern", ((_CAPTAIN, "Northern Tern"),)),
    ("Captain, Haeundae Star", ((_CAPTAIN, "Haeundae Star"),)),
    ("tonnage of Haeundae Star", ((_TONS, "Haeundae Star"),)),
    ("tonage of aurora borealis", ((_TONS, "Aurora Borealis"),)),
    ("how heavy is the Maasvlakte Pride", ((_TONS, "Maasvlakte Pride"),)),
    ("What's the tonnage for cape kestrel?", ((_TONS, "Cape Kestrel"),)),
    ("when was the Northern Tern built", ((_BUILT, "Northern Tern"),)),
    ("Aurora Borealis construction year", ((_BUILT, "Aurora Borealis"),)),
    ("what year was aurora borealis built", ((_BUILT, "Aurora Borealis"),)),
    ("Kestrel built", ((_BUILT, "Cape Kestrel"),)),
    ("year built pacific heron", ((_BUILT, "Pacific Heron"),)),
    ("what flag does Cape Kestrel fly", ((_FLAG, "Cape Kestrel"),)),
    ("cape kestrel flag", ((_FLAG, "Cape Kestrel"),)),
    ("What's the flag state of Pacific Heron", ((_FLAG, "Pacific Heron"),)),
    ("Maasvlakte Pride flag?", ((_FLAG, "Maasvlakte Pride"),)),
    ("home port of the Pacific Heron", ((_HOME, "Pacific Heron"),)),
    ("where is Haeundae Star based", ((_HOME, "Haeundae Star"),)),
    ("which port is Northern Tern registered in", ((_HOME, "Northern Tern"),)),
    ("Aurora Borealis home port", ((_HOME, "Aurora Borealis"),)),
    ("how many berths does Rotterdam have", ((_BERTHS, "Rotterdam"),)),
    ("Rotterdam berths", ((_BERTHS, "Rotterdam"),)),
    ("number of berths at Valparaiso", ((_BERTHS, "Valparaiso"),)),
    ("berths in busan?", ((_BERTHS, "Busan"),)),
    ("What country is Durban in?", ((_PCOUNTRY, "Durban"),)),
    ("Tromso country", ((_PCOUNTRY, "Tromso"),)),
    ("Tromsø which country", ((_PCOUNTRY, "Tromso"),)),
    ("country of the port of Valparaíso", ((_PCOUNTRY, "Valparaiso"),)),
    ("how many vessels are based in Busan", ((_NVESSELS, "Busan"),)),
    ("number of ships with home port Tromso", ((_NVESSELS, "Tromso"),)),
    ("Rotterdam: number of vessels", ((_NVESSELS, "Rotterdam"),)),
    ("which vessel has Valparaiso as its home port", ((_VESSEL, "Valparaiso"),)),
    ("vessel whose home port is Durban", ((_VESSEL, "Durban"),)),
    # several facts at once
    (
        "Captain of Maasvlakte Pride and of Cape Kestrel",
        ((_CAPTAIN, "Maasvlakte Pride"), (_CAPTAIN, "Cape Kestrel")),
    ),
    ("flag and tonnage of Northern Tern", ((_FLAG, "Northern Tern"), (_TONS, "Northern Tern"))),
    ("ships in Durban", ((_VESSEL, "Durban"), (_NVESSELS, "Durban"))),
    # no single group
    ("good morning", ()),
    ("what's the biggest ship", ()),
    ("who is its captain", ()),
    ("is Rotterdam bigger than Busan", ()),
    ("tell me about Cape Kestrel", ()),
    ("Ingrid Solheim", ()),
    ("ships flagged in Norway", ()),
    ("thank you!", ()),
    ("what can you do", ()),
    ("Busan", ()),
    ("How old is Lars Eriksen?", ()),
    ("which ship was built in 2004", ()),
    ("is the weather ok for sailing out of Durban", ()),
]
