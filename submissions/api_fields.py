"""Input types of the HTTP API: what the edge lets through to the database.

PostgreSQL stores no NUL character in text (nor in JSON), and its varchar columns refuse what is too
long, so a NUL or an over-long title that reached a query answered 500. People's input is refused
here with a 422 naming the field; what agents report (machine output: logs, inventories) keeps
every other character, with each NUL replaced by U+FFFD so the report still lands and the reader
sees where it was.
"""
from typing import Annotated

from django.utils.translation import gettext as _
from pydantic import AfterValidator, Field
from pydantic_core import PydanticCustomError

NUL = "\x00"
NUL_STAND_IN = "\ufffd"
# Documents the rule in the OpenAPI document (the validator below enforces it with a clearer message).
NUL_FREE_PATTERN = r"^[^\x00]*$"


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


Text = Annotated[str, AfterValidator(refuse_nul), Field(json_schema_extra={"pattern": NUL_FREE_PATTERN})]


def column_length(model, field_name):
    """The max_length of a model's column: the API's limit is the database's."""
    return model._meta.get_field(field_name).max_length
