"""Free and fixed parameters: naming a model's numbers and building instances from vectors."""

from twinlens.model.paths import get_path, parameter_paths, set_paths

__all__ = ["get_path", "parameter_paths", "set_paths"]
