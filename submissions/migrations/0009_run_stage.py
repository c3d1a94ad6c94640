from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('submissions', '0008_run_alive_at'),
    ]

    operations = [
        migrations.AddField(
            model_name='run',
            name='stage',
            field=models.CharField(blank=True, choices=[('compiling', 'Compiling'), ('checking', 'Checking correctness'), ('timing', 'Timing'), ('profiling', 'Profiling'), ('self_test', 'Running the self-test')], max_length=12),
        ),
    ]
