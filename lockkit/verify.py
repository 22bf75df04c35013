"""``lockkit verify``: rebuild a lock into a fresh venv and prove that it works.

The steps run in the order of the rebuild procedure, each needing the one before it
(``inventory`` needs ``install`` only: both metadata checks report even when the other
fails), and every command runs the new venv's interpreter by its path:

    host -> venv -> install -> pip-check -> inventory -> system -> gpu -> application

Installer calls are isolated from user and global pip/uv configuration (``--no-config``,
``--isolated``, no ``PIP_*``/``UV_*`` variables); the dossier records that and the
exact commands, redacted.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.tags import Tag, compatible_tags, cpython_tags, platform_tags
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from lockkit._compat import tomllib
from lockkit import __version__, _run, embedding, probe, trust
from lockkit.config import Project
from lockkit.errors import LockkitError
from lockkit.common import arch_family, host_arch, host_os, sha256_file, write_atomic
from lockkit.platforms import Platform
from lockkit.redact import redact
from lockkit.report import SCHEMA_VERSION, Step, StepFailed, StepSkipped, Steps, dumps, markdown
from lockkit.report import overall as overall_result
from lockkit.resolve import uv_bin

__all__ = ["Options", "Outcome", "PLAN", "verify"]

PLAN: list[tuple[str, tuple[str, ...]]] = [
    ("host", ()), ("venv", ("host",)), ("install", ("venv",)), ("pip-check", ("install",)),
    ("inventory", ("install",)), ("system", ("pip-check", "inventory")), ("gpu", ("system",)),
    ("application", ("gpu",)),
]
# What the application sees of the caller's environment: enough to run, nothing to lean on.
_APP_VARS = ("PATH", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT", "LD_LIBRARY_PATH")
_INSTALL_TIMEOUT = 1800
# uv's cache for one verify, inside its temp folder: the user's cache would keep an
# unpacked copy of torch (~700 MB) for every wheelhouse path verified, and nothing
# removes those. Same filesystem as the venv, so uv hard-links from it (no second copy).
_UV_CACHE = "uv-cache"


@dataclass(frozen=True, kw_only=True)
class Options:
    project: Project
    platform: Platform
    wheelhouse: Path | None = None
    python: Path | None = None
    installer: str = "uv"
    no_gpu: bool = False
    report_dir: Path | None = None
    keep_venv: bool = False
    probe_timeout: float = 300.0
    command_line: tuple[str, ...] = ()
    variant: dict[str, Any] | None = None  # {"name", "reason", "changes": [layers]}
    fetch: Callable[[Path], Path] | None = None  # builds a wheelhouse from the lock's URLs
    on_step: Callable[[Step], None] | None = None


@dataclass(frozen=True, kw_only=True)
class Outcome:
    result: str  # "passed" | "failed" | "incomplete"
    steps: Steps
    report_dir: Path
    dossier: dict[str, Any]
    venv: Path | None


@dataclass
class _Run:
    opts: Options
    work: Path
    steps: Steps
    commands: list[dict[str, Any]] = field(default_factory=list)
    interpreter: Path | None = None
    venv: Path | None = None
    python: Path | None = None
    wheelhouse: Path | None = None
    seed: dict[str, str] = field(default_factory=dict)
    expected: dict[str, str] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)

    def call(self, step: str, argv: list[str], *, timeout: float = 600,
             env: dict[str, str] | None = None, cwd: Path | None = None) -> _run.Result:
        start = time.perf_counter()
        if argv[0] == uv_bin():  # every uv command of a verify uses the verify's own cache
            env = {**(env if env is not None else _run.isolated_env()),
                   "UV_CACHE_DIR": str(self.work / _UV_CACHE)}
        result = _run.call(argv, timeout=timeout, env=env, cwd=str(cwd) if cwd else None)
        self.commands.append({"step": step, "argv": [redact(a) for a in argv],
                              "cwd": str(cwd) if cwd else None, "returncode": result.returncode,
                              "duration_s": round(time.perf_counter() - start, 3)})
        return result


def verify(opts: Options) -> Outcome:
    started = _dt.datetime.now(_dt.timezone.utc)
    report_dir = opts.report_dir or (opts.project.root / ".lockkit" / "reports" /
                                     opts.platform.name / started.strftime("%Y%m%dT%H%M%SZ"))
    work = Path(tempfile.mkdtemp(prefix="lockkit-verify-"))
    run = _Run(opts=opts, work=work, steps=Steps(PLAN))
    bodies: dict[str, Callable[[Step], None]] = {
        "host": lambda s: _host_step(run, s), "venv": lambda s: _venv_step(run, s),
        "install": lambda s: _install_step(run, s), "pip-check": lambda s: _check_step(run, s),
        "inventory": lambda s: _inventory_step(run, s), "system": lambda s: _system_step(run, s),
        "gpu": lambda s: _gpu_step(run, s), "application": lambda s: _app_step(run, s),
    }
    try:
        for name, _ in PLAN:
            step = run.steps.execute(name, bodies[name])
            if opts.on_step:
                opts.on_step(step)
        result = overall_result(run.steps)
        doc = _dossier(run, started, result)
        _write_reports(report_dir, doc, run)
    finally:
        kept = opts.keep_venv and run.venv is not None
        if kept:
            shutil.rmtree(work / "app", ignore_errors=True)
            shutil.rmtree(work / _UV_CACHE, ignore_errors=True)
        else:
            shutil.rmtree(work, ignore_errors=True)
    return Outcome(result=result, steps=run.steps, report_dir=report_dir, dossier=doc,
                   venv=run.venv if kept else None)


# --- host --------------------------------------------------------------------------------

def _host_step(run: _Run, step: Step) -> None:
    plat = run.opts.platform
    here_os, here_arch = host_os(), host_arch()
    step.detail.update(os=here_os, arch=here_arch, platform_os=plat.os, platform_arch=plat.arch)
    if here_os != plat.os or here_arch != arch_family(plat.arch):
        raise StepFailed(f"this machine is {here_os}/{here_arch}; platform {plat.name} is "
                         f"{plat.os}/{plat.arch}: verify it on a {plat.os}/{plat.arch} machine")
    python = run.opts.python or _find_python(run, plat.python)
    facts = _interpreter_facts(python)
    step.detail["interpreter"] = run.facts["python"] = facts
    if facts["version"] != plat.python:
        raise StepFailed(f"{python} is Python {facts['version']}; the lock is for "
                         f"{plat.python}: pass --python with a {plat.python} interpreter")
    run.interpreter = python
    wheelhouse = _wheelhouse_folder(run)
    if wheelhouse is not None:
        tags = set(_tags_of(facts))
        bad = [w.name for w in sorted(wheelhouse.glob("*.whl"))
               if not tags & set(parse_wheel_filename(w.name)[3])]
        if bad:
            raise StepFailed(f"{len(bad)} wheel(s) do not install on this interpreter "
                             f"({facts['platform']}): {', '.join(bad[:3])}")


def _find_python(run: _Run, version: str) -> Path:
    if f"{sys.version_info[0]}.{sys.version_info[1]}" == version:
        return Path(sys.executable)
    found = run.call("host", [uv_bin(), "python", "find", "--no-config", "--offline",
                              "--no-python-downloads", version], timeout=60)
    if found.returncode != 0 or not found.stdout.strip():
        raise StepFailed(f"no Python {version} interpreter found on this machine: pass "
                         f"--python PATH")
    return Path(found.stdout.strip())


_FACTS = ("import json, platform, sys, sysconfig; print(json.dumps({'version': "
          "'%d.%d' % sys.version_info[:2], 'full': platform.python_version(), "
          "'implementation': sys.implementation.name, 'platform': sysconfig.get_platform(), "
          "'executable': sys.executable}))")


def _interpreter_facts(python: Path) -> dict[str, Any]:
    try:
        out = subprocess.run([str(python), "-I", "-c", _FACTS], capture_output=True, text=True,
                             timeout=60, check=True).stdout
        return json.loads(out)
    except (OSError, subprocess.SubprocessError, json.JSONDecodeError) as exc:
        raise StepFailed(f"cannot run the interpreter {python}: {exc}") from None


def _tags_of(facts: dict[str, Any]) -> list[Tag]:
    """The tags of an interpreter on this machine (same OS and libc as lockkit's own)."""
    version = tuple(int(x) for x in facts["version"].split("."))
    plats = list(platform_tags())
    return [*cpython_tags(version, platforms=plats),
            *compatible_tags(version, interpreter=f"cp{version[0]}{version[1]}",
                             platforms=plats)]


def _wheelhouse_folder(run: _Run) -> Path | None:
    if run.opts.wheelhouse is not None:
        folder = run.opts.wheelhouse
    else:
        folder = run.opts.project.root / "wheelhouse" / run.opts.platform.name
        if not folder.is_dir():
            return None
    if not (folder / "manifest.json").is_file():
        raise StepFailed(f"{folder}: not a wheelhouse (no manifest.json)")
    return folder


# --- venv --------------------------------------------------------------------------------

def _venv_step(run: _Run, step: Step) -> None:
    venv = run.work / "venv"
    assert run.interpreter is not None
    if run.opts.installer == "uv":  # no ensurepip: uv installs and checks without pip
        argv = [uv_bin(), "venv", "--no-config", "--quiet", "--python", str(run.interpreter),
                str(venv)]
    else:
        argv = [str(run.interpreter), "-m", "venv", str(venv)]
    result = run.call("venv", argv, timeout=300)
    if result.returncode != 0:
        raise StepFailed(f"creating the venv failed: {_last(result.stderr)}")
    run.venv = venv
    run.python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    run.seed = _distributions(venv)
    step.detail.update(path=str(venv), interpreter=str(run.interpreter),
                       seed=sorted(f"{k}=={v}" for k, v in run.seed.items()))


# --- install -----------------------------------------------------------------------------

def _install_step(run: _Run, step: Step) -> None:
    opts = run.opts
    lock = opts.project.lock_path(opts.platform.name)
    folder = _wheelhouse_folder(run)
    if folder is None:
        if opts.fetch is None:
            raise StepFailed(f"no wheelhouse for {opts.platform.name}: run 'lockkit "
                             f"wheelhouse build --platform {opts.platform.name}' or pass "
                             "--wheelhouse")
        folder = opts.fetch(run.work / "wheelhouse")
        step.detail["source"] = "the lock's URLs (fetched, hash-checked, into a temp wheelhouse)"
    else:
        step.detail["source"] = f"wheelhouse {folder} (no network)"
    manifest = _check_wheelhouse(folder, lock)
    run.wheelhouse = folder
    try:  # the committed lock is the only authority: the folder's own lock files are not read
        checked = trust.check_folder(folder, trust.selection(lock, opts.platform), manifest)
    except LockkitError as exc:
        raise StepFailed(str(exc)) from None
    run.expected = {c.package: c.version for c in checked}
    reqs = run.work / "install" / "requirements.txt"  # hashes of the lock, checked just now
    reqs.parent.mkdir(exist_ok=True)
    reqs.write_text(trust.requirements(checked), encoding="utf-8")
    step.detail["checked"] = (f"{len(checked)} wheel(s) hashed and matched against "
                              f"{lock.name}; the installer enforces the same hashes")
    assert run.python is not None
    if opts.installer == "uv":
        argv = [uv_bin(), "pip", "install", "--no-config", "--offline", "--no-index",
                "--quiet", "--python", str(run.python), "--find-links", str(folder),
                "--require-hashes", "-r", str(reqs)]
        env = _run.isolated_env()
    else:
        argv = [str(run.python), "-m", "pip", "install", "--isolated", "--no-index",
                "--disable-pip-version-check", "--quiet", "--find-links", str(folder),
                "--require-hashes", "-r", str(reqs)]
        env = _run.isolated_env()
    result = run.call("install", argv, timeout=_INSTALL_TIMEOUT, env=env)
    step.detail.update(installer=opts.installer, packages=len(run.expected),
                       isolated="installer ran without user/global pip or uv configuration "
                                "(--no-config / --isolated, PIP_* and UV_* removed)")
    if result.returncode != 0:
        raise StepFailed(f"{opts.installer} install failed: {_last(result.stderr)}")


def _check_wheelhouse(folder: Path, lock: Path) -> dict[str, Any]:
    """The manifest says the wheelhouse was built from this lock (a hint for honest
    mistakes, not a proof: the files are hashed against the lock afterwards)."""
    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise StepFailed(f"{folder}/manifest.json: unreadable: {exc}") from None
    if not lock.is_file():
        raise StepFailed(f"{lock}: no lock; run 'lockkit compile'")
    if manifest.get("lock_sha256") != sha256_file(lock):
        raise StepFailed(f"{folder} was built from another version of {lock.name}: "
                         "rebuild it with 'lockkit wheelhouse build'")
    for entry in manifest.get("files", []):
        path = folder / entry["path"]
        if not path.is_file() or path.stat().st_size != entry["size"]:
            raise StepFailed(f"{path}: missing or not the size the manifest lists")
    return manifest


# --- pip-check and inventory ---------------------------------------------------------------

def _check_step(run: _Run, step: Step) -> None:
    assert run.python is not None
    if run.opts.installer == "uv":
        argv = [uv_bin(), "pip", "check", "--no-config", "--python", str(run.python)]
    else:
        argv = [str(run.python), "-m", "pip", "check", "--isolated",
                "--disable-pip-version-check"]
    result = run.call("pip-check", argv, timeout=300, env=_run.isolated_env())
    step.detail["output"] = (result.stdout + result.stderr).strip()[-2000:]
    if result.returncode != 0:
        raise StepFailed(f"dependency conflicts: {_last(result.stdout or result.stderr)}")


def _inventory_step(run: _Run, step: Step) -> None:
    assert run.venv is not None and run.python is not None
    installed = {k: v for k, v in _distributions(run.venv).items()  # the venv's own pip and
                 if k in run.expected or k not in run.seed}       # setuptools are not extras
    missing = sorted(f"{n}=={v}" for n, v in run.expected.items() if n not in installed)
    extra = sorted(f"{n}=={v}" for n, v in installed.items() if n not in run.expected)
    mismatched = sorted(f"{n}: lock {run.expected[n]}, installed {v}"
                        for n, v in installed.items()
                        if n in run.expected and not _same_version(v, run.expected[n]))
    run.facts["packages"] = _package_table(run.opts.project.lock_path(run.opts.platform.name),
                                           installed)
    run.facts["inventory"] = {"expected": len(run.expected), "installed": len(installed),
                              "missing": missing, "extra": extra, "mismatched": mismatched,
                              "seed": sorted(run.seed)}
    if run.opts.installer == "uv":
        argv = [uv_bin(), "pip", "freeze", "--no-config", "--python", str(run.python)]
    else:
        argv = [str(run.python), "-m", "pip", "freeze", "--all", "--isolated",
                "--disable-pip-version-check"]
    frozen = run.call("inventory", argv, timeout=300, env=_run.isolated_env())
    run.facts["freeze"] = frozen.stdout
    step.detail.update(run.facts["inventory"])
    problems = ([f"missing {', '.join(missing)}"] if missing else []) + \
        ([f"not in the lock {', '.join(extra)}"] if extra else []) + mismatched
    if problems:
        raise StepFailed("installed packages differ from the lock: " + "; ".join(problems))


def _package_table(lock: Path, installed: dict[str, str]) -> list[dict[str, Any]]:
    """Each installed distribution with the index and sha256 the lock gives its version."""
    try:
        entries = {canonicalize_name(p["name"]): p
                   for p in tomllib.loads(lock.read_text(encoding="utf-8"))["packages"]}
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        entries = {}
    rows = []
    for name in sorted(installed):
        entry = entries.get(name, {})
        files = entry.get("wheels", []) + ([entry["sdist"]] if "sdist" in entry else [])
        rows.append({"name": name, "version": installed[name], "index": entry.get("index"),
                     "sha256": sorted(f.get("hashes", {}).get("sha256", "") for f in files)})
    return rows


def _same_version(a: str, b: str) -> bool:
    """Exact, local label included: 2.5.1 is not 2.5.1+rocm6.2."""
    try:
        return Version(a) == Version(b) and Version(a).local == Version(b).local
    except InvalidVersion:
        return a == b


def _distributions(venv: Path) -> dict[str, str]:
    """Name -> version of every ``*.dist-info`` in the venv, read from its METADATA."""
    found: dict[str, str] = {}
    for meta in venv.glob("lib*/python*/site-packages/*.dist-info/METADATA"):
        found.update(_name_version(meta))
    for meta in venv.glob("Lib/site-packages/*.dist-info/METADATA"):
        found.update(_name_version(meta))
    return found


def _name_version(meta: Path) -> dict[str, str]:
    name = version = None
    with meta.open(encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.strip():
                break
            if line.startswith("Name:"):
                name = line.split(":", 1)[1].strip()
            elif line.startswith("Version:"):
                version = line.split(":", 1)[1].strip()
    return {canonicalize_name(name): version} if name and version else {}


# --- system and gpu ------------------------------------------------------------------------

def _system_step(run: _Run, step: Step) -> None:
    assert run.python is not None
    result = probe.run_probe(run.python, "system_probe.py", timeout=run.opts.probe_timeout)
    _record_probe(run, "system", result)
    run.facts["system"] = result.data or {}
    if result.status != "passed":
        raise StepFailed(f"system probe: {result.error}")
    torch = (result.data or {}).get("torch") or {}
    step.detail.update({"torch": torch.get("version"), "torch.version.cuda": torch.get("cuda"),
                        "torch.version.hip": torch.get("hip"),
                        "devices": len(torch.get("devices") or [])})
    if isinstance(torch, dict) and "error" in torch and "version" not in torch:
        raise StepFailed(f"torch: {torch['error']}")


def gpu_args(plat: Platform) -> list[str]:
    """gpu_probe.py's expectations for *plat*: its backend, version and device."""
    args = ["--expect", plat.backend.kind, "--device", plat.gpu_device]
    if plat.gpu_cuda:
        args += ["--cuda", plat.gpu_cuda]
    if plat.gpu_hip:
        args += ["--hip", plat.gpu_hip]
    return args


def _gpu_step(run: _Run, step: Step) -> None:
    if run.opts.no_gpu:
        raise StepSkipped("--no-gpu: the device was not checked, so the rebuild is not proven")
    assert run.python is not None
    result = probe.run_probe(run.python, "gpu_probe.py", gpu_args(run.opts.platform),
                             timeout=run.opts.probe_timeout)
    _record_probe(run, "gpu", result)
    run.facts["gpu"] = result.data or {}
    if result.status != "passed":
        raise StepFailed(f"gpu probe: {result.error}")
    status, error = probe.gpu_status(result.data)
    step.detail.update({k: v.get("status") for k, v in (result.data or {}).get(
        "checks", {}).items() if isinstance(v, dict)})
    if status != "passed":
        raise StepFailed(error or "the GPU check failed")


def _record_probe(run: _Run, step: str, result: probe.ProbeResult) -> None:
    run.commands.append({"step": step, "argv": [redact(a) for a in result.command],
                         "cwd": None, "returncode": result.returncode,
                         "duration_s": round(result.duration, 3)})


# --- application -------------------------------------------------------------------------

def _app_step(run: _Run, step: Step) -> None:
    project = run.opts.project
    cfg = embedding.load_embedding_config(project.root, project.verify,
                                          source=str(project.config_file or "lockkit.toml"))
    if cfg is None:
        raise StepSkipped("no [verify.embedding] in lockkit.toml: the application is unchecked")
    run.facts["embedding_config"] = cfg.to_dict()
    copy = run.work / "app" / "project"
    copied = _clean_copy(project.root, copy)
    step.detail["copied_files"] = copied
    fingerprints = embedding.check_fingerprints(cfg, copy)
    run.facts["fingerprints"] = [c.to_dict() for c in fingerprints]
    bad = next((c for c in fingerprints if not c.passed), None)
    if bad:
        raise StepFailed(f"{bad.name}: {bad.detail}")
    out = run.work / "app" / "out"
    out.mkdir()
    home = run.work / "app" / "home"
    home.mkdir()
    env = {k: os.environ[k] for k in _APP_VARS if k in os.environ}
    env.update(HOME=str(home), PYTHONHASHSEED="0", PYTHONNOUSERSITE="1", LANG="C.UTF-8")
    assert run.python is not None
    argv = embedding.command(cfg, run.python, out)
    result = run.call("application", argv, timeout=cfg.timeout, env=env, cwd=copy)
    run.facts["application_log"] = (result.stdout + result.stderr)[-20000:]
    step.detail["environment"] = sorted(env)
    if result.returncode != 0:
        raise StepFailed(f"the embedding command exited {result.returncode}: "
                         f"{_last(result.stderr or result.stdout)}")
    verdict = embedding.check_outputs(cfg, copy, out)
    run.facts["application"] = verdict.to_dict()
    step.detail.update(worst_id=verdict.worst_id, max_abs_diff=verdict.max_abs_diff,
                       min_cosine=verdict.min_cosine)
    if not verdict.passed:
        raise StepFailed(verdict.first_error or "the embedding check failed")


_NEVER_COPY = {".git", ".lockkit", "wheelhouse", "__pycache__", ".venv", "locks"}


def _clean_copy(root: Path, dest: Path) -> int:
    """The project's committed files (in git), or the project minus build debris."""
    files = _git_files(root)
    if files is None:
        files = [p.relative_to(root).as_posix() for p in root.rglob("*")
                 if p.is_file() and not _NEVER_COPY & set(p.relative_to(root).parts)]
    for rel in files:
        src, dst = root / rel, dest / rel
        if src.is_file() and not src.is_symlink():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    dest.mkdir(parents=True, exist_ok=True)
    return len(files)


def _git_files(root: Path) -> list[str] | None:
    try:
        out = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "."],
                             capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return [f for f in out.stdout.decode("utf-8", "replace").split("\0") if f]


def _git_state(root: Path) -> dict[str, Any]:
    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", "-C", str(root), *args], capture_output=True,
                                 text=True, timeout=60)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    if git("rev-parse", "--is-inside-work-tree") != "true":
        return {"git": False}
    return {"git": True, "revision": git("rev-parse", "HEAD"),  # None before a first commit
            "dirty": bool(git("status", "--porcelain", "."))}


