"""The feature front end (issue 14): a TOML spec -> generated C calling CMSIS-DSP, proven equal
to the `cmsisdsp` Python package that prepares training data (docs/frontend.md).

    spec.py       the TOML spec and its checks
    tables.py     window, mel filter and DCT tables, shared by host reference and generated C
    reference.py  features through `cmsisdsp` (bit-exact with the device), quantized to int8
    sources.py    where CMSIS-DSP's sources come from and which files a front end compiles
    render.py     the front end's C files and its figures for a bundle
    run.py        host / QEMU runs of a bundle's front end, compared with the reference
    cli.py        `mcugen features`, and --frontend / --audio / --features-ref of emit and verify
"""
from emitter.features.reference import compute_features, features_raw, stream_features
from emitter.features.spec import FrontendSpec, load_spec, parse_spec

__all__ = ["FrontendSpec", "compute_features", "features_raw", "load_spec", "parse_spec", "stream_features"]
