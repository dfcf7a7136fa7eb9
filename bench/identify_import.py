"""Directory import speed and peak memory on full-size files.

Builds full-size files from the real small extracts in tests/identify/fixtures (a FedACH
directory of 18,000 records from fedach_real_extract.txt, a Razorpay IFSC.csv of 185,000
rows from ifsc_razorpay_sample.csv: the real rows repeated with new, valid codes), then runs
`heddle identify import` on each in a fresh process against a fresh SQLite file and reports
wall time, CPU time (steadier than wall time on a shared machine; process start-up
included) and the process's peak resident memory. Targets (issue 14): FedACH < 5 s, IFSC
< 30 s, peak memory < 200 MB. Timings on a shared machine are noisy: compare runs. Then
times, on full-size inputs, the dry run of the GLEIF BIC-to-LEI import (what `heddle identify
import --format gleif-bic-lei` would store, for a 39,000-row file) and the build script behind
the shipped IFSC file (an IFSC.json of 182,295 codes).

    python bench/identify_import.py [--fedach-rows 18000] [--ifsc-rows 185000] [--xlsx]
Prints one line per file, then one JSON line: {"benchmark": "identify_import", ...}.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import resource
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from xml.sax.saxutils import escape

from stdnum.us import rtn

FIXTURES = Path(__file__).parents[1] / "tests" / "identify" / "fixtures"


def fedach_file(rows: int) -> bytes:
    """`rows` FedACH records: the real extract's records with new routing numbers (the same
    Federal Reserve routing symbol, a 6-digit serial, the right check digit)."""
    real = [line for line in (FIXTURES / "fedach_real_extract.txt").read_text().splitlines() if line]
    out = []
    for n in range(rows):
        line = real[n % len(real)]
        body = line[:2] + f"{n:06d}"
        routing = body + rtn.calc_check_digit(body)
        out.append(routing + line[9:19] + "1" + line[20:26] + "000000000" + line[35:])
    return ("\r\n".join(out) + "\r\n").encode("ascii")


def ifsc_file(rows: int) -> bytes:
    real = list(csv.reader(io.StringIO((FIXTURES / "ifsc_razorpay_sample.csv").read_text())))
    header, body = real[0], real[1:]
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    for n in range(rows):
        row = list(body[n % len(body)])
        row[1] = row[1][:4] + "0" + f"{n:06d}"
        writer.writerow(row)
    return out.getvalue().encode("utf-8")


_PACKAGE = {
    "[Content_Types].xml": (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Types xmlns="http://schemas.'
        'openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType='
        '"application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" '
        'ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType='
        '"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
        '<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.'
        'openxmlformats-officedocument.spreadsheetml.worksheet+xml"/><Override PartName='
        '"/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-officedocument.'
        'spreadsheetml.sharedStrings+xml"/></Types>'),
    "_rels/.rels": (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Relationships xmlns="http://'
        'schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type='
        '"http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" '
        'Target="xl/workbook.xml"/></Relationships>'),
    "xl/workbook.xml": (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<workbook xmlns="http://'
        'schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.'
        'openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Sheet1" '
        'sheetId="1" r:id="rId1"/></sheets></workbook>'),
    "xl/_rels/workbook.xml.rels": (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Relationships xmlns="http://'
        'schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type='
        '"http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" '
        'Target="worksheets/sheet1.xml"/><Relationship Id="rId2" Type="http://schemas.'
        'openxmlformats.org/officeDocument/2006/relationships/sharedStrings" '
        'Target="sharedStrings.xml"/></Relationships>'),
}
_MAIN_NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"


def xlsx_package(path: Path, sheet_data: str, shared_items: str) -> None:
    """A one-sheet workbook as Excel writes it: `sheet_data` is the XML inside <sheetData>,
    `shared_items` the <si> items of the shared-string table."""
    sheet = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<worksheet xmlns='
             f'"{_MAIN_NS}"><sheetData>{sheet_data}</sheetData></worksheet>')
    table = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<sst xmlns='
             f'"{_MAIN_NS}">{shared_items}</sst>')
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in _PACKAGE.items():
            archive.writestr(name, text)
        archive.writestr("xl/worksheets/sheet1.xml", sheet)
        archive.writestr("xl/sharedStrings.xml", table)


def ifsc_xlsx_file(rows: int, path: Path) -> None:
    """The RBI's XLSX as Excel saves it: text in the shared-string table (every branch's name
    and address distinct, as in the real list, so the table has about 2 strings a row),
    STD code and phone as numbers; the real RBI-layout rows repeated with new codes."""
    real = list(csv.reader(io.StringIO((FIXTURES / "ifsc_rbi_sample.csv").read_text())))
    header, body = real[0], real[1:]
    index: dict[str, int] = {}
    sheet = io.StringIO()

    def write_row(number: int, cells: list) -> None:
        sheet.write(f'<row r="{number}" spans="1:{len(cells)}">')
        for column, value in enumerate(cells):
            ref = f"{chr(65 + column)}{number}"
            if isinstance(value, int):
                sheet.write(f'<c r="{ref}"><v>{value}</v></c>')
            else:
                sheet.write(f'<c r="{ref}" t="s"><v>{index.setdefault(value, len(index))}</v></c>')
        sheet.write("</row>")

    write_row(1, header)
    for n in range(rows):
        cells = list(body[n % len(body)])
        cells[1] = cells[1][:4] + "0" + f"{n:06d}"
        cells[2] = f"{cells[2]} {n}"
        cells[3] = f"{n % 997} {cells[3]} & ROAD {n}"
        cells[7], cells[8] = int(cells[7]), 20_000_000 + n
        write_row(n + 2, cells)
    items = "".join(f"<si><t>{escape(text)}</t></si>" for text in index)
    xlsx_package(path, sheet.getvalue(), items)


# Runs the CLI and reports its own peak RSS on stderr (RUSAGE_CHILDREN would give the
# largest of all children so far, not this import's).
_WRAPPER = """
import resource, sys
from heddle.cli.main import main
sys.argv = ["heddle", *sys.argv[1:]]
try:
    main()
