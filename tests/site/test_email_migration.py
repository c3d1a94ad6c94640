"""Migration 0015 on a database whose accounts already share an address: it stops, naming them, and
changes nothing; once an organizer has settled them it adds the index."""
import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("submissions", "0014_benchmark_runs")]
AFTER = [("submissions", "0015_one_account_per_email")]


def migrate(target):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target)


def migrate_to_latest():
    """Back to every app's newest migration: the next tests on this database expect the whole schema."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.fixture(autouse=True)
def whole_schema_after():
    yield
    migrate_to_latest()


@pytest.mark.django_db(transaction=True)
def test_accounts_sharing_an_address_stop_the_migration_by_name_and_lose_nothing():
    from django.contrib.auth import get_user_model

    user_model = get_user_model()
    migrate(BEFORE)
    try:
        for name, email in [("dave", "Carol@example.org"), ("erin", "carol@example.org"), ("frank", "frank@example.org")]:
            user_model.objects.create_user(name, password=f"pw-{name}-12345", email=email)
        with pytest.raises(RuntimeError, match=r"dave <Carol@example.org>, erin <carol@example.org>\. Give each"):
            migrate(AFTER)
        assert sorted(user_model.objects.values_list("username", "email")) == [
            ("dave", "Carol@example.org"), ("erin", "carol@example.org"), ("frank", "frank@example.org")]
        user_model.objects.filter(username="erin").update(email="erin@example.org")
    finally:
        migrate(AFTER)
    with pytest.raises(IntegrityError), transaction.atomic():
        user_model.objects.create_user("gina", password="pw-gina-12345", email="FRANK@example.org")
