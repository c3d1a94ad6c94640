"""Where gpucf keeps the site it talks to and a token for each site: `$XDG_CONFIG_HOME/gpucf/config.json`
(or `~/.config/gpucf/config.json`), readable by its owner alone (the file 0600, its folder 0700).

A token is kept per site and sent only to the site it was made for: `--site` naming another site never
carries it there. GPUCF_SITE and GPUCF_TOKEN, when set, take the place of what is stored (a CI job needs
no file)."""
import json
import os
import stat
import sys
import tempfile
import urllib.parse
from pathlib import Path

from gpucf.outcomes import AuthError, UsageError

DEFAULT_SITE = "http://127.0.0.1:8000"
FILE_MODE, FOLDER_MODE = 0o600, 0o700


def config_path(environ=None):
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_CONFIG_HOME", "")
    # the XDG rule: a relative XDG_CONFIG_HOME is invalid and ignored
    folder = Path(base) if base and os.path.isabs(base) else Path.home() / ".config"
    return folder / "gpucf" / "config.json"


def normalize_site(url):
    """`url` as `scheme://host[:port][/path]` with no trailing slash; refuses what is no http(s) address."""
    text = (url or "").strip()
    parts = urllib.parse.urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"{text!r} is not a site address: give one like {DEFAULT_SITE}")
    if parts.query or parts.fragment:
        raise UsageError(f"{text!r}: a site address has no query or fragment")
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))


class Config:
    """The stored settings: `site` (the default one) and `tokens` ({site: token})."""

    def __init__(self, path=None):
        self.path = Path(path) if path else config_path()
        self.site, self.tokens = None, {}

    def load(self):
        if not self.path.exists():
            return self
        self._keep_private()
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise AuthError(f"cannot read {self.path} ({exc}): fix or remove it, then `gpucf login` again")
        if not isinstance(data, dict) or not isinstance(data.get("tokens", {}), dict):
            raise AuthError(f"{self.path} is not a gpucf config file: remove it, then `gpucf login` again")
        self.site = data.get("site") if isinstance(data.get("site"), str) else None
        self.tokens = {site: token for site, token in data.get("tokens", {}).items() if isinstance(token, str)}
        return self

    def _keep_private(self):
        """A file others can read (copied in, or made by hand) is made the owner's alone, and said so."""
        mode = stat.S_IMODE(self.path.stat().st_mode)
        if mode & 0o077:
            os.chmod(self.path, FILE_MODE)
            print(f"gpucf: {self.path} was readable by others (mode {mode:o}); it is 600 now", file=sys.stderr)

    def save(self):
        """Written whole to a new file of mode 0600 in a folder of mode 0700, then moved over the old one:
        the token is never readable by others, not even for a moment, and a crash leaves the old file."""
        folder = self.path.parent
        folder.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
        os.chmod(folder, FOLDER_MODE)
        text = json.dumps({"site": self.site, "tokens": self.tokens}, indent=2, sort_keys=True) + "\n"
        descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=".config-", suffix=".json")  # made 0600
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                os.fchmod(handle.fileno(), FILE_MODE)
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise


def resolve_site(given, config, environ=None):
    """The site a command talks to: --site, else GPUCF_SITE, else the one `login` stored, else the default."""
    environ = os.environ if environ is None else environ
    return normalize_site(given or environ.get("GPUCF_SITE") or config.site or DEFAULT_SITE)


def resolve_token(site, config, environ=None):
    """GPUCF_TOKEN, else the token stored for this very site; None when there is neither."""
    environ = os.environ if environ is None else environ
    return environ.get("GPUCF_TOKEN") or config.tokens.get(site)
