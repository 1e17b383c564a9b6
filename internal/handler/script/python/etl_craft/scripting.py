"""The contract of etl-craft ingestion scripts.

A script under ingestion_scripts/ defines ``run(task)`` (or ``run()``) and
returns a ``ScriptResult``. ``task`` is a ``ScriptTask``: the run's identities,
the task's parameters, the stored ``Offset`` (None the first time and in
backfills), ``warehouse()`` — a connection served by the engine itself — and
``load()``, which hands rows to the engine to write atomically.

Standard library only: the engine talks to this module over a pair of pipes
with one JSON message per line.
"""

import csv
import datetime
import decimal
import itertools
import json
import logging
import operator
import os
import re

__all__ = ["Offset", "ScriptResult", "ScriptTask", "EngineError"]

NUMBER = "NUMBER"
TEXT = "TEXT"
TIMESTAMP = "TIMESTAMP"
_DATATYPES = (NUMBER, TEXT, TIMESTAMP)


class EngineError(Exception):
    """A request the engine refused or that failed in the warehouse."""


class Offset:
    """A watermark kept between runs: a value and its datatype.

    Datatypes are NUMBER (int or decimal), TEXT (str) and TIMESTAMP
    (datetime, kept to the microsecond; nanoseconds are refused).
    """

    __slots__ = ("value", "datatype")

    def __init__(self, value, datatype):
        datatype = str(datatype).upper()
        if datatype not in _DATATYPES:
            raise ValueError("offset datatype %r is not NUMBER, TEXT or TIMESTAMP" % (datatype,))
        self.value = _offset_value(value, datatype)
        self.datatype = datatype

    @classmethod
    def number(cls, value):
        """A NUMBER offset (an int, a Decimal, or their text)."""
        return cls(value, NUMBER)

    @classmethod
    def text(cls, value):
        """A TEXT offset."""
        return cls(value, TEXT)

    @classmethod
    def timestamp(cls, value):
        """A TIMESTAMP offset (a datetime or its ISO 8601 text)."""
        return cls(value, TIMESTAMP)

    def __eq__(self, other):
        return isinstance(other, Offset) and (self.value, self.datatype) == (other.value, other.datatype)

    def __hash__(self):
        return hash((self.value, self.datatype))

    def __repr__(self):
        return "Offset(%r, %r)" % (self.value, self.datatype)

    def _stored(self):
        v = self.value
        if self.datatype == TIMESTAMP:
            v = v.isoformat()
        return {"value": str(v), "datatype": self.datatype}


_NANOS = re.compile(r"\.\d{7,}")


def _offset_value(value, datatype):
    if value is None:
        raise ValueError("an offset needs a value")
    if datatype == NUMBER:
        if isinstance(value, bool):
            raise ValueError("a NUMBER offset cannot be a bool")
        if isinstance(value, int):
            return value
        try:
            d = decimal.Decimal(str(value).strip())
        except decimal.InvalidOperation:
            raise ValueError("a NUMBER offset needs a number, not %r" % (value,)) from None
        if not d.is_finite():
            raise ValueError("a NUMBER offset must be finite, not %r" % (value,))
        return int(d) if d == d.to_integral_value() and "." not in str(value) and "e" not in str(value).lower() else d
    if datatype == TEXT:
        if not isinstance(value, str):
            raise ValueError("a TEXT offset needs a str, not %s" % type(value).__name__)
        return value
    if getattr(value, "nanosecond", 0):
        raise ValueError("a TIMESTAMP offset is kept to the microsecond: %r has nanoseconds" % (value,))
    if isinstance(value, str):
        if _NANOS.search(value):
            raise ValueError("a TIMESTAMP offset is kept to the microsecond: %r has more fraction digits" % (value,))
        try:
            return datetime.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValueError("a TIMESTAMP offset needs ISO 8601 text, not %r" % (value,)) from None
    if isinstance(value, datetime.datetime):
        if hasattr(value, "to_pydatetime"):
            value = value.to_pydatetime()
        return value
    if isinstance(value, datetime.date):
        return datetime.datetime(value.year, value.month, value.day)
    raise ValueError("a TIMESTAMP offset needs a datetime, not %s" % type(value).__name__)


