"""Running: settings, the run session, the plan (selection, shards, reruns), the runner with its
executors' host, case execution with hooks, verdicts, conversations, lifecycle.
"""
