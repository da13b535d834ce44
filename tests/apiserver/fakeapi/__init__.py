"""The strict local Kubernetes API server stand-in used by flexcsi's tests (see ../README.md)."""
