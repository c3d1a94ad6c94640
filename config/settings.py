"""Settings for the GPU CodeForces site.

Every value comes from the environment, with embedded defaults that are safe for a
local run (SQLite, Redis on localhost, DEBUG off unless asked for).
"""
import os
from pathlib import Path

import dj_database_url
import plotly

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name, default=False):
    return os.environ.get(name, str(default)).strip().lower() in {"1", "true", "yes", "on"}


def env_int(name, default):
    return int(os.environ.get(name, default))


DEBUG = env_bool("DEBUG", False)
# The default key is only good for a local demo; deployments set SECRET_KEY.
SECRET_KEY = os.environ.get("SECRET_KEY", "local-demo-key-change-me-in-production-0123456789")
ALLOWED_HOSTS = [h for h in os.environ.get("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver").split(",") if h]
CSRF_TRUSTED_ORIGINS = [o for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    # the form widgets' templates, for the site's form renderer (config/forms.py reads templates/forms/)
    "django.forms",
    "django_rq",
    # django-ninja as an app: /api/v1/docs uses its own Swagger UI files (static/ninja/), not a CDN.
    "ninja",
    "submissions",
    "leaderboard",
    "clarifications",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "config.middleware.RequestsInFlightMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Before anything that queries (the session's lookup included): a NUL in the address is refused.
    "config.middleware.RefuseNulMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    # Before anything reads a body (CSRF parses every POST); after Locale: refusals in the visitor's language.
    "config.middleware.RequestBodyLimitMiddleware",
    "config.middleware.UploadFileNamesMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "config.middleware.ErrorAnswersMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                # the header's unread answers and announcements (and unanswered questions for organizers)
                "clarifications.context_processors.notices",
            ],
        },
    },
]
FORM_RENDERER = "config.forms.SiteFormRenderer"

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{BASE_DIR / 'var' / 'db.sqlite3'}"),
        conn_max_age=env_int("DB_CONN_MAX_AGE", 60),
    )
}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # Gunicorn's threads and the agent's reports write concurrently: wait instead of failing. A
    # transaction takes the write lock when it begins (IMMEDIATE): one that read first and then wrote
    # would fail at once with "database is locked" while another writer holds it, without waiting.
    # WAL: readers never block the writer nor it them. In the default rollback journal a long read (a
    # streamed CSV export to a slow client) holds every writer off until `timeout` ends it with
    # "database is locked" (bench/site/uploads.py --slow-export). The mode is stored in the file.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        timeout=env_int("SQLITE_TIMEOUT_SECONDS", 20), transaction_mode="IMMEDIATE",
        init_command="PRAGMA journal_mode=WAL")
    # Kept open between requests too (DB_CONN_MAX_AGE, one connection per gunicorn thread): opening one
    # (the file, the PRAGMA, Django's SQL functions) cost 1.2 ms, half of a cached board page.
    # Tests on a file, as the site runs: Django's in-memory test database shares one cache between
    # threads, where a lock is "table is locked" at once, never waited for (the timeout above).
    DATABASES["default"]["TEST"] = {"NAME": str(BASE_DIR / "var" / f"test-{os.getpid()}.sqlite3")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"



def _redis_database(url, database):
    """The same Redis server as `url`, another database number."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{database}"))


# The agents' Redis: the `gpu.*` queues, and nothing else. Every agent host can read and write it
# (each through its own ACL user, `manage.py create_agent`), so nothing secret or trusted goes there.
REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
# The site's own queue (pull-request intake, run by `manage.py rqworker site`): never where agents reach.
SITE_REDIS_URL = os.environ.get("SITE_REDIS_URL") or _redis_database(REDIS_URL, 1)
# How agent hosts reach the agents' Redis (host and port of the URLs `create_agent` prints), when not
# as the site does; and the site's connection allowed to manage ACL users there, when not REDIS_URL's.
AGENT_REDIS_URL = os.environ.get("AGENT_REDIS_URL", "")
REDIS_ADMIN_URL = os.environ.get("REDIS_ADMIN_URL", "")
# Rendered boards (leaderboard/board_cache.py). In each process by default: a Redis round trip costs
# more than it saves when the cores are busy (the page waits for Redis to be scheduled), and the keys
# name the board's version in the database, so no process serves another's stale rendering. A
# redis:// URL shares them between the workers instead (use the site's own Redis, never the agents':
# an agent could write a page there). Kept BOARD_CACHE_SECONDS at most.
BOARD_CACHE_URL = os.environ.get("BOARD_CACHE_URL", "locmem")
BOARD_CACHE_SECONDS = env_int("BOARD_CACHE_SECONDS", 600)
# While one request renders a board's page at a new version, the others that ask for it meanwhile are
# served the previous rendering if it misses no change committed longer ago than this; 0: they wait
# for the new one. A visitor alone always sees every committed change (leaderboard/board_cache.py).
BOARD_STALE_SECONDS = float(os.environ.get("BOARD_STALE_SECONDS", 1))
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "boards": ({"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "boards",
                # ~16 KB a page: 200 pages of a 10,000-contestant board in two languages, and then some
                "OPTIONS": {"MAX_ENTRIES": env_int("BOARD_CACHE_ENTRIES", 2000)}}
               if BOARD_CACHE_URL == "locmem" else
               # A stalled Redis must not stall the pages: past these the page is rendered uncached.
               {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": BOARD_CACHE_URL,
                "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
                # sites (or tests) sharing one Redis keep their boards apart by it
                "KEY_PREFIX": os.environ.get("BOARD_CACHE_KEY_PREFIX", "")}),
}
# Jobs go through Redis as JSON only: a pickle found there is never unpickled.
RQ_SERIALIZER = "rq.serializers.JSONSerializer"
RQ_QUEUES = {"default": {"URL": REDIS_URL, "DEFAULT_TIMEOUT": 3600, "SERIALIZER": RQ_SERIALIZER}}
# Queue names are "gpu.<type>"; a prefix lets tests and staging share one Redis safely.
# scripts/platform.sh gives each database its own prefix, site queue and agent user names, so two
# platforms on one Redis never take each other's jobs or rewrite each other's agents' users.
GPU_QUEUE_PREFIX = os.environ.get("GPU_QUEUE_PREFIX", "gpu.")
# The agents' Redis ACL users are named this + the agent's name (submissions/services/agent_redis.py).
AGENT_REDIS_USER_PREFIX = os.environ.get("AGENT_REDIS_USER_PREFIX", "gpucf-agent-")

LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = os.environ.get("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
# plotly.js is served from the plotly package the site installs: nothing comes from a CDN.
STATICFILES_DIRS = [BASE_DIR / "static", ("vendor/plotly", Path(plotly.__file__).parent / "package_data")]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", BASE_DIR / "var" / "staticfiles"))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "home"

# Passwords chosen on the site (registration, reset) are checked by Django's validators; their messages
# come translated with Django. Accounts made by scripts (seed_demo, tests) are not checked.
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "submissions.passwords.MinimumLengthValidator",
     "OPTIONS": {"min_length": env_int("PASSWORD_MIN_LENGTH", 10)}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Failed sign-ins (site and admin login): after this many for one account name, or from one client
# address, within the window, further attempts are refused until the oldest counted failure leaves
# the window (submissions/services/login_throttle.py; counted in the database).
LOGIN_FAILURES_PER_ACCOUNT = env_int("LOGIN_FAILURES_PER_ACCOUNT", 5)
LOGIN_FAILURES_PER_ADDRESS = env_int("LOGIN_FAILURES_PER_ADDRESS", 20)
LOGIN_FAILURE_WINDOW_SECONDS = env_int("LOGIN_FAILURE_WINDOW_SECONDS", 15 * 60)
# Addresses of reverse proxies in front of the site (nginx: 127.0.0.1): a request from one of them is
# counted against the client address it appended to X-Forwarded-For, never against the proxy itself.
TRUSTED_PROXIES = [a.strip() for a in os.environ.get("TRUSTED_PROXIES", "").split(",") if a.strip()]

EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")

# Bundle limits (bytes).
BUNDLE_MAX_FILE_BYTES = env_int("BUNDLE_MAX_FILE_BYTES", 1024 * 1024)
BUNDLE_MAX_TOTAL_BYTES = env_int("BUNDLE_MAX_TOTAL_BYTES", 5 * 1024 * 1024)
BUNDLE_MAX_FILES = env_int("BUNDLE_MAX_FILES", 64)
# A request whose Content-Length is above this is refused (413) before its body is read: a bundle's
# zip (up to twice BUNDLE_MAX_TOTAL_BYTES) and the form around it fit. Keep nginx's
# client_max_body_size (deploy/nginx) at or above it.
REQUEST_MAX_BODY_BYTES = env_int("REQUEST_MAX_BODY_BYTES", BUNDLE_MAX_TOTAL_BYTES * 2 + 1024 * 1024)
# Bodies within that limit are handled in memory (the upload-name check reads multipart bodies whole).
DATA_UPLOAD_MAX_MEMORY_SIZE = REQUEST_MAX_BODY_BYTES
FILE_UPLOAD_MAX_MEMORY_SIZE = REQUEST_MAX_BODY_BYTES

# Judging limits passed to agents with each job: a judged process may compile for up to the first,
# then run for up to the second.
JUDGE_COMPILE_TIMEOUT_SECONDS = env_int("JUDGE_COMPILE_TIMEOUT_SECONDS", 600)
JUDGE_TIMEOUT_SECONDS = env_int("JUDGE_TIMEOUT_SECONDS", 900)
# The whole job: candidate, LLM variant and self-test may each compile and run, and two verifiers run.
JUDGE_JOB_TIMEOUT_SECONDS = 3 * (JUDGE_COMPILE_TIMEOUT_SECONDS + JUDGE_TIMEOUT_SECONDS) + 2 * JUDGE_TIMEOUT_SECONDS + 300
# A passed run is flagged `timing_noisy` when the standard deviation of the reference's or the
# candidate's per-call times exceeds this share of their median (submissions/rules/timing_flags.py).
TIMING_NOISY_SPREAD_PERCENT = float(os.environ.get("TIMING_NOISY_SPREAD_PERCENT", "25"))
# A run still "running" this long after it started is handed to another agent: never before its
# job could have ended on its own.
RUN_DEADLINE_SECONDS = env_int("RUN_DEADLINE_SECONDS", JUDGE_JOB_TIMEOUT_SECONDS + 300)
# A queued run whose job vanished (Redis lost its data, the enqueue failed) is enqueued again once it
# has waited this long: the job reaches Redis milliseconds after the commit, and a late one for an
# attempt already replaced is refused at start, so the grace can be short.
RUN_REQUEUE_AFTER_SECONDS = env_int("RUN_REQUEUE_AFTER_SECONDS", 15)
RUN_MAX_ATTEMPTS = env_int("RUN_MAX_ATTEMPTS", 3)
# A job a host took from its queue (moved into its claim list) and has not started after this long is
# handed back and charged to the host; this many such jobs and its Redis user is switched off and its
# workers drained until an organizer resumes one (docs/architecture.md, "Recovery").
RUN_CLAIM_TIMEOUT_SECONDS = env_int("RUN_CLAIM_TIMEOUT_SECONDS", 30)
AGENT_DROPPED_JOBS_BEFORE_QUARANTINE = env_int("AGENT_DROPPED_JOBS_BEFORE_QUARANTINE", 3)
# Fresh runs one contestant may have waiting in Redis per GPU type; more wait in the database and are
# released oldest first as these start (docs/architecture.md, "Scheduling"). 0: no cap.
MAX_QUEUED_RUNS_PER_CONTESTANT = env_int("MAX_QUEUED_RUNS_PER_CONTESTANT", 3)
# A worker refused a run for being older than the run's season's minimum harness version stops
# dequeuing this long, so it does not hand the same run back again and again.
FLEET_REFUSAL_PAUSE_SECONDS = env_int("FLEET_REFUSAL_PAUSE_SECONDS", 30)
# Second judging (submissions/services/confirming.py): a passed result that would put its contestant in
# the top N of the season's best speedups waits for another host; one more than this percentage off the
# median of the submission's other passed runs on that GPU type too; two judgings agree when their
# speedups are within the tolerance (of the larger); the judging host, refused the second judging of its
# own result, pauses this long before it dequeues again.
SECOND_JUDGING_TOP_N = env_int("SECOND_JUDGING_TOP_N", 10)
SECOND_JUDGING_OUTLIER_PERCENT = float(os.environ.get("SECOND_JUDGING_OUTLIER_PERCENT", "25"))
CONFIRMATION_TOLERANCE_PERCENT = float(os.environ.get("CONFIRMATION_TOLERANCE_PERCENT", "25"))
CONFIRMATION_REFUSAL_PAUSE_SECONDS = env_int("CONFIRMATION_REFUSAL_PAUSE_SECONDS", 10)
# A worker is "silent" when its last heartbeat is older than this (agents beat every 10 s).
FLEET_WORKER_SILENT_SECONDS = env_int("FLEET_WORKER_SILENT_SECONDS", 60)
# Agents send a heartbeat every 10 s (`profiler_agent work --heartbeat-seconds`) naming the run they
# judge; a running run not named for this long (3 missed beats) is judged again by another agent.
RUN_SILENT_AFTER_SECONDS = env_int("RUN_SILENT_AFTER_SECONDS", 30)
# The sweep of lost runs runs at most once per this many seconds site-wide, whoever triggers it
# (an agent's heartbeat, `manage.py sweep_runs --loop`).
SWEEP_INTERVAL_SECONDS = env_int("SWEEP_INTERVAL_SECONDS", 5)
# The address agents use to reach the site (bundle and result URLs are built on it).
SITE_URL = os.environ.get("SITE_URL", "http://127.0.0.1:8000")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # 403s, 404s and bad requests: one line each, no traceback (on the record, and on the console for
    # the django.security.* loggers whose records reach it)
    "filters": {"one_line_client_errors": {"()": "config.log_filters.OneLineClientErrors"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["one_line_client_errors"]}},
    "loggers": {"django.request": {"filters": ["one_line_client_errors"]}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
}

# ---- submissions: accounts, agreement, limits, abuse detection (owned by the submissions app) ----
# Bump the version when the agreement text changes: everyone accepts it again before submitting.
CONTEST_AGREEMENT_VERSION = os.environ.get("CONTEST_AGREEMENT_VERSION", "2025-1")
SUBMISSIONS_PER_HOUR = env_int("SUBMISSIONS_PER_HOUR", 10)
SUBMISSIONS_PER_DAY = env_int("SUBMISSIONS_PER_DAY", 50)
# Test (correctness only) and benchmark (never ranked) submissions, each mode counted on its own per season
# (0: no limit); a season's own limits apply to ranked submissions.
TEST_SUBMISSIONS_PER_HOUR = env_int("TEST_SUBMISSIONS_PER_HOUR", 30)
TEST_SUBMISSIONS_PER_DAY = env_int("TEST_SUBMISSIONS_PER_DAY", 200)
BENCHMARK_SUBMISSIONS_PER_HOUR = env_int("BENCHMARK_SUBMISSIONS_PER_HOUR", 10)
BENCHMARK_SUBMISSIONS_PER_DAY = env_int("BENCHMARK_SUBMISSIONS_PER_DAY", 50)
# Profile runs (services/profiles.py): each holds a GPU under Nsight Compute for minutes, so fewer of them.
PROFILE_SUBMISSIONS_PER_HOUR = env_int("PROFILE_SUBMISSIONS_PER_HOUR", 3)
PROFILE_SUBMISSIONS_PER_DAY = env_int("PROFILE_SUBMISSIONS_PER_DAY", 10)
# What a profile run's agent is told: at most this many kernel launches of each model profiled, the run
# under the profiler within this many seconds; the .ncu-rep it sends is kept up to this size (within
# REQUEST_MAX_BODY_BYTES, which bounds every request's body).
PROFILE_KERNELS_PER_MODEL = env_int("PROFILE_KERNELS_PER_MODEL", 20)
PROFILE_TIMEOUT_SECONDS = env_int("PROFILE_TIMEOUT_SECONDS", 600)
PROFILE_FILE_MAX_BYTES = min(env_int("PROFILE_FILE_MAX_BYTES", 8 * 1024 * 1024), REQUEST_MAX_BODY_BYTES)
# Agents send the .ncu-rep gzip-compressed (about a fifth to a tenth of its size): kept decompressed, up to
# this size.
PROFILE_REPORT_MAX_BYTES = env_int("PROFILE_REPORT_MAX_BYTES", 64 * 1024 * 1024)
# Issues one contestant may open (one per operator they optimize): 355 in 80 s was a script, not a person.
ISSUES_PER_HOUR = env_int("ISSUES_PER_HOUR", 20)
ISSUES_PER_DAY = env_int("ISSUES_PER_DAY", 60)
# Questions one contestant may ask the organizers (clarifications/services.py; 0: no limit).
QUESTIONS_PER_HOUR = env_int("QUESTIONS_PER_HOUR", 5)
QUESTIONS_PER_DAY = env_int("QUESTIONS_PER_DAY", 20)
NEAR_COPY_THRESHOLD_PERCENT = float(os.environ.get("NEAR_COPY_THRESHOLD_PERCENT", "80"))
# A new candidate is compared with others of the same operator and this many recent ones.
NEAR_COPY_SCAN_RECENT = env_int("NEAR_COPY_SCAN_RECENT", 2000)
# Password-reset mail: the console by default; SMTP when EMAIL_HOST is set.
if os.environ.get("EMAIL_HOST"):
    EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    EMAIL_HOST = os.environ["EMAIL_HOST"]
    EMAIL_PORT = env_int("EMAIL_PORT", 587)
    EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
    EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
    EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", True)
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "GPU CodeForces <noreply@localhost>")
# Pull-request hosts: where PR pages live (web), where git fetches from (git), the API for
# comments (api, empty: no comments), the bot token and the webhook secret. Each overridable
# with PR_HOST_<HOST>_<KEY>, e.g. PR_HOST_GITEE_TOKEN.
_PR_HOST_DEFAULTS = {
    "github": {"web": "https://github.com", "git": "https://github.com", "api": "https://api.github.com",
               "pull_path": "pull", "pull_ref": "refs/pull/{number}/head",
               "comment_path": "/repos/{owner}/{repo}/issues/{number}/comments"},
    "gitee": {"web": "https://gitee.com", "git": "https://gitee.com", "api": "https://gitee.com/api/v5",
              "pull_path": "pulls", "pull_ref": "refs/pull/{number}/head",
              "comment_path": "/repos/{owner}/{repo}/pulls/{number}/comments"},
    "gitlink": {"web": "https://www.gitlink.org.cn", "git": "https://www.gitlink.org.cn", "api": "",
                "pull_path": "pulls", "pull_ref": "refs/pull/{number}/head",
                "comment_path": "/repos/{owner}/{repo}/issues/{number}/comments"},
}
PR_HOSTS = {
    host: {key: os.environ.get(f"PR_HOST_{host.upper()}_{key.upper()}", value)
           for key, value in dict(defaults, token="", webhook_secret="").items()}
    for host, defaults in _PR_HOST_DEFAULTS.items()
}
PR_FETCH_TIMEOUT_SECONDS = env_int("PR_FETCH_TIMEOUT_SECONDS", 60)
# The site's own RQ queue (webhook intake, PR comments); served by `manage.py rqworker site --with-scheduler`.
SITE_QUEUE_NAME = os.environ.get("SITE_QUEUE_NAME", "site")
RQ_QUEUES.setdefault(SITE_QUEUE_NAME, {"URL": SITE_REDIS_URL, "DEFAULT_TIMEOUT": 600, "SERIALIZER": RQ_SERIALIZER})
PR_COMMENT_TIMEOUT_SECONDS = env_int("PR_COMMENT_TIMEOUT_SECONDS", 10)
# The verdict table is retried from the site worker: attempts in all, and the first back-off (doubled each time).
PR_COMMENT_ATTEMPTS = env_int("PR_COMMENT_ATTEMPTS", 5)
PR_COMMENT_RETRY_SECONDS = env_int("PR_COMMENT_RETRY_SECONDS", 30)
# Dataset exports (submissions/services/datasets.py): each kept in its own folder under this one.
DATASET_EXPORT_DIR = Path(os.environ.get("DATASET_EXPORT_DIR", BASE_DIR / "var" / "datasets"))
# The licence accepted samples join the dataset under (the contest agreement's "open-source license"),
# as an SPDX identifier: written into every sample's metadata and the dataset card.
DATASET_LICENSE = os.environ.get("DATASET_LICENSE", "Apache-2.0")
# ---- end of the submissions block ----
