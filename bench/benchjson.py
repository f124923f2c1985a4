"""Reading the JSON of a raw device run (bench/summarise.py): each file is
FILE.json or, compressed, FILE.json.gz (the raw runs kept their large files
gzipped, as the GPU machine's packs return them)."""
import glob
import gzip
import json
import os


def load(path):
    """The JSON of path, gzipped or not."""
    with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
        return json.load(f)


def name(path):
    """path's file name without .gz."""
    base = os.path.basename(path)
    return base[:-3] if base.endswith(".gz") else base


def find(pattern, recursive=False):
    """The files that match pattern (ending in .json), each as it is or
    gzipped, sorted by their names without .gz."""
    found = glob.glob(pattern, recursive=recursive) + glob.glob(pattern + ".gz", recursive=recursive)
    return sorted(found, key=lambda p: os.path.join(os.path.dirname(p), name(p)))


def path(where):
    """where, or where.gz if only that exists; None if neither does."""
    for p in (where, where + ".gz"):
        if os.path.exists(p):
            return p
    return None
