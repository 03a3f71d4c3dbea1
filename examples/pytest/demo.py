"""A CLI agent in Agent Kernel's style, answering cricket questions deterministically.

It prints a ``(general) >> `` prompt, reads one line, answers, and prompts again.
``!select general`` or ``!select math`` switches the agent (the prompt shows the new name);
end of input or ``!exit`` quits. ``server.py`` serves the same answers over HTTP.
"""

from __future__ import annotations

import re
import sys

AGENTS = ("general", "math")

GENERAL_RULES = [
    (("who", "won", "1996"), "Sri Lanka won the 1996 cricket world cup."),
    (("host",), "Co-hosted by India, Pakistan and Sri Lanka."),
    (("captain",), "Arjuna Ranatunga captained Sri Lanka in 1996."),
    (("weather",), "I cannot check the weather, but I can answer cricket questions."),
    (("hello",), "Hello! How can I help you?"),
    (("hi",), "Hello! How can I help you?"),
]


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def answer_general(question: str) -> str:
    found = words(question)
    for keys, reply in GENERAL_RULES:
        if all(any(w.startswith(k) for w in found) for k in keys):
            return reply
    return "I only know about the 1996 cricket world cup."


def answer_math(question: str) -> str:
    match = re.search(r"(-?\d+)\s*([-+*x])\s*(-?\d+)", question)
    if not match:
        return "I only answer arithmetic questions, like 2 + 3."
    a, op, b = int(match.group(1)), match.group(2), int(match.group(3))
    value = {"+": a + b, "-": a - b, "*": a * b, "x": a * b}[op]
    return f"{a} {op} {b} = {value}"


def answer(agent: str, question: str) -> str:
    return answer_math(question) if agent == "math" else answer_general(question)


def main() -> None:
    agent = "general"
    print("Demo agents: general, math. Type !select NAME to switch, !exit to quit.")
    while True:
        sys.stdout.write(f"({agent}) >> ")
        sys.stdout.flush()
        line = sys.stdin.readline()
        if not line or line.strip() == "!exit":
            return
        text = line.strip()
        if text.startswith("!select"):
            name = text[len("!select") :].strip()
            if name in AGENTS:
                agent = name
                print(f"Selected agent: {agent}")
            else:
                print(f"Unknown agent {name!r}; agents: {', '.join(AGENTS)}")
            continue
        if text:
            print(answer(agent, text))


if __name__ == "__main__":
    main()
