"""Row models to typed tables and back: one Arrow schema per row model, derived from its fields."""

from __future__ import annotations

import types
import typing
from collections.abc import Iterable
from functools import cache
from typing import TypeVar

import pyarrow as pa
from pydantic import BaseModel

Row = TypeVar("Row", bound=BaseModel)

_SCALARS: dict[type, pa.DataType] = {str: pa.string(), int: pa.int64(), float: pa.float64(), bool: pa.bool_()}


@cache
def arrow_schema(model: type[BaseModel]) -> pa.Schema:
    """The Arrow schema whose columns are the model's fields, in order."""
    return pa.schema([_field(name, info.annotation) for name, info in model.model_fields.items()])


def _field(name: str, annotation: object) -> pa.Field:
    nullable = False
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and type(None) in args:
        nullable = True
        (annotation,) = [a for a in args if a is not type(None)]
    return pa.field(name, _type(annotation), nullable=nullable)


def _type(annotation: object) -> pa.DataType:
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return pa.string()
    if origin in (list, tuple):
        return pa.list_(_type(typing.get_args(annotation)[0]))
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return pa.struct(list(arrow_schema(annotation)))
    if annotation in _SCALARS:
        return _SCALARS[annotation]  # type: ignore[index]
    raise TypeError(f"no Arrow type for {annotation!r}")


def to_table(rows: Iterable[BaseModel], model: type[BaseModel]) -> pa.Table:
    """Rows as an Arrow table typed by the model, empty tables included."""
    return pa.Table.from_pylist([r.model_dump() for r in rows], schema=arrow_schema(model))


def from_table(table: pa.Table, model: type[Row]) -> list[Row]:
    """A stored table back as rows, validated."""
    return [model.model_validate(r) for r in table.to_pylist()]
