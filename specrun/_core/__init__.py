"""What every room shares: the data of a run (suites, cases, responses, results), a case's
identity, the plugin kinds and hook specifications, the errors shown to users, and secret masking.
"""
