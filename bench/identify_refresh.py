"""`heddle identify refresh --source gleif` against a local fake of GLEIF, beside its baseline in
the same run: `heddle identify import --format gleif-bic-lei` of the same pairs from files on
disk (no HTTP, no LEI-records requests). Both run in a fresh process against a fresh SQLite
file; reported: wall time, CPU time (process start-up included; steadier than wall time on a
shared machine), peak memory, and the ratios refresh / import. Then a running server's reload
of the refreshed rows (Directory.refresh, in process: what a server pays once per refresh).

The pairs are the shared test data (`../shared/data/gleif-2020-05/`, 18,896 real pairs of May
2020), served by tests/identify/fake_gleif.py; the bench skips when that data is absent.

    python bench/identify_refresh.py
Prints one line per step, then one JSON line: {"benchmark": "identify_refresh", ...}.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from identify.fake_gleif import DATA, FakeGleif, mapping_csv  # noqa: E402
from identify.fakes import LoopbackServer  # noqa: E402

HEDDLE = str(Path(sys.executable).with_name("heddle"))


def timed(args: list[str]) -> dict:
    """Run `args` under /usr/bin/time: wall, user+sys CPU and peak RSS."""
    started = time.perf_counter()
    result = subprocess.run(["/usr/bin/time", "-f", "%U %S %M", *args], capture_output=True, text=True)
    wall = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"{args[1:4]} failed: {result.stderr[-500:]}")
    user, system, peak_kb = result.stderr.strip().splitlines()[-1].split()
    return {"wall_s": round(wall, 2), "cpu_s": round(float(user) + float(system), 2),
            "peak_mb": round(int(peak_kb) / 1024)}


def main() -> int:
    if DATA is None:
        print("skipped: ../shared/data/gleif-2020-05 is not beside this checkout")
        return 0
    fake = FakeGleif()
    work = Path(tempfile.mkdtemp(prefix="heddle-bench-refresh-"))
    pairs = work / "lei-bic.csv"
    pairs.write_bytes(mapping_csv(fake.pairs))
    names = work / "names.csv"
    names.write_text("LEI,Entity.LegalName\n" + "".join(
        f'{lei},"{name.replace(chr(34), chr(34) * 2)}"\n' for lei, name in fake.names.items()), encoding="utf-8")
    imported_db = f"sqlite+aiosqlite:///{work / 'import.db'}"
    refreshed_db = f"sqlite+aiosqlite:///{work / 'refresh.db'}"
    baseline = timed([HEDDLE, "identify", "import", str(pairs), "--format", "gleif-bic-lei", "--names", str(names),
                      "--max-bad-rows", "1000", "--database-url", imported_db, "--json"])
    print(f"import (baseline)  {baseline}")
    with LoopbackServer(fake.app()) as server:
        refresh = timed([HEDDLE, "identify", "refresh", "--source", "gleif", "--base-url", server.url,
                         "--database-url", refreshed_db, "--json"])
    print(f"refresh            {refresh}  ({fake.record_requests} LEI-records requests)")

    from heddle.db.base import Database
    from heddle.identify.directory import Directory

    async def reload() -> tuple[int, float, float]:
        db = Database(refreshed_db)
        directory = Directory()
        try:
            started, cpu = time.perf_counter(), time.process_time()
            rows = await directory.refresh(db)
            return rows, time.perf_counter() - started, time.process_time() - cpu
        finally:
            await db.dispose()

    rows, wall, cpu = asyncio.run(reload())
    print(f"server reload      {rows} rows: wall {wall:.2f} s, CPU {cpu:.2f} s")
    report = {"benchmark": "identify_refresh", "import": baseline, "refresh": refresh,
              "ratio_cpu": round(refresh["cpu_s"] / baseline["cpu_s"], 2),
              "ratio_wall": round(refresh["wall_s"] / baseline["wall_s"], 2),
              "lei_record_requests": fake.record_requests,
              "reload": {"rows": rows, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2)}}
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
