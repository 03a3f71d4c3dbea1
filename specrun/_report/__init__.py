"""Reporting: the result stream, statistics over runs, the console, text made safe to show, output
files and GitHub Actions annotations.
"""
