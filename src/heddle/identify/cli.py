"""`heddle identify ...`: load official directories, refresh them from their publishers, and
report coverage.

Mounted by the lead as `heddle identify`. With `--json` each command prints exactly one JSON
object on stdout (an `error` object on failure, with exit code 1).
"""

from __future__ import annotations

import asyncio
import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

# What the commands use (SQLAlchemy, the importers, the directories) is imported when one runs:
# `heddle identify --help` must not pay for it (tests/cli/test_help.py).

app = typer.Typer(help="Identify: institution directories.", no_args_is_help=True)

MAX_FILE_BYTES = 512 * 1024 * 1024


class ImportFormat(StrEnum):
    FEDACH = "fedach"  # FedACH directory, fixed-width text or the Fed's JSON
    FEDWIRE = "fedwire"  # Fedwire Funds directory, fixed-width text or JSON
    IFSC_CSV = "ifsc-csv"  # RBI list as CSV, or Razorpay's IFSC.csv
    IFSC_XLSX = "ifsc-xlsx"  # RBI list as published (XLSX)
    EISCD = "eiscd"  # UK sort codes, EISCD-style CSV
    GLEIF_BIC_LEI = "gleif-bic-lei"  # GLEIF's BIC-to-LEI file (LEI,BIC); names from --names


DEFAULT_MAX_BAD_ROWS = 100


DatabaseUrl = Annotated[str | None, typer.Option("--database-url", help="Database URL (default: HEDDLE_DATABASE_URL).")]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")]


def _emit(payload: dict[str, Any], as_json: bool, lines: list[str]) -> None:
    if as_json:
        typer.echo(json.dumps(payload, sort_keys=True))
    else:
        for line in lines:
            typer.echo(line)


def _fail(code: str, message: str, as_json: bool, **details: Any) -> typer.Exit:
    if as_json:
        error: dict[str, Any] = {"code": code, "message": message}
        if details:
            error["details"] = details
        typer.echo(json.dumps({"error": error}, sort_keys=True))
    else:
        typer.echo(f"error: {message}", err=True)
    return typer.Exit(code=1)


@app.command("import")
def import_directory(
    file: Annotated[Path, typer.Argument(help="The directory file to load.")],
    format: Annotated[ImportFormat, typer.Option("--format", help="File format.")],
    max_bad_rows: Annotated[
        int,
        typer.Option("--max-bad-rows", min=0, help="Skip and report up to this many bad rows; past it, write nothing."),
    ] = DEFAULT_MAX_BAD_ROWS,
    names: Annotated[
        Path | None,
        typer.Option("--names", help="GLEIF's LEI records (golden copy CSV, or its zip) naming "
                     "the LEIs; needed by --format gleif-bic-lei."),
    ] = None,
    database_url: DatabaseUrl = None,
    as_json: JsonFlag = False,
) -> None:
    """Load an official directory; bad rows are skipped and reported, and past
    --max-bad-rows nothing is written (one transaction: all good rows or none)."""
    from sqlalchemy.exc import SQLAlchemyError

    from heddle.config import get_settings
    from heddle.identify.importers import PARSERS, ImportFormatError
    from heddle.identify.importers.gleif import parse_gleif_bic_lei
    from heddle.identify.importers.store import TooManyBadRows

    gleif = format is ImportFormat.GLEIF_BIC_LEI
    if gleif != (names is not None):
        raise _fail("invalid_arguments", "--names goes with --format gleif-bic-lei, and only "
                    "with it", as_json)
    try:
        if file.stat().st_size > MAX_FILE_BYTES:
            raise _fail("file_too_large", f"the file is larger than {MAX_FILE_BYTES} bytes", as_json)
        data = file.read_bytes()
        if names is not None and not names.is_file():  # streamed: no size limit
            raise _fail("unreadable_file", f"cannot read the names file {names.name}", as_json)
    except OSError as exc:
        raise _fail("unreadable_file", f"cannot read the file: {exc.strerror}", as_json) from None
    url = database_url or get_settings().database_url
    parsed = parse_gleif_bic_lei(data, names) if gleif else PARSERS[format.value](data)
    try:
        summary = asyncio.run(_import(url, parsed, max_bad_rows))
    except TooManyBadRows as exc:
        raise _fail(
            "too_many_bad_rows",
            str(exc),
            as_json,
            bad_rows=exc.summary.bad_rows,
            max_bad_rows=exc.limit,
            examples=[b.to_dict() for b in exc.summary.bad_examples],
        ) from None
    except ImportFormatError as exc:
        raise _fail("invalid_file", str(exc), as_json, line=exc.line) from None
    except (SQLAlchemyError, OSError) as exc:
        raise _fail("database_error", f"the import was not written: {exc}", as_json) from None
    payload = {
        "format": format.value,
        "rail": summary.rail,
        "rows": summary.rows,
        "inserted": summary.inserted,
        "updated": summary.updated,
        "bad_rows": summary.bad_rows,
        "bad_row_examples": [b.to_dict() for b in summary.bad_examples],
    }
    lines = [
        f"Imported {summary.rows} {summary.rail} rows "
        f"({summary.inserted} new, {summary.updated} updated); "
        f"{summary.bad_rows} bad rows skipped."
    ]
    lines += [f"  line {b.line}: {b.message}" for b in summary.bad_examples]
    _emit(payload, as_json, lines)