class ScriptResult:
    """What run(task) returns: the rows it ingested, the new offset (None
    keeps the stored one) and values reported in the task log."""

    def __init__(self, row_count, offset=None, variables=None):
        if isinstance(row_count, bool) or not isinstance(row_count, int) or row_count < 0:
            raise ValueError("ScriptResult row_count must be an int >= 0, not %r" % (row_count,))
        if offset is not None and not isinstance(offset, Offset):
            raise ValueError("ScriptResult offset must be an Offset or None, not %s" % type(offset).__name__)
        self.row_count = row_count
        self.offset = offset
        self.variables = dict(variables or {})

    def __repr__(self):
        return "ScriptResult(%r, offset=%r, variables=%r)" % (self.row_count, self.offset, self.variables)


# -- values on the wire -------------------------------------------------------

def _default(v):
    """JSON for the values json does not know: tagged timestamps, dates and
    decimals; bytes as text; other objects as their str()."""
    if isinstance(v, datetime.datetime):
        if getattr(v, "nanosecond", 0):
            raise ValueError("%r has nanoseconds: the engine keeps microseconds" % (v,))
        return {"$t": "timestamp", "v": v.isoformat()}
    if isinstance(v, datetime.date):
        return {"$t": "date", "v": v.isoformat()}
    if isinstance(v, decimal.Decimal):
        return {"$t": "decimal", "v": str(v)}
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).decode("utf-8", "replace")
    if isinstance(v, (set, frozenset)):
        return list(v)
    return str(v)


def _decode(v):
    if isinstance(v, dict) and "$t" in v:
        t, s = v["$t"], v["v"]
        if t == "timestamp":
            return datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))
        if t == "date":
            return datetime.date.fromisoformat(s)
        if t == "decimal":
            return decimal.Decimal(s)
    return v


class _Channel:
    """The pipes to the engine: requests out, one answer in per request."""

    def __init__(self, out_fd, in_fd):
        self._out = os.fdopen(out_fd, "w", encoding="utf-8", buffering=1 << 16)
        self._in = os.fdopen(in_fd, "r", encoding="utf-8")

    def send(self, msg):
        self._out.write(json.dumps(msg, default=_default, separators=(",", ":")))
        self._out.write("\n")

    def send_rows(self, batch):
        """A batch of load rows: one line, R and the JSON array of rows."""
        self._out.write("R")
        self._out.write(json.dumps(batch, default=_default, separators=(",", ":"), ensure_ascii=False))
        self._out.write("\n")

    def send_copy(self, text):
        """A batch of load rows as COPY text: C, its length in bytes and a
        newline, then the text."""
        data = text.encode("utf-8")
        self._out.write("C%d\n" % len(data))
        self._out.flush()
        self._out.buffer.write(data)

    def call(self, msg):
        self.send(msg)
        return self.answer()

    def answer_quietly(self):
        try:
            self.answer()
        except EngineError:
            pass

    def answer(self):
        self._out.flush()
        line = self._in.readline()
        if not line:
            os._exit(70)  # the engine is gone: nothing can be recorded
        a = json.loads(line)
        if "error" in a:
            raise EngineError(a["error"])
        return a


# -- the warehouse connection --------------------------------------------------

class Row(tuple):
    """One result row: a tuple, with the columns also as attributes and in
    _mapping, as SQLAlchemy's rows have them."""

    __slots__ = ()
    _fields = ()

    @property
    def _mapping(self):
        return dict(zip(self._fields, self))

    def _asdict(self):
        return self._mapping

    def __getattr__(self, name):
        try:
            return self[self._fields.index(name)]
        except ValueError:
            raise AttributeError(name) from None


