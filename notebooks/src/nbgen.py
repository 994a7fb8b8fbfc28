"""Shared writer for the notebook sources: collects markdown and Go cells
and writes an nbformat 4.5 notebook for the gomase kernel with stable cell ids."""
import hashlib
import json
import sys

cells = []


def md(s):
    cells.append(("markdown", s.strip("\n")))


def code(s):
    cells.append(("code", s.strip("\n")))


def write():
    """Writes the cells to sys.argv[2]; sys.argv[1] (the notebook's name) seeds the cell ids."""
    nb = {"cells": [], "metadata": {"kernelspec": {"display_name": "Go (gomase)", "language": "go", "name": "gomase"},
           "language_info": {"codemirror_mode": "", "file_extension": ".go", "mimetype": "text/x-go", "name": "go",
                             "nbconvert_exporter": "", "pygments_lexer": "go", "version": "go1.26"}},
          "nbformat": 4, "nbformat_minor": 5}
    name = sys.argv[1]
    for i, (kind, src) in enumerate(cells):
        cid = hashlib.sha1(f"{name}-{i}".encode()).hexdigest()[:8]
        lines = src.split("\n")
        source = [l + "\n" for l in lines[:-1]] + [lines[-1]]
        c = {"cell_type": kind, "id": cid, "metadata": {}, "source": source}
        if kind == "code":
            c["execution_count"] = None
            c["outputs"] = []
        nb["cells"].append(c)
    with open(sys.argv[2], "w") as f:
        json.dump(nb, f, indent=1, ensure_ascii=False)
