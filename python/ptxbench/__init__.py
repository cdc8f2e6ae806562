"""ptxbench from Python: the evaluation service's client, run-folder and store readers, and a
small JSON Schema validator for the repository's schemas. Standard library only."""

from .client import Client, HTTPError, ServiceError, Unreachable, WaitTimeout
from .runs import RunFolder, Trajectory, find_runs
from .store import Store, StoreError
from . import schema

__version__ = "0.1.0"
__all__ = ["Client", "HTTPError", "ServiceError", "Unreachable", "WaitTimeout", "RunFolder",
           "Trajectory", "find_runs", "Store", "StoreError", "schema"]
