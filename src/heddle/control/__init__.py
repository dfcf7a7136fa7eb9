"""The control plane's one service layer, used by the `heddle` CLI and the console API alike.

Every function takes an `AsyncSession` (the caller owns the transaction), returns plain JSON
data, and raises `HeddleError` (`invalid_request` with `details` per field, or `not_found`),
so the CLI and /console/api give the same answers for the same input.
"""
