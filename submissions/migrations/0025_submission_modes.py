from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("submissions", "0024_submission_kernel_digest"),
    ]

    operations = [
        migrations.AddField(
            model_name="submission",
            name="mode",
            field=models.CharField(choices=[("ranked", "Ranked"), ("test", "Test"), ("benchmark", "Benchmark")],
                                   db_index=True, default="ranked", max_length=10),
        ),
    ]
