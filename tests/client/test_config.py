"""Where gpucf keeps the site and its tokens: private to their owner, one token per site."""
import json
import os
import stat

import pytest

from gpucf import outcomes
from gpucf.config import Config, config_path, normalize_site, resolve_site, resolve_token


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def open_umask():
    """A umask that would leave new files readable and writable by everyone."""
    before = os.umask(0)
    yield
    os.umask(before)


def test_the_file_and_its_folder_are_the_owners_alone_whatever_the_umask(tmp_path, open_umask):
    config = Config(tmp_path / "xdg" / "gpucf" / "config.json")
    config.site, config.tokens = "http://site.example", {"http://site.example": "secret-token"}
    config.save()
    assert mode(config.path) == 0o600 and mode(config.path.parent) == 0o700
    assert json.loads(config.path.read_text()) == {"site": "http://site.example",
                                                   "tokens": {"http://site.example": "secret-token"}}
    assert [p.name for p in config.path.parent.iterdir()] == ["config.json"]  # no temporary file left
    loaded = Config(config.path).load()
    assert (loaded.site, loaded.tokens) == (config.site, config.tokens)


def test_a_folder_made_by_someone_else_is_closed_again(tmp_path):
    folder = tmp_path / "gpucf"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    config = Config(folder / "config.json")
    config.save()
    assert mode(folder) == 0o700


def test_a_file_others_can_read_is_made_private_and_said_so(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"site": "http://a.example", "tokens": {"http://a.example": "t"}}))
    os.chmod(path, 0o644)
    assert Config(path).load().tokens == {"http://a.example": "t"}
    assert mode(path) == 0o600
    assert "was readable by others (mode 644); it is 600 now" in capsys.readouterr().err


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"tokens": ["x"]}', b"\xff\xfe"])
def test_an_unreadable_file_is_an_auth_error_naming_it(tmp_path, content):
    path = tmp_path / "config.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    os.chmod(path, 0o600)
    with pytest.raises(outcomes.AuthError) as refused:
        Config(path).load()
    assert str(path) in str(refused.value) and refused.value.exit_code == outcomes.AUTH == 3


def test_no_file_yet_is_no_site_and_no_token(tmp_path):
    config = Config(tmp_path / "absent" / "config.json").load()
    assert (config.site, config.tokens) == (None, {})


def test_the_path_follows_xdg_config_home_when_it_is_absolute(tmp_path):
    assert config_path({"XDG_CONFIG_HOME": str(tmp_path)}) == tmp_path / "gpucf" / "config.json"
    home = config_path({})
    assert home.parts[-3:] == (".config", "gpucf", "config.json")
    assert config_path({"XDG_CONFIG_HOME": "relative/dir"}) == home  # the XDG rule: a relative one is ignored


def test_the_site_comes_from_the_option_then_the_environment_then_the_file_then_the_default(tmp_path):
    config = Config(tmp_path / "c.json")
    assert resolve_site(None, config, {}) == "http://127.0.0.1:8000"
    config.site = "https://stored.example"
    assert resolve_site(None, config, {}) == "https://stored.example"
    assert resolve_site(None, config, {"GPUCF_SITE": "http://env.example:8000/"}) == "http://env.example:8000"
    assert resolve_site("http://given.example/base/", config, {"GPUCF_SITE": "http://env.example"}) == \
        "http://given.example/base"


@pytest.mark.parametrize("bad", ["127.0.0.1:8000", "ftp://site.example", "http://", "", "http://a.example/?x=1"])
def test_what_is_no_site_address_is_a_usage_error(bad):
    with pytest.raises(outcomes.UsageError) as refused:
        normalize_site(bad)
    assert refused.value.exit_code == 2


def test_a_token_is_given_only_to_the_site_it_was_kept_for(tmp_path):
    config = Config(tmp_path / "c.json")
    config.tokens = {"http://mine.example": "mine"}
    assert resolve_token("http://mine.example", config, {}) == "mine"
    assert resolve_token("http://other.example", config, {}) is None
    assert resolve_token("http://other.example", config, {"GPUCF_TOKEN": "from-env"}) == "from-env"
