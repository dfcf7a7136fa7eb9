"""Which IP addresses an outbound call may connect to.

The standard library's ``is_global`` differs between Python versions and misses ranges (for
instance it calls 192.0.0.8 and 2002:7f00:1:: global), so the refused ranges are listed here
explicitly, after the IANA special-purpose registries, and addresses that embed an IPv4
address (IPv4-mapped, NAT64, 6to4) are judged by the address they embed.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
AddressPolicy = Callable[[IPAddress], bool]
"""Returns True when a connection to the address is allowed."""

_NOT_PUBLIC_V4 = [ipaddress.IPv4Network(n) for n in (
    "0.0.0.0/8",        # "this network", includes the unspecified address
    "10.0.0.0/8",       # RFC 1918
    "100.64.0.0/10",    # carrier-grade NAT (RFC 6598); also cloud metadata on some providers
    "127.0.0.0/8",      # loopback
    "169.254.0.0/16",   # link-local, includes the 169.254.169.254 metadata service
    "172.16.0.0/12",    # RFC 1918
    "192.0.0.0/24",     # IETF protocol assignments
    "192.0.2.0/24",     # documentation
    "192.88.99.0/24",   # deprecated 6to4 relay anycast
    "192.168.0.0/16",   # RFC 1918
    "198.18.0.0/15",    # benchmarking
    "198.51.100.0/24",  # documentation
    "203.0.113.0/24",   # documentation
    "224.0.0.0/4",      # multicast
    "240.0.0.0/4",      # reserved, includes the 255.255.255.255 broadcast
)]

_NOT_PUBLIC_V6 = [ipaddress.IPv6Network(n) for n in (
    "::/8",             # unspecified, loopback, IPv4-compatible and other reserved forms
    "64:ff9b:1::/48",   # local-use NAT64
    "100::/64",         # discard-only
    "2001::/23",        # IETF protocol assignments, includes Teredo
    "2001:db8::/32",    # documentation
    "3fff::/20",        # documentation
    "5f00::/16",        # segment routing SIDs
    "fc00::/7",         # unique-local
    "fe80::/10",        # link-local
    "fec0::/10",        # deprecated site-local
    "ff00::/8",         # multicast
)]

_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")

# Refused even when private targets are allowed (development): no tool host lives there.
_NEVER_V4 = [ipaddress.IPv4Network(n) for n in ("0.0.0.0/8", "169.254.0.0/16", "224.0.0.0/4",
                                               "240.0.0.0/4")]
_NEVER_V6 = [ipaddress.IPv6Network(n) for n in ("::/128", "fe80::/10", "ff00::/8")]


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address.sixtofour


def is_public_address(address: IPAddress) -> bool:
    """True only for globally routable unicast addresses."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            return is_public_address(embedded)
        return not any(address in net for net in _NOT_PUBLIC_V6)
    return not any(address in net for net in _NOT_PUBLIC_V4)


def is_allowed_private_address(address: IPAddress) -> bool:
    """Development policy: loopback and private networks allowed; link-local, metadata,
    multicast and unspecified addresses still refused."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped
        if embedded is not None:
            return is_allowed_private_address(embedded)
        return not any(address in net for net in _NEVER_V6)
    return not any(address in net for net in _NEVER_V4)


def policy_for(allow_private: bool) -> AddressPolicy:
    return is_allowed_private_address if allow_private else is_public_address


def parse_ip(text: str) -> IPAddress | None:
    """The address if ``text`` is an IP literal (brackets and IPv6 zone ids allowed)."""
    text = text.strip("[]")
    if "%" in text:  # a zone id pins a link-local interface; never a public address
        text = text.split("%", 1)[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None
