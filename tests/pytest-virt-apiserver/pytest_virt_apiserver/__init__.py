"""A virt-apiserver for pytest: see plugin.py for the fixtures and server.py for the binary's contract."""

from pytest_virt_apiserver.server import Server, start

__all__ = ["Server", "start"]
