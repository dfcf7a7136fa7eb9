"""`a2a:` in an agent file: off by default, `publish` strictly a boolean, nothing else accepted."""

from __future__ import annotations

import pytest

from heddle.loom.agent_file import AgentFileError, parse_agent_file

BASE = "name: helper\nmodel_class: scripted\n"


def test_off_by_default_and_published_when_said():
    assert parse_agent_file(BASE).a2a is None
    spec = parse_agent_file(BASE + "a2a:\n  publish: true\n  description: Finds banks.\n")
    assert spec.a2a.publish is True and spec.a2a.description == "Finds banks."


@pytest.mark.parametrize("text, field", [
    ("a2a:\n  publish: 'yes'\n", "a2a.publish"),
    ("a2a:\n  publish: true\n  card: {}\n", "a2a.card"),
    ("a2a: true\n", "a2a"),
])
def test_bad_a2a_settings_are_named(text, field):
    with pytest.raises(AgentFileError) as err:
        parse_agent_file(BASE + text)
    assert field in str(err.value)
