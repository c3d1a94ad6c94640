from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('submissions', '0009_login_failures_acceptance_override'),
    ]

    operations = [
        migrations.AddField(
            model_name='run',
            name='stage',
            field=models.CharField(blank=True, choices=[('compiling', 'Compiling'), ('checking', 'Checking correctness'), ('timing', 'Timing'), ('profiling', 'Profiling'), ('self_test', 'Running the self-test')], max_length=12),
        ),
    ]
