"""Heddle: Identify (account identifier resolution) and Loom (embedded agent conversations)."""

__version__ = "1.0.0"
API_VERSION = "1.0.0"
