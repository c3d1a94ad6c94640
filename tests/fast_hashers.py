"""The password hasher of the test runs: PBKDF2-SHA256 as in production, with 1,000 iterations instead of
Django's 1,000,000 (a quarter of a second a password on CI's cores; the site tests make thousands).

It keeps production's algorithm name, so a hash made in a test verifies in a site started as production
(the gunicorn and runserver processes of the end-to-end tests: PBKDF2 reads the iteration count from
the hash). Production's hashers are untouched: tests/conftest.py puts this one first under pytest only."""

from django.contrib.auth.hashers import PBKDF2PasswordHasher


class FastPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    iterations = 1_000