finally:
    print("PEAK_KB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
"""


def run_import(path: Path, fmt: str, db_url: str) -> dict:
    """One `heddle identify import` in its own process: wall time, CPU time, peak RSS."""
    # Migrations run first, outside the measured import.
    subprocess.run([sys.executable, "-m", "heddle", "migrate", "--database-url", db_url],
                   check=False, capture_output=True)
    started = time.perf_counter()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_before = usage.ru_utime + usage.ru_stime
    done = subprocess.run([sys.executable, "-c", _WRAPPER, "identify", "import", str(path),
                           "--format", fmt, "--database-url", db_url, "--json"],
                          capture_output=True, text=True, check=True)
    seconds = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage.ru_utime + usage.ru_stime - cpu_before
    peak_kb = int(done.stderr.rsplit("PEAK_KB", 1)[1].split()[0])
    report = json.loads(done.stdout.strip().splitlines()[-1])
    return {"format": fmt, "rows": report["rows"], "bad_rows": report["bad_rows"],
            "seconds": round(seconds, 2), "cpu_seconds": round(cpu, 2),
            "peak_mb": round(peak_kb / 1024, 1)}


# Reads every row of a workbook and nothing else, reporting CPU seconds and peak RSS: the
# reader's own cost, apart from the import's writes.
_READERS = {
    "openpyxl": """
from openpyxl import load_workbook
book = load_workbook(PATH, read_only=True, data_only=True)
rows = sum(1 for sheet in book.worksheets for _ in sheet.iter_rows(values_only=True))
""",
    "heddle": """
import zipfile
from heddle.identify.importers.xlsx_rows import shared_strings, sheet_rows, workbook_sheets
with zipfile.ZipFile(PATH) as archive:
    strings = shared_strings(archive)
    rows = sum(1 for _, part in workbook_sheets(archive) for _ in sheet_rows(archive, part, strings))
""",
}
_TIMED = """
import json, resource, sys, time
PATH = sys.argv[1]
started = time.process_time()
{body}
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({{"rows": rows, "cpu_seconds": round(time.process_time() - started, 2),
                  "peak_mb": round(usage.ru_maxrss / 1024, 1)}}))
"""


def read_only(path: Path) -> dict:
    """Each XLSX reader alone on the file, in its own process; CPU ratio openpyxl / heddle."""
    results = {}
    for name, body in _READERS.items():
        done = subprocess.run([sys.executable, "-c", _TIMED.format(body=body), str(path)],
                              capture_output=True, text=True, check=True)
        results[name] = json.loads(done.stdout.strip().splitlines()[-1])
    results["cpu_ratio"] = round(results["openpyxl"]["cpu_seconds"]
                                 / max(results["heddle"]["cpu_seconds"], 0.01), 1)
    return results


def gleif_files(rows: int, folder: Path) -> tuple[Path, Path]:
    """A BIC-to-LEI relationship file of `rows` rows and its names file, built from the
    synthetic rows in tests/identify/fixtures/gleif (invented BICs and LEIs in GLEIF's layout;
    each repeated with new branch codes)."""
    real = list(csv.reader((FIXTURES / "gleif" / "lei-bic.csv").open(encoding="utf-8")))[1:]
    bic_lei, names = folder / "lei-bic.csv", folder / "lei-names.csv"
    with bic_lei.open("w", encoding="utf-8", newline="") as f:
        out = csv.writer(f)
        out.writerow(["LEI", "BIC"])
        for i in range(rows):
            lei, bic = real[i % len(real)]
            branch = "XXX" if i < len(real) else f"{i // len(real):03d}"[-3:]
            out.writerow([lei, bic[:8] + branch])
    names.write_bytes((FIXTURES / "gleif" / "lei-names.csv").read_bytes())
    return bic_lei, names


def ifsc_json_file(codes: int, path: Path) -> Path:
    """An IFSC.json as razorpay/ifsc writes it (bank -> branch codes, digits as numbers)."""
    banks = [f"B{chr(65 + i // 26)}{chr(65 + i % 26)}X" for i in range(260)]
    data: dict[str, list] = {bank: [] for bank in banks}
    for i in range(codes):
        data[banks[i % 260]].append(i // 260 + 1 if i % 3 else f"A{i // 260:05d}")
    path.write_text(json.dumps(data))
    return path


_BUILD = """
import resource, runpy, sys
sys.argv = sys.argv[1:]
try:
    runpy.run_module(sys.argv[0], run_name="__main__")