async def _import(url: str, parsed, max_bad_rows: int):
    from heddle.db.base import Database
    from heddle.db.migrate import upgrade
    from heddle.identify.importers.store import import_rows

    await upgrade(url)
    db = Database(url)
    try:
        return await import_rows(db, parsed, max_bad_rows=max_bad_rows)
    finally:
        await db.dispose()


class RefreshSource(StrEnum):
    GLEIF = "gleif"  # GLEIF's monthly BIC-to-LEI mapping with its LEIs' records
    RAZORPAY_IFSC = "razorpay-ifsc"  # IFSC.csv of Razorpay's latest IFSC release


@app.command("refresh")
def refresh(
    source: Annotated[
        list[RefreshSource] | None,
        typer.Option("--source", help="Refresh this source only (repeatable); default: every source."),
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option("--base-url", help="Download from this mirror instead of the publisher (one source)."),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Download and check; report what would change, "
                                          "write nothing.")] = False,
    database_url: DatabaseUrl = None,
    as_json: JsonFlag = False,
) -> None:
    """Download each openly published source from its publisher, check it (format, rows against
    the last import, licence notice) and import it in one transaction. Nothing else downloads:
    run this (or schedule it) to refresh."""
    from sqlalchemy.exc import SQLAlchemyError

    from heddle.config import get_settings
    from heddle.identify.importers import ImportFormatError
    from heddle.identify.refresh.download import RefreshError

    sources = [s.value for s in (source or list(RefreshSource))]
    if base_url is not None and len(sources) != 1:
        raise _fail("invalid_arguments", "--base-url goes with one --source", as_json)
    url = database_url or get_settings().database_url
    reports = []
    for name in sources:
        try:
            reports.append(asyncio.run(_refresh(url, name, base_url, dry_run)))
        except RefreshError as exc:
            raise _fail(exc.code, f"{name}: {exc.message}", as_json, source=name) from None
        except ImportFormatError as exc:
            raise _fail("wrong_format", f"{name}: {exc}", as_json, source=name) from None
        except (SQLAlchemyError, OSError) as exc:
            raise _fail("database_error", f"{name}: nothing was written: {exc}", as_json, source=name) from None
    lines = []
    for r in reports:
        verb = "Would import" if r.dry_run else "Imported"
        lines.append(f"{verb} {r.rows:,} {r.source} rows as of {r.as_of.isoformat()} ({r.inserted:,} new, "
                     f"{r.updated:,} updated, {r.removed:,} removed; {r.bad_rows:,} bad rows skipped; "
                     f"last import {r.last_import:,} rows).")
        lines += [f"  line {b['line']}: {b['message']}" for b in r.bad_examples[:5]]
        lines.append(f"  Licence: {r.notice}")
    _emit({"refreshed": [r.to_dict() for r in reports]}, as_json, lines)


