"""specrun's JSON Schemas (draft 2020-12), read with ``importlib.resources.files("specrun_schemas")``.

``suite.schema.json`` is the grammar of suite files; the engine fills its assertion, target and
simulator slots from the installed plugins (see ``specrun schema``).
"""
