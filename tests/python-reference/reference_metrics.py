"""The Python reference metrics as SAGE computes them, each importing only its own package on
first use (so that timing one metric's whole process does not charge it the others' imports):

- rouge: rouge_score 0.1.2, ROUGE-1 and ROUGE-2 F with the tiktoken cl100k_base encoder as tokenizer
- jaccard: sets of cl100k ids
- bm25_raw: rank_bm25 BM25Plus with the reference as a one-document corpus

tiktoken needs the cl100k_base file; tiktoken-rs ships the identical file: set TIKTOKEN_RS_ASSETS
to its assets folder and the file is placed in a tiktoken cache directory here.
"""
import hashlib
import os
import tempfile

_encoding = None
_scorer = None


def tokens(text):
    global _encoding
    if _encoding is None:
        url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
        cache = tempfile.mkdtemp()
        with open(os.path.join(os.environ["TIKTOKEN_RS_ASSETS"], "cl100k_base.tiktoken"), "rb") as src, \
                open(os.path.join(cache, hashlib.sha1(url.encode()).hexdigest()), "wb") as dst:
            dst.write(src.read())
        os.environ["TIKTOKEN_CACHE_DIR"] = cache
        import tiktoken
        _encoding = tiktoken.get_encoding("cl100k_base")
    return _encoding.encode(text, disallowed_special=())


class Cl100kTokenizer:
    def tokenize(self, text):
        return tokens(text)


def rouge(a, b):
    global _scorer
    if _scorer is None:
        from rouge_score import rouge_scorer
        _scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2"], tokenizer=Cl100kTokenizer())
    s = _scorer.score(a, b)
    return (s["rouge1"].fmeasure + s["rouge2"].fmeasure) / 2


def jaccard(a, b):
    sa, sb = set(tokens(a)), set(tokens(b))
    return 1.0 if not (sa | sb) else len(sa & sb) / len(sa | sb)


def bm25_raw(a, b):
    from rank_bm25 import BM25Plus
    ta = tokens(a)
    if not ta:
        return 0.0  # rank_bm25 gives NaN (0/0 average length); sage-rs documents 0
    return float(BM25Plus([ta]).get_scores(tokens(b))[0])
