"""The run history: its store, recording a run into it, diff and merge of runs, and approved snapshots.
"""
