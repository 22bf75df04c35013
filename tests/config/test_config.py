"""The inputs users already have: pyproject.toml, pip-style requirement files, a config
found from a subfolder; and their normalised form for ``compile --check``."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from lockkit._internal.compat import tomllib
from lockkit.cli import main
from lockkit.config.checks.embedding import EmbeddingConfig, load_embedding_config
from lockkit.config.inputs import normalized_inputs
from lockkit.config.project import find_project, load_project
from lockkit.errors import ConfigError, UsageError
from tests.support.project import OFFICIAL, assert_conforms, verify_refused_early

PYPROJECT = """\
[project]
name = "app"
version = "1.0"
dependencies = ["torch==2.5.1", "NumPy"]

[project.optional-dependencies]
gpu = ["requests"]
docs = ["setuptools"]

[dependency-groups]
dev = ["jinja2"]
lint = ["setuptools"]

# what a uv project for CUDA often carries: lockkit, not the project, picks torch's index
[tool.uv.sources]
torch = { index = "pytorch" }

[[tool.uv.index]]
name = "pytorch"
url = "http://127.0.0.1:9/unreachable"
explicit = true
"""


def compile_(root: Path) -> int:
    return main(["compile", "--project", str(root), "--platform", "linux-cpu"])


def packages(root: Path) -> dict[str, dict]:
    lock = tomllib.loads((root / "locks" / "pylock.linux-cpu.toml").read_text())
    assert_conforms(lock, "linux-cpu", root)
    return {p["name"]: p for p in lock["packages"]}


def use_pyproject(root: Path, indexes, text: str = PYPROJECT, *, extras: str = '["gpu"]',
                  groups: str = '["dev"]') -> None:
    (root / "requirements.in").unlink()
    (root / "pyproject.toml").write_text(text)
    (root / "lockkit.toml").write_text(indexes.config(
        extra=f'requirements = ["pyproject.toml"]\nextras = {extras}\ngroups = {groups}\n'))


def one_error_line(capsys) -> str:
    """The CLI's whole message: exactly one line, never a traceback."""
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lockkit: error: "), lines
    return lines[0]


# --- pyproject.toml ---------------------------------------------------------------------------

def test_pyproject_dependencies_extra_and_group_compile_to_exactly_those_packages(project,
                                                                                   indexes):
    use_pyproject(project, indexes)
    assert compile_(project) == 0
    found = packages(project)
    # dependencies (torch pulls filelock), extra gpu (requests), group dev (jinja2 + markupsafe);
    # not the unselected extra or group (setuptools)
    assert set(found) == {"torch", "numpy", "filelock", "requests", "jinja2", "markupsafe"}
    assert found["torch"]["version"] == "2.5.1+cpu"
    assert found["torch"]["index"] == f"{OFFICIAL}/cpu"  # [tool.uv.sources] did not apply


def test_pyproject_with_only_dependency_groups(project, indexes):
    """No [project] table (a PEP 735 file for an application): the groups alone, with an
    included group expanded."""
    use_pyproject(project, indexes, '[dependency-groups]\nml = ["torch", {include-group = "web"}]\n'
                                    'web = ["requests"]\n', extras="[]", groups='["ml"]')
    assert compile_(project) == 0
    assert set(packages(project)) == {"torch", "filelock", "requests"}
    assert normalized_inputs(load_project(project)) == {
        "pyproject.toml[dependency-groups.ml]": ["requests", "torch"]}


@pytest.mark.parametrize("key,value,expected", [
    ("extras", '["gpus"]', ("extras: 'gpus' is not declared in [project.optional-dependencies] "
                            "(did you mean 'gpu'?)")),
    ("groups", '["test"]', ("groups: 'test' is not declared in [dependency-groups] "
                            "(declared: dev, lint)")),
])
def test_undeclared_extra_or_group_is_exit_2_naming_it(project, indexes, capsys, key, value,
                                                       expected):
    use_pyproject(project, indexes, **{key: value})
    assert compile_(project) == 2
    line = one_error_line(capsys)
    assert f"{project.resolve() / 'pyproject.toml'}: " in line and expected in line


