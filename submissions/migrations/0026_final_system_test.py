import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("submissions", "0025_submission_modes"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="season",
            name="final_standings_at",
            field=models.DateTimeField(blank=True, editable=False, null=True),
        ),
        migrations.CreateModel(
            name="FinalSystemTest",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("reason", models.TextField()),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("finished_at", models.DateTimeField(blank=True, null=True)),
                ("provisional", models.JSONField(blank=True, default=list)),
                ("final", models.JSONField(blank=True, default=list)),
                ("rejudge", models.OneToOneField(on_delete=django.db.models.deletion.PROTECT,
                                                 related_name="final_system_test", to="submissions.rejudge")),
                ("season", models.OneToOneField(on_delete=django.db.models.deletion.CASCADE,
                                                related_name="final_system_test", to="submissions.season")),
                ("started_by", models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL,
                                                 related_name="+", to=settings.AUTH_USER_MODEL)),
            ],
        ),
    ]
