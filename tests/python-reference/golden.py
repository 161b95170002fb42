"""Golden values for sage-rs's unit tests, from the reference Python implementations.

Run: python3 tests/python-reference/golden.py  (pip install scipy scikit-learn statsmodels numpy
pytrec-eval-terrier python-Levenshtein rouge_score rank_bm25 tiktoken). Each Rust test names the
section of this file its constants come from. Versions used: see the header this prints.
"""
import json
import sys

import numpy as np
import scipy
import scipy.stats as st
import sklearn
from sklearn import metrics as skm
from statsmodels.stats.multitest import multipletests

print(f"# numpy {np.__version__}, scipy {scipy.__version__}, scikit-learn {sklearn.__version__}")

# --- correlation.rs
X = [0.1, 0.4, 0.35, 0.8, 0.8, 0.2, 0.95, 0.5, 0.5, 0.5]
Y = [1.0, 2.0, 2.5, 4.0, 3.5, 1.5, 5.0, 2.0, 3.0, 2.0]
print("pearson", repr(st.pearsonr(X, Y).statistic))
print("spearman", repr(st.spearmanr(X, Y).statistic))

# --- classification.rs
t = [1, 0, 1, 1, 0, 0, 1, 0, 1, 1]
p = [1, 1, 0, 1, 0, 0, 1, 1, 1, 0]
print("acc/prec/rec/f1", [repr(f(t, p)) for f in (skm.accuracy_score, skm.precision_score, skm.recall_score, skm.f1_score)])

# --- clustering.rs
lt = ["a", "a", "a", "b", "b", "b", "c", "c", "c", "c"]
lp = [0, 0, 1, 1, 1, 1, 2, 2, 0, 3]
print("h/c/v", [repr(v) for v in skm.homogeneity_completeness_v_measure(lt, lp)])

# --- ranking.rs
import pytrec_eval
qrels = {"q1": {"d1": 2, "d2": 1, "d4": 0, "d5": 1, "d9": 3}}
run = {"q1": {"d1": 0.9, "d2": 0.5, "d3": 0.5, "d4": 0.7, "d5": 0.2, "d6": 0.5}}
ev = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.3", "ndcg_cut.10", "map", "recip_rank"})
print("trec", json.dumps(ev.evaluate(run)))

# --- stats.rs
v = [0.2, 0.5, 0.9, 0.4]
print("std0/std1/hmean", repr(np.std(v)), repr(np.std(v, ddof=1)), repr(st.hmean(v)))
pv = [3.0, 1.0, 4.0, 1.5, 9.0, 2.6]
print("pct 2.5/97.5/50", repr(np.percentile(pv, 2.5)), repr(np.percentile(pv, 97.5)), repr(np.percentile(pv, 50)))


def hl(d):
    d = np.asarray(d)
    i, j = np.triu_indices(len(d))
    return np.median((d[i] + d[j]) / 2)


d = [0.3, -0.1, 0.5, 0.2, 0.05, 0.7, -0.2]
print("hl odd/even", repr(hl(d)), repr(hl(d[:6])))
x = [1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30]
y = [0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29]
r = st.wilcoxon(x, y)
print("wilcoxon exact", repr(float(r.statistic)), repr(float(r.pvalue)))
x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
y = [0.5, 2.5, 2.5, 3.0, 5.0, 5.0, 6.0, 9.0]
r = st.wilcoxon(x, y)
print("wilcoxon perm", repr(float(r.statistic)), repr(float(r.pvalue)))
x = [((i * 37 % 17)) / 4.0 for i in range(60)]
y = [((i * 11 % 13)) / 4.0 for i in range(60)]
r = st.wilcoxon(x, y)
print("wilcoxon asym60", repr(float(r.statistic)), repr(float(r.pvalue)))
r = st.wilcoxon(x[:20], y[:20])
print("wilcoxon asym20", repr(float(r.statistic)), repr(float(r.pvalue)))
rej, adj, _, _ = multipletests([0.01, 0.04, 0.03, 0.005, 0.20], alpha=0.05, method="holm")
print("holm", [repr(a) for a in adj], list(map(bool, rej)))

# --- sage-cli tests/cli.rs: data/fixtures/run.trec against data/fixtures/qrels.tsv
import os
fx = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "data", "fixtures")
qrels = {}
for i, line in enumerate(open(os.path.join(fx, "qrels.tsv"))):
    if i == 0:
        continue
    q, d, r = line.split("\t")
    qrels.setdefault(q, {})[d] = int(r)
run = {}
for line in open(os.path.join(fx, "run.trec")):
    q, _, d, _, s, _ = line.split()
    run.setdefault(q, {})[d] = float(s)
res = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "map", "recip_rank"}).evaluate(run)
for m in ("ndcg_cut_10", "map", "recip_rank"):
    print("fixture", m, repr(float(np.mean([v[m] for v in res.values()]))), "over", len(res), "queries")
