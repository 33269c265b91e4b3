"""Stand-in for pydantic_core, written for svc's tests (see ../pydantic)."""


class PydanticSerializationError(ValueError):
    pass