class Result:
    """The result of one statement: its rows and rowcount."""

    def __init__(self, columns, rows, rowcount):
        cls = type("Row", (Row,), {"__slots__": (), "_fields": tuple(columns)})
        self._columns = list(columns)
        self._rows = [cls(_decode(v) for v in r) for r in rows]
        self._pos = 0
        self.rowcount = rowcount

    def keys(self):
        return list(self._columns)

    def __iter__(self):
        while self._pos < len(self._rows):
            self._pos += 1
            yield self._rows[self._pos - 1]

    def fetchall(self):
        out = self._rows[self._pos:]
        self._pos = len(self._rows)
        return out

    def all(self):
        return self.fetchall()

    def fetchone(self):
        if self._pos >= len(self._rows):
            return None
        self._pos += 1
        return self._rows[self._pos - 1]

    def fetchmany(self, size=1):
        out = self._rows[self._pos:self._pos + size]
        self._pos += len(out)
        return out

    def first(self):
        r = self.fetchone()
        self._pos = len(self._rows)
        return r

    def one(self):
        if len(self._rows) != 1:
            raise EngineError("expected exactly one row, got %d" % len(self._rows))
        return self.first()

    def scalar(self):
        r = self.first()
        return None if r is None else r[0]

    def scalar_one(self):
        return self.one()[0]

    def scalars(self):
        return [r[0] for r in self.fetchall()]

    def mappings(self):
        return [r._mapping for r in self.fetchall()]


def _statement(stmt):
    """The SQL of a plain string or of a SQLAlchemy text() clause."""
    if isinstance(stmt, str):
        return stmt
    text = getattr(stmt, "text", None)
    if isinstance(text, str):
        return text
    raise TypeError("execute() takes SQL text or sqlalchemy.text(...), not %s" % type(stmt).__name__)


class Connection:
    """A warehouse connection served by the engine: each statement runs on the
    engine's own warehouse connection, in the transaction begin() opened."""

    def __init__(self, channel):
        self._ch = channel
        self._tx = None
        self.closed = False

    def _begin(self):
        if self._tx is None:
            self._tx = self._ch.call({"op": "begin"})["tx"]

    def execute(self, statement, parameters=None, **kw):
        if self.closed:
            raise EngineError("the connection is closed")
        if parameters is None and kw:
            parameters = kw
        self._begin()
        sql = _statement(statement)
        many = isinstance(parameters, (list, tuple))
        a = self._ch.call({"op": "execute", "tx": self._tx, "sql": sql,
                           "params": list(parameters) if many else dict(parameters or {}),
                           "many": many})
        return Result(a.get("columns") or [], a.get("rows") or [], a.get("rowcount", -1))

    def exec_driver_sql(self, statement, parameters=None):
        return self.execute(statement, parameters)

    def begin(self):
        self._begin()
        return _Transaction(self)

    def commit(self):
        if self._tx is not None:
            tx, self._tx = self._tx, None
            self._ch.call({"op": "commit", "tx": tx})

    def rollback(self):
        if self._tx is not None:
            tx, self._tx = self._tx, None
            self._ch.call({"op": "rollback", "tx": tx})

    def close(self):
        if not self.closed:
            self.rollback()
            self.closed = True

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()
        return False


class _Transaction:
    def __init__(self, conn):
        self._conn = conn

    def commit(self):
        self._conn.commit()

    def rollback(self):
        self._conn.rollback()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self._conn.commit()
        else:
            self._conn.rollback()
        return False


class _Begun:
    """engine.begin(): a connection whose transaction commits when the block
    ends without an exception and rolls back otherwise."""

    def __init__(self, channel):
        self._conn = Connection(channel)

    def __enter__(self):
        self._conn._begin()
        return self._conn

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self._conn.commit()
        self._conn.close()
        return False