def test_extras_without_a_pyproject_input_is_exit_2(project, indexes, capsys):
    (project / "lockkit.toml").write_text(indexes.config(extra='extras = ["gpu"]\n'))
    assert compile_(project) == 2
    assert "extras: selects from a pyproject.toml, and requirements names none" in \
        capsys.readouterr().err


def test_dynamic_dependencies_is_exit_2(project, indexes, capsys):
    use_pyproject(project, indexes, '[project]\nname = "app"\nversion = "1"\n'
                                    'dynamic = ["dependencies"]\n', extras="[]", groups="[]")
    assert compile_(project) == 2
    line = one_error_line(capsys)
    assert "pyproject.toml: [project] lists dependencies as dynamic" in line
    assert not (project / "locks").exists()


@pytest.mark.parametrize("table,expected", [
    ('name = "app"\ndependencies = []\n', "project.version: missing"),
    ('version = "1"\ndependencies = []\n', "project.name: missing"),
    ('name = "app"\nversion = "1"\ndependencies = ["-e ."]\n', ("project.dependencies[0]: "
                                                                "'-e .': not a valid requirement")),
    ('name = "app"\nversion = "1"\ndependencies = ["torch>="]\n',
     "project.dependencies[0]: 'torch>=': a version is missing after '>='"),
    ('name = "app"\nversion = "1"\ndependencies = ["lib @ file:///lib"]\n',
     "project.dependencies[0]: 'lib @ file:///lib' is a local path; lockkit locks"),
])
def test_pyproject_that_uv_would_refuse_is_exit_2(project, indexes, capsys, table, expected):
    use_pyproject(project, indexes, f"[project]\n{table}", extras="[]", groups="[]")
    assert compile_(project) == 2
    assert expected in one_error_line(capsys)


# --- requirement files ------------------------------------------------------------------------

def test_requirements_as_a_string(project, indexes):
    (project / "lockkit.toml").write_text(
        indexes.config(extra='requirements = "requirements.in"\n'))
    assert load_project(project).requirements == ("requirements.in",)
    assert compile_(project) == 0
    assert set(packages(project)) == {"torch", "numpy", "filelock"}


def test_continuation_lines_are_joined(project, capsys):
    (project / "requirements.in").write_text("torch\\\n==2.5.1\nnumpy \\\n  >=2 \\\n  # why\n")
    assert compile_(project) == 0
    assert packages(project)["numpy"]["version"] == "2.1.0"
    capsys.readouterr()
    # an error in a joined line names its first physical line
    (project / "requirements.in").write_text("torch\nnumpy \\\n  >=2 \\\n  ===x\n")
    assert compile_(project) == 2
    assert ("requirements.in:2: 'numpy >=2 ===x': '>=2 ===x': separate version clauses with "
            "','") in one_error_line(capsys)


def test_hash_options_are_accepted(project, indexes):
    """pip-compile output as input: the hashes are the user's, the lock's are the files'."""
    (project / "requirements.in").write_text(
        "torch==2.5.1\nnumpy==2.1.0 \\\n    --hash=sha256:" + "0" * 64 + " \\\n"
        "    --hash sha256:" + "1" * 64 + "\n--prefer-binary\n")
    assert compile_(project) == 0
    wheel = packages(project)["numpy"]["wheels"][0]
    served = next(indexes.default.root.glob(f"numpy/{wheel['name']}"))
    assert wheel["hashes"]["sha256"] == hashlib.sha256(served.read_bytes()).hexdigest()


def test_constraints_constrain_and_never_require(project, capsys):
    (project / "requirements.in").write_text("-c pins/constraints.in\ntorch==2.5.1\n")
    (project / "pins").mkdir()
    (project / "pins" / "constraints.in").write_text("requests==2.32.5\n-r more.in\n")
    (project / "pins" / "more.in").write_text("filelock<3.16\n")  # a -c reaches it: a constraint
    assert compile_(project) == 1  # only filelock 3.16.1 on the default index
    assert "no resolution" in capsys.readouterr().err
    (project / "pins" / "more.in").write_text("filelock>=3.16\n")
    assert compile_(project) == 0
    assert set(packages(project)) == {"torch", "filelock"}  # requests constrained, not required


