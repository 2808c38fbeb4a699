import os

from hypothesis import HealthCheck, settings

# Default run: enough examples to reach every special value, derandomised so CI is repeatable.
settings.register_profile(
    "default",
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
# tox -e slow: long, randomised runs.
settings.register_profile(
    "slow",
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("TWINLENS_HYPOTHESIS_PROFILE", "default"))
