"""A CLI agent for the process target tests: an Agent Kernel style ``(name) >> `` prompt.

Each line is answered ``[name] echo: LINE (#N)``, N counting the lines received. Commands:
``!select NAME`` switches the agent, ``!env VAR`` prints a variable, ``!sleep S`` sleeps,
``!exit CODE`` exits with a message on stderr, ``!multi`` prints a multi-line answer,
``!flood MB`` prints MB MiB on one line (then its prompt, if it is still alive).
Flags: ``--color`` (ANSI colours), ``--chunked`` (writes split inside escape sequences),
``--ignore-term`` (survives SIGTERM), ``--spawn`` (starts a child, prints its pid).
"""

import os
import signal
import subprocess
import sys
import time

COLOR = "--color" in sys.argv
CHUNKED = "--chunked" in sys.argv


def write(text: str) -> None:
    if CHUNKED:  # split in small pieces, cutting escape sequences in half
        for i in range(0, len(text), 3):
            sys.stdout.write(text[i : i + 3])
            sys.stdout.flush()
            time.sleep(0.005)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()


def paint(text: str, code: str) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if COLOR else text


def main() -> None:
    if "--ignore-term" in sys.argv:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if "--spawn" in sys.argv:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        write(f"child {child.pid}\n")
    name = "echo"
    count = 0
    write(paint("Echo agent 1.0", "1;32") + "\nType !exit to quit.\n")
    while True:
        write(paint(f"({name}) >> ", "1;34"))
        line = sys.stdin.readline()
        if not line:
            return
        line = line.rstrip("\n")
        count += 1
        print(f"log: got {line!r}", file=sys.stderr, flush=True)
        command, _, arg = line.partition(" ")
        if command == "!select":
            name = arg
            write(f"selected {arg}\n")
        elif command == "!env":
            write(f"{os.environ.get(arg, '<unset>')}\n")
        elif command == "!sleep":
            time.sleep(float(arg))
            write("awake\n")
        elif command == "!exit":
            print("fatal: asked to exit", file=sys.stderr, flush=True)
            sys.exit(int(arg or 0))
        elif command == "!flood":
            for _ in range(int(arg)):  # a MiB at a time: an endless line costs this agent nothing
                sys.stdout.write("x" * (1 << 20))
            write("\n")
        elif command == "!multi":
            write("line one\nline two\n")
        else:
            write(paint(f"[{name}] echo: {line} (#{count})", "33") + "\n")


if __name__ == "__main__":
    main()
