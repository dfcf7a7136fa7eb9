"""The console's Identify page offers one-click examples: each one identifies (issue 41: one
of them answered not_found). The examples are read from the page's source, so the list the
page shows is the list checked."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

PAGE = Path(__file__).parents[2] / "web" / "console" / "src" / "pages" / "identify.tsx"


def examples() -> list[dict]:
    found = re.search(r"const EXAMPLES: Example\[\] = (\[.*?\]);", PAGE.read_text(), re.S)
    assert found, "identify.tsx no longer declares `const EXAMPLES: Example[] = [...]`"
    # The TypeScript literal is JSON once its keys are quoted.
    return json.loads(re.sub(r"(\{|, )(\w+):", r'\1"\2":', found.group(1)))


def test_the_examples_are_read():
    assert len(examples()) >= 4


@pytest.mark.parametrize("example", examples(), ids=lambda e: e["identifier"])
def test_every_identify_example_identifies(console, example):
    ws = console.data("POST", "/workspaces", 201, json={"name": "Examples", "credits": 5})["id"]
    body = {"identifier": example["identifier"]}
    result = console.data("POST", f"/workspaces/{ws}/identify", json=body)
    assert result["result"] == "identified", result
    assert result["rail"] == example["rail"], result
