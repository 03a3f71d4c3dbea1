"""A CLI agent that prints a banner and never its prompt (the read timeout must fire)."""

import sys
import time

sys.stdout.write("Loading models...\n")
sys.stdout.flush()
time.sleep(3600)
