from django.db import migrations, models
from django.db.models import Q


def mark_final_test_runs(apps, schema_editor):
    """The runs of a final system test made before its queue existed, and their second judgings. A run
    queued now keeps its job on the rejudge queue, where it is, until it leaves it: its queue is where
    the sweep looks for its job."""
    Run = apps.get_model("submissions", "Run")
    FinalSystemTest = apps.get_model("submissions", "FinalSystemTest")
    batches = list(FinalSystemTest.objects.values_list("rejudge_id", flat=True))
    if batches:
        (Run.objects.filter(Q(rejudge_id__in=batches) | Q(confirms__rejudge_id__in=batches))
         .exclude(status="queued").update(final_test=True))


class Migration(migrations.Migration):

    dependencies = [
        ("submissions", "0026_final_system_test"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="final_test",
            field=models.BooleanField(default=False, help_text="A final system test's run (or its second judging): "
                                      "queued on the GPU type's final queue, read before every other"),
        ),
        migrations.RunPython(mark_final_test_runs, migrations.RunPython.noop),
    ]
