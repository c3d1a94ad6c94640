from django.db import migrations, models


def digest_existing(apps, schema_editor):
    from submissions.kernel_identity import kernel_digest

    Submission = apps.get_model("submissions", "Submission")
    SubmissionFile = apps.get_model("submissions", "SubmissionFile")
    for submission in Submission.objects.only("pk").iterator():
        files = dict(SubmissionFile.objects.filter(submission_id=submission.pk).values_list("path", "content"))
        Submission.objects.filter(pk=submission.pk).update(kernel_digest=kernel_digest(files))


class Migration(migrations.Migration):

    dependencies = [
        ("submissions", "0023_season_access"),
    ]

    operations = [
        migrations.AddField(
            model_name="submission",
            name="kernel_digest",
            field=models.CharField(blank=True, db_index=True, max_length=64,
                                   help_text="What makes the kernel, normalized (submissions/kernel_identity.py)"),
        ),
        migrations.RunPython(digest_existing, migrations.RunPython.noop),
    ]
