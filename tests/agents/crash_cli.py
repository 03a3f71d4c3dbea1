"""A CLI agent that crashes on start, with a traceback on stderr and exit code 2."""

import sys

print("Starting...", flush=True)
print("Traceback (most recent call last):\nRuntimeError: boom: no API key", file=sys.stderr)
sys.exit(2)
