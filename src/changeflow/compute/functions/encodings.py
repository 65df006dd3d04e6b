"""PostgreSQL's server encodings by name, for ``length(bytea, name)``: the characters that
bytes make in an encoding."""

from __future__ import annotations

import re

from changeflow.errors import EvalError

# encodings of several bytes a character, PostgreSQL's name -> Python's codec
_MULTIBYTE = {
    "UTF8": "utf-8",
    "EUC_JP": "euc_jp",
    "EUC_JIS_2004": "euc_jis_2004",
    "EUC_KR": "euc_kr",
    "EUC_CN": "gb2312",
    "SJIS": "shift_jis",
    "SHIFT_JIS_2004": "shift_jis_2004",
    "BIG5": "big5",
    "GBK": "gbk",
    "GB18030": "gb18030",
    "UHC": "cp949",
    "JOHAB": "johab",
}
# encodings of one byte a character
_SINGLE_BYTE = (
    "SQL_ASCII",
    *(f"LATIN{i}" for i in range(1, 11)),
    *(f"ISO_8859_{i}" for i in range(5, 9)),
    *(f"WIN{n}" for n in (866, 874, 1250, 1251, 1252, 1253, 1254, 1255, 1256, 1257, 1258)),
    "KOI8R",
    "KOI8U",
)
# other spellings PostgreSQL accepts (compared without case and punctuation)
_ALIASES = {
    "unicode": "UTF8",
    "eucjp": "EUC_JP",
    "euckr": "EUC_KR",
    "euccn": "EUC_CN",
    "shiftjis": "SJIS",
    "mskanji": "SJIS",
    "windows932": "SJIS",
    "windows936": "GBK",
    "windows949": "UHC",
    "windows950": "BIG5",
    "koi8": "KOI8R",
    **{f"iso8859{i}": f"LATIN{i}" for i in range(1, 5)},
    **{f"iso8859{i}": f"ISO_8859_{i}" for i in range(5, 9)},
    "iso88599": "LATIN5",
    "iso885910": "LATIN6",
    "iso885913": "LATIN7",
    "iso885914": "LATIN8",
    "iso885915": "LATIN9",
    "iso885916": "LATIN10",
    **{f"windows{n}": f"WIN{n}" for n in (866, 874, 1250, 1251, 1252, 1253, 1254, 1255)},
    **{f"windows{n}": f"WIN{n}" for n in (1256, 1257, 1258)},
}
_BY_CLEAN = {re.sub(r"[^a-z0-9]", "", n.lower()): n for n in (*_MULTIBYTE, *_SINGLE_BYTE)}


def encoding_named(name: str) -> str:
    """PostgreSQL's name of the encoding ``name`` spells; 22023 if there is none."""
    clean = re.sub(r"[^a-z0-9]", "", name.lower())
    found = _BY_CLEAN.get(clean) or _ALIASES.get(clean)
    if found is None:
        raise EvalError(f'invalid encoding name "{name}"', sqlstate="22023")
    return found


def length_in(data: bytes, name: str) -> int:
    """``length(bytea, name)``: the characters ``data`` holds in the encoding ``name``
    (22021 for bytes that are not a text of it)."""
    encoding = encoding_named(name)
    if encoding not in _MULTIBYTE:
        return len(data)
    try:
        if 0 in data:
            raise UnicodeDecodeError("", data, data.index(0), data.index(0) + 1, "nul")
        return len(data.decode(_MULTIBYTE[encoding]))
    except UnicodeDecodeError as e:
        bad = data[e.start : e.end].hex()
        raise EvalError(
            f'invalid byte sequence for encoding "{encoding}": 0x{bad}', sqlstate="22021"
        ) from None


def _codec(encoding: str) -> str:
    """Python's codec of one of PostgreSQL's encodings (by its own name)."""
    if encoding in _MULTIBYTE:
        return _MULTIBYTE[encoding]
    latin = {"1": "latin_1", "5": "iso8859_9", "6": "iso8859_10", "7": "iso8859_13"}
    latin |= {"8": "iso8859_14", "9": "iso8859_15", "10": "iso8859_16"}
    if encoding.startswith("LATIN"):
        number = encoding[5:]
        return latin.get(number, f"iso8859_{number}")
    if encoding.startswith("ISO_8859_"):
        return f"iso8859_{encoding[9:]}"
    if encoding.startswith("WIN"):
        return f"cp{encoding[3:]}"
    return {"KOI8R": "koi8_r", "KOI8U": "koi8_u"}.get(encoding, "utf-8")  # SQL_ASCII: as is


def _named(name: str, which: str) -> str:
    try:
        return encoding_named(name)
    except EvalError:
        raise EvalError(f'invalid {which} encoding name "{name}"', sqlstate="22023") from None


def convert_from(data: bytes, name: str) -> str:
    """``convert_from(bytea, name)``: the text ``data`` spells in the encoding ``name``."""
    encoding = _named(name, "source")
    try:
        if 0 in data:
            raise UnicodeDecodeError("", data, data.index(0), data.index(0) + 1, "nul")
        return data.decode(_codec(encoding))
    except UnicodeDecodeError as e:
        shown = "UTF8" if encoding == "SQL_ASCII" else encoding
        bad = data[e.start : e.end].hex()
        raise EvalError(
            f'invalid byte sequence for encoding "{shown}": 0x{bad}', sqlstate="22021"
        ) from None


def convert_to(text: str, name: str) -> bytes:
    """``convert_to(text, name)``: ``text`` as bytes of the encoding ``name``."""
    encoding = _named(name, "destination")
    try:
        return text.encode(_codec(encoding))
    except UnicodeEncodeError as e:
        sequence = " ".join(f"0x{b:02x}" for b in text[e.start].encode())
        raise EvalError(
            f'character with byte sequence {sequence} in encoding "UTF8" has no equivalent '
            f'in encoding "{encoding}"',
            sqlstate="22P05",
        ) from None
