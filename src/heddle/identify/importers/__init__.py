"""Parsers for official institution directories, and the import into `identify_directory`."""

from heddle.identify.importers.base import BadRow, DirectoryRow, ImportFormatError
from heddle.identify.importers.eiscd import parse_eiscd
from heddle.identify.importers.fedach import parse_fedach
from heddle.identify.importers.fedwire import parse_fedwire
from heddle.identify.importers.ifsc_csv import parse_ifsc_csv
from heddle.identify.importers.ifsc_xlsx import parse_ifsc_xlsx

# --format value -> parser. `fedach` and `fedwire` take the fixed-width text or the JSON.
PARSERS = {"fedach": parse_fedach, "fedwire": parse_fedwire, "ifsc-csv": parse_ifsc_csv,
           "ifsc-xlsx": parse_ifsc_xlsx, "eiscd": parse_eiscd}

__all__ = ["PARSERS", "BadRow", "DirectoryRow", "ImportFormatError", "parse_eiscd", "parse_fedach",
           "parse_fedwire", "parse_ifsc_csv", "parse_ifsc_xlsx"]
