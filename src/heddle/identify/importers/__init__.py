"""Parsers for official institution directories, and the upsert into `identify_directory`."""

from heddle.identify.importers.base import DirectoryRow, ImportFormatError
from heddle.identify.importers.fedach import parse_fedach
from heddle.identify.importers.ifsc_csv import parse_ifsc_csv

PARSERS = {"fedach": parse_fedach, "ifsc-csv": parse_ifsc_csv}

__all__ = ["PARSERS", "DirectoryRow", "ImportFormatError", "parse_fedach", "parse_ifsc_csv"]
