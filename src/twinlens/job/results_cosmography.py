"""The results of a time-delay cosmography fit (``[cosmography]``, ``[kinematics]``): ``H0``
and ``D_dt`` from the samples, the predicted against the measured dispersions, and
``kinematics.png``.

The predicted dispersions are evaluated at up to :data:`N_PREDICTED` equal-weight samples
(each a Jeans integral) and at the maximum-likelihood point.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["N_PREDICTED", "cosmography_derived", "plot_kinematics", "predicted_dispersions"]

#: the samples at which the predicted dispersions' posterior is evaluated
N_PREDICTED = 200


def _column(model: Any, samples: np.ndarray, path: str) -> np.ndarray:
    """A parameter's samples, or its fixed value repeated."""
    if path in model.paths:
        return samples[:, model.paths.index(path)]
    return np.full(len(samples), float(model.value(path)))


def predicted_dispersions(config: Any, vectors: np.ndarray) -> np.ndarray:
    """The model's dispersions, km/s, ``(n_vectors, n_bins)``, at parameter ``vectors``."""
    model, kin = config.model, config.cosmography.kinematics
    out = []
    for v in np.atleast_2d(vectors):
        cosmography = model.part_instance("cosmography", v)
        anisotropy = model.part_instance("kinematics", v)
        predicted = kin.predicted(model.instance(v), cosmography, anisotropy, "numba")
        out.append(np.asarray(predicted, dtype=float))
    return np.array(out)


def cosmography_derived(
    config: Any, result: Any, stats: Any, point: bool
) -> tuple[dict[str, Any], np.ndarray]:
    """``H0``, ``D_dt`` and the dispersions' records for ``derived``, and the ``H0``
    samples; ``stats(values, point, definition)`` makes a record."""
    model, samples = config.model, result.samples
    cosmography = model.cosmography
    h0 = _column(model, samples, "cosmography.h0")
    om = _column(model, samples, "cosmography.omega_m")
    from twinlens.cosmology import flat_lcdm_distances

    d_d, d_s, d_ds = flat_lcdm_distances(cosmography.z_lens, cosmography.z_source, h0, om)
    d_dt = (1.0 + cosmography.z_lens) * d_d * d_s / d_ds
    derived: dict[str, Any] = {
        "h0": stats(h0, point, "H0 of flat LambdaCDM, sampled directly, km/s/Mpc"),
        "time_delay_distance": stats(
            d_dt,
            point,
            "time-delay distance D_dt = (1 + z_d) D_d D_s / D_ds of the sampled "
            "cosmology (the delays see lambda_int (1 - kappa_ext) times it), Mpc",
        ),
    }
    kin = config.cosmography.kinematics
    if kin is not None:
        rng = np.random.default_rng(0)
        pick = rng.choice(len(samples), min(N_PREDICTED, len(samples)), replace=False)
        draws = predicted_dispersions(config, samples[pick])
        best = predicted_dispersions(config, result.max_likelihood)[0]
        error = np.sqrt(np.diag(np.asarray(kin.covariance)))
        derived["velocity_dispersion"] = [
            {
                "measured": kin.sigma[i],
                "error": float(error[i]),
                "predicted": stats(draws[:, i], point, "the model's dispersion, km/s"),
                "predicted_max_likelihood": float(best[i]),
            }
            for i in range(len(kin.sigma))
        ]
    return derived, h0


def dispersion_lines(derived: dict[str, Any]) -> list[str]:
    """summary.txt's lines of the measured and predicted dispersions."""
    lines = []
    for i, record in enumerate(derived.get("velocity_dispersion", ())):
        p = record["predicted"]
        interval = ""
        if p["lower_68"] is not None:
            interval = f" +{p['upper_68'] - p['median']:.3g} -{p['median'] - p['lower_68']:.3g}"
        lines.append(
            f"velocity dispersion {i}: measured {record['measured']:.4g} +- "
            f"{record['error']:.3g} km/s, predicted {p['median']:.4g}{interval} km/s (68%)\n"
        )
    return lines


def plot_kinematics(config: Any, result: Any, derived: dict[str, Any], path: str | Path) -> Path:
    """Two panels: each bin's measured dispersion with its error against the predicted
    median and 68% interval; ``H0`` against ``lambda_int`` (or ``kappa_ext``), the samples
    that show the mass-sheet degeneracy the dispersion breaks."""
    from twinlens.job.plots import _pyplot

    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), constrained_layout=True)
    ax = axes[0]
    records = derived.get("velocity_dispersion", [])
    x = np.arange(len(records))
    measured = [r["measured"] for r in records]
    ax.errorbar(x, measured, [r["error"] for r in records], fmt="o", color="k", label="measured")
    med = np.array([r["predicted"]["median"] for r in records])
    lo = [r["predicted"]["lower_68"] for r in records]
    hi = [r["predicted"]["upper_68"] for r in records]
    if all(v is not None for v in (*lo, *hi)):
        ax.errorbar(x + 0.1, med, [med - np.array(lo), np.array(hi) - med], fmt="s", color="C1",
                    label="predicted (68%)")  # fmt: skip
    else:
        ax.plot(x + 0.1, med, "s", color="C1", label="predicted")
    ax.set_xticks(x)
    ax.set_xlim(-0.5, len(records) - 0.4)
    ax.set_xlabel("aperture / bin")
    ax.set_ylabel("velocity dispersion [km/s]")
    ax.legend(fontsize=8)
    ax = axes[1]
    model, samples = config.model, result.samples
    h0 = _column(model, samples, "cosmography.h0")
    other = "cosmography.lambda_int"
    if other not in model.paths and "cosmography.kappa_ext" in model.paths:
        other = "cosmography.kappa_ext"
    ax.plot(_column(model, samples, other), h0, ".", ms=2, alpha=0.4, color="C0")
    ax.set_xlabel(other.split(".")[1])
    ax.set_ylabel("H0 [km/s/Mpc]")
    ax.set_title("H0 against the mass sheet")
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return Path(path)
