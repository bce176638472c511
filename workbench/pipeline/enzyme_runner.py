"""enzyme-ad's pass runner, loaded without the jax that its package imports."""
from __future__ import annotations

import functools
import os

__all__ = ["enzyme_call"]


@functools.cache
def enzyme_call():
    """enzyme-ad's pass runner: its extension module ``enzyme_ad.jax.enzyme_call``, loaded alone.

    ``import enzyme_ad.jax`` runs the package's ``__init__``, which imports jax for enzyme-ad's JAX
    primitives: 2 s of CPU and a few hundred MB that running passes never needs. The extension links
    MLIR and Enzyme-JaX's passes in (it needs no other library), so it is loaded from its file, in
    0.03 s, under its own name: a later ``import enzyme_ad.jax`` in the same process finds it in
    ``sys.modules`` and uses the same module. Where the file is not found, the package import."""
    import importlib.machinery
    import importlib.util
    import sys

    name = "enzyme_ad.jax.enzyme_call"
    if name in sys.modules:
        return sys.modules[name]
    top = importlib.util.find_spec("enzyme_ad")
    for folder in (top.submodule_search_locations or []) if top else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, "jax", "enzyme_call" + suffix)
            if os.path.isfile(path):
                spec = importlib.util.spec_from_file_location(name, path)
                module = importlib.util.module_from_spec(spec)
                sys.modules[name] = module
                try:
                    spec.loader.exec_module(module)
                except BaseException:
                    del sys.modules[name]
                    raise
                return module
    from enzyme_ad.jax import enzyme_call as module  # a layout this does not know: the package's own import

    return module
