"""Judging shared by assertions and ``Test``: what a judge reads, how its verdict is read, and Agent
Kernel's comparison modes.
"""
