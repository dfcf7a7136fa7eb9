"""The curated data files: well-formed, consistent with the libraries they join to."""

from __future__ import annotations

import json
import re
from importlib import resources

import pytest
from phonenumbers.carrierdata import CARRIER_DATA
from pydantic import ValidationError
from schwifty import BIC
from schwifty import registry as schwifty_registry

from heddle.identify.checkdigits import nuban_institution_code
from heddle.identify.data_schemas import NigerianEntry, RoutingEntry, SortCodeEntry, SwiftEntry
from heddle.identify.datasets import _read, load_curated
from heddle.identify.rails.routing_number import RoutingNumberRail

curated = load_curated()


def all_bic_holders():
    yield from curated.bics.values()
    yield from curated.ifsc_banks.values()
    yield from curated.gh_banks.values()
    yield from (r.institution for r in curated.ng_by_nuban_code.values())
    yield from (r.institution for r in curated.sort_code_ranges if r.institution)


def test_every_bic_is_valid_and_in_its_country():
    for institution in all_bic_holders():
        if institution.bic:
            bic = BIC(institution.bic)  # raises on a malformed BIC or unknown country
            assert bic.country_code == institution.country, institution


def test_bics_agree_with_schwifty_where_it_has_a_registry():
    countries = set(schwifty_registry.get_countries())
    checked = 0
    for institution in all_bic_holders():
        if institution.bic and institution.country in countries:
            bic8 = institution.bic[:8]
            assert (schwifty_registry.get_banks_by_bic(bic8 + "XXX")
                    or schwifty_registry.get_banks_by_bic(bic8)), institution
            checked += 1
    assert checked >= 20


def test_routing_numbers_are_valid():
    rail = RoutingNumberRail()
    for number in curated.routing_numbers:
        assert rail.parse(number, None) == number


def test_sort_code_ranges_nest_or_are_disjoint():
    ranges = curated.sort_code_ranges
    for i, a in enumerate(ranges):
        for b in ranges[i + 1:]:
            overlap = a.start <= b.end and b.start <= a.end
            nested = (a.start >= b.start and a.end <= b.end) or (b.start >= a.start and b.end <= a.end)
            assert not overlap or (nested and a.size != b.size), (a, b)


def test_momo_carriers_exist_in_libphonenumber():
    from phonenumbers import country_code_for_region

    for (country, carrier_name), operator in curated.momo_operators.items():
        prefix = str(country_code_for_region(country))
        names = {v.get("en") for k, v in CARRIER_DATA.items() if k.startswith(prefix)}
        assert carrier_name in names, (country, carrier_name)
        assert operator.institution.country == country


def test_nigerian_codes_are_unique_and_padded():
    for key, record in curated.ng_by_nuban_code.items():
        assert len(key) == 6 and key.isdigit()
        if record.check_digit:
            assert record.nuban_code in (f"000{record.institution.code}", f"9{record.institution.code}")
    institutions = {id(r): r for r in [*curated.ng_by_nuban_code.values(),
                                       *curated.ng_by_nip_code.values()]}.values()
    paystack = [r.institution.external_code("paystack") for r in institutions
                if r.institution.external_code("paystack")]
    assert len(paystack) == len(set(paystack))


def test_ghana_prefixes_point_at_head_offices():
    for prefix, bank in curated.gh_bank_prefixes.items():
        assert bank.code.startswith(prefix) and bank.code.endswith("0100")


def test_sepa_countries_are_iban_countries():
    for country, entry in curated.sepa.items():
        assert entry.sct in ("regulated", "voluntary")
        assert schwifty_registry.get_iban_spec(country).country == country


