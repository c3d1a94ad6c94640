"""Standings keep their place in the rule's order (board_key) instead of a rank: a rank is read as
1 + the rows with a smaller key, so one contestant's change writes one row."""
from django.db import migrations, models


def key_every_standing(apps, schema_editor):
    from submissions.rules.ranking import GpuSpeedupRule, get_rule

    Season = apps.get_model("submissions", "Season")
    Standing = apps.get_model("submissions", "Standing")
    GpuStanding = apps.get_model("submissions", "GpuStanding")
    for season in Season.objects.all():
        rule = get_rule(season.ranking_rule, season.ranking_settings)
        rows = list(Standing.objects.filter(season=season))
        for row in rows:
            row.board_key = rule.board_key(row)
        Standing.objects.bulk_update(rows, ["board_key"], batch_size=1000)
    rows, gpu_rule = list(GpuStanding.objects.all()), GpuSpeedupRule()
    for row in rows:
        row.board_key = gpu_rule.board_key(row)
    GpuStanding.objects.bulk_update(rows, ["board_key"], batch_size=1000)


class Migration(migrations.Migration):

    dependencies = [
        ('submissions', '0018_second_judging'),
    ]

    operations = [
        migrations.AlterModelOptions(
            name='standing',
            options={'ordering': ['season_id', 'board_key', 'contestant_id']},
        ),
        migrations.RemoveIndex(
            model_name='gpustanding',
            name='gpu_standing_board_order',
        ),
        migrations.RemoveIndex(
            model_name='standing',
            name='standing_board_order',
        ),
        migrations.RemoveField(
            model_name='gpustanding',
            name='rank',
        ),
        migrations.RemoveField(
            model_name='standing',
            name='rank',
        ),
        migrations.AddField(
            model_name='gpustanding',
            name='board_key',
            field=models.BinaryField(default=b'\x01'),
        ),
        migrations.AddField(
            model_name='standing',
            name='board_key',
            field=models.BinaryField(default=b'\x01'),
        ),
        migrations.RunPython(key_every_standing, migrations.RunPython.noop),
        migrations.AddIndex(
            model_name='gpustanding',
            index=models.Index(fields=['season', 'gpu_type', 'board_key', 'contestant'], include=['id'], name='gpu_standing_board_order'),
        ),
        migrations.AddIndex(
            model_name='standing',
            index=models.Index(fields=['season', 'board_key', 'contestant'], include=['id'], name='standing_board_order'),
        ),
    ]
