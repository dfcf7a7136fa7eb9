"""Who holds a BIC, from BIC-keyed sources only, and when a bank-code registry may be believed.

schwifty's registries map *bank codes to BICs*: a national directory lists every bank code
with the BIC its payments route through, so merged banks, co-operative member banks and small
firms clearing through a bank appear under that bank's BIC (BSABESBB carries Abbey National
and 19 others; SOGEFRPP's only entry names an advisory firm). Taking "the" entry for a BIC
named the wrong institution. So a BIC is answered only from a source keyed by BIC:

1. `swift_bics.json` and the BICs of the other curated files (current names, types and
   former names, compiled for Heddle);
2. GLEIF's BIC-to-LEI relationship file with LEI legal names (CC0), when an operator has
   imported it (`heddle identify import --format gleif-bic-lei`; Heddle ships none of its rows).

A registry entry may name an institution (on the IBAN rail) only where it agrees with the
BIC-keyed holder of its BIC: the same name, a former name, or the same distinctive first word
("Commerzbank Bamberg" and "COMMERZBANK Aktiengesellschaft").
"""

from __future__ import annotations

import re
import sys
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace

from schwifty import registry as schwifty_registry
from schwifty.domain import Bank

from heddle.identify.datasets import CuratedData
from heddle.identify.schemas import Institution

# Words that say what kind of institution, or its legal form, not which one.
_GENERIC = frozenset("""
a ab ad ae ag an and as asa bank banka banken banki bankasi banco banca bancaria banque bhd berhad
bv c cc co company cooperative coop corp corporation credit d da das de degli dei del della der
des di die do dos du e ed eg el en et eu ev f for g gmbh group holding holdings i in inc ja jsc
k kg l la le les limited llc ltd m mbh n na nv o oy oyj of p pjsc plc psc public s sa sae sal
sas savings se sg sl sociedad societa societe spa srl t the tbk to trust u und v y z
aktiengesellschaft anonima anonim sirketi persero national nationale nacional nazionale
sparkasse kreissparkasse stadtsparkasse volksbank raiffeisenbank raiffeisenkasse landesbank
caja caisse cassa kasse risparmio ahorros
""".split())
_WORD = re.compile(r"[a-z0-9]+")


def words(name: str) -> tuple[str, ...]:
    """Distinctive words of a name: accents folded, case folded, generic words dropped."""
    folded = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode().casefold()
    return tuple(w for w in _WORD.findall(folded) if w not in _GENERIC and len(w) > 1)


def names_agree(name: str, holder: Institution, other: tuple[str, ...] = ()) -> bool:
    """True when `name` (a registry entry's) is the holder's name or one of its former names:
    the same distinctive words, or one name's words followed by more ("Commerzbank Bamberg",
    a branch entry of COMMERZBANK Aktiengesellschaft)."""
    mine = words(name)
    if not mine:
        return False
    for known in (holder.name, *other):
        theirs = words(known)
        if theirs and (mine[:len(theirs)] == theirs or theirs[:len(mine)] == mine):
            return True
    return False


@dataclass(frozen=True, slots=True)
class BicHolder:
    institution: Institution  # code and bic are the BIC8 (or the listed BIC11)
    source: str  # "curated" or "gleif"
    other_names: tuple[str, ...] = ()
    lei: str | None = None


@dataclass(frozen=True)
class BicIndex:
    """BIC-keyed holders: `head` by BIC8 (curated entries, GLEIF head-office rows), `exact`
    by BIC11 for GLEIF rows of other branch codes."""

    head: dict[str, BicHolder]
    exact: dict[str, BicHolder]

    def holder(self, bic: str) -> tuple[BicHolder | None, bool]:
        """(holder, listed): the holder of a BIC8 or BIC11, and whether that exact BIC11 is
        listed. A BIC11's own row wins: a branch code can belong to another institution
        (SOLADES1ULM is Sparkasse Ulm, a different bank from SOLADEST's)."""
        if len(bic) == 11 and not bic.endswith("XXX"):
            found = self.exact.get(bic)
            if found is not None:
                return found, True
        return self.head.get(bic[:8]), len(bic) == 8 or bic.endswith("XXX")


def load_bic_index(curated: CuratedData, gleif: Iterable[tuple[Institution, str]] = ()) -> BicIndex:
    """The curated BICs, then GLEIF's imported rows ((institution, LEI), `code` the BIC11); a
    curated entry keeps its name and type over a GLEIF head-office row."""
    head: dict[str, BicHolder] = {
        bic8: BicHolder(inst, "curated", curated.other_names.get(bic8, ()))
        for bic8, inst in curated.bics.items()}
    exact: dict[str, BicHolder] = {}
    for row, lei in gleif:
        bic = row.code
        inst = replace(row, code=bic[:8], bic=bic[:8] if bic.endswith("XXX") else bic)
        holder = BicHolder(_usual_name(inst, bic), "gleif", lei=lei)
        if bic.endswith("XXX"):
            head.setdefault(bic[:8], holder)
        else:
            exact[bic] = holder
    return BicIndex(head, exact)


def _usual_name(inst: Institution, bic: str) -> Institution:
    """The registry's usual spelling of the holder's legal name ("Deutsche Bank" for DEUTSCHE
    BANK AKTIENGESELLSCHAFT): the most frequent entry name under the BIC with exactly the
    same distinctive words; else the legal name."""
    legal = words(inst.name)
    agreeing = Counter(b.name for b in registry_entries(bic) if legal and words(b.name) == legal)
    if not agreeing:
        return inst
    name = min(agreeing, key=lambda n: (-agreeing[n], len(n), n))
    return replace(inst, name=sys.intern(name))


def registry_entries(bic: str) -> list[Bank]:
    """schwifty's registry entries that route through `bic` (BIC11, its head office, BIC8)."""
    for candidate in dict.fromkeys((bic, bic[:8] + "XXX", bic[:8])):
        banks = schwifty_registry.get_banks_by_bic(candidate)
        if banks:
            return list(banks)
    return []


def describe_entries(banks: list[Bank], limit: int = 4) -> str:
    names = list(dict.fromkeys(b.name for b in banks))
    shown = ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")
    return f"{shown} ({len({b.bank_code for b in banks})} bank code(s))"


def canonical(holder: BicHolder, *, code: str, bic: str | None = None) -> Institution:
    """The holder's record as another rail shows it: its name, type and BIC, the rail's code."""
    return replace(holder.institution, code=code, bic=bic or holder.institution.bic)