class Engine:
    """What task.warehouse() returns: an engine-like object (begin, connect,
    dispose) whose connections the etl-craft engine serves."""

    def __init__(self, channel):
        self._ch = channel

    def begin(self):
        return _Begun(self._ch)

    def connect(self):
        return Connection(self._ch)

    def dispose(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.dispose()
        return False


# -- the task -----------------------------------------------------------------

_LOAD_BATCH = 5000


class ScriptTask:
    """One attempt of a PYTHON task, as the script sees it."""

    def __init__(self, channel, ctx):
        self._ch = channel
        self.pipeline_id = ctx["pipeline_id"]
        self.pipeline_run_id = ctx["pipeline_run_id"]
        self.task_run_id = ctx["task_run_id"]
        self.attempt_number = ctx["attempt_number"]
        self.pipeline_code = ctx["pipeline_code"]
        self.task_code = ctx["task_code"]
        self.refresh_type = ctx["refresh_type"]
        self.force = ctx["force"]
        self.backfill = ctx["backfill"]
        self.run_date = datetime.date.fromisoformat(ctx["run_date"]) if ctx.get("run_date") else None
        self.input_params = ctx.get("input_params") or {}
        self.task_params = dict(ctx.get("task_params") or {})
        self.config = ctx.get("config") or {}
        off = ctx.get("offset")
        self.offset = Offset(off["value"], off["datatype"]) if off else None
        self.logger = logging.getLogger("etl_craft.script." + self.task_code)

    def table(self, name):
        """The fully qualified name of a warehouse table (schema.name, or name
        in the warehouse profile's schema)."""
        return self._ch.call({"op": "table", "name": str(name)})["table"]

    def warehouse(self):
        """The warehouse, as an engine-like object: begin() gives a connection
        whose statements the etl-craft engine runs."""
        return Engine(self._ch)

    def load(self, table, rows, mode="append"):
        """Hands rows to the engine, which writes them into a staging table
        and publishes them with the attempt's success (mode "append" adds
        them, "replace" swaps the table). rows is an iterable of dicts or
        tuples (tuples in the table's column order), or the path of a CSV
        file with a header or of a JSON-lines file. Returns the number of
        rows the engine staged."""
        if mode not in ("append", "replace"):
            raise ValueError('load mode must be "append" or "replace", not %r' % (mode,))
        columns, batches = _rows(rows)
        batches = iter(batches)
        first = next(batches, [])
        ch = self._ch
        ch.send({"op": "load", "table": str(table), "mode": mode, "columns": columns})
        ch.send_rows(first)
        types = ch.answer()["types"]  # the staged columns' types
        try:
            for batch in batches:
                ch.send_copy(_copy_text(batch, types))
        except BaseException as e:
            ch.send({"op": "abort", "error": "%s: %s" % (type(e).__name__, e)})
            ch.answer_quietly()
            raise
        ch.send({"op": "end"})
        return ch.answer()["rows"]


# -- rows as COPY text ----------------------------------------------------------
#
# The batches after the first are written in PostgreSQL's COPY text format:
# the engine forwards them to a PostgreSQL server as they are, where the
# server reads each field as its column's type, and decodes them itself for
# any other warehouse (copyRows in the engine), reading each field as the
# server would. Each value is written so that it reads as the engine reads
# the same value sent as JSON (see loadValue in the engine): timestamps
# without a zone are UTC, booleans true/false, lists and dicts as JSON text.

_COPY_SPECIAL = re.compile(r"[\\\t\n\r]")
_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def _copy_text(batch, types):
    """The COPY text of a batch of rows for columns of the given types."""
    width = len(types)
    if set(map(len, batch)) != {width}:
        bad = next(r for r in batch if len(r) != width)
        raise ValueError("a row of the load has %d values for its %d columns" % (len(bad), width))
    if set(map(type, itertools.chain.from_iterable(batch))) <= {int, str}:
        # integers and text: each row's fields are their str() as they are,
        # when no text holds a character to escape (the text then has one
        # tab between fields, one newline after each row, no backslash and
        # no carriage return)
        rows = batch if set(map(type, batch)) == {tuple} else map(tuple, batch)
        text = "\n".join(map("\t".join(["%s"] * width).__mod__, rows)) + "\n"
        if (text.count("\t") == len(batch) * (width - 1) and text.count("\n") == len(batch)
                and "\\" not in text and "\r" not in text):
            return text
    cols = list(zip(*batch))
    fields = [_copy_column(col, t) for col, t in zip(cols, types)]
    return "\n".join(map("\t".join, zip(*fields))) + "\n"


def _copy_plain(col):
    """Whether a column's COPY text fields are its values' str()."""
    kinds = set(map(type, col))
    return kinds == {int} or (kinds == {str} and _COPY_SPECIAL.search("".join(col)) is None)


def _copy_column(col, t):
    """The COPY text fields of one column of a batch."""
    if _copy_plain(col):
        return list(map(str, col))
    if set(map(type, col)) == {str}:
        return [v.translate(_COPY_ESCAPES) for v in col]
    return [_copy_value(v, t) for v in col]


def _copy_value(v, t):
    """The COPY text field of one value for a column of type t."""
    if v is None:
        return "\\N"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, datetime.datetime):
        if getattr(v, "nanosecond", 0):
            raise ValueError("%r has nanoseconds: the engine keeps microseconds" % (v,))
        if t == "date":
            return v.date().isoformat()
        if v.tzinfo is None:
            v = v.replace(tzinfo=datetime.timezone.utc)
        if t != "string":
            return v.isoformat()
        # as the engine writes a time as text: RFC 3339 in UTC
        u = v.astimezone(datetime.timezone.utc)
        frac = (".%06d" % u.microsecond).rstrip("0") if u.microsecond else ""
        return u.strftime("%Y-%m-%dT%H:%M:%S") + frac + "Z"
    if isinstance(v, datetime.date):
        if t == "string":
            return _copy_value(datetime.datetime(v.year, v.month, v.day), t)
        return v.isoformat()
    if isinstance(v, (bytes, bytearray, memoryview)):
        s = bytes(v).decode("utf-8", "replace")
    elif isinstance(v, str):
        s = v
    elif isinstance(v, (dict, list, tuple, set, frozenset)):
        s = json.dumps(v, default=_default, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    else:
        s = str(v)
    return s.translate(_COPY_ESCAPES)


def _rows(rows):
    """(columns or None, batches of rows as lists) of what load() was given:
    dict rows name their columns by the first row's keys; tuples leave the
    columns to the table's."""
    if isinstance(rows, (str, os.PathLike)):
        path = os.fspath(rows)
        if path.lower().endswith((".jsonl", ".ndjson", ".json")):
            return _rows(json.loads(line) for line in _lines(path))
        return _csv_rows(path)
    it = iter(rows)
    first = next(it, None)
    if first is None:
        return None, iter(())
    if isinstance(first, dict):
        cols = list(first.keys())
        pick = operator.itemgetter(*cols) if len(cols) > 1 else (lambda r, c=cols[0]: (r.get(c),))
        get = (lambda r: tuple(r.get(c) for c in cols))

        def conv(r):
            try:
                return pick(r)
            except KeyError:
                return get(r)

        return cols, _batches(map(conv, itertools.chain([first], it)))
    # json writes tuples and lists as arrays as they are.
    return None, _batches(itertools.chain([first], it))


def _batches(rows):
    while True:
        batch = list(itertools.islice(rows, _LOAD_BATCH))
        if not batch:
            return
        yield batch


def _lines(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield line


def _csv_rows(path):
    f = open(path, newline="", encoding="utf-8")
    reader = csv.reader(f)
    header = next(reader, None)
    if header is None:
        f.close()
        return None, iter(())

    def gen():
        with f:
            batch = []
            for r in reader:
                batch.append([None if v == "" else v for v in r])
                if len(batch) >= _LOAD_BATCH:
                    yield batch
                    batch = []
            if batch:
                yield batch

    return header, gen()
