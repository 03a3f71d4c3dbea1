"""``specrun view``: a local web app over the run history (``.specrun/history.db``).

``store`` reads the history database (read-only), ``pages`` and ``transcript`` render
server-side HTML (every byte an agent or a suite wrote is escaped), ``compare`` holds the
case-across-runs and run-comparison pages, and ``app`` serves them with aiohttp, with a
Content-Security-Policy that allows only its own script and style. The one write is snapshot
approval: an explicit POST carrying the server's token.
"""
