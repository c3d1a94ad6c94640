"""gpucf: GPU CodeForces from the terminal. Submit a bundle, follow its judging, read verdicts, lists and
leaderboards through the site's public API with a personal token.

It is the standard library only and never imports the site or the agent (an import contract in
pyproject.toml holds it): a contestant installs it without Django or torch.

    cli          the command line: parsing, dispatch, exit codes
    commands     what each command does
    watching     following a submission until its verdict
    api          the HTTP client of the site's API (/api/v1/)
    multipart    the multipart/form-data body of an upload
    bundles      a bundle folder zipped in memory, or a .zip read
    config       where the site and its token are kept
    render       tables and lines for people
    outcomes     exit codes and the errors that carry them
"""
__version__ = "0.1.0"
