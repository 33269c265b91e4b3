"""A small stand-in for pydantic v2, written for svc's tests (Debian 12 ships pydantic v1,
whose API the Strands SDK does not use): BaseModel, Field, create_model and the schema and
validation of flat models of plain types, which is what the SDK's @tool decorator needs."""
import json
import typing

from .fields import FieldInfo

_MISSING = ...


class ValidationError(ValueError):
    pass


class ConfigDict(dict):
    pass


class AnyUrl(str):
    pass


def Field(default=_MISSING, *, description=None, **kwargs):
    return FieldInfo(default=default, description=description)


_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean",
               list: "array", dict: "object"}


def _schema_of(tp):
    origin = typing.get_origin(tp)
    if tp is typing.Any:
        return {}
    if origin is typing.Union:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        inner = [_schema_of(a) for a in args]
        if len(args) < len(typing.get_args(tp)):
            inner.append({"type": "null"})
        return {"anyOf": inner}
    if origin in (list, tuple, set):
        args = typing.get_args(tp)
        out = {"type": "array"}
        if args:
            out["items"] = _schema_of(args[0])
        return out
    if origin is dict:
        return {"type": "object"}
    if tp in _JSON_TYPES:
        return {"type": _JSON_TYPES[tp]}
    return {}


def _check(name, tp, value):
    if tp is typing.Any or typing.get_origin(tp) is not None:
        return value
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if tp in _JSON_TYPES and not isinstance(value, tp):
        raise ValidationError(f"{name}: expected {_JSON_TYPES[tp]}, got {type(value).__name__}")
    return value


class BaseModel:
    __fields__: dict = {}

    def __init__(self, **data):
        for name, (tp, info) in self.__fields__.items():
            if name in data:
                value = _check(name, tp, data[name])
            elif info.default is not _MISSING:
                value = info.default
            else:
                raise ValidationError(f"{name}: field required")
            setattr(self, name, value)

    @classmethod
    def model_validate(cls, data):
        return cls(**data)

    @classmethod
    def model_json_schema(cls):
        props, required = {}, []
        for name, (tp, info) in cls.__fields__.items():
            p = {"title": name.title(), **_schema_of(tp)}
            if info.description:
                p["description"] = info.description
            if info.default is _MISSING:
                required.append(name)
            else:
                p["default"] = info.default
            props[name] = p
        out = {"properties": props, "title": cls.__name__, "type": "object"}
        if required:
            out["required"] = required
        return out

    def model_dump(self, **kwargs):
        return {name: getattr(self, name) for name in self.__fields__}

    def model_dump_json(self, **kwargs):
        return json.dumps(self.model_dump())


def create_model(name, **fields):
    defs = {}
    for fname, spec in fields.items():
        tp, info = spec if isinstance(spec, tuple) else (type(spec), FieldInfo(default=spec))
        if not isinstance(info, FieldInfo):
            info = FieldInfo(default=info)
        defs[fname] = (tp, info)
    return type(name, (BaseModel,), {"__fields__": defs})
