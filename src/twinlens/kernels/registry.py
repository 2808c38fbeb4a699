"""The kernel registry: every piece of math, its backends, its argument domains, its tolerance.

A :class:`Kernel` is one piece of math. Usually it is written once, as a per-point function
(see :mod:`twinlens.kernels.ops`), and its numba, JAX and numpy implementations are derived from
that one source. Where one source cannot serve, ``impls`` supplies a backend's implementation
by hand, with the reason beside it.

Every registered kernel is agreement-tested across backends by one generic property test and
by ``twinlens validate``, over inputs drawn from its argument domains, degenerate values
included.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

from twinlens.backend import BACKENDS, jax_runtime, resolve_backend
from twinlens.backend.numba_runtime import read_only
from twinlens.kernels.domains import Arg, Domain
from twinlens.kernels.tolerance import Tolerance

_REGISTRY: dict[str, Kernel] = {}


@dataclass(frozen=True, eq=False)
class Kernel:
    """One piece of math with an implementation per backend.

    Parameters
    ----------
    name
        Registry name, ``"module.function"``.
    point
        The per-point source function ``point(*inputs, *params)``, returning one value or a
        tuple of ``len(outputs)`` values. ``None`` when every backend is given in ``impls``.
    inputs
        Per-point array arguments (broadcast together).
    params
        Scalar arguments shared by all points.
    outputs
        Names of the outputs.
    tol
        Agreement tolerance between backends (against the numpy reference).
    impls
        Hand-written implementations by backend name, overriding the derived ones. Each takes
        ``(*inputs, *params)`` with inputs as flat arrays and returns a tuple of arrays.
    ties
        Pairs ``(input, param)`` that input generation sets equal on purpose for some points
        (a point exactly on the profile centre).
    dtype, input_dtype
        Output and input dtypes on the numba and numpy backends.
    components
        The number of trailing params that are arrays of components (the sigmas and peak
        convergences of a multi-Gaussian expansion): ``point`` takes one component's scalars and
        the kernel returns the sum over components, on every backend.
    batched_numba
        For a kernel whose numba implementation is in ``impls``: its hand-written loop over a
        batch of parameter sets, ``(n_batch, n_per, *inputs, *params)`` with the inputs flat
        (shared, ``n_per``, or one block per member) and each param ``(n_batch,)``, returning
        flat outputs ``(n_batch * n_per,)``. The same numbers as the members one by one, at one
        call for the whole batch; None runs the members one by one.
    point_from
        Where generated numba code finds ``point`` in its module when it is not a module-level
        name (a point function made in a loop): an attribute path from the module, such as
        ``"ELLIPTICAL[4]['deflections'].point"``. Empty for module-level functions.
    atol_scale
        Optional function of the params, called with them by name, giving the factor that
        multiplies ``tol.atol`` (the natural size of the outputs, e.g. ``lambda kappa0, sigma,
        **_: kappa0 * sigma`` for a deflection), so that the absolute floor means the same for
        every parameter value.
    """

    name: str
    point: Callable[..., Any] | None
    inputs: tuple[Arg, ...]
    params: tuple[Arg, ...]
    outputs: tuple[str, ...]
    tol: Tolerance = field(default_factory=Tolerance)
    impls: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    ties: tuple[tuple[str, str], ...] = ()
    dtype: str = "float64"
    input_dtype: str = "float64"
    doc: str = ""
    atol_scale: Callable[..., float] | None = None
    components: int = 0
    point_from: str = ""
    batched_numba: Callable[..., Any] | None = None
    _built: dict = field(default_factory=dict, repr=False)
    #: what the code generator recognises a kernel by (it does not import this module)
    is_kernel: ClassVar[bool] = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "impls", MappingProxyType(dict(self.impls)))
        unknown = set(self.impls) - set(BACKENDS)
        if unknown:
            raise ValueError(f"kernel {self.name}: unknown backends {sorted(unknown)}")
        if not self.inputs:
            raise ValueError(f"kernel {self.name}: needs at least one per-point input")
        names = [a.name for a in (*self.inputs, *self.params)]
        for inp, par in self.ties:
            if inp not in names or par not in names:
                raise ValueError(f"kernel {self.name}: tie ({inp}, {par}) names no argument")

    def tolerance_for(self, args: list | tuple) -> Tolerance:
        """The tolerance for one set of arguments (``tol`` with ``atol`` scaled by
        ``atol_scale(**params)``, the params by name)."""
        if self.atol_scale is None:
            return self.tol
        named = zip((p.name for p in self.params), args[len(self.inputs) :], strict=True)
        factor = float(self.atol_scale(**dict(named)))
        return dataclasses.replace(self.tol, atol=self.tol.atol * factor)

    @property
    def backends(self) -> tuple[str, ...]:
        """Backends this kernel can run on."""
        if self.point is not None:
            return BACKENDS
        return tuple(b for b in BACKENDS if b in self.impls)

    def implementation(self, backend: str) -> Callable[..., Any]:
        """The callable for one backend, built on first use."""
        if backend in self._built:
            return self._built[backend]
        if backend in self.impls:
            fn = self.impls[backend]
        elif self.point is None:
            raise NotImplementedError(f"kernel {self.name} has no {backend} implementation")
        elif backend == "numba":
            from twinlens.kernels.compile import numba_loop

            fn = numba_loop(self)
        elif backend == "jax":
            from twinlens.kernels.compile import jax_function

            fn = jax_function(self)
        else:
            fn = self._numpy_call
        self._built[backend] = fn
        return fn

    def _numpy_call(self, *args: Any) -> tuple[np.ndarray, ...]:
        if not self.components:
            return self._numpy_point(*args)
        head, comps = args[: -self.components], args[-self.components :]
        total = None
        for values in zip(*comps, strict=True):
            out = self._numpy_point(*head, *values)
            total = out if total is None else tuple(t + o for t, o in zip(total, out, strict=True))
        if total is None:  # profiles refuse empty expansions; a direct call is told why
            raise ValueError(f"{self.name}: the component arrays are empty; nothing to sum")
        return total

    def _numpy_point(self, *args: Any) -> tuple[np.ndarray, ...]:
        with np.errstate(all="ignore"):
            out = self.point(*args)  # type: ignore[misc]
        return (out,) if len(self.outputs) == 1 else tuple(out)

    def __call__(self, *args: Any, backend: str | None = None) -> Any:
        """Evaluate on arrays; returns one array, or a tuple of arrays for several outputs.

        ``args`` are the inputs (arrays of any broadcastable shapes) followed by the params.
        """
        n_in, n_par = len(self.inputs), len(self.params)
        if len(args) != n_in + n_par:
            names = ", ".join(a.name for a in (*self.inputs, *self.params))
            raise TypeError(f"{self.name}({names}) takes {n_in + n_par} arguments, got {len(args)}")
        backend = resolve_backend(backend, *args)
        if backend == "jax":
            jax_runtime.check_precision(args)
            out = self.implementation("jax")(*args)
        elif self.is_batched(args[n_in:]):
            out = self._batched_call(backend, args[:n_in], args[n_in:])
        else:
            ins = np.broadcast_arrays(*(np.asarray(a, dtype=self.input_dtype) for a in args[:n_in]))
            shape = ins[0].shape
            flat = [np.ascontiguousarray(a).reshape(-1) for a in ins]
            if backend == "numba":
                flat = [read_only(a) for a in flat]
            pars = [_param(p, self.input_dtype) for p in args[n_in:]]
            raw = self.implementation(backend)(*flat, *pars)
            out = tuple(
                np.broadcast_to(np.asarray(o, dtype=self.dtype), flat[0].shape).reshape(shape)
                for o in raw
            )
        return out[0] if len(self.outputs) == 1 else out

    def is_batched(self, pars: tuple) -> bool:
        """A scalar param given as an array (one value per batch member), or component params
        given per member ``(n_batch, K)``: the call evaluates a batch of parameter sets."""
        n_fixed = len(self.params) - self.components
        return any(np.ndim(p) > 0 for p in pars[:n_fixed]) or any(
            np.ndim(c) > 1 for c in pars[n_fixed:]
        )

    def _batched_call(self, backend: str, ins: tuple, pars: tuple) -> tuple[np.ndarray, ...]:
        """Evaluate ``n_batch`` parameter sets on numpy or numba; outputs ``(n_batch, n)``.

        Scalar params are scalars or ``n_batch`` values (any shape, e.g. ``(n_batch, 1)``);
        component params ``(K,)`` or ``(n_batch, K)``; inputs ``(n,)`` shared by every member or
        ``(n_batch, n)`` one row per member.
        """
        dtype = self.input_dtype
        n_fixed = len(self.params) - self.components
        try:
            n_batch, fixed, comps = batch_params(pars[:n_fixed], pars[n_fixed:], dtype)
        except ValueError as err:
            raise ValueError(f"{self.name}: {err}") from None
        arrays = np.broadcast_arrays(*(np.asarray(a, dtype) for a in ins))
        shape = arrays[0].shape
        if len(shape) <= 1 or (len(shape) == 2 and shape[0] == 1):
            n_per = int(np.prod(shape[-1:], dtype=int)) if shape else 1
            flat = [np.ascontiguousarray(a).reshape(-1) for a in arrays]
        elif len(shape) == 2 and shape[0] == n_batch:
            n_per = shape[1]
            flat = [np.ascontiguousarray(a).reshape(-1) for a in arrays]
        else:
            raise ValueError(
                f"{self.name}: for a batch of {n_batch} parameter sets the inputs must have shape "
                f"(n,) or ({n_batch}, n), got {shape}"
            )
        if backend == "numba":
            flat = [read_only(a) for a in flat]
        if "numba" in self.impls and backend == "numba" and self.batched_numba is not None:
            raw = self.batched_numba(n_batch, n_per, *flat, *fixed, *comps)
            return tuple(np.asarray(o, self.dtype).reshape(n_batch, n_per) for o in raw)
        if "numba" in self.impls:
            # A hand-written kernel sets up from scalar params (the power law picks its series
            # length from the ellipticity), on numba and in its numpy point function alike: its
            # members run one by one.
            impl = self.implementation("numba") if backend == "numba" else self._numpy_call
            per_member = len(flat[0]) != n_per
            rows = [
                impl(
                    *(a[b * n_per : (b + 1) * n_per] if per_member else a for a in flat),
                    *(p[b] for p in fixed),
                    *(c[b] for c in comps),
                )
                for b in range(n_batch)
            ]
            return tuple(
                np.stack([np.asarray(r[k], self.dtype) for r in rows]).reshape(n_batch, n_per)
                for k in range(len(self.outputs))
            )
        if backend == "numba":
            if "numba_batched" not in self._built:
                from twinlens.kernels.compile import numba_batched_loop

                self._built["numba_batched"] = numba_batched_loop(self)
            raw = self._built["numba_batched"](n_batch, n_per, *flat, *fixed, *comps)
            return tuple(np.asarray(o, self.dtype).reshape(n_batch, n_per) for o in raw)
        # numpy: the point function broadcasts (n_batch, 1) params against the inputs
        x_in = [a.reshape(-1, n_per) for a in flat]
        col = [p[:, None] for p in fixed]
        if not self.components:
            raw = self._numpy_point(*x_in, *col)
        else:
            raw = None
            for k in range(comps[0].shape[1]):
                part = self._numpy_point(*x_in, *col, *(c[:, k : k + 1] for c in comps))
                raw = part if raw is None else tuple(t + o for t, o in zip(raw, part, strict=True))
        return tuple(
            np.broadcast_to(np.asarray(o, self.dtype), (n_batch, n_per)).copy() for o in raw
        )


def batch_params(
    scalars: Sequence[Any], components: Sequence[Any], dtype: str = "float64"
) -> tuple[int, list[np.ndarray], list[np.ndarray]]:
    """``(n_batch, scalar_arrays, component_arrays)``: scalar params as ``(n_batch,)`` arrays
    (a scalar is repeated) and component params as ``(n_batch, K)``; ``n_batch`` is the one
    batch size the params agree on (1 when none has a batch axis).

    Every array is a writeable C-contiguous copy. numba compiles a loop again for each
    combination of read-only and writeable arguments, and a broadcast view is read-only: an
    unbroadcast param passed on as a view made the same fused loop compile up to three times
    as its members turned batched or not."""
    sizes = {int(np.size(p)) for p in scalars if np.ndim(p) > 0}
    sizes |= {int(np.shape(c)[0]) for c in components if np.ndim(c) > 1}
    sizes.discard(1)
    if len(sizes) > 1:
        raise ValueError(f"batched params disagree on the batch size: {sorted(sizes)}")
    n_batch = sizes.pop() if sizes else 1
    scalar_arrays = [
        np.array(np.broadcast_to(np.asarray(p, dtype).reshape(-1), (n_batch,)), order="C")
        for p in scalars
    ]
    component_arrays = []
    for c in components:
        c2 = np.atleast_2d(np.asarray(c, dtype))
        component_arrays.append(np.array(np.broadcast_to(c2, (n_batch, c2.shape[-1])), order="C"))
    return n_batch, scalar_arrays, component_arrays


def _param(value: Any, dtype: str) -> Any:
    # Scalars become numpy scalars; array parameters become writeable contiguous copies, since
    # numba compiles a separate loop for read-only arrays (profiles store read-only ones).
    arr = np.asarray(value, dtype=dtype)
    return arr[()] if arr.ndim == 0 else np.array(arr, dtype=dtype, order="C")


@dataclass(frozen=True, eq=False)
class KernelCall:
    """What a profile computes: one kernel and the parameters the profile binds to it.

    Calling it with positions evaluates the kernel; code above the profiles (the fused loop of
    :mod:`twinlens.lensing.fused`) reads ``kernel`` and ``params`` to compile the profile into a
    larger loop. ``params`` are the kernel's ``params`` in order, as the profile holds them
    (floats, JAX tracers, :class:`~twinlens.backend.concrete.Batched` columns or arrays).
    """

    kernel: Kernel
    params: tuple

    def __call__(self, x: Any, y: Any, backend: str | None = None) -> Any:
        """The kernel at coordinate arrays ``x``, ``y`` with the bound parameters."""
        return self.kernel(x, y, *self.params, backend=backend)


def numba_by_form(
    choose: Callable[..., tuple[Kernel, tuple]], n_shape: int
) -> Callable[..., tuple[np.ndarray, ...]]:
    """The numba implementation of a kernel that blends exact forms point by point for traced
    parameters (JAX's case): on numba every parameter is concrete, so the form is chosen once
    per call and its own kernel runs. Same math, and nothing more to compile than the forms'
    kernels, where the blended point function is every form fused by ``where``.

    The kernel's arguments are ``x, y, centre_x, centre_y``, then ``n_shape`` shape parameters,
    then the rest; ``choose(*shape)`` (floats) returns the form's kernel and the shape
    parameters it takes in their place.
    """

    def run(x: Any, y: Any, centre_x: Any, centre_y: Any, *params: Any) -> tuple:
        kernel, shape = choose(*(float(p) for p in params[:n_shape]))
        out = kernel(x, y, centre_x, centre_y, *shape, *params[n_shape:], backend="numba")
        return out if isinstance(out, tuple) else (out,)

    return run


def register(kernel: Kernel) -> Kernel:
    """Add ``kernel`` to the registry (its name must be new) and return it."""
    existing = _REGISTRY.get(kernel.name)
    if existing is not None and existing is not kernel:
        raise ValueError(f"a kernel named {kernel.name!r} is already registered")
    _REGISTRY[kernel.name] = kernel
    return kernel


#: the ties of most kernels: some points exactly on the profile's centre
CENTRE_TIES: tuple[tuple[str, str], ...] = (("x", "centre_x"), ("y", "centre_y"))


@dataclass(frozen=True)
class KernelFamily:
    """What the kernels of one module share, so that each of them is registered by one call
    to :meth:`register`.

    Parameters
    ----------
    prefix
        The registry names' prefix: a kernel ``name`` registers as ``"prefix.name"``.
    xy
        The domain of the per-point inputs ``x`` and ``y``.
    ties
        As :class:`Kernel`'s (default: points on ``(centre_x, centre_y)``).
    params, tol, atol_scale
        The defaults of :meth:`register`'s arguments of those names.
    """

    prefix: str
    xy: Domain
    ties: tuple[tuple[str, str], ...] = CENTRE_TIES
    params: tuple[Arg, ...] = ()
    tol: Tolerance = field(default_factory=Tolerance)
    atol_scale: Callable[..., float] | None = None
    #: the kernels registered through this family, in order
    kernels: list[Kernel] = field(default_factory=list, init=False, compare=False, repr=False)

    def register(
        self,
        name: str,
        point: Callable[..., Any],
        outputs: tuple[str, ...],
        *,
        params: tuple[Arg, ...] | None = None,
        tol: Tolerance | None = None,
        atol_scale: Callable[..., float] | None = None,
        impls: Mapping[str, Callable[..., Any]] | None = None,
        doc: str | None = None,
        components: int = 0,
        point_from: str = "",
        batched_numba: Callable[..., Any] | None = None,
    ) -> Kernel:
        """Register the kernel ``prefix.name`` of ``point`` on inputs ``(x, y)`` and return it.

        Parameters
        ----------
        name : str
            The name within the family.
        point : callable
            The per-point source function (see :class:`Kernel`).
        outputs : tuple of str
            Names of the outputs.
        params, tol, atol_scale : optional
            As :class:`Kernel`'s; None takes the family's.
        impls, components, point_from, batched_numba : optional
            As :class:`Kernel`'s.
        doc : str, optional
            Default: ``point``'s docstring.

        Returns
        -------
        Kernel
        """
        kernel = register(
            Kernel(
                name=f"{self.prefix}.{name}",
                point=point,
                inputs=(Arg("x", self.xy), Arg("y", self.xy)),
                params=self.params if params is None else params,
                outputs=outputs,
                tol=self.tol if tol is None else tol,
                impls=impls or {},
                ties=self.ties,
                doc=(point.__doc__ or "") if doc is None else doc,
                atol_scale=self.atol_scale if atol_scale is None else atol_scale,
                components=components,
                point_from=point_from,
                batched_numba=batched_numba,
            )
        )
        self.kernels.append(kernel)
        return kernel

    def variant(
        self,
        *,
        params: tuple[Arg, ...] | None = None,
        tol: Tolerance | None = None,
        atol_scale: Callable[..., float] | None = None,
    ) -> KernelFamily:
        """The same family with other defaults (None keeps this one's): its kernels join this
        family's list (:meth:`by_form` of either lists both)."""
        other = dataclasses.replace(
            self,
            params=self.params if params is None else params,
            tol=self.tol if tol is None else tol,
            atol_scale=self.atol_scale if atol_scale is None else atol_scale,
        )
        object.__setattr__(other, "kernels", self.kernels)  # one list (a frozen field, set once)
        return other

    def by_form(self) -> dict[tuple[str, str], Kernel]:
        """``{(quantity, form): kernel}`` for the kernels registered so far, named
        ``quantity_form`` (``deflections_spherical``) in the order registered; a name without a
        form (``deflections``) is the ``traced`` form, the one that takes any parameters, JAX
        tracers included."""
        table = {}
        for kernel in self.kernels:
            quantity, _, form = kernel.name.removeprefix(f"{self.prefix}.").partition("_")
            table[quantity, form or "traced"] = kernel
        return table


def unregister(name: str) -> None:
    """Remove a kernel (for tests that register throwaway kernels)."""
    _REGISTRY.pop(name, None)


def get(name: str) -> Kernel:
    """The kernel registered as ``name`` (for listings and tests; code refers to the module
    constants, e.g. :data:`twinlens.kernels.isothermal.DEFLECTIONS_ELLIPTICAL`)."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"no kernel named {name!r}; registered: {sorted(_REGISTRY)}") from None


def all_kernels() -> list[Kernel]:
    """Every registered kernel, by name."""
    import twinlens.kernels  # noqa: F401  (importing the package registers the built-in kernels)

    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


def sample_arguments(
    kernel: Kernel, rng: np.random.Generator, n_points: int, params: dict | None = None
) -> list[Any]:
    """Arguments for one evaluation: ``params`` (drawn from their domains when not given,
    specials on purpose), ``n_points`` per-point inputs with every special value among them,
    and the kernel's ties applied to about a tenth of the points."""
    pars = params if params is not None else {p.name: p.draw(rng) for p in kernel.params}
    ins = {a.name: rng.permutation(a.domain.sample(rng, n_points)) for a in kernel.inputs}
    tied = rng.random(n_points) < 0.1
    for inp, par in kernel.ties:
        if inp in ins and par in pars:
            ins[inp][tied] = pars[par]
    return [ins[a.name] for a in kernel.inputs] + [pars[p.name] for p in kernel.params]


def parameter_cases(kernel: Kernel, rng: np.random.Generator, n_random: int) -> list[dict]:
    """Param sets to validate: each special value of each param once (the others random),
    then ``n_random`` draws that mix specials and random values.

    Scalar params are Python floats in every case: JAX compiles a program per combination of
    argument types, and a numpy float (strongly typed to JAX) among Python ones (weakly typed)
    would compile each kernel once per param instead of once."""
    cases = []
    for p in kernel.params:
        if p.size is not None:
            continue  # array parameters always include their specials
        for s in p.domain.specials:
            case = {
                q.name: q.draw(rng) if q.size else float(q.domain.uniform(rng, 1)[0])
                for q in kernel.params
            }
            case[p.name] = float(s)
            cases.append(case)
    cases += [{q.name: q.draw(rng) for q in kernel.params} for _ in range(n_random)]
    return cases or [{}]