# --- the dossier ---------------------------------------------------------------------------

def _dossier(run: _Run, started: _dt.datetime, result: str) -> dict[str, Any]:
    opts = run.opts
    lock = opts.project.lock_path(opts.platform.name)
    return {
        "schema_version": SCHEMA_VERSION, "kind": "verify", "lockkit_version": __version__,
        "started": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command_line": list(opts.command_line), "platform": opts.platform.name,
        "lock": str(lock), "lock_sha256": sha256_file(lock) if lock.is_file() else None,
        "interpreter": str(run.interpreter) if run.interpreter else None,
        "installer": opts.installer,
        "isolation": "installer calls ran with --no-config/--isolated and without PIP_*/UV_* "
                     "variables: no user or global pip/uv configuration was used",
        "wheelhouse": str(run.wheelhouse) if run.wheelhouse else None,
        "options": {"platform": opts.platform.name, "installer": opts.installer,
                    "no_gpu": opts.no_gpu, "probe_timeout": opts.probe_timeout,
                    "python": (run.facts.get("python") or {}).get("full")},
        "variant": opts.variant,
        "result": result, "first_error": run.steps.first_error,
        "packages": run.facts.get("packages"),
        "steps": [s.to_dict() for s in run.steps], "commands": run.commands,
        "inventory": run.facts.get("inventory"), "system": run.facts.get("system"),
        "checks": {"gpu": run.facts.get("gpu"), "application": run.facts.get("application")},
        "fingerprints": {"code": _git_state(opts.project.root),
                         "files": run.facts.get("fingerprints")},
        "embedding_config": run.facts.get("embedding_config"),
        "environment_passed_to_probes": sorted(probe.ALLOWED_VARS),
    }


def _write_reports(folder: Path, doc: dict[str, Any], run: _Run) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(folder / "installed-after.txt", redact(run.facts.get("freeze", "")))
    if run.facts.get("application_log"):
        write_atomic(folder / "application.log", redact(run.facts["application_log"]))
    write_atomic(folder / "dossier.md", markdown(doc))
    write_atomic(folder / "dossier.json", dumps(doc))


def _last(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    errors = [ln for ln in lines if re.match(r"(error|ERROR|×)", ln)]
    return redact((errors or lines or ["no output"])[0 if errors else -1])
