"""The CSV file a command reads: its columns, missing values, line numbers and user ids."""

import csv
import re
from dataclasses import dataclass

from ._common import CommandError

_SEPARATORS = {"tab": "\t", "\\t": "\t", "comma": ",", "semicolon": ";", "pipe": "|"}


@dataclass(frozen=True)
class _Table:
    """A CSV file read for ``skhybrid estimate``: its columns and each row's line number."""

    path: str
    header: list
    rows: list  # one list of fields per data row
    lines: list  # the file line on which each data row starts (the header is line 1)
    decimal: str = "."  # the decimal mark of the numbers (--decimal)

    def column(self, name, option):
        if name not in self.header:
            raise CommandError(
                f"{option}: no column {name!r} in {self.path}; its columns are: "
                f"{', '.join(self.header)}"
            )
        index = self.header.index(name)
        return [row[index] for row in self.rows]

    def where(self, row):
        return f"{self.path}, line {self.lines[row]}"

    def complete_rows(self, columns):
        """This table without the rows that miss a value in one of ``columns``.

        Returns the table and the line numbers of the rows left out.
        """
        indices = [self.header.index(name) for name in columns if name in self.header]
        keep = [not any(_is_missing(row[index]) for index in indices) for row in self.rows]
        dropped = [line for line, kept in zip(self.lines, keep) if not kept]
        return _Table(
            self.path, self.header, [row for row, kept in zip(self.rows, keep) if kept],
            [line for line, kept in zip(self.lines, keep) if kept], self.decimal,
        ), dropped


# What spreadsheets and pandas write for a missing value (pandas' default NA strings).
_MISSING = {"", "na", "n/a", "nan", "-nan", "null", "none", "#n/a", "<na>"}


def _is_missing(text):
    return (text or "").strip().lower() in _MISSING


def _read_csv(path, sep=None, decimal="."):
    """A CSV file as spreadsheets and pandas write them, with readable errors.

    UTF-8 with or without a byte-order mark (as Excel writes it); the delimiter is
    ``sep``, or sniffed among ``, ; tab |`` from the start of the file (not ``,`` when
    it is the ``decimal`` mark, as in European CSVs: ``62,51;tcm``); quoted fields may
    hold delimiters and line breaks. Python's csv module does the parsing.
    """
    delimiter = _SEPARATORS.get(sep, sep)
    if delimiter is not None and delimiter == decimal:
        raise CommandError(
            f"--sep {sep!r} and --decimal {decimal!r} are the same character; a European "
            "CSV is --sep ';' --decimal ','"
        )
    candidates = ",;\t|".replace(decimal, "")
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            if delimiter is None:
                sample = handle.read(64 * 1024)
                handle.seek(0)
                try:
                    delimiter = csv.Sniffer().sniff(sample, delimiters=candidates).delimiter
                except csv.Error:  # one column, or nothing to tell the delimiter by
                    delimiter = candidates[0]
            reader = csv.reader(handle, delimiter=delimiter)
            header = next(reader, None)
            rows, lines, start = [], [], reader.line_num + 1
            for row in reader:
                if row:  # blank lines are skipped, as pandas does
                    rows.append(row)
                    lines.append(start)
                start = reader.line_num + 1
    except FileNotFoundError:
        raise CommandError(f"no such file: {path}") from None
    except UnicodeDecodeError as error:
        raise CommandError(
            f"cannot read {path}: it is not UTF-8 text ({error.reason} at byte "
            f"{error.start}); save it as UTF-8 (CSV UTF-8 in Excel)"
        ) from None
    except (OSError, csv.Error) as error:
        raise CommandError(f"cannot read {path}: {error}") from None
    if not header:
        raise CommandError(f"{path} is empty: expected a header row with column names")
    header = [name.strip() for name in header]
    if not rows:
        raise CommandError(f"{path} has a header but no data rows")
    for row, line in zip(rows, lines):
        if len(row) != len(header):
            raise CommandError(
                f"{path}, line {line}: {len(row)} fields where the header has "
                f"{len(header)} (delimiter {delimiter!r}; use --sep to set it)"
            )
    return _Table(str(path), header, rows, lines, decimal)


def _line_list(lines, shown=10):
    """``2, 5, 9`` or ``2, 5, ... (12 in all)``: line numbers for a message."""
    text = ", ".join(str(line) for line in lines[:shown])
    return text if len(lines) <= shown else f"{text}, ... ({len(lines):,} in all)"


def _user_ids(values):
    """Ids read from text: integers when every id is one (as pandas would read them)."""
    values = [value.strip() for value in values]
    if all(re.fullmatch(r"[+-]?\d+", value) for value in values):
        return [int(value) for value in values]
    return values
