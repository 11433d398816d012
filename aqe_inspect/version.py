"""The package's version, its one source: `aqe-inspect --version`, the wheel's metadata and
the release tag all read it."""

__version__ = "0.1.0"
