"""The command line: a click group, one command per module; the only place that imports click."""