@pytest.mark.parametrize("model, data", [
    (RoutingEntry, {"routing_number": "021000022", "name": "Bank", "type": "bank", "reachable_rails": []}),
    (SortCodeEntry, {"from": "200000", "to": "100000", "name": "Bank", "type": "bank"}),
    (SortCodeEntry, {"from": "200000", "to": "209999"}),
    (NigerianEntry, {"name": "Bank", "type": "bank", "nuban_check_digit": True, "reachable_rails": []}),
    (NigerianEntry, {"nip_code": "00123", "name": "Bank", "type": "bank",
                     "nuban_check_digit": False, "reachable_rails": []}),
    (RoutingEntry, {"routing_number": "021000021", "name": "Bank", "type": "bank",
                    "reachable_rails": [], "extra": 1}),
])
def test_bad_entries_are_refused(model, data):
    with pytest.raises(ValidationError):
        model.model_validate(data)


# --- shipped open directories (issue 14) ---

DATA = resources.files("heddle.identify").joinpath("data")


def test_every_data_file_records_source_licence_and_as_of():
    licences = DATA.joinpath("LICENCES.md").read_text(encoding="utf-8")
    for item in DATA.iterdir():
        if not item.name.endswith(".json"):
            continue
        header = json.loads(item.read_text(encoding="utf-8"))
        assert header["sources"] and header["licence"] and header["as_of"], item.name
        if not header["licence"].startswith("Apache-2.0"):
            assert f"`{item.name}`" in licences, f"{item.name} is missing from LICENCES.md"


def test_ifsc_open_list_formats_and_sub_members():
    ifsc = re.compile(r"[A-Z]{4}0[A-Z0-9]{6}")
    assert len(curated.ifsc_banks) >= 1500
    for prefix, bank in curated.ifsc_banks.items():
        assert re.fullmatch(r"[A-Z]{4}", prefix) and bank.country == "IN"
    sublets = curated.ifsc_sublets
    assert len(sublets.exact) >= 1000
    for code, holder in sublets.exact.items():
        assert ifsc.fullmatch(code), code
        # A sub-member is never its sponsor (else the map would say nothing).
        assert holder.code != code[:4], code
    for prefix, _ in sublets.prefixes:
        assert re.fullmatch(r"[A-Z]{4}(0[A-Z0-9]{0,5})?", prefix), prefix


def test_nip_codes_are_six_digits_and_linked_banks_pass_their_check_digit():
    assert len(curated.ng_by_nip_code) >= 290
    for code, record in curated.ng_by_nip_code.items():
        assert len(code) == 6 and code.isdigit(), code
        if record.check_digit:
            # A NIP code linked to a CBN-coded bank checks NUBANs with the CBN code, never
            # with the NIP code itself.
            assert record.nuban_code == nuban_institution_code(record.institution.code)
    collisions = [code for code, record in curated.ng_by_nip_code.items()
                  if code in curated.ng_by_nuban_code
                  and curated.ng_by_nuban_code[code] is not record]
    assert sorted(collisions) == ["000011", "000023"]


# Curated BIC records whose registry entry names another institution: the registry is wrong
# there (the bank code is the holder's own), which is why the curated record exists.
REGISTRY_NAMES_ANOTHER = {
    "SOGEFRPP": "Société Générale's bank code 30003 is listed as Inter Europe Conseil SAS",
    "CGDIPTPL": "Caixa Geral de Depósitos' BIC is listed for Financeira El Corte Inglés",
}


def test_curated_bic_records_agree_with_the_registry_where_it_has_the_bic():
    """A curated BIC-keyed record is cross-checked against the bank-code registry: where the
    registry routes bank codes through the BIC, one of its entries must carry the record's
    name or one of its other names (or the mismatch is listed above with its reason)."""
    from heddle.identify.bics import names_agree, registry_entries
    with_swift = _read("swift_bics.json", SwiftEntry).entries
    checked = 0
    for entry in with_swift:
        banks = registry_entries(entry.bic[:8] + "XXX")
        if not banks or entry.bic in REGISTRY_NAMES_ANOTHER:
            continue
        institution = curated.bics[entry.bic[:8]]
        assert any(names_agree(b.name, institution, tuple(entry.other_names)) for b in banks), \
            (entry.bic, sorted({b.name for b in banks})[:5])
        checked += 1
    assert checked >= 25
