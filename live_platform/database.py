"""The platform's database: a fresh PostgreSQL one of the run's own, or a SQLite file."""


def is_postgres(url):
    return url.startswith(("postgres://", "postgresql://"))


class Database:
    """The platform's database. A PostgreSQL one is made fresh (dropped first if it is there) and, with
    `drop_at_end`, dropped by `close`; a SQLite one is the file its URL names."""

    def __init__(self, url, drop_at_end=False):
        self.url, self.drop_at_end = url, drop_at_end
        self.is_postgres = is_postgres(url)
        self.server, self.name = url.split("?")[0].rsplit("/", 1)

    def _admin(self, sql):
        import psycopg

        # through the server's maintenance database: a database cannot drop itself
        with psycopg.connect(self.server.replace("postgres://", "postgresql://", 1) + "/postgres",
                             autocommit=True) as admin:
            admin.execute(sql)

    def make_fresh(self):
        if self.is_postgres:
            self._admin(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
            self._admin(f'CREATE DATABASE "{self.name}"')

    def close(self):
        if self.is_postgres and self.drop_at_end:
            from django.conf import settings
            from django.db import connections

            if settings.configured:
                connections.close_all()
            self._admin(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
