"""SentEval's scikit-learn path, run on exactly what sage's transfer suite ran: its reference.

sage writes each task's features, labels and folds with `--options export=DIR` (one `.npy` per
split and a JSON plan: the scheme, the classes, the grid of C, every fold's held-out positions).
This script runs scikit-learn's `LogisticRegression(C=c)` over them the way SentEval's
`senteval/tools/validation.py` does (`InnerKFoldClassifier`, `KFoldClassifier`,
`SplitClassifier`): the best C is the first of the highest validation accuracies in percent
rounded to two decimals; the inner k-fold's accuracy is the mean over the outer folds. The folds
are sage's, handed over, so both sides split alike. L2-regularised logistic regression is
strictly convex, so where both solvers converge they reach the same model: the solver here runs
to a tight tolerance (SentEval's default of 100 L-BFGS iterations can stop short of it).

  python3 tests/python-reference/transfer_reference.py check EXPORT_DIR [--result transfer.json]
      per task: scikit-learn's accuracy (MRPC also F1), and with --result sage's beside it and
      the difference in points; exits 1 where a task differs by more than --tolerance points.
  python3 tests/python-reference/transfer_reference.py fixture OUT_DIR
      writes the golden fixture of crates/sage-transfer (three small seeded tasks, one per
      scheme, in the export layout) with scikit-learn's accuracies in golden.json.

Needs numpy and scikit-learn (measured with scikit-learn 1.7.2, numpy 2.x).
"""
import argparse
import json
import os
import sys
import time

import numpy as np
from sklearn.linear_model import LogisticRegression

# scikit-learn's solver run to convergence: the objective's unique optimum, not a path. tol is
# scikit-learn's lbfgs tolerance on its (mean) loss's gradient: 100 times tighter than its
# default, as sage's (1e-6 per item on the summed loss); tighter moved no prediction in a probe
# on MR and multiplies scikit-learn's time.
MAX_ITER = 100_000
TOL = 1e-6


def fit(x, y, c):
    return LogisticRegression(C=c, max_iter=MAX_ITER, tol=TOL).fit(x, y)


def best(grid, scores):
    # SentEval: scores.append(round(100*np.mean(regscores), 2)); regs[np.argmax(scores)]
    rounded = [round(100 * s, 2) for s in scores]
    return grid[int(np.argmax(rounded))]


def complement(n, held):
    mask = np.ones(n, dtype=bool)
    mask[held] = False
    return np.nonzero(mask)[0]


def accuracy(model, x, y):
    return float(np.mean(model.predict(x) == y))


def f1(predicted, truth):
    tp = int(np.sum((predicted == 1) & (truth == 1)))
    fp = int(np.sum((predicted == 1) & (truth == 0)))
    fn = int(np.sum((predicted == 0) & (truth == 1)))
    return 0.0 if 2 * tp + fp + fn == 0 else 2 * tp / (2 * tp + fp + fn)


def cross_validate(x, y, folds, grid):
    n = len(y)
    scores = []
    for c in grid:
        per_fold = []
        for held in folds:
            held = np.asarray(held, dtype=np.int64)
            train = complement(n, held)
            per_fold.append(accuracy(fit(x[train], y[train], c), x[held], y[held]))
        scores.append(float(np.mean(per_fold)))
    return scores


def run(plan, folder):
    splits = plan["splits"]
    x = {s: np.load(os.path.join(folder, plan["features"][s])) for s in splits}
    y = {s: np.asarray(plan["labels"][s], dtype=np.int64) for s in splits}
    grid = plan["grid"]
    scheme = plan["scheme"]
    out = {"dataset": plan["dataset"], "scheme": scheme}
    if scheme == "inner-k-fold":
        (s,) = splits
        n = len(y[s])
        fold_accuracies, chosen = [], []
        for held, inner in zip(plan["folds"], plan["inner_folds"]):
            held = np.asarray(held, dtype=np.int64)
            train = complement(n, held)
            xt, yt = x[s][train], y[s][train]
            c = best(grid, cross_validate(xt, yt, inner, grid))
            chosen.append(c)
            fold_accuracies.append(accuracy(fit(xt, yt, c), x[s][held], y[s][held]))
        out.update(accuracy=float(np.mean(fold_accuracies)), chosen_c=chosen,
                   fold_accuracies=fold_accuracies)
        return out
    if scheme == "k-fold-then-test":
        train, test = splits
        c = best(grid, cross_validate(x[train], y[train], plan["folds"], grid))
        model = fit(x[train], y[train], c)
    else:
        train, dev, test = splits
        models = [fit(x[train], y[train], c) for c in grid]
        scores = [accuracy(m, x[dev], y[dev]) for m in models]
        c = best(grid, scores)
        model = models[grid.index(c)]
    predicted = model.predict(x[test])
    out.update(accuracy=float(np.mean(predicted == y[test])), chosen_c=[c])
    if plan["classes"] == ["0", "1"] and plan["input"] == "pairs":
        out["f1"] = f1(predicted, y[test])
    return out


def plans(folder, only=None):
    for name in sorted(os.listdir(folder)):
        if name.endswith(".json") and name != "golden.json":
            with open(os.path.join(folder, name)) as f:
                plan = json.load(f)
            if not only or plan["dataset"] in only:
                yield plan


