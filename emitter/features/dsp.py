"""The `cmsisdsp` Python package (CMSIS-DSP's own C functions, the front end's host reference),
imported in one place: a missing or broken install is one exit-3 message (a missing tool,
docs/ci.md) saying how to install it, never a traceback."""
from __future__ import annotations

from types import ModuleType

from emitter.errors import ToolchainError
from emitter.features.sources import VERSION

PIP_REQUIREMENT = f"cmsisdsp=={VERSION}"


def cmsisdsp() -> ModuleType:
    """The `cmsisdsp` package with the submodules the front end uses (datatype, mfcc) loaded."""
    try:
        import cmsisdsp as dsp
        import cmsisdsp.datatype
        import cmsisdsp.mfcc  # noqa: F401  (loaded for dsp.mfcc)
    except ImportError as exc:  # ModuleNotFoundError, or a build that does not load
        why = "is not installed" if isinstance(exc, ModuleNotFoundError) else f"cannot be imported ({exc})"
        raise ToolchainError(
            f"the feature front end computes its reference features with the Python package `cmsisdsp` "
            f"(CMSIS-DSP's Python API, release {VERSION}, the one its C sources are tested with), and it "
            f"{why}: install it with\n"
            f"    python -m pip install {PIP_REQUIREMENT}\n"
            f"(it is one of mcugen's dependencies: `python -m pip install mcugen` or `pip install .` in a "
            f"checkout installs it)") from None
    return dsp
