"""A benchmark run keeps its uploader (every existing run has one); an account deleted later leaves its
runs, shown as "unknown uploader", instead of deleting them."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('submissions', '0016_agent_trust_boundary'),
    ]

    operations = [
        migrations.AlterField(
            model_name='benchmarkrun',
            name='contestant',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='benchmark_runs', to='submissions.contestant'),
        ),
    ]
