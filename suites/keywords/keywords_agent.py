"""A small offline keyword-extraction agent: returns {"keywords": [...]} as structured output."""

import re
from collections import Counter

STOPWORDS = set(
    "a an and are as at be been but by can could did do does for from had has have how i in into is it its "
    "me my no not of on or our so that the their them then there these they this to was we were what when "
    "where which who why will with would you your about after all also more most much new over some than very "
    "changing change rapid rapidly development".split()
)


def extract(messages, ctx):
    """Keywords of the last user message, most frequent first (ties: first seen), at most 5."""
    text = messages[-1].text
    if not text.strip():
        return {"keywords": [], "need_search": False}
    words = re.findall(r"[A-Za-z][A-Za-z0-9+#-]*", text)
    counts = Counter(w.lower() for w in words if w.lower() not in STOPWORDS and len(w) > 2)
    order = {w.lower(): i for i, w in reversed(list(enumerate(words)))}
    ranked = sorted(counts, key=lambda w: (-counts[w], order[w]))
    return {"keywords": ranked[:5], "need_search": text.rstrip().endswith("?")}
