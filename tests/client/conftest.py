"""The terminal client's tests. Its unit tests build nothing: the precompiled header that every other
test outside the site's folders waits for is not made for them (tests/conftest.py)."""
import pytest


@pytest.fixture(autouse=True)
def header_before_any_build():
    """Nothing here builds a bundle; the end-to-end tests (tests/e2e/test_client_end_to_end.py) do."""