@pytest.mark.parametrize("line,expected", [
    ("--index-url http://127.0.0.1:9/simple", ("option '--index-url' chooses where packages "
                                               "come from; put that in lockkit.toml "
                                               "(index-url, [mirrors])")),
    ("-i http://127.0.0.1:9/simple", "option '-i' chooses where packages come from"),
    ("--extra-index-url=http://127.0.0.1:9/simple", "option '--extra-index-url' chooses where"),
    ("--find-links ./wheels", "option '--find-links' chooses where packages come from"),
    ("-f ./wheels", "option '-f' chooses where packages come from"),
    ("--no-index", "option '--no-index' chooses where packages come from"),
    ("--trusted-host 127.0.0.1", "option '--trusted-host' chooses where packages come from"),
    ("--pre", "option '--pre' allows pre-releases of every package; name the pre-release"),
    ("--only-binary :all:", "option '--only-binary' changes which files may be used"),
    ("numpy --config-settings x=y", "option '--config-settings' after a requirement"),
    ("--index_url x", "unknown option '--index_url' (did you mean '--index-url'?)"),
])
def test_refused_option_is_one_line_naming_file_and_line(project, capsys, line, expected):
    (project / "requirements.in").write_text(f"torch\n{line}\n")
    assert compile_(project) == 2
    assert f"requirements.in:2: {expected}" in one_error_line(capsys)


@pytest.mark.parametrize("line,kind", [
    ("-e ./mylib", "an editable install"),
    ("--editable=../mylib", "an editable install"),
    ("./mylib", "a local path"),
    ("../x", "a local path"),
    ("/abs/mylib", "a local path"),
    ("mylib/", "a local path"),
    ("dist/mylib-1.0-py3-none-any.whl", "a local path"),
    ("file:///abs/mylib", "a local path"),
    ("mylib @ file:///abs/mylib", "a local path"),
    ("mylib @ ./mylib", "a local path"),
    ("mylib @ git+https://127.0.0.1/mylib.git", "a VCS URL"),
    ("mylib @ http://127.0.0.1/mylib-1.0-py3-none-any.whl", "a direct URL"),
])
def test_local_path_or_editable_is_one_line_naming_file_and_line(project, capsys, line, kind):
    (project / "requirements.in").write_text(f"torch\n{line}\n")
    assert compile_(project) == 2
    err = one_error_line(capsys)
    assert f"requirements.in:2: {line!r} is {kind}; lockkit locks distributions from indexes: " \
           "build a wheel and publish it to an index the project uses, or depend on a released " \
           "version" in err


def test_every_refused_line_of_a_file_is_reported_at_once(project, capsys):
    (project / "requirements.in").write_text("-r base.in\n-e .\n--pre\n")
    (project / "base.in").write_text("torch\n--index-url x\n")
    assert compile_(project) == 2
    err = one_error_line(capsys)
    assert "requirements.in:2: '-e .'" in err and "requirements.in:3: option '--pre'" in err
    (project / "requirements.in").write_text("-r base.in\n")
    assert compile_(project) == 2
    assert "base.in:2: option '--index-url'" in one_error_line(capsys)


# --- discovery --------------------------------------------------------------------------------

def test_lockkit_toml_found_from_a_subfolder(project, monkeypatch):
    sub = project / "src" / "app"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    assert main(["compile", "--platform", "linux-cpu"]) == 0
    assert set(packages(project)) == {"torch", "numpy", "filelock"}
    assert not (sub / "locks").exists()
    # --project keeps its meaning: exactly that folder (no config there: the defaults)
    assert load_project(sub).config_file is None and load_project(sub).root == sub.resolve()


def test_discovery_finds_tool_lockkit_and_stops_at_the_repository_root(tmp_path, monkeypatch):
    outer = tmp_path / "outer"
    repo = outer / "repo"
    (repo / ".git").mkdir(parents=True)
    (outer / "lockkit.toml").write_text('platforms = ["linux-cu126"]\n')
    (repo / "sub").mkdir()
    assert find_project(repo / "sub") is None  # the config above the repository is not its
    monkeypatch.chdir(repo / "sub")
    assert load_project().root == (repo / "sub").resolve()  # none found: the current folder
    (repo / "pyproject.toml").write_text('[project]\nname = "x"\n')  # no [tool.lockkit]
    assert find_project(repo / "sub") is None
    (repo / "pyproject.toml").write_text('[tool.lockkit]\nplatforms = ["linux-rocm6"]\n')
    assert find_project(repo / "sub") == repo.resolve()
    assert load_project().platforms == ("linux-rocm6",)


