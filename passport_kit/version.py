"""The package version, in one place (imported by the package face and by every writer that records it)."""

__version__ = "0.1.0"
