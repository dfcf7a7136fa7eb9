"""What a handler outside loom's own routes takes from loom, read from the process's services
(heddle/process_services.py) so that no handler imports the container."""

from __future__ import annotations

from starlette.requests import HTTPConnection

from heddle import process_services
from heddle.loom.providers.registry import ModelRegistry


def model_registry(conn: HTTPConnection) -> ModelRegistry:
    """The model classes this server is configured with (HEDDLE_MODEL_CLASSES)."""
    return process_services.of(conn).registry
