"""Pull requests on Gitee, GitLink or GitHub: parse their URLs and read a folder of their head with git.

No database here. The hosts and their base URLs come from settings.PR_HOSTS, so tests (and
self-hosted mirrors) point them at a local bare repository.
"""
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings
from django.utils.translation import gettext as _

from submissions.bundles import human_size


class PullRequestError(ValueError):
    """The pull request cannot be read; the message says why, for the contestant."""


@dataclass(frozen=True)
class PullRequest:
    host: str
    owner: str
    repo: str
    number: int
    url: str

    @property
    def config(self):
        return settings.PR_HOSTS[self.host]

    @property
    def git_url(self):
        return f"{self.config['git'].rstrip('/')}/{self.owner}/{self.repo}.git"

    @property
    def ref(self):
        return self.config["pull_ref"].format(number=self.number)


def parse_pr_url(url):
    """A PullRequest from a PR page URL, or PullRequestError naming the hosts that are known."""
    url = (url or "").strip()
    for host, config in settings.PR_HOSTS.items():
        web = config["web"].rstrip("/")
        if not url.startswith(web + "/"):
            continue
        path = urlsplit(url).path[len(urlsplit(web).path):]
        match = re.match(rf"^/([\w.-]+)/([\w.-]+?)(?:\.git)?/{re.escape(config['pull_path'])}/(\d+)/?$", path)
        if not match:
            raise PullRequestError(_("%(url)s is not a pull request URL of %(host)s; expected %(pattern)s")
                                   % {"url": url, "host": host, "pattern": f"{web}/OWNER/REPO/{config['pull_path']}/NUMBER"})
        owner, repo, number = match.groups()
        return PullRequest(host, owner, repo, int(number), f"{web}/{owner}/{repo}/{config['pull_path']}/{number}")
    known = ", ".join(f"{h} ({c['web']})" for h, c in settings.PR_HOSTS.items())
    raise PullRequestError(_("unknown pull-request host in '%(url)s'; known hosts: %(known)s") % {"url": url, "known": known})


def pull_request_url_pattern():
    """The regular expression of the PR page URLs parse_pr_url takes (for the API's documentation)."""
    def literal(text):
        # `-` stays unescaped: outside a class it is literal, and JavaScript's regular expressions refuse `\-`.
        return re.escape(text).replace("\\-", "-")

    hosts = "|".join(rf"{literal(c['web'].rstrip('/'))}/[\w.-]+/[\w.-]+/{literal(c['pull_path'])}"
                     for c in settings.PR_HOSTS.values())
    return rf"^(?:{hosts})/\d+/?$"


def _git(args, cwd, timeout):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": cwd, "GIT_TERMINAL_PROMPT": "0",
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_ASKPASS": "/bin/false", "LC_ALL": "C"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, timeout=timeout)


def _fetch_error(pr, stderr):
    text = stderr.decode(errors="replace")
    lowered = text.lower()
    if "couldn't find remote ref" in lowered or "could not find remote ref" in lowered:
        return PullRequestError(_("pull request %(number)s does not exist in %(repo)s (%(ref)s is missing)")
                                % {"number": pr.number, "repo": f"{pr.owner}/{pr.repo}", "ref": pr.ref})
    if any(s in lowered for s in ("authentication", "could not read username", "terminal prompts disabled",
                                  "repository not found", "does not appear to be a git repository", "403", "401")):
        return PullRequestError(_("the repository %(repo)s on %(host)s is private or does not exist; "
                                  "make it public (or mirror it) so the site can fetch it")
                                % {"repo": f"{pr.owner}/{pr.repo}", "host": pr.host})
    return PullRequestError(_("git could not fetch %(url)s: %(output)s") % {"url": pr.url, "output": text.strip()[-300:]})


@dataclass
class PullRequestHead:
    commit: str
    paths: list  # every file path of the head commit

    def folder(self, folder):
        prefix = folder.rstrip("/") + "/"
        return [p for p in self.paths if p.startswith(prefix)]


class FetchedPullRequest:
    """A fetched PR head in a temporary repository; use as a context manager."""

    def __init__(self, pr, timeout=None):
        self.pr = pr
        self.timeout = timeout or settings.PR_FETCH_TIMEOUT_SECONDS
        self._tmp = tempfile.TemporaryDirectory(prefix="pr-fetch-")
        self.dir = self._tmp.name

    def __enter__(self):
        try:
            _git(["init", "-q", "--bare", "."], self.dir, self.timeout)
            fetched = _git(["-c", "protocol.file.allow=always", "fetch", "-q", "--depth=1", "--no-tags",
                            self.pr.git_url, self.pr.ref], self.dir, self.timeout)
            if fetched.returncode != 0:
                raise _fetch_error(self.pr, fetched.stderr)
            commit = _git(["rev-parse", "FETCH_HEAD"], self.dir, self.timeout).stdout.decode().strip()
            listing = _git(["ls-tree", "-r", "-z", "--name-only", commit], self.dir, self.timeout)
            paths = [p for p in listing.stdout.decode(errors="replace").split("\0") if p]
        except subprocess.TimeoutExpired:
            self._tmp.cleanup()
            raise PullRequestError(_("fetching %(url)s timed out after %(seconds)s s; try again later")
                                   % {"url": self.pr.url, "seconds": self.timeout})
        except PullRequestError:
            self._tmp.cleanup()
            raise
        self.head = PullRequestHead(commit, paths)
        return self

    def read_folder(self, folder):
        """Raw files under `folder/` (paths relative to it); the bundle limits (file size, total size,
        file count) are checked on the listing, before anything is read."""
        prefix = folder.rstrip("/") + "/"
        listing = _git(["ls-tree", "-r", "-l", "-z", self.head.commit, "--", prefix], self.dir, self.timeout)
        entries = []
        for entry in filter(None, listing.stdout.decode(errors="replace").split("\0")):
            meta, path = entry.split("\t", 1)
            mode, kind, sha, size = meta.split()
            if kind != "blob" or mode == "120000":
                raise PullRequestError(_("'%(path)s' is not a regular file (links and submodules are not allowed)")
                                       % {"path": path})
            if int(size) > settings.BUNDLE_MAX_FILE_BYTES:
                raise PullRequestError(_("'%(path)s' is %(size)s; the limit is %(limit)s a file")
                                       % {"path": path, "size": human_size(int(size)),
                                          "limit": human_size(settings.BUNDLE_MAX_FILE_BYTES)})
            entries.append((path, sha, int(size)))
        if len(entries) > settings.BUNDLE_MAX_FILES:
            raise PullRequestError(_("%(folder)s has %(count)s files; the limit is %(limit)s")
                                   % {"folder": prefix, "count": len(entries), "limit": settings.BUNDLE_MAX_FILES})
        total = sum(size for _, _, size in entries)
        if total > settings.BUNDLE_MAX_TOTAL_BYTES:
            raise PullRequestError(_("%(folder)s holds %(size)s; the limit is %(limit)s")
                                   % {"folder": prefix, "size": human_size(total),
                                      "limit": human_size(settings.BUNDLE_MAX_TOTAL_BYTES)})
        return {path[len(prefix):]: _git(["cat-file", "blob", sha], self.dir, self.timeout).stdout
                for path, sha, _ in entries}

    def __exit__(self, *exc):
        self._tmp.cleanup()
