# The freeze freezes every public page: snapshots of the GPU boards, the runs and the acceptances.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('leaderboard', '0002_frozen_leaderboard_order_index'),
        ('submissions', '0026_final_system_test'),
    ]

    operations = [
        # a freeze in force before this migration has no such snapshots: it keeps freezing the season board alone
        migrations.AddField(
            model_name='scoreboardfreeze',
            name='freezes_everything',
            field=models.BooleanField(default=False),
        ),
        migrations.AlterField(
            model_name='scoreboardfreeze',
            name='freezes_everything',
            field=models.BooleanField(default=True, help_text="The per-GPU boards, hardware comparison, charts and contestants' pages are frozen too, not the season's board alone"),
        ),
        migrations.CreateModel(
            name='FrozenAcceptance',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('accepted_at', models.DateTimeField()),
                ('freeze', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='acceptances', to='leaderboard.scoreboardfreeze')),
                ('submission', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='submissions.submission')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('freeze', 'submission'), name='one_frozen_acceptance')],
            },
        ),
        migrations.CreateModel(
            name='FrozenGpuStanding',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('rank', models.PositiveIntegerField(blank=True, null=True)),
                ('passed_count', models.PositiveIntegerField(default=0)),
                ('geomean_speedup', models.FloatField(blank=True, null=True)),
                ('best_speedup', models.FloatField(blank=True, null=True)),
                ('contestant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='submissions.contestant')),
                ('freeze', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='gpu_standings', to='leaderboard.scoreboardfreeze')),
                ('gpu_type', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='submissions.gputype')),
            ],
            options={
                'indexes': [models.Index(fields=['freeze', 'gpu_type', 'rank', 'contestant'], name='frozen_gpu_board_order')],
            },
        ),
        migrations.CreateModel(
            name='FrozenRun',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('status', models.CharField(max_length=10)),
                ('verdict', models.CharField(blank=True, max_length=20)),
                ('flags', models.JSONField(blank=True, default=list)),
                ('speedup', models.FloatField(blank=True, null=True)),
                ('candidate_median_ms', models.FloatField(blank=True, null=True)),
                ('freeze', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='runs', to='leaderboard.scoreboardfreeze')),
                ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='frozen_states', to='submissions.run')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('freeze', 'run'), name='one_frozen_state_per_run')],
            },
        ),
    ]
