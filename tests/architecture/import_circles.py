"""Every import circle between the modules of `heddle` (not packages: one module each end).

Run as a script it prints them and exits 1 if there is any; tests/architecture runs it on the
source tree and on a copy with a circle added. grimp reads every import statement, the ones
inside functions and under `if TYPE_CHECKING:` included: a circle only a lazy import hides is
still two modules that each need the other.
"""

from __future__ import annotations

import sys

import grimp


def module_circles(graph: grimp.ImportGraph) -> list[tuple[str, ...]]:
    """Each circle once, as the modules it passes through, the first repeated at the end."""
    seen: set[frozenset[str]] = set()
    circles = []
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back is None:
                continue
            circle = (importer, *back)
            if frozenset(circle) not in seen:
                seen.add(frozenset(circle))
                circles.append(circle)
    return circles


def main() -> int:
    circles = module_circles(grimp.build_graph("heddle", cache_dir=None))
    for circle in circles:
        print("import circle: " + " -> ".join(circle))
    return 1 if circles else 0


if __name__ == "__main__":
    sys.exit(main())
