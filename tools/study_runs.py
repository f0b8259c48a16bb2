"""What the studies of tools/reproduce.py share about their runs: each run's --summary, read back."""
import json
import os


def summaries(out, runs):
    """(run spec, its summary) for every run whose summary is under OUT/runs; a study cut short (or
    --report-only) has fewer."""
    for r in runs:
        path = os.path.join(out, "runs", r["id"] + ".json")
        if os.path.exists(path):
            with open(path) as f:
                yield r, json.load(f)
