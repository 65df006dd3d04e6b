"""``to_char`` of a number by a template, as PostgreSQL's: ``9`` and ``0`` digits, ``.``/``D``,
``,``/``G``, the ``FM`` prefix, the signs ``S`` (before or after the digits), ``MI``, ``PL``
and ``SG``, ``L`` (the C locale's empty currency symbol, a blank), ``TH``/``th`` (an ordinal
suffix), ``RN``/``rn`` (Roman numerals), ``V`` (times ten to the digits after it), ``PR`` (a
negative in angle brackets), ``EEEE`` (scientific notation) and
quoted or other characters as they are; ``#`` in each digit place when the digits do not fit."""

from __future__ import annotations

import re
from decimal import Context, Decimal

from changeflow.errors import EvalError

_TOKEN = re.compile(r'(?i:eeee|fm|mi|pl|pr|sg|rn|th)|"[^"]*"|[90.DdGgSsLlVv,]|.', re.S)
_WORDS = ("EEEE", "FM", "MI", "PL", "PR", "SG", "RN", "TH")
_ROMAN = (
    (1000, "M"),
    (900, "CM"),
    (500, "D"),
    (400, "CD"),
    (100, "C"),
    (90, "XC"),
    (50, "L"),
    (40, "XL"),
    (10, "X"),
    (9, "IX"),
    (5, "V"),
    (4, "IV"),
    (1, "I"),
)


def roman(n: int) -> str:
    """``n`` (1 to 3999) in Roman numerals."""
    out = []
    for value, letters in _ROMAN:
        count, n = divmod(n, value)
        out.append(letters * count)
    return "".join(out)


def _ordinal(digits: str, upper: bool) -> str:
    last = int(digits[-2:] or "0")
    suffix = "th" if 11 <= last % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(last % 10, "th")
    return suffix.upper() if upper else suffix


DOUBLE_DIGITS = 15  # the significant digits a double's to_char shows at most
FLOAT_DIGITS = 6  # and a real's


