"""The project: specrun.yaml, the agents under test, references to project code, the plugin manager and
registries, and the starter project of ``specrun init``.
"""