def check(args):
    ours = {}
    if args.result:
        with open(args.result) as f:
            result = json.load(f)
        report = result.get("report", result)
        ours = {t["dataset"]: t for t in report["tasks"]}
    worst = 0.0
    rows = []
    for plan in plans(args.folder, args.task):
        start = time.perf_counter()
        ref = run(plan, args.folder)
        seconds = time.perf_counter() - start
        row = {**ref, "sklearn_seconds": round(seconds, 2)}
        mine = ours.get(plan["dataset"])
        if mine is not None:
            diff = 100 * (mine["accuracy"] - ref["accuracy"])
            row["sage_accuracy"] = mine["accuracy"]
            row["difference_points"] = diff
            row["sage_chosen_c"] = mine["chosen_c"]
            worst = max(worst, abs(diff))
        rows.append(row)
        line = f"{plan['dataset']:<16} sklearn {100 * ref['accuracy']:6.2f}"
        if mine is not None:
            line += f"  sage {100 * mine['accuracy']:6.2f}  diff {row['difference_points']:+.2f} points"
            # a C differs only where two validation accuracies are within rounding of a tie
            same = sum(a == b for a, b in zip(ref["chosen_c"], mine["chosen_c"]))
            row["same_c"] = f"{same}/{len(ref['chosen_c'])}"
            line += f"  same C {row['same_c']}"
        line += f"  ({seconds:.1f} s)"
        print(line, flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    if ours and worst > args.tolerance:
        print(f"largest difference {worst:.2f} points > {args.tolerance}", file=sys.stderr)
        sys.exit(1)


def write_npy(path, x):
    np.save(path, np.ascontiguousarray(x, dtype="<f8"))


def stratified(y, k, rng):
    fold_of = np.zeros(len(y), dtype=np.int64)
    nxt = 0
    for c in sorted(set(y.tolist())):
        members = np.nonzero(y == c)[0]
        rng.shuffle(members)
        for i in members:
            fold_of[i] = nxt % k
            nxt += 1
    return [np.nonzero(fold_of == f)[0].tolist() for f in range(k)]


def fixture(args):
    """Three seeded tasks, one per scheme, with classes that overlap (accuracies well below 1,
    so that a solver's error would show)."""
    rng = np.random.default_rng(20261206)
    os.makedirs(args.folder, exist_ok=True)
    k = 5

    def blobs(n, classes, d, spread):
        y = np.arange(n) % classes
        centres = rng.normal(size=(classes, d))
        x = centres[y] + spread * rng.normal(size=(n, d))
        return x, y

    tasks = []
    # one split, two classes: inner k-fold
    x, y = blobs(200, 2, 10, 1.6)
    outer = stratified(y, k, rng)
    inner = []
    for held in outer:
        train = complement(len(y), np.asarray(held))
        inner.append(stratified(y[train], k, rng))
    tasks.append(("blobs2_all", "inner-k-fold", {"all": (x, y)}, outer, inner,
                  [0.25, 0.5, 1.0, 2.0, 4.0, 8.0]))
    # train and test, three classes: k-fold on train
    x, y = blobs(240, 3, 8, 1.4)
    tasks.append(("blobs3_test", "k-fold-then-test",
                  {"train": (x[:170], y[:170]), "test": (x[170:], y[170:])},
                  stratified(y[:170], k, rng), [], [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0]))
    # train, dev, test, four classes: chosen on dev
    x, y = blobs(300, 4, 12, 1.5)
    tasks.append(("blobs4_test", "train-dev-test",
                  {"train": (x[:180], y[:180]), "dev": (x[180:240], y[180:240]),
                   "test": (x[240:], y[240:])},
                  [], [], [0.25, 0.5, 1.0, 2.0, 4.0, 8.0]))
    golden = {}
    for stem, scheme, splits, outer, inner, grid in tasks:
        classes = sorted({int(v) for (_, y) in splits.values() for v in y})
        plan = {
            "dataset": stem.replace("_", "/"),
            "scheme": scheme,
            "splits": list(splits),
            "classes": [str(c) for c in classes],
            "grid": grid,
            "features": {s: f"{stem}.{s}.npy" for s in splits},
            "labels": {s: y.tolist() for s, (_, y) in splits.items()},
            "folds": outer,
            "inner_folds": inner,
            "input": "texts",
        }
        for s, (x, _) in splits.items():
            write_npy(os.path.join(args.folder, f"{stem}.{s}.npy"), x)
        with open(os.path.join(args.folder, f"{stem}.json"), "w") as f:
            json.dump(plan, f)
        golden[plan["dataset"]] = run(plan, args.folder)
    with open(os.path.join(args.folder, "golden.json"), "w") as f:
        json.dump(golden, f, indent=1)
    print(json.dumps(golden, indent=1))


parser = argparse.ArgumentParser()
sub = parser.add_subparsers(dest="command", required=True)
c = sub.add_parser("check")
c.add_argument("folder")
c.add_argument("--result", help="sage's transfer result file")
c.add_argument("--out", help="write the per-task comparison here (JSON)")
c.add_argument("--tolerance", type=float, default=0.1, help="points")
c.add_argument("--task", action="append", help="only this task (name/split), repeatable")
c.set_defaults(go=check)
g = sub.add_parser("fixture")
g.add_argument("folder")
g.set_defaults(go=fixture)
args = parser.parse_args()
args.go(args)
