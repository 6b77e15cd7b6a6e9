"""How the pages write numbers, for the claims modules (not a page's module: no page is named formats.md)."""

from __future__ import annotations


def sci(x: float) -> str:
    """5e-4 as the pages write it: the shortest mantissa, the exponent without zero padding (f"{x:.0e}" is 5e-04)."""
    mantissa, exponent = f"{x:e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"
