"""`python -m profiler_agent bench DATASET`: judge every sample of an exported dataset (docs/dataset.md)
with the judge's own harness, and score this machine's GPU against the dataset's recorded times.

dataset.py reads and checks the dataset, run.py judges its samples, state.py keeps what is done so a
run can resume, score.py computes the weighted geometric means, progress.py draws the progress line.
"""