# --- normalized_inputs ------------------------------------------------------------------------

def test_normalized_inputs_ignore_comments_and_whitespace_and_see_a_new_requirement(project):
    (project / "requirements.in").write_text("torch==2.5.1\nNumPy>=2\n-r extra.in\n")
    (project / "extra.in").write_text("Jinja2\n")
    before = normalized_inputs(load_project(project))
    assert before == {"requirements.in": ["-r extra.in", "numpy>=2", "torch==2.5.1"],
                      "extra.in": ["jinja2"]}
    (project / "requirements.in").write_text(
        "# the model\n\n  -r   extra.in  # more\nnumpy \\\n  >= 2   # floor\ntorch == 2.5.1\n")
    assert normalized_inputs(load_project(project)) == before
    (project / "extra.in").write_text("Jinja2\nrequests\n")
    after = normalized_inputs(load_project(project))
    assert after["extra.in"] == ["jinja2", "requests"]
    assert after["requirements.in"] == before["requirements.in"]


def test_normalized_inputs_of_a_pyproject_name_the_selection(project, indexes):
    use_pyproject(project, indexes)
    assert normalized_inputs(load_project(project)) == {
        "pyproject.toml[project.dependencies]": ["numpy", "torch==2.5.1"],
        "pyproject.toml[project.optional-dependencies.gpu]": ["requests"],
        "pyproject.toml[dependency-groups.dev]": ["jinja2"],
    }


# --- the configuration cascade: defaults -> file -> flags, every key checked at load --------

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "embeddings"


def _write_config(root: Path, text: str) -> Path:
    root.mkdir(exist_ok=True)
    (root / "lockkit.toml").write_text(text)
    return root / "lockkit.toml"


def test_defaults_come_from_the_project_dataclass(tmp_path):
    project = load_project(tmp_path)
    assert (project.config_file, project.requirements, project.platforms) == (
        None, ("requirements.in",), ("linux-cpu",))
    assert (project.python, project.verify.tables, project.ci.runners) == (None, {}, {})


