"""Loading suites: documents with positions, JSONL, discovery, the JSON Schemas, the rules a schema
cannot state, and the loader that turns files into validated suites.
"""
