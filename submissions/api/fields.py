"""Input types of the HTTP API: what the edge lets through to the database.

PostgreSQL stores no NUL character in text (nor in JSON), and its varchar columns refuse what is too
long, so a NUL or an over-long title that reached a query answered 500. People's input is refused
here with a 422 naming the field; what agents report (machine output: logs, inventories) keeps
every other character, with each NUL replaced by U+FFFD so the report still lands and the reader
sees where it was.
"""
import re
from typing import Annotated

from django.utils.translation import gettext as _, gettext_lazy
from ninja import Query, Schema
from ninja.errors import HttpError
from pydantic import AfterValidator, model_validator
from pydantic_core import PydanticCustomError

NUL = "\x00"
NUL_STAND_IN = "\ufffd"
# Documents the rule in the OpenAPI document (the validator below enforces it with a clearer message).
NUL_FREE_PATTERN = r"^[^\x00]*$"
# Something besides white space, and no NUL.
NOT_BLANK = r"^[^\x00]*[^\x00\s][^\x00]*$"


def refuse_nul(value: str) -> str:
    if NUL in value:
        raise PydanticCustomError("nul_character", _("must not contain the NUL character (\\x00)"))
    return value


def replace_nul(value):
    """The value with NUL replaced in every string and key, however deep."""
    if isinstance(value, str):
        return value.replace(NUL, NUL_STAND_IN)
    if isinstance(value, dict):
        return {replace_nul(k): replace_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [replace_nul(v) for v in value]
    return value


class _DocumentedNulFree:
    """Lists NUL_FREE_PATTERN in the JSON schema, unless the field has a pattern of its own (a checksum's, a
    device kind's): that one is enforced and admits no NUL either, and must not be hidden."""

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema, handler):
        schema = handler(core_schema)
        schema.setdefault("pattern", NUL_FREE_PATTERN)
        return schema


Text = Annotated[str, AfterValidator(refuse_nul), _DocumentedNulFree]


class Documents:
    """Lists JSON Schema keywords for a rule that a validator next to it enforces with a clearer message
    than pydantic's own ("String should match pattern ...")."""

    def __init__(self, **keywords):
        self.keywords = keywords

    def __get_pydantic_json_schema__(self, core_schema, handler):
        schema = handler(core_schema)
        schema.update(self.keywords)
        return schema


def refuse_blank(value: str) -> str:
    if not re.search(NOT_BLANK, value):
        raise PydanticCustomError("blank", _("must not be blank"))
    return value


NonBlankText = Annotated[Text, AfterValidator(refuse_blank), Documents(pattern=NOT_BLANK)]

JSON_TYPE_NAMES = {list: gettext_lazy("an array"), str: gettext_lazy("a string"), bool: gettext_lazy("a boolean"),
                   int: gettext_lazy("a number"), float: gettext_lazy("a number"), type(None): gettext_lazy("null")}


def refuse_null_body(request, payload):
    """For an operation whose body is optional (`payload: Optional[...] = None`): no body at all asks
    for nothing, but a body of JSON `null` is no object, and is a 422 as for any other schema."""
    if payload is None and request.body:
        kind = _("Input should be a JSON object, not {kind}").format(kind=JSON_TYPE_NAMES[type(None)])
        raise HttpError(422, _("invalid request: %(problems)s") % {"problems": kind})


class JsonObjectIn(Schema):
    """A request body (or a part of one) that must be a JSON object. Ninja's Schema reads its input through
    attribute lookups, so an array, a string, a number or null passed as every field missing: a schema whose
    fields all have defaults (a heartbeat) took `[null, null]` as an empty report."""

    @model_validator(mode="wrap")  # "wrap", outside ninja's own: it sees the parsed JSON itself
    @classmethod
    def _json_object_only(cls, data, handler):
        if not isinstance(data, (dict, cls)):
            raise PydanticCustomError("json_object_type", _("Input should be a JSON object, not {kind}"),
                                      {"kind": str(JSON_TYPE_NAMES.get(type(data), type(data).__name__))})
        return handler(data)


def column_length(model, field_name):
    """The max_length of a model's column: the API's limit is the database's."""
    return model._meta.get_field(field_name).max_length


# A list's page. Beyond any list, and offset + limit stays far inside a 64-bit integer on every database.
MAX_OFFSET = 2**31 - 1
OFFSET = Query(0, ge=0, le=MAX_OFFSET, description="Rows to skip")
LIMIT = Query(50, ge=1, le=500, description="Rows to return")
