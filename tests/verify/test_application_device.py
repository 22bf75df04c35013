"""``{device}``: the application, embedding and resume commands are told the platform's
torch device (issue 26, item 6), and a placeholder lockkit does not know is one line
naming the key.

The application step runs here with this interpreter (the command needs no torch), on
the shipped platforms: what the command was told is what it wrote.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

import pytest

from lockkit.cli import main
from lockkit.config.checks.embedding import EmbeddingConfig
from lockkit.config.project import load_project
from lockkit.errors import ConfigError
from lockkit.platforms.definitions import load_platforms
from lockkit.steps.context import Options, Run, torch_device
from lockkit.steps.engine import Step, Steps
from lockkit.verify.checks.application.step import app_step
from lockkit.verify.run import PLAN

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "embeddings"
DEVICES = {"linux-cpu": "cpu", "linux-cpu-aarch64": "cpu", "linux-cu126": "cuda:0",
           "linux-cu130": "cuda:0", "linux-rocm64": "cuda:0", "linux-xpu": "xpu:0",
           "windows-xpu": "xpu:0", "macos-arm64": "mps"}


@pytest.mark.parametrize(("platform", "device"), sorted(DEVICES.items()))
def test_each_shipped_platform_names_its_torch_device(tmp_path, platform, device):
    """ROCm's torch answers to torch.cuda, so its platforms run on cuda:0 too."""
    opts = Options(project=load_project(tmp_path), platform=load_platforms(None)[platform])
    assert opts.device == device == torch_device(opts.platform.gpu_device)


APP = '''\
import json, os, sys
os.makedirs("out", exist_ok=True)
with open("out/run.json", "w") as fh:
    json.dump({"device": sys.argv[sys.argv.index("--device") + 1]}, fh)
'''


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def app_run(root: Path, platform: str) -> tuple[Run, Step]:
    opts = Options(project=load_project(root), platform=load_platforms(None)[platform])
    run = Run(opts=opts, work=root.parent / f"work-{platform}", steps=Steps(PLAN))
    run.python = Path(sys.executable)
    step = Step("application")
    app_step(run, step)
    return run, step


@pytest.mark.parametrize("platform", ["linux-cpu", "linux-cu126", "linux-xpu", "macos-arm64"])
def test_the_application_command_is_told_the_platform_s_device(tmp_path, platform):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "app.py").write_text(APP)
    (root / "lockkit.toml").write_text(
        '[verify.application]\ncommand = ["{python}", "app.py", "--device", "{device}"]\n'
        'outputs = ["out/run.json"]\ntimeout = 60\n'
        f'[verify.application.fingerprints]\n"app.py" = "{sha(root / "app.py")}"\n')
    run, step = app_run(root, platform)
    assert run.found.checks["application"].passed
    written = json.loads((run.work / "app" / "project" / "out" / "run.json").read_text())
    assert written["device"] == step.detail["device"] == DEVICES[platform]
    assert run.found.application_config["command"][-1] == "{device}"  # as configured


EMBED = '''\
import shutil, sys
from pathlib import Path
out = Path(sys.argv[sys.argv.index("--out") + 1])
for name in ("embeddings.npy", "ids.json"):
    shutil.copy("reference/" + name, out / name)
(out / "device.txt").write_text(sys.argv[sys.argv.index("--device") + 1])
'''


def test_the_embedding_command_is_told_the_platform_s_device(tmp_path):
    """The example's own table, with a stand-in embed.py that writes the reference."""
    root = tmp_path / "proj"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("locks", "wheelhouse",
                                                                 ".lockkit", "__pycache__"))
    text = (root / "lockkit.toml").read_text().replace(sha(root / "embed.py"), "0" * 64)
    (root / "embed.py").write_text(EMBED)
    text = text.replace("0" * 64, sha(root / "embed.py"))
    (root / "lockkit.toml").write_text(text.split("[verify.resume]")[0])
    run, step = app_run(root, "linux-rocm64")
    assert run.found.checks["application"].passed
    assert (run.work / "app" / "out" / "device.txt").read_text() == "cuda:0"
    assert step.detail["device"] == "cuda:0"


@pytest.mark.parametrize(("table", "key"), [
    ('[verify.application]\ncommand = ["{python}", "app.py", "--device", "{gpu}"]\n',
     "verify.application.command"),
    ('[verify.resume]\ncommand = ["{python}", "t.py", "{out}", "{steps}", "{checkpoint}", '
     '"{resume}", "{devices}"]\nsteps = 1\nresume-steps = 1\n', "verify.resume.command"),
])
def test_an_unknown_placeholder_is_one_line_naming_the_key(tmp_path, capsys, table, key):
    (tmp_path / "lockkit.toml").write_text(table)
    with pytest.raises(ConfigError):
        load_project(tmp_path)
    assert main(["verify", "--project", str(tmp_path), "--platform", "linux-cpu"]) == 2
    error, hint = capsys.readouterr().err.strip().splitlines()
    assert error.startswith(f"lockkit: error: {tmp_path / 'lockkit.toml'}: {key}: unknown "
                            "placeholder {"), error
    assert "{device} (the platform's torch device: cpu, cuda:0, xpu:0 or mps)" in error
    assert hint.startswith("hint: ")


def test_the_embedding_table_accepts_device_and_names_a_misspelt_one(tmp_path):
    shutil.copytree(EXAMPLE, tmp_path / "ex", ignore=shutil.ignore_patterns("locks"))
    toml = tmp_path / "ex" / "lockkit.toml"
    # the example uses {device}
    assert load_project(tmp_path / "ex").verify.get("embedding", EmbeddingConfig)
    toml.write_text(toml.read_text().replace('"--device", "{device}"]\n', '"{dev}"]\n', 1))
    with pytest.raises(ConfigError, match=r"verify\.embedding\.command: unknown placeholder "
                                          r"\{dev\}: use \{python\}, \{out\} and \{device\}"):
        load_project(tmp_path / "ex")
