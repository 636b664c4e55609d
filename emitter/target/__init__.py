"""Build and run generated bundles: host gcc, arm-none-eabi-gcc + QEMU (SConstruct, mcu_runtime/)."""
from __future__ import annotations

from emitter.target.firmware import Firmware, build_firmware, build_host
from emitter.target.qemu import QemuRun, build_plugin, run_qemu
from emitter.target.toolchain import find_tool, missing_tools

__all__ = ["Firmware", "QemuRun", "build_firmware", "build_host", "build_plugin", "find_tool",
           "missing_tools", "run_qemu"]
