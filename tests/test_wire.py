"""A tool-using message history keeps its tool fields from the suite file to the wire."""

from __future__ import annotations

import json

from specrun._load.loader import Loader
from specrun._models.wire import openai_messages
from specrun._project.plugin_manager import get_plugin_manager

HISTORY = [
    {"role": "user", "content": "File my $20 taxi"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "create_expense", "arguments": "{}"}}],
    },
    {"role": "tool", "tool_call_id": "call_1", "name": "create_expense", "content": '{"reference": "EXP-1"}'},
    {"role": "user", "content": "What is the reference?"},
]


def test_tool_history_round_trips_to_openai_messages(tmp_path):
    suite_file = tmp_path / "s.jsonl"
    suite_file.write_text(json.dumps({"id": "t", "input": HISTORY}) + "\n")
    (suite,) = Loader(get_plugin_manager().registry).load([suite_file])
    (case,) = suite.cases
    assert openai_messages(case.input) == HISTORY
    assert [m.to_dict() for m in case.input] == HISTORY


def test_attachments_become_data_urls(tmp_path):
    (tmp_path / "r.png").write_bytes(b"\x89PNG fake")
    case = {
        "id": "t",
        "input": [
            {"role": "user", "content": [{"type": "text", "text": "read"}, {"type": "image", "source": "file://r.png"}]}
        ],
    }
    suite_file = tmp_path / "s.jsonl"
    suite_file.write_text(json.dumps(case) + "\n")
    (suite,) = Loader(get_plugin_manager().registry).load([suite_file])
    [message] = openai_messages(suite.cases[0].input)
    assert message["content"][1] == {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORyBmYWtl"}}
