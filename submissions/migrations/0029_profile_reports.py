import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('submissions', '0028_fixed_reference'),
    ]

    operations = [
        migrations.AddField(
            model_name='submission',
            name='profile_of',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='profiles', to='submissions.run'),
        ),
        migrations.AlterField(
            model_name='submission',
            name='mode',
            field=models.CharField(choices=[('ranked', 'Ranked'), ('test', 'Test'), ('benchmark', 'Benchmark'), ('profile', 'Profile')], db_index=True, default='ranked', max_length=10),
        ),
        migrations.CreateModel(
            name='ProfileFile',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('content', models.BinaryField()),
                ('size', models.PositiveIntegerField()),
                ('sha256', models.CharField(max_length=64)),
                ('attempt', models.PositiveSmallIntegerField(help_text='The attempt whose agent sent it')),
                ('uploaded_at', models.DateTimeField(auto_now=True)),
                ('run', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='profile_file', to='submissions.run')),
            ],
        ),
    ]
