"""The example project is not pytest's: its ``src/env_test.py`` (V2's name for hooks) matches
pytest's ``*_test.py`` pattern, and importing it here would clash with the copies each test runs."""

collect_ignore = ["project"]