except SystemExit:
    pass
print("PEAK_KB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
"""


def run_build(module: str, args: list[str], rows: int) -> dict:
    """One build script in its own process: wall time, CPU time, its own peak RSS."""
    started = time.perf_counter()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_before = usage.ru_utime + usage.ru_stime
    done = subprocess.run([sys.executable, "-c", _BUILD, module, *args], capture_output=True,
                          text=True, check=True)
    seconds = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak_kb = int(done.stderr.rsplit("PEAK_KB", 1)[1].split()[0])
    return {"build": module.rsplit(".", 1)[1], "rows": rows, "seconds": round(seconds, 2),
            "cpu_seconds": round(usage.ru_utime + usage.ru_stime - cpu_before, 2),
            "peak_mb": round(peak_kb / 1024, 1)}


def write_file(kind: str, rows: int, path: Path) -> Path:
    """Builds a file in a child process: a child's peak RSS starts from its parent's at the
    fork, so a parent that built a 60 MB sheet would inflate every measured import."""
    subprocess.run([sys.executable, __file__, "--write", kind, str(rows), str(path)], check=True)
    return path


def main() -> None:
    if sys.argv[1:2] == ["--write"]:
        kind, rows, path = sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
        if kind == "ifsc-xlsx":
            ifsc_xlsx_file(rows, path)
        else:
            path.write_bytes(fedach_file(rows) if kind == "fedach" else ifsc_file(rows))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fedach-rows", type=int, default=18_000)
    parser.add_argument("--ifsc-rows", type=int, default=185_000)
    parser.add_argument("--gleif-rows", type=int, default=39_000)
    parser.add_argument("--ifsc-codes", type=int, default=182_295)
    parser.add_argument("--xlsx", action="store_true",
                        help="also import the IFSC rows as the RBI's XLSX, and time the XLSX "
                             "readers alone (openpyxl against heddle's)")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, fmt, rows in (("FedACHdir.txt", "fedach", args.fedach_rows),
                                ("IFSC.csv", "ifsc-csv", args.ifsc_rows)):
            path = write_file(fmt, rows, folder / name)
            result = run_import(path, fmt, f"sqlite+aiosqlite:///{folder / (fmt + '.db')}")
            results.append(result)
            print(f"{fmt:<10}{result['rows']:>8} rows  {result['seconds']:>7.2f} s wall  "
                  f"{result['cpu_seconds']:>7.2f} s CPU  peak {result['peak_mb']:>6.1f} MB")
        if args.xlsx:
            path = write_file("ifsc-xlsx", args.ifsc_rows, folder / "68774.xlsx")
            result = run_import(path, "ifsc-xlsx", f"sqlite+aiosqlite:///{folder / 'xlsx.db'}")
            results.append(result)
            print(f"{'ifsc-xlsx':<10}{result['rows']:>8} rows  {result['seconds']:>7.2f} s wall  "
                  f"{result['cpu_seconds']:>7.2f} s CPU  peak {result['peak_mb']:>6.1f} MB")
            readers = read_only(path)
            for name in _READERS:
                r = readers[name]
                print(f"  read only, {name:<9}{r['rows']:>8} rows  {r['cpu_seconds']:>7.2f} s CPU  "
                      f"peak {r['peak_mb']:>6.1f} MB")
            print(f"  openpyxl / heddle reader CPU: {readers['cpu_ratio']}x")
        # The GLEIF import's dry run and the IFSC build script, on full-size inputs.
        bic_lei, names = gleif_files(args.gleif_rows, folder)
        ifsc_json = ifsc_json_file(args.ifsc_codes, folder / "IFSC.json")
        builds = [
            run_build("heddle.identify.importers.gleif",
                      ["--bic-lei", str(bic_lei), "--names", str(names), "--as-of", "2026-11-01",
                       "--out", str(folder / "bic_lei.json")], args.gleif_rows),
            run_build("heddle.identify.importers.ifsc_list",
                      ["--ifsc-json", str(ifsc_json), "--as-of", "2026-05-27",
                       "--out", str(folder / "ifsc_branches.json.gz")], args.ifsc_codes),
        ]
        for b in builds:
            print(f"build {b['build']:<10}{b['rows']:>8} rows  {b['seconds']:>7.2f} s wall  "
                  f"{b['cpu_seconds']:>7.2f} s CPU  peak {b['peak_mb']:>6.1f} MB")
    report = {"benchmark": "identify_import", "imports": results, "builds": builds}
    if args.xlsx:
        report["xlsx_readers"] = readers
    print(json.dumps(report))


if __name__ == "__main__":
    main()
