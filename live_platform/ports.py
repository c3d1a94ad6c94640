"""A free local TCP port, for a site, a Redis or a proxy of a run's own.

    python -m live_platform.ports      # prints one (scripts/lib.sh)
"""
import socket


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    print(free_port())