def number_text(value: object, template: str, half: str, digits: int = DOUBLE_DIGITS) -> str:
    """``value`` as PostgreSQL's ``to_char(number, template)`` shows it (``half``: the
    rounding of the value's type; ``digits``: a float's significant digits at most)."""
    tokens = _TOKEN.findall(template)
    kinds = [t.upper() if t.upper() in _WORDS else t for t in tokens]
    fill = "FM" in kinds
    amount = Decimal(str(value))
    if "RN" in kinds:
        whole = int(amount.quantize(Decimal(1), rounding=half))
        if not -(2**31) <= whole < 2**31:
            raise EvalError("integer out of range", sqlstate="22003")
        text = roman(whole) if 1 <= whole <= 3999 else "#" * 15
        text = text if "rn" not in tokens else text.lower()
        return text if fill else text.rjust(15)
    if "EEEE" in kinds:
        return _scientific(amount, kinds, half, value if isinstance(value, float) else None)
    decimal = next((i for i, k in enumerate(kinds) if k in (".", "D", "d")), len(kinds))
    digit_at = [i for i, k in enumerate(kinds) if k in ("9", "0")]
    pre = sum(1 for i in digit_at if i < decimal)
    post = len(digit_at) - pre
    if "PR" in kinds and any(k in ("S", "s", "PL", "MI", "SG") for k in kinds):
        raise EvalError('cannot use "PR" and "S"/"PL"/"MI"/"SG" together', sqlstate="42601")
    if decimal < len(kinds) and any(k in ("V", "v") for k in kinds):
        raise EvalError('cannot use "V" and decimal point together', sqlstate="42601")
    shift = sum(1 for i in digit_at if any(kinds[v] in ("V", "v") for v in range(i)))
    if amount.is_nan() and pre >= 3:  # NaN in the digits' places if they hold it, else #s
        return "NaN" if fill else "NaN".rjust(pre + 1)
    if not amount.is_finite():  # shown as a number too wide for the digits
        amount = Decimal(10 ** (pre + 1)).copy_sign(Decimal(-1 if amount.is_signed() else 1))
    amount = amount.scaleb(shift)
    kept = post  # the fraction's places shown
    if isinstance(value, float) and amount.is_finite():  # a float's digits at most
        whole = len(f"{abs(float(amount)):.0f}")
        kept = 0 if whole >= digits else min(post, digits - whole)
        amount = Decimal(f"{float(amount):.{kept}f}")  # its binary value, rounded
    wide = Context(prec=max(amount.adjusted(), 0) + max(post, 0) + 2)
    amount = amount.quantize(Decimal(1).scaleb(-max(post, 0)), rounding=half, context=wide)
    negative = amount < 0 or (isinstance(value, float) and amount.is_signed())  # float's -0
    whole_digits, _, fraction = f"{abs(amount):f}".partition(".")
    fraction = fraction.ljust(post, "0")
    zero_start = next(
        (n for n, i in enumerate(i for i in digit_at if i < decimal) if kinds[i] == "0"), pre
    )
    if whole_digits == "0" and (post or zero_start == pre):
        whole_digits = "" if post else "0"
    overflow = len(whole_digits) > pre or pre == 0
    first = pre - len(whole_digits)
    s_at = next((i for i, k in enumerate(kinds) if k in ("S", "s")), None)
    s_before = s_at is not None and any(i > s_at for i in digit_at if i < decimal)
    sign = "-" if negative else "+"
    if "PR" in kinds:
        anchor = "<" if negative else ("" if fill else " ")
    elif s_before:
        anchor = sign
    elif s_at is None and "MI" not in kinds and "SG" not in kinds:
        anchor = "-" if negative else ("" if fill else " ")
    else:
        anchor = ""
    out: list[str] = []
    pending, shown, places = True, False, 0
    fraction_nines: list[int] = []
    for i, (token, kind) in enumerate(zip(tokens, kinds, strict=True)):
        if kind in ("9", "0") and i < decimal:
            n, places = places, places + 1
            if overflow:
                ch = "#"
            elif n >= first:
                ch = whole_digits[n - first]
            elif n >= zero_start:
                ch = "0"
            else:
                out.append("" if fill else " ")
                continue
            if pending:
                out.append(anchor)
                pending = False
            out.append(ch)
            shown = True
        elif kind in ("9", "0"):
            n, places = places - pre, places + 1
            if n >= kept:  # a place past a double's digits is left out
                continue
            fraction_nines = [*fraction_nines, len(out)] if kind == "9" else []
            out.append("#" if overflow else fraction[n] if n < len(fraction) else "0")
        elif kind in (".", "D", "d"):
            if i != decimal:
                out.append(token)
                continue
            if pending:
                out.append(anchor)
                pending = False
            out.append("." if kept or overflow else "")
            point = len(out) - 1
            if not (kept or overflow):  # no place after the point: it and what follows left out
                break
        elif kind in (",", "G", "g"):
            out.append("," if shown else ("" if fill else " "))
        elif kind in ("S", "s"):
            out.append("" if s_before else sign)
        elif kind == "MI":
            out.append("-" if negative else ("" if fill else " "))
        elif kind == "PL":
            out.append(("" if fill else " ") if negative else "+")
        elif kind == "PR":
            out.append(">" if negative else ("" if fill else " "))
        elif kind == "SG":
            out.append(sign)
        elif kind in ("L", "l"):
            out.append(" ")
        elif kind == "TH":
            if not (negative or overflow or decimal < len(kinds)):
                out.append(_ordinal(whole_digits, token.isupper()))
        elif kind in ("V", "v", "FM"):
            continue
        else:
            out.append(token[1:-1] if token.startswith('"') else token)
    if pending:
        out.insert(0, anchor)
        fraction_nines = [n + 1 for n in fraction_nines]
    if fill and not overflow:
        for n in reversed(fraction_nines):  # FM drops the fraction's trailing zeros of 9s
            if out[n] != "0":
                break
            out[n] = ""
        if not any(ch.isdigit() for ch in "".join(out)) and decimal < len(kinds):
            out[point] = "0."
    return "".join(out)


def _scientific(amount: Decimal, kinds: list[str], half: str, double: float | None) -> str:
    """``9.99EEEE``: a sign place, one digit, the fraction's digits and ``e±NN``; only digits
    and a decimal point may stand beside EEEE (42601 otherwise, as PostgreSQL's). A numeric's
    exponent is its value's before rounding (9.995 is ``10.00e+00``, as PostgreSQL shows it);
    a double's, the rounded value's."""
    if any(k not in ("9", "0", ".", "D", "d", "EEEE") for k in kinds):
        raise EvalError('"EEEE" is incompatible with other formats', sqlstate="42601")
    point = next((i for i, k in enumerate(kinds) if k in (".", "D", "d")), len(kinds))
    places = sum(1 for k in kinds[point:] if k in ("9", "0"))
    if double is not None:  # as C's printf rounds the binary value
        mantissa, _, exponent = f"{abs(double):.{places}e}".partition("e")
        power = int(exponent)
    else:
        power = abs(amount).adjusted() if amount else 0
        scaled = abs(amount).scaleb(-power).quantize(Decimal(1).scaleb(-places), rounding=half)
        mantissa = f"{scaled:f}"
    shown = f"{mantissa}e{'-' if power < 0 else '+'}{abs(power):02d}"
    return ("-" if amount < 0 else " ") + shown
