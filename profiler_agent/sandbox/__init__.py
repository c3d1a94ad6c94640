"""The sandbox: running one untrusted command in its own session with rlimits, a cgroup, an
allowlisted environment, an unprivileged uid where possible, capped logs, and every descendant reaped."""