def test_every_problem_of_the_file_is_reported_in_one_line_with_its_key(tmp_path, capsys):
    config = _write_config(tmp_path, 'python = 3.11\nci = "x"\nplatforms = 3\n'
                                     'index-url = "notaurl"\nexclude-newer = "soon"\n'
                                     'bogus = 1\n'
                                     '[verify.embedding]\ndim = "16"\n')
    assert main(["compile", "--project", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    line = err.splitlines()[0]
    assert line.startswith(f"lockkit: error: {config}: ")
    for expected in ('python: expected a version string such as "3.11", got 3.11',
                     "ci: expected a table ([ci]), got 'x'",
                     "platforms: expected a string or a list of strings, got 3",
                     "index-url: expected an http(s):// URL",
                     "exclude-newer: 'soon' is not an RFC 3339 date",
                     "unknown key 'bogus'",
                     "verify.embedding.dim: expected an integer",
                     "verify.embedding.command: missing"):
        assert expected in line, expected
    assert line.count(str(config)) == 1  # the file once, then key paths


@pytest.mark.parametrize("text,expected", [
    ("[verify.embedding]\ndim = 0\n", "verify.embedding.dim: expected an integer"),
    ('[verify]\nembedding = "yes"\n', "verify.embedding: expected a table, got 'yes'"),
    ('verify = "x"\n', "verify: expected a table ([verify]), got 'x'"),
], ids=["bad-key", "not-a-table", "verify-not-a-table"])
def test_a_bad_verify_embedding_fails_verify_before_any_work(tmp_path, capsys, text, expected):
    """Before: found at verify's step 8, after the wheelhouse and the venv install."""
    config = _write_config(tmp_path, text)
    err = verify_refused_early(tmp_path, capsys)
    assert f"{config}: " in err and expected in err


def test_the_example_embedding_table_is_validated_at_load():
    project = load_project(EXAMPLE)
    table = tomllib.loads((EXAMPLE / "lockkit.toml").read_text(encoding="utf-8"))["verify"]
    embedding = project.verify.get("embedding", EmbeddingConfig)
    assert embedding is not None
    assert embedding == load_embedding_config(EXAMPLE, table)
    assert embedding.dtype == "float32" and "{out}" in " ".join(embedding.command)


def test_an_embedding_table_outside_the_project_is_refused_at_load(tmp_path):
    table = (EXAMPLE / "lockkit.toml").read_text().replace(
        'sample = "data/sample.jsonl"', 'sample = "../elsewhere.jsonl"')
    assert "../elsewhere.jsonl" in table
    _write_config(tmp_path, table)
    with pytest.raises(ConfigError, match=r"verify.embedding.sample: expected a relative path"):
        load_project(tmp_path)


@pytest.mark.parametrize("runners,expected", [
    ("linux-cpu = 3", "ci.runners.linux-cpu: expected a label or a non-empty list of labels"),
    ("linux-cpu = []", "ci.runners.linux-cpu: expected a label or a non-empty list of labels"),
    ('linux-cpu = ["gpu", 1]', "ci.runners.linux-cpu: expected a label"),
], ids=["number", "empty-list", "mixed-list"])
def test_ci_runners_are_type_checked_at_load_for_every_command(tmp_path, capsys, runners,
                                                                expected):
    config = _write_config(tmp_path, f"[ci.runners]\n{runners}\n")
    assert main(["compile", "--project", str(tmp_path)]) == 2  # not only `ci github`
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"{config}: " in err and expected in err


def test_ci_runners_labels_are_read_stripped(tmp_path):
    _write_config(tmp_path, '[ci.runners]\nlinux-cpu = " big "\nlinux-cu126 = ["a", " b"]\n')
    assert load_project(tmp_path).ci.runners == {"linux-cpu": "big", "linux-cu126": ["a", "b"]}


@pytest.mark.parametrize("pyproject", ['[tool]\nlockkit = 3\n', '[tool.lockkit]\npython = 3.1\n'])
def test_tool_lockkit_that_is_not_right_is_exit_2_one_line(tmp_path, capsys, pyproject):
    (tmp_path / "pyproject.toml").write_text(pyproject)
    assert main(["compile", "--project", str(tmp_path)]) == 2
    line = one_error_line(capsys)
    assert f"{tmp_path / 'pyproject.toml'}: " in line
    assert "expected a table, got 3" in line or "got 3.1" in line


def test_flags_override_the_file(tmp_path):
    _write_config(tmp_path, 'index-url = "http://127.0.0.1:9/file"\n'
                            'exclude-newer = "2024-01-01"\n'
                            '[mirrors]\n"http://127.0.0.1:9/a" = "http://127.0.0.1:9/m1"\n'
                            '"http://127.0.0.1:9/b/" = "http://127.0.0.1:9/m2/"\n')
    from_file = load_project(tmp_path)
    assert from_file.index_url == "http://127.0.0.1:9/file"
    assert from_file.exclude_newer == "2024-01-01"
    flagged = load_project(tmp_path, index_url="http://127.0.0.1:9/flag",
                           exclude_newer="2025-02-01T00:00:00Z",
                           mirrors=["http://127.0.0.1:9/a=http://127.0.0.1:9/flag-mirror"])
    assert flagged.index_url == "http://127.0.0.1:9/flag"
    assert flagged.exclude_newer == "2025-02-01T00:00:00Z"
    assert flagged.mirrors == {"http://127.0.0.1:9/a": "http://127.0.0.1:9/flag-mirror",
                               "http://127.0.0.1:9/b": "http://127.0.0.1:9/m2"}


@pytest.mark.parametrize("argv,kwargs,expected", [
    (["--exclude-newer", "yesterday"], {"exclude_newer": "yesterday"},
     "--exclude-newer: 'yesterday' is not an RFC 3339 date"),
    (["--mirror", "no-equals-sign"], {"mirrors": ["no-equals-sign"]},
     "--mirror 'no-equals-sign': expected OFFICIAL=MIRROR"),
], ids=["exclude-newer", "mirror"])
def test_a_bad_flag_is_a_usage_error_naming_the_flag(tmp_path, capsys, argv, kwargs, expected):
    assert main(["compile", "--project", str(tmp_path), *argv]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"lockkit: error: {expected}" in err
    with pytest.raises(UsageError):
        load_project(tmp_path, **kwargs)


def test_python_stays_the_string_written(tmp_path):
    _write_config(tmp_path, 'python = "3.10"\n')
    assert load_project(tmp_path).python == "3.10"


def test_a_credential_in_a_bad_value_is_not_echoed(tmp_path):
    """Not in the error itself: a caller other than the CLI may log it."""
    _write_config(tmp_path, 'index-url = ["http://user:s3cret@127.0.0.1:9/simple"]\n')
    with pytest.raises(ConfigError) as err:
        load_project(tmp_path)
    assert "index-url: expected a URL string" in str(err.value)
    assert "s3cret" not in str(err.value)


# --- one line for each mistake (issue 24) -------------------------------------------------------

def test_platforms_take_one_string_as_requirements_do(tmp_path, capsys):
    _write_config(tmp_path, 'platforms = "linux-cu126"\nrequirements = "reqs.in"\n')
    project = load_project(tmp_path)
    assert (project.platforms, project.requirements) == (("linux-cu126",), ("reqs.in",))
    for empty in ('platforms = ""\n', "platforms = []\n"):
        config = _write_config(tmp_path, empty)
        assert main(["compile", "--project", str(tmp_path)]) == 2
        assert one_error_line(capsys) == (f"lockkit: error: {config}: platforms: empty; name "
                                          "at least one platform")


@pytest.mark.parametrize("value", ["notaurl", "ftp://127.0.0.1/simple", "http://", "",
                                   "127.0.0.1:9/simple", "${NOT_A_WHOLE_URL}simple"])
def test_an_index_url_that_is_no_http_url_is_a_usage_error_naming_the_flag(tmp_path, capsys,
                                                                           value):
    """Before: exit 1, "requests was not found", after uv had been asked."""
    (tmp_path / "requirements.in").write_text("requests\n")
    assert main(["compile", "--project", str(tmp_path), "--index-url", value]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0] == (f"lockkit: error: --index-url {value!r}: expected an http(s):// URL "
                        "or a ${VAR} holding one"), lines
    assert lines[1].startswith("hint: e.g. --index-url https://") and len(lines) == 2
    assert not (tmp_path / "locks").exists()
    config = _write_config(tmp_path, f"index-url = {value!r}\n")
    with pytest.raises(ConfigError, match=rf"^{config}: index-url: expected an http\(s\)://"):
        load_project(tmp_path)


@pytest.mark.parametrize("value", ["http://127.0.0.1:9/simple", "HTTPS://u:${T}@127.0.0.1/s",
                                   "${INDEX_URL}", "${MIRROR}/simple"])
def test_an_http_url_or_a_whole_url_placeholder_is_an_index_url(tmp_path, value):
    assert load_project(tmp_path, index_url=value).index_url == value
    _write_config(tmp_path, f"index-url = {value!r}\n")
    assert load_project(tmp_path).index_url == value


def test_a_credential_in_a_bad_index_url_flag_is_not_echoed(tmp_path, capsys):
    assert main(["compile", "--project", str(tmp_path), "--index-url",
                 "ftp://user:s3cret@127.0.0.1/simple"]) == 2
    assert "s3cret" not in capsys.readouterr().err


def test_an_empty_folder_is_answered_with_how_to_start(tmp_path, capsys, monkeypatch):
    """Before: "requirements.in: constraint file not found", and no way to start."""
    (tmp_path / ".git").mkdir()  # discovery stops here: nothing above the test's folder counts
    monkeypatch.chdir(tmp_path)
    assert main(["compile"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0] == (f"lockkit: error: {tmp_path}: no lockkit.toml and no requirements.in: "
                        "nothing to lock here")
    assert lines[1].startswith("hint: to start a project here, write requirements.in")
    assert 'lockkit.toml (platforms = ["linux-cpu"])' in lines[1] and len(lines) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == [".git"]  # nothing written


def test_a_missing_input_is_traced_to_the_key_that_names_it(tmp_path, capsys):
    config = _write_config(tmp_path, 'requirements = ["requirements.in", "extra.in"]\n')
    (tmp_path / "requirements.in").write_text("torch\n")
    assert main(["compile", "--project", str(tmp_path)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"lockkit: error: {config}: requirements: 'extra.in': not found in {tmp_path}",
        "hint: create it, or name the project's inputs in requirements"]
