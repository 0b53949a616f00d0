"""Check that Qt's shared libraries load on this machine; install or name the missing Debian packages.

PySide6 wheels bundle Qt but not the system libraries Qt links against (EGL, fontconfig,
xkbcommon, the xcb family for a real window). A fresh Debian/Ubuntu often lacks some of them and
the bare ImportError names only one .so at a time, so we run ldd over the Qt libraries and the
platform plugin we are about to use, map every missing soname to its package, and install them
all at once when we are root with apt-get, or print the exact `apt-get install` line otherwise.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

SONAME_TO_PACKAGE = {
    "libEGL.so.1": "libegl1",
    "libGL.so.1": "libgl1",
    "libOpenGL.so.0": "libopengl0",
    "libGLX.so.0": "libglx0",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libfontconfig.so.1": "libfontconfig1",
    "libfreetype.so.6": "libfreetype6",
    "libdbus-1.so.3": "libdbus-1-3",
    "libglib-2.0.so.0": "libglib2.0-0",
    "libgthread-2.0.so.0": "libglib2.0-0",
    "libgobject-2.0.so.0": "libglib2.0-0",
    "libX11.so.6": "libx11-6",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libXext.so.6": "libxext6",
    "libXrender.so.1": "libxrender1",
    "libSM.so.6": "libsm6",
    "libICE.so.6": "libice6",
    "libxcb.so.1": "libxcb1",
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-render.so.0": "libxcb-render0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxcb-xinerama.so.0": "libxcb-xinerama0",
    "libxcb-shm.so.0": "libxcb-shm0",
    "libxcb-sync.so.1": "libxcb-sync1",
    "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libxcb-xinput.so.0": "libxcb-xinput0",
    "libxcb-util.so.1": "libxcb-util1",
    "libgssapi_krb5.so.2": "libgssapi-krb5-2",
}


def qt_root() -> Path | None:
    try:
        import PySide6
    except ImportError:
        return None
    return Path(PySide6.__file__).parent / "Qt"


def wants_window() -> bool:
    platform = os.environ.get("QT_QPA_PLATFORM", "")
    return platform in ("", "xcb") and bool(os.environ.get("DISPLAY"))


def libraries_to_check(root: Path) -> list[Path]:
    lib = root / "lib"
    names = ["libQt6Core.so.6", "libQt6Gui.so.6", "libQt6Widgets.so.6", "libQt6Svg.so.6"]
    found = [lib / n for n in names if (lib / n).exists()]
    plugins = root / "plugins" / "platforms"
    found.append(plugins / "libqoffscreen.so")
    if wants_window():
        found.append(plugins / "libqxcb.so")
        found.append(lib / "libQt6XcbQpa.so.6")
    return [p for p in found if p.exists()]


def dlopened_sonames() -> set[str]:
    """Libraries the xcb plugin opens at run time, which ldd cannot see."""
    import ctypes

    missing = set()
    for soname in ("libxcb-cursor.so.0",) if wants_window() else ():
        try:
            ctypes.CDLL(soname)
        except OSError:
            missing.add(soname)
    return missing


def missing_sonames(paths: list[Path]) -> set[str]:
    missing = dlopened_sonames()
    if not shutil.which("ldd"):
        return missing
    for path in paths:
        out = subprocess.run(["ldd", str(path)], capture_output=True, text=True).stdout
        missing.update(re.findall(r"^\s*(\S+) => not found", out, flags=re.M))
    return missing


def install(packages: list[str]) -> bool:
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return False
    print(f"installing Qt's system libraries: {' '.join(packages)}", flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], env=env, check=False)
    done = subprocess.run(["apt-get", "install", "-y", "-qq", *packages], env=env)
    return done.returncode == 0


def note_kernels() -> None:
    """Say so when the install built no compiled kernels (no C compiler): all works, slower."""
    try:
        from engine.layers import channel_norm, conv_direct, max_pool
    except Exception:  # the engine itself is checked by its own imports, not here
        return
    missing = [
        f"{what} (engine/native/{name}.c)"
        for library, name, knob, what in (
            (conv_direct, "direct_conv", "BARISTA_DIRECT_CONV", "the direct convolution kernels"),
            (channel_norm, "channel_norm", "BARISTA_CHANNEL_NORM", "the BatchNorm kernels"),
            (max_pool, "max_pool", "BARISTA_MAX_POOL", "the MAX pooling kernels"),
        )
        if not library.available() and os.environ.get(knob) != "0"
    ]
    if missing:
        print(
            f"note: {' and '.join(missing)} were not built, so those layers take the slower numpy/BLAS "
            "path; install a C compiler (e.g. apt-get install gcc) and run `make install` again",
            file=sys.stderr,
        )


def main() -> int:
    note_kernels()
    root = qt_root()
    if root is None:
        print("error: PySide6 is not installed in this environment; run `make install`", file=sys.stderr)
        return 2
    missing = missing_sonames(libraries_to_check(root))
    if not missing:
        return 0
    packages = sorted({SONAME_TO_PACKAGE.get(s, "") for s in missing} - {""})
    unknown = sorted(s for s in missing if s not in SONAME_TO_PACKAGE)
    if packages and install(packages):
        missing = missing_sonames(libraries_to_check(root))
        if not missing:
            return 0
    print("error: Qt cannot load; missing system libraries: " + ", ".join(sorted(missing)), file=sys.stderr)
    if packages:
        print(f"  install them with: sudo apt-get install {' '.join(packages)}", file=sys.stderr)
    if unknown:
        print(f"  no known package for {', '.join(unknown)}: try `apt-file search NAME`", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
