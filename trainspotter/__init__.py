"""trainspotter: diagnose what went wrong in a training run from the log it already writes.

The flow runs one way: readers -> `Run` -> detectors -> findings -> reports -> front ends.
"""

__version__ = "0.1.0"
