# lit configuration of mlcc's text tests: each file under tests/lit/<tool>/
# holds RUN lines that drive the public tools and FileCheck lines that say
# what the output must show. Run through the build directory's site config
# (written by CMake), which names the tools' directory:
#   python3 /usr/lib/llvm-19/build/utils/lit/lit.py -sv build/release/tests/lit
import os

import lit.formats

config.name = "mlcc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".ir", ".sched", ".yaml", ".test"]
# Inputs that RUN lines read but that are not tests themselves.
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py.in", "CMakeLists.txt", "README.md"]

if not hasattr(config, "mlcc_bin_dir"):
    lit_config.fatal(
        "run lit on the build directory's copy of the suite "
        "(build/release/tests/lit/...), which names the tools; not on the source tree"
    )

config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = config.mlcc_obj_root

# The tools first on PATH, then LLVM's FileCheck, not, count and split-file.
config.environment["PATH"] = os.pathsep.join(
    [config.mlcc_bin_dir, config.llvm_tools_dir, config.environment.get("PATH", os.environ.get("PATH", ""))]
)
# Stable output: no progress bars, no colours.
config.environment["TERM"] = "dumb"

tools = [
    "mlcc-import",
    "mlcc-fuse",
    "mlcc-legalize",
    "mlcc-schedule",
    "mlcc-codegen",
    "mlcc-link",
    "mlcc-run",
    "mlcc-pipeline",
    "mlcc-inspect",
]
for tool in tools:
    path = os.path.join(config.mlcc_bin_dir, tool)
    if not os.path.exists(path):
        lit_config.fatal("%s is not built (looked in %s)" % (tool, config.mlcc_bin_dir))
    config.available_features.add(tool)

for llvm_tool in ["FileCheck", "not", "count", "split-file"]:
    path = os.path.join(config.llvm_tools_dir, llvm_tool)
    if not os.path.exists(path):
        lit_config.fatal("%s not found in %s (Debian package llvm-19-tools)" % (llvm_tool, config.llvm_tools_dir))

# %python: the Debian python3 with numpy and onnx (tests/models use it too).
config.substitutions.append(("%python", config.python_executable))
# %mlcc_src: the source tree (shared inputs such as pipelines/ and tests/ir).
config.substitutions.append(("%mlcc_src", config.mlcc_source_dir))

# Features RUN lines may REQUIRE: the Python modules some tests build inputs with.
import subprocess

for module in ["numpy", "onnx"]:
    if subprocess.call([config.python_executable, "-c", "import " + module],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0:
        config.available_features.add("python-" + module)
