"""One account per e-mail address, whatever the case, in the database itself: the registration form's
check (services/accounts.email_refusal) cannot see a registration of the same address at the same
moment. Addresses already shared stop the migration, named, for an organizer to settle: dropping or
changing one of them here would lose the way into an account."""

from django.db import migrations

INDEX = "auth_user_one_account_per_email"  # services/accounts.EMAIL_INDEX names it in refusals


def shared_addresses(schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT UPPER(email), COUNT(*) FROM auth_user WHERE email <> '' "
                       "GROUP BY UPPER(email) HAVING COUNT(*) > 1 ORDER BY UPPER(email)")
        shared = cursor.fetchall()
        found = []
        for upper, _count in shared:
            cursor.execute("SELECT username, email FROM auth_user WHERE UPPER(email) = %s ORDER BY username", [upper])
            found.append(", ".join(f"{username} <{email}>" for username, email in cursor.fetchall()))
    return found


def add_index(apps, schema_editor):
    shared = shared_addresses(schema_editor)
    if shared:
        raise RuntimeError(
            "These accounts share an e-mail address (whatever the case), so a password reset would mail "
            "a link to each of them: " + "; ".join(shared) + ". Give each account an address of its own, "
            "or clear all but one of them, in the admin (Users), then migrate again.")
    # UPPER, as Django's email__iexact compares on PostgreSQL; partial: accounts without one may be many
    schema_editor.execute(f"CREATE UNIQUE INDEX {INDEX} ON auth_user (UPPER(email)) WHERE email <> ''")


def drop_index(apps, schema_editor):
    schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):

    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("submissions", "0014_benchmark_runs"),
    ]

    operations = [migrations.RunPython(add_index, drop_index)]
