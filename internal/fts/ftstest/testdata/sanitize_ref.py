"""Reference oracle for fts.Sanitize: spec section 7 written with Python's re,
whose Unicode \\w, \\s, \\b and str.strip() the Go code must reproduce.

Regenerate the vectors with:  python3 testdata/sanitize_ref.py > testdata/sanitize_vectors.jsonl
Each line is {"in": query, "out": sanitized}. Inputs are random mixes of the
characters the sanitizer treats specially, Unicode letters, digits, marks and
white space, so the file pins the corners no hand-written table reaches.
"""
import json
import random
import re


def sanitize(s):
    kept = []

    def keep(m):
        kept.append(m.group(0))
        return "\x00Q%d\x00" % (len(kept) - 1)

    s = re.sub(r'"[^"]*"', keep, s)
    s = re.sub(r'[+{}()"^]', " ", s)
    s = re.sub(r"\*+", "*", s)
    s = re.sub(r"(^|\s)\*", r"\1", s)
    s = re.sub(r"^(AND|OR|NOT)\b\s*", "", s.strip(), flags=re.I)
    s = re.sub(r"\s+(AND|OR|NOT)\s*$", "", s.strip(), flags=re.I)
    s = re.sub(r"\b(\w+(?:[.-]\w+)+)\b", r'"\1"', s)
    for i, p in enumerate(kept):
        s = s.replace("\x00Q%d\x00" % i, p)
    return s.strip()


ALPHABET = (
    list("abcXYZ019_") + list('"""***+{}()^.-.-:@#%?!/\'') + [" ", " ", "  ", "\t", "\n"]
    + ["AND", "OR", "NOT", "and", "or", "not", "Or", "ANDROID", "NOTE"]
    + ["é", "ß", "大", "项", "ア", "한", "\u0301", "\u00a0", "\u2003", "\u3000", "\x1c", "\x1f",
       "\x85", "\u0663", "\u00bd", "\u2168", "\u00b2", "\u200b", "\x00", "\x00Q0\x00", "\x00Q1\x00", "Q0"]
)


def main():
    rnd = random.Random(6)
    seen = set()
    out = []
    while len(out) < 3000:
        n = rnd.randint(0, 12)
        q = "".join(rnd.choice(ALPHABET) for _ in range(n))
        if q in seen:
            continue
        seen.add(q)
        out.append({"in": q, "out": sanitize(q)})
    for row in out:
        print(json.dumps(row, ensure_ascii=True))


if __name__ == "__main__":
    main()
