"""Bytes to text: PEP 263 coding cookies, BOMs, binary and undecodable files."""

from __future__ import annotations

import codecs
import io
import re
import tokenize
from dataclasses import dataclass


class UndecodableSource(Exception):
    """The bytes are not Python source text; the message says why, for a TL000 diagnostic."""

    def __init__(self, message: str, line: int = 1, column: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


@dataclass(frozen=True)
class SourceText:
    text: str
    # The codec the file declared (or utf-8); fixes write the file back with it.
    encoding: str
    bom: bool


def decode(data: bytes) -> SourceText:
    if b"\x00" in data:
        for name, bom in _WIDE_BOMS:
            if data.startswith(bom):
                # Python reads no source in these: `python file.py` fails on the first byte
                raise UndecodableSource(f"{name} text (it starts with a {name} byte order mark): save it as UTF-8")
        raise UndecodableSource("binary file (contains NUL bytes), not Python source")
    bom = data.startswith(codecs.BOM_UTF8)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        if error.msg != "invalid or missing encoding declaration":
            reason = _BOM_CONFLICT if error.msg.startswith("encoding problem") else error.msg
            raise UndecodableSource(f"invalid encoding declaration: {reason}", _cookie_line(data)) from None
        encoding = "utf-8"  # the first lines are not UTF-8: the decoding below says which byte
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        raise UndecodableSource(
            f"cannot decode as {encoding}: byte 0x{data[error.start]:02x} at offset {error.start}",
            line,
            column,
        ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return SourceText(text=text, encoding="utf-8" if encoding == "utf-8-sig" else encoding, bom=bom)


# Text in these has NUL bytes throughout. UTF-32's little-endian mark starts with UTF-16's: it is
# tried first.
_WIDE_BOMS = (
    ("UTF-32", codecs.BOM_UTF32_LE),
    ("UTF-32", codecs.BOM_UTF32_BE),
    ("UTF-16", codecs.BOM_UTF16_LE),
    ("UTF-16", codecs.BOM_UTF16_BE),
)
_BOM_CONFLICT = "a UTF-8 byte order mark and a coding cookie for another encoding"
_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=]")


def _cookie_line(data: bytes) -> int:
    """The line (1 or 2, PEP 263) of the coding cookie."""
    first = data.removeprefix(codecs.BOM_UTF8).split(b"\n", 1)[0]
    return 1 if _COOKIE.match(first) else 2


def encode(source: SourceText, text: str) -> bytes:
    """Encode ``text`` the way ``source`` was stored (same codec, same BOM)."""
    data = text.encode(source.encoding)
    return codecs.BOM_UTF8 + data if source.bom else data