async def _refresh(url: str, source: str, base_url: str | None, dry_run: bool):
    from heddle.db.base import Database
    from heddle.db.migrate import upgrade
    from heddle.identify.refresh.run import refresh as refresh_source

    await upgrade(url)
    db = Database(url)
    try:
        return await refresh_source(db, source, base_url=base_url, dry_run=dry_run)
    finally:
        await db.dispose()


@app.command("coverage")
def coverage(database_url: DatabaseUrl = None, as_json: JsonFlag = False) -> None:
    """Per rail: institutions, codes and ranges known (shipped + imported), beside the size
    of the official directory; then every shipped data file's source and licence."""
    from sqlalchemy.exc import SQLAlchemyError

    from heddle.config import get_settings
    from heddle.identify.coverage import coverage_report, imported_source_report, shipped_files
    from heddle.identify.datasets import load_curated
    from heddle.identify.schemas import Rail

    url = database_url or get_settings().database_url
    try:
        imported, sources = asyncio.run(_imported(url))
    except (SQLAlchemyError, OSError) as exc:
        raise _fail("database_error", f"cannot read the directory: {exc}", as_json) from None
    curated = load_curated()
    report = coverage_report(curated, imported)
    files = shipped_files()
    imports = imported_source_report(sources)
    payload = {"rails": report, "files": files, "imports": imports,
               "curated_as_of": {k: v.isoformat() for k, v in curated.as_of.items()}}
    lines = [
        f"{'rail':<16}{'institutions':>13}{'codes':>9}{'ranges':>8}{'branches':>10}"
        f"{'imported':>10}{'official':>10}  official directory"
    ]
    for rail, c in report.items():
        official = c["official"]
        size = f"{official['size']:,}" if official["size"] else "n/a"
        lines.append(
            f"{rail:<16}{c['institutions']:>13,}{c['codes']:>9,}{c['ranges']:>8,}"
            f"{c['branch_details']:>10,}{c['imported']:>10,}{size:>10}  "
            f"{official['directory']}"
        )
    bic_lei = report[Rail.SWIFT.value]["bic_lei"]
    lines.append(
        f"swift: GLEIF BIC-to-LEI rows shipped {bic_lei['shipped']}, imported {bic_lei['imported']:,}"
        + ("" if bic_lei["imported"] else " (import GLEIF's monthly file: heddle identify import "
           "FILE --format gleif-bic-lei --names LEI-CDF)")
    )
    lines.append("")
    lines += [
        f"{f['file']:<24}{f['as_of']:<12}{'STALE' if f['stale'] else 'fresh':<7}{f['licence'][:60]}" for f in files
    ]
    lines += [f"  {f['file']}: branch details as of {f['details_as_of']}" for f in files if "details_as_of" in f]
    if imports:
        lines += ["", f"{'imported source':<24}{'rows':>9}  {'as_of':<12}{'cadence':>8}  state"]
        lines += [f"{i['source']:<24}{i['rows']:>9,}  {i['as_of']:<12}{i['cadence_days']:>7}d  "
                  f"{'STALE' if i['stale'] else 'fresh'}" for i in imports]
        lines += [f"  {i['source']}: {i['notice']}" for i in imports if "notice" in i]
    stale = [
        f"{f['file']} ({f['age_days']} days old; its source is updated every {f['update_cycle_days']} days)"
        for f in files
        if f["stale"]
    ] + [f"imported {i['source']} (data of {i['as_of']}; republished every {i['cadence_days']} days: "
         "run `heddle identify refresh` or import a newer file)" for i in imports if i["stale"]]
    payload["stale"] = [f["file"] for f in files if f["stale"]] + [i["source"] for i in imports if i["stale"]]
    if stale:
        lines += ["", "Older than their source's update cycle:", *(f"  {s}" for s in stale)]
    _emit(payload, as_json, lines)


async def _imported(url: str) -> tuple[dict[str, set[str]], dict[str, dict]]:
    from heddle.db.base import Database
    from heddle.db.migrate import upgrade
    from heddle.identify.importers.store import imported_codes, imported_sources

    await upgrade(url)
    db = Database(url)
    try:
        return await imported_codes(db), await imported_sources(db)
    finally:
        await db.dispose()
