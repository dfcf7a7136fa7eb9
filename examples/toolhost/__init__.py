"""An example tool host for Heddle: two payment tools and a relay mint endpoint.

Run it with ``python -m examples.toolhost serve`` (see README.md).
"""
