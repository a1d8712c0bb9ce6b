"""The project's pydantic base: each field is described by the string under it.

The OpenAPI schema, `docs/SETTINGS.md` and readers of the code all take a field's description
from the docstring that follows it (pydantic's attribute docstrings), so it sits by the field
without a `Field(description=...)` around every type. Pydantic reads those strings from the
source at import, which the wheel and the image ship (`tests/web/test_openapi_docs.py` fails on
a field left undescribed).
"""

from pydantic import BaseModel, ConfigDict


class Described(BaseModel):
    """A pydantic model whose fields' docstrings are their descriptions."""

    model_config = ConfigDict(use_attribute_docstrings=True)
